//! Accounts: one's own API tokens (anyone signed in); the audit log (admins).

use app::accounts::{ApiToken, AuditEntry, NewApiToken};
use app::backend::Actor;
use app::error::ApiError;

#[async_trait::async_trait]
impl app::backend::Accounts for super::Guarded {
    fn enabled(&self) -> bool {
        !self.auth.disabled()
    }
    async fn tokens(&self, actor: &Actor) -> Result<Vec<ApiToken>, ApiError> {
        let me = self.access.anyone(actor);
        Ok(self.auth.tokens(&me.actor().name).await?)
    }
    async fn create_token(&self, actor: &Actor, label: &str) -> Result<NewApiToken, ApiError> {
        let me = self.access.anyone(actor);
        Ok(self.auth.create_token(&me.actor().name, label).await?)
    }
    async fn revoke_token(&self, actor: &Actor, id: i64) -> Result<(), ApiError> {
        let me = self.access.anyone(actor);
        Ok(self.auth.revoke_token(&me.actor().name, id).await?)
    }
    async fn audit_log(&self, actor: &Actor, limit: i64) -> Result<Vec<AuditEntry>, ApiError> {
        let admin = self.access.admin(actor, "read the audit log")?;
        Ok(self.auth.audit_log(&admin, limit).await?)
    }
}
