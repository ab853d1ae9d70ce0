//! Hosts: everyone signed in sees them; admins change them; testing and capturing facts are remote actions (`Access::check_host_use`).

use crate::auth::access::Need;
use crate::auth::require_admin;

use app::accounts::HostAccess;
use app::backend::Actor;
use app::error::ApiError;
use app::hosts::{ConnectionReport, Host, HostFacts, HostImport, ImportReport, NewHost};

#[async_trait::async_trait]
impl app::backend::HostOps for super::Guarded {
    // Hosts: everyone signed in sees them; changing them is for admins; testing
    // and capturing facts run on them (see `Access::check_host_use`).
    async fn hosts(&self, _: &Actor) -> Result<Vec<Host>, ApiError> {
        self.inner.hosts().await
    }
    async fn host(&self, _: &Actor, name: &str) -> Result<Host, ApiError> {
        self.inner.host(name).await
    }
    async fn add_host(&self, actor: &Actor, host: NewHost) -> Result<Host, ApiError> {
        require_admin(actor, "add hosts")?;
        self.inner.add_host(host).await
    }
    async fn update_host(&self, actor: &Actor, name: &str, host: NewHost) -> Result<Host, ApiError> {
        require_admin(actor, "change hosts")?;
        self.inner.update_host(name, host).await
    }
    async fn remove_host(&self, actor: &Actor, name: &str) -> Result<(), ApiError> {
        require_admin(actor, "remove hosts")?;
        self.inner.remove_host(name).await
    }
    async fn known_hosts(&self, _: &Actor) -> Result<String, ApiError> {
        self.inner.known_hosts().await
    }
    async fn trust_host(&self, actor: &Actor, name: &str, fingerprint: &str) -> Result<Host, ApiError> {
        require_admin(actor, "trust host keys")?;
        self.inner.trust_host(actor, name, fingerprint).await
    }
    async fn set_passphrase(&self, actor: &Actor, name: &str, passphrase: String) -> Result<(), ApiError> {
        require_admin(actor, "unlock host keys")?;
        self.inner.set_passphrase(name, passphrase).await
    }
    async fn test_host(&self, actor: &Actor, name: &str) -> Result<ConnectionReport, ApiError> {
        self.access.check_host_use(actor, name).await?;
        self.inner.test_host(actor, name).await
    }
    async fn import_hosts(&self, actor: &Actor, source: HostImport) -> Result<ImportReport, ApiError> {
        require_admin(actor, "import hosts")?;
        self.inner.import_hosts(source).await
    }
    /// The python a capture names is used again by every automatic capture
    /// before a day's first run, so only admins choose it.
    async fn capture_facts(&self, actor: &Actor, host: &str, python: Option<String>) -> Result<HostFacts, ApiError> {
        self.access.check_host_use(actor, host).await?;
        let names_python = python.as_deref().is_some_and(|p| !p.trim().is_empty());
        if names_python && !actor.admin {
            return Err(ApiError::new(
                app::error::ErrorCode::Forbidden,
                "Only admins choose the python that fact captures use (every automatic capture uses it again); \
                 capture without naming one.",
            ));
        }
        self.inner.capture_facts(actor, host, python.as_deref()).await
    }
    async fn facts(&self, actor: &Actor, host: &str) -> Result<Option<HostFacts>, ApiError> {
        self.access.check_host_use(actor, host).await?;
        self.inner.facts(host).await
    }
    /// Those who may use the host, and readers of an investigation with a run
    /// that points at these facts (its provenance shows them).
    async fn facts_by_id(&self, actor: &Actor, id: i64) -> Result<HostFacts, ApiError> {
        let hidden = || ApiError::not_found(format!("There are no host facts {id} that you may read."));
        let Some(row) = self.access.store().facts(id).await? else { return Err(hidden()) };
        let mut allowed = self.access.check_host_use(actor, &row.host_name).await.is_ok();
        if !allowed {
            for investigation in self.access.store().investigations_with_facts(id).await? {
                if self.access.check(actor, &investigation, Need::Read).await.is_ok() {
                    allowed = true;
                    break;
                }
            }
        }
        if !allowed {
            return Err(hidden());
        }
        self.inner.facts_by_id(id).await
    }
    async fn host_access(&self, _: &Actor, host: &str) -> Result<HostAccess, ApiError> {
        self.inner.host_access(host).await
    }
    async fn set_host_access(&self, actor: &Actor, host: &str, access: HostAccess) -> Result<HostAccess, ApiError> {
        require_admin(actor, "decide who runs on hosts")?;
        self.inner.set_host_access(host, access).await
    }
}
