//! An investigation's members: who has which role there. Who may change them
//! (owners) is decided in `crate::guarded`.

use crate::db::Store;
use crate::error::Result;
use crate::policy::{Own, Permit, Read, Role};
use domain::accounts::{Member, MemberChange};
use domain::error::ApiError;

#[derive(Clone)]
pub struct Members {
    store: Store,
}

impl Members {
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    async fn existing_user(&self, name: &str) -> Result<String> {
        let row = self.store.user_by_name(name.trim()).await?;
        Ok(row.map(|r| r.name).ok_or_else(|| ApiError::invalid(format!("There is no user {:?}.", name.trim())))?)
    }

    async fn of(&self, investigation: &str) -> Result<Vec<Member>> {
        if self.store.investigation(investigation).await?.is_none() {
            return Err(crate::investigations::not_found(investigation).into());
        }
        let rows = self.store.members(investigation).await?;
        Ok(rows)
    }

    /// Who has which role, owners first.
    pub async fn list(&self, permit: &Permit<Read>) -> Result<Vec<Member>> {
        self.of(permit.investigation()).await
    }

    /// The team's users who are not members yet: whom an owner may add.
    pub async fn candidates(&self, permit: &Permit<Own>) -> Result<Vec<String>> {
        let members = self.of(permit.investigation()).await?;
        let users = self.store.users_listed().await?;
        let mut names: Vec<String> = users
            .into_iter()
            .map(|u| u.name)
            .filter(|name| !members.iter().any(|m| m.user.eq_ignore_ascii_case(name)))
            .collect();
        names.dedup();
        Ok(names)
    }

    /// Gives `member.user` that role; a role of `none` removes it. An
    /// investigation keeps at least one owner.
    pub async fn set(&self, permit: &Permit<Own>, change: MemberChange) -> Result<Vec<Member>> {
        let investigation = permit.investigation();
        let members = self.of(investigation).await?;
        let role = change.role.role();
        let user = self.existing_user(&change.user).await?;
        let owners = members.iter().filter(|m| m.role == Role::Owner && !m.user.eq_ignore_ascii_case(&user)).count();
        if owners == 0 && role != Some(Role::Owner) {
            let why = "An investigation keeps at least one owner; make someone else owner first.";
            return Err(ApiError::invalid(why).into());
        }
        match role {
            Some(role) => self.store.set_member(investigation, &user, role).await?,
            None => {
                self.store.remove_member(investigation, &user).await?;
            }
        }
        tracing::info!(investigation, user, role = role.map_or("none", Role::as_str), by = %permit.actor().name, "membership changed");
        self.of(investigation).await
    }
}
