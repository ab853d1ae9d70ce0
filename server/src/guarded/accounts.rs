//! Accounts: one's own API tokens (anyone signed in); the audit log and the
//! team's users (admins).

use domain::accounts::{ApiToken, AuditEntry, NewApiToken, NewUser, SignInLink, TeamUser};
use domain::error::ApiError;
use domain::ports::Actor;

impl super::Guarded {
    pub fn enabled(&self) -> bool {
        !self.auth.disabled()
    }
    pub async fn tokens(&self, actor: &Actor) -> Result<Vec<ApiToken>, ApiError> {
        let me = self.access.anyone(actor);
        Ok(self.auth.tokens(&me.actor().name).await?)
    }
    pub async fn create_token(&self, actor: &Actor, label: &str) -> Result<NewApiToken, ApiError> {
        let me = self.access.anyone(actor);
        Ok(self.auth.create_token(&me.actor().name, label).await?)
    }
    pub async fn revoke_token(&self, actor: &Actor, id: i64) -> Result<(), ApiError> {
        let me = self.access.anyone(actor);
        Ok(self.auth.revoke_token(&me.actor().name, id).await?)
    }
    pub async fn audit_log(&self, actor: &Actor, limit: i64) -> Result<Vec<AuditEntry>, ApiError> {
        let admin = self.access.admin(actor, "read the audit log")?;
        Ok(self.auth.audit_log(&admin, limit).await?)
    }
    pub async fn team_users(&self, actor: &Actor) -> Result<Vec<TeamUser>, ApiError> {
        self.access.admin(actor, "list the users")?;
        Ok(self.auth.team_users().await?)
    }
    pub async fn add_team_user(&self, actor: &Actor, new: NewUser) -> Result<SignInLink, ApiError> {
        let admin = self.access.admin(actor, "add users")?;
        Ok(self.auth.invite(&admin, &new.name, new.admin).await?)
    }
    pub async fn reset_team_user(&self, actor: &Actor, name: &str) -> Result<SignInLink, ApiError> {
        let admin = self.access.admin(actor, "reset users")?;
        Ok(self.auth.reset(&admin, name).await?)
    }
    pub async fn set_team_admin(&self, actor: &Actor, name: &str, admin: bool) -> Result<TeamUser, ApiError> {
        let by = self.access.admin(actor, "make users admins")?;
        Ok(self.auth.set_admin(&by, name, admin).await?)
    }
    pub async fn remove_team_user(&self, actor: &Actor, name: &str) -> Result<(), ApiError> {
        let admin = self.access.admin(actor, "remove users")?;
        Ok(self.auth.remove(&admin, name).await?)
    }
    pub async fn sign_in_link_user(&self, token: &str) -> Result<Option<String>, ApiError> {
        Ok(self.auth.welcome(token).await?)
    }
    pub async fn setup_link_works(&self, token: &str) -> Result<bool, ApiError> {
        Ok(self.auth.setup_link_works(token).await?)
    }
    pub async fn awaiting_setup(&self) -> Result<bool, ApiError> {
        Ok(self.auth.awaiting_setup().await?)
    }
}
