//! The notebook's side of sharing: an investigation's members and a host's
//! allow-list. Who may change them is checked in `auth::guarded`.

use crate::auth::access::Role;
use crate::notebook::Service;
use app::accounts::{HostAccess, Member};
use app::error::ApiError;

impl Service {
    async fn existing_user(&self, name: &str) -> Result<String, ApiError> {
        let row = self.store.user_by_name(name.trim()).await?;
        row.map(|r| r.name).ok_or_else(|| ApiError::invalid(format!("There is no user {:?}.", name.trim())))
    }

    pub(crate) async fn members(&self, investigation: &str) -> Result<Vec<Member>, ApiError> {
        self.existing_investigation(investigation).await?;
        let rows = self.store.members(investigation).await?;
        Ok(rows.into_iter().map(|(user, role)| Member { user, role }).collect())
    }

    pub(crate) async fn set_member(&self, investigation: &str, member: Member) -> Result<Vec<Member>, ApiError> {
        self.existing_investigation(investigation).await?;
        let role = match member.role.as_str() {
            "none" => None,
            other => Some(Role::parse(other).ok_or_else(|| {
                ApiError::invalid(format!("A role is owner, runner, editor, viewer or none; not {other:?}."))
            })?),
        };
        let user = self.existing_user(&member.user).await?;
        let members = self.members(investigation).await?;
        let owners = members.iter().filter(|m| m.role == "owner" && !m.user.eq_ignore_ascii_case(&user)).count();
        if owners == 0 && role != Some(Role::Owner) {
            return Err(ApiError::invalid("An investigation keeps at least one owner; make someone else owner first."));
        }
        match role {
            Some(role) => self.store.set_member(investigation, &user, role.as_str()).await?,
            None => {
                self.store.remove_member(investigation, &user).await?;
            }
        }
        tracing::info!(investigation, user, role = role.map_or("none", Role::as_str), "membership changed");
        self.members(investigation).await
    }

    pub(crate) async fn host_access(&self, host: &str) -> Result<HostAccess, ApiError> {
        self.host(host).await?;
        let (whole_team, users) = self.store.host_access(host).await?;
        Ok(HostAccess { whole_team, users })
    }

    pub(crate) async fn set_host_access(&self, host: &str, access: HostAccess) -> Result<HostAccess, ApiError> {
        self.host(host).await?;
        let mut users = Vec::with_capacity(access.users.len());
        for user in &access.users {
            users.push(self.existing_user(user).await?);
        }
        self.store.set_host_access(host, access.whole_team, &users).await?;
        self.host_access(host).await
    }
}
