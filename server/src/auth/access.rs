//! Who may do what. Every page, server function and API route reaches the
//! notebook through [`Guarded`], which checks the caller's role in the
//! investigation concerned (and, to run anything on a host, the host's
//! allow-list) before handing over to the notebook itself.
//!
//! | need | role | what |
//! |---|---|---|
//! | read | viewer | see it, its runs' output, charts |
//! | edit | editor | notes, steps, hypotheses, annotations, measurements, extractors |
//! | run  | runner | run commands, fetch snippets, grep, search source on hosts |
//! | own  | owner  | share (members), delete the investigation |
//!
//! Admins may do everything. Someone with no role sees a 404, as if the
//! investigation did not exist; a role too small is a 403 that names it.

use crate::db::{OwnedBy, Store};
use app::backend::Actor;
use app::error::{ApiError, ErrorCode};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    Viewer,
    Editor,
    Runner,
    Owner,
}

impl Role {
    pub const ALL: [Role; 4] = [Role::Owner, Role::Runner, Role::Editor, Role::Viewer];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Viewer => "viewer",
            Self::Editor => "editor",
            Self::Runner => "runner",
            Self::Owner => "owner",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == s)
    }

    pub fn abilities(self) -> app::model::Abilities {
        app::model::Abilities { edit: self >= Role::Editor, run: self >= Role::Runner, own: self >= Role::Owner }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Need {
    Read,
    Edit,
    Run,
    Own,
}

impl Need {
    fn role(self) -> Role {
        match self {
            Self::Read => Role::Viewer,
            Self::Edit => Role::Editor,
            Self::Run => Role::Runner,
            Self::Own => Role::Owner,
        }
    }

    fn doing(self) -> &'static str {
        match self {
            Self::Read => "Reading",
            Self::Edit => "Changing",
            Self::Run => "Running on hosts from",
            Self::Own => "Sharing or deleting",
        }
    }
}

#[derive(Clone)]
pub struct Access {
    store: Store,
}

impl Access {
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    /// The caller's role there (`Owner` for admins); `None` without one.
    pub async fn role(&self, actor: &Actor, investigation: &str) -> Result<Option<Role>, ApiError> {
        if actor.admin {
            return Ok(Some(Role::Owner));
        }
        let role = self.store.role_of(investigation, &actor.name).await?;
        Ok(role.as_deref().and_then(Role::parse))
    }

    pub async fn check(&self, actor: &Actor, investigation: &str, need: Need) -> Result<(), ApiError> {
        self.checked_role(actor, investigation, need).await.map(|_| ())
    }

    /// The caller's role, if it is enough for `need`; else the error `check` gives.
    pub async fn checked_role(&self, actor: &Actor, investigation: &str, need: Need) -> Result<Role, ApiError> {
        match self.role(actor, investigation).await? {
            Some(role) if role >= need.role() => Ok(role),
            Some(role) => Err(ApiError::new(
                ErrorCode::Forbidden,
                format!(
                    "{} this investigation needs the {} role; you are its {} (ask an owner).",
                    need.doing(),
                    need.role().as_str(),
                    role.as_str()
                ),
            )),
            None => Err(ApiError::not_found(format!("There is no investigation {investigation:?}."))),
        }
    }

    /// Checks the investigation `id` of kind `what` belongs to, and returns it; an
    /// unknown id passes as `None` (the notebook answers its own 404).
    pub async fn check_of(
        &self,
        actor: &Actor,
        what: OwnedBy,
        id: i64,
        need: Need,
    ) -> Result<Option<String>, ApiError> {
        let investigation = self.store.investigation_of(what, id).await?;
        if let Some(investigation) = &investigation {
            self.check(actor, investigation, need).await?;
        }
        Ok(investigation)
    }

    /// Running on `host` needs its allow-list to include the caller (or be the whole team).
    pub async fn check_host(&self, actor: &Actor, host: &str) -> Result<(), ApiError> {
        if actor.admin {
            return Ok(());
        }
        match self.store.host_allows(host, &actor.name).await? {
            Some(false) => Err(ApiError::new(
                ErrorCode::Forbidden,
                format!("You may not run on {host:?}: it is for the users on its list (ask an admin)."),
            )),
            _ => Ok(()),
        }
    }

    /// Remote actions on a host outside any investigation (testing the
    /// connection, capturing facts) and reading what they found: admins, or
    /// someone who may run somewhere (the runner or owner role in some
    /// investigation) and is on the host's allow-list.
    pub async fn check_host_use(&self, actor: &Actor, host: &str) -> Result<(), ApiError> {
        if actor.admin {
            return Ok(());
        }
        let runs_somewhere =
            self.store.has_role_anywhere(&actor.name, &[Role::Runner.as_str(), Role::Owner.as_str()]).await?;
        if !runs_somewhere {
            return Err(ApiError::new(
                ErrorCode::Forbidden,
                format!(
                    "Testing {host:?} or reading its facts needs the runner role in some investigation \
                     (you have none; ask an owner or an admin)."
                ),
            ));
        }
        self.check_host(actor, host).await
    }

    /// The investigations the caller may read (`None`: all of them, for admins).
    pub async fn readable(&self, actor: &Actor) -> Result<Option<Vec<String>>, ApiError> {
        if actor.admin {
            return Ok(None);
        }
        Ok(Some(self.store.investigations_of(&actor.name).await?))
    }

    pub fn store(&self) -> &Store {
        &self.store
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_are_ordered_by_what_they_allow() {
        assert!(Role::Owner > Role::Runner && Role::Runner > Role::Editor && Role::Editor > Role::Viewer);
        assert_eq!(Need::Run.role(), Role::Runner);
        for role in Role::ALL {
            assert_eq!(Role::parse(role.as_str()), Some(role));
        }
        assert_eq!(Role::parse("admin"), None);
    }
}
