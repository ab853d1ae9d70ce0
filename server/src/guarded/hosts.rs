//! Hosts: everyone signed in sees them; admins change them; testing and
//! capturing facts are remote actions (`Access::host_use`).

use domain::accounts::HostAccess;
use domain::error::{ApiError, ErrorCode};
use domain::hosts::{ConnectionReport, Host, HostFacts, HostImport, HostPatch, ImportReport, NewHost};
use domain::ports::Actor;
use domain::steps::patch::PatchOnHost;

impl super::Guarded {
    /// The host as the caller may see it: what they may do with it (for pages
    /// that offer only that), and the server's key file path for admins only.
    pub async fn for_caller(&self, actor: &Actor, mut host: Host) -> Host {
        host.can_manage = actor.admin;
        let permit = self.access.host_use(actor, &host.name).await;
        host.can_use = permit.is_ok();
        if let Ok(permit) = permit {
            host.patches = self.notebook.patches.on_host(&permit).await.unwrap_or_else(|e| {
                tracing::error!(host = %host.name, "cannot read the host's patches: {e}");
                Vec::new()
            });
        }
        if !actor.admin {
            host.identity_file = None;
        }
        host
    }
}

impl super::Guarded {
    pub async fn hosts(&self, actor: &Actor) -> Result<Vec<Host>, ApiError> {
        let hosts = self.notebook.hosts.list(&self.access.anyone(actor)).await?;
        let mut shown = Vec::with_capacity(hosts.len());
        for host in hosts {
            shown.push(self.for_caller(actor, host).await);
        }
        Ok(shown)
    }
    pub async fn host(&self, actor: &Actor, name: &str) -> Result<Host, ApiError> {
        let host = self.notebook.hosts.get(&self.access.anyone(actor), name).await?;
        Ok(self.for_caller(actor, host).await)
    }
    pub async fn add_host(&self, actor: &Actor, host: NewHost) -> Result<Host, ApiError> {
        let admin = self.access.admin(actor, "add hosts")?;
        let host = self.notebook.hosts.add(&admin, host).await?;
        Ok(self.for_caller(actor, host).await)
    }
    pub async fn update_host(&self, actor: &Actor, name: &str, host: NewHost) -> Result<Host, ApiError> {
        let admin = self.access.admin(actor, "change hosts")?;
        let host = self.notebook.hosts.update(&admin, name, host).await?;
        Ok(self.for_caller(actor, host).await)
    }
    /// A new price reprices the host's runs: their investigations' pages hear of it.
    pub async fn patch_host(&self, actor: &Actor, name: &str, patch: HostPatch) -> Result<Host, ApiError> {
        let admin = self.access.admin(actor, "change hosts")?;
        let (host, repriced) = self.notebook.patch_host(&admin, name, patch).await?;
        for investigation in &repriced {
            self.live.changed(investigation, &actor.name);
        }
        Ok(self.for_caller(actor, host).await)
    }
    pub async fn remove_host(&self, actor: &Actor, name: &str) -> Result<(), ApiError> {
        let admin = self.access.admin(actor, "remove hosts")?;
        Ok(self.notebook.hosts.remove(&admin, name).await?)
    }
    pub async fn known_hosts(&self, actor: &Actor) -> Result<String, ApiError> {
        Ok(self.notebook.hosts.known_hosts(&self.access.anyone(actor)).await?)
    }
    pub async fn trust_host(&self, actor: &Actor, name: &str, fingerprint: &str) -> Result<Host, ApiError> {
        let admin = self.access.admin(actor, "trust host keys")?;
        let host = self.notebook.hosts.trust(&admin, name, fingerprint).await?;
        Ok(self.for_caller(actor, host).await)
    }
    pub async fn set_passphrase(&self, actor: &Actor, name: &str, passphrase: String) -> Result<(), ApiError> {
        let admin = self.access.admin(actor, "unlock host keys")?;
        Ok(self.notebook.hosts.set_passphrase(&admin, name, passphrase).await?)
    }
    pub async fn test_host(&self, actor: &Actor, name: &str) -> Result<ConnectionReport, ApiError> {
        let permit = self.access.host_use(actor, name).await?;
        Ok(self.notebook.hosts.test(&permit).await?)
    }
    pub async fn import_hosts(&self, actor: &Actor, source: HostImport) -> Result<ImportReport, ApiError> {
        let admin = self.access.admin(actor, "import hosts")?;
        Ok(self.notebook.hosts.import(&admin, source).await?)
    }
    /// The python a capture names is used again by every automatic capture
    /// before a day's first run, so only admins choose it.
    pub async fn capture_facts(
        &self,
        actor: &Actor,
        host: &str,
        python: Option<String>,
    ) -> Result<HostFacts, ApiError> {
        let permit = self.access.host_use(actor, host).await?;
        let names_python = python.as_deref().is_some_and(|p| !p.trim().is_empty());
        if names_python && !actor.admin {
            return Err(ApiError::new(
                ErrorCode::Forbidden,
                "Only admins choose the python that fact captures use (every automatic capture uses it again); \
                 capture without naming one.",
            ));
        }
        Ok(self.notebook.facts.capture(&permit, python.as_deref()).await?)
    }
    pub async fn facts(&self, actor: &Actor, host: &str) -> Result<Option<HostFacts>, ApiError> {
        let permit = self.access.host_use(actor, host).await?;
        Ok(self.notebook.facts.latest(&permit).await?)
    }
    /// Those who may use the host, and readers of an investigation with a run
    /// that points at these facts (its provenance shows them).
    pub async fn facts_by_id(&self, actor: &Actor, id: i64) -> Result<HostFacts, ApiError> {
        let permit = self.access.facts(actor, id).await?;
        Ok(self.notebook.facts.by_id(&permit).await?)
    }
    pub async fn host_access(&self, actor: &Actor, host: &str) -> Result<HostAccess, ApiError> {
        Ok(self.notebook.hosts.access(&self.access.anyone(actor), host).await?)
    }
    pub async fn set_host_access(&self, actor: &Actor, host: &str, access: HostAccess) -> Result<HostAccess, ApiError> {
        let admin = self.access.admin(actor, "decide who runs on hosts")?;
        Ok(self.notebook.hosts.set_access(&admin, host, access).await?)
    }
    pub async fn server_status(&self, actor: &Actor) -> Result<domain::hosts::ServerStatus, ApiError> {
        let refusing = self.notebook.refusing(&self.access.anyone(actor));
        let admin = self.access.admin(actor, "read the server's state").ok();
        Ok(domain::hosts::ServerStatus { refusing, detail: admin.map(|admin| self.notebook.server_detail(&admin)) })
    }
    /// The patches runs left on the host (dirty, or applied now): anyone who may use it.
    pub async fn host_patches(&self, actor: &Actor, host: &str) -> Result<Vec<PatchOnHost>, ApiError> {
        let permit = self.access.host_use(actor, host).await?;
        Ok(self.notebook.patches.on_host(&permit).await?)
    }
    /// A dirty host made usable: its originals put back (`restore`), or taken as it is; admins only.
    pub async fn settle_host_patch(
        &self,
        actor: &Actor,
        host: &str,
        run: i64,
        restore: bool,
    ) -> Result<PatchOnHost, ApiError> {
        let admin = self.access.admin(actor, "restore or accept a host's patches")?;
        Ok(self.notebook.patches.settle(&admin, host, run, restore).await?)
    }
}
