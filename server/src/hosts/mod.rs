//! Hosts: checking what users enter, resolving a host (and its jump hosts) to an
//! SSH target, trusting keys, testing connections, and who may run on each.

pub mod keys;

use crate::db::{HostRow, Store};
use crate::error::{Context, Error, Result};
use crate::policy::{Admin, Anyone, HostUse};
use crate::ssh::{self, Pool, Target};
use crate::time::timestamp;
use domain::accounts::HostAccess;
use domain::error::{ApiError, ErrorCode};
use domain::hosts::{ConnectionReport, Host, HostImport, HostPatch, ImportReport, NewHost, is_host_name};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// The host list and what is done to hosts: the store's rows and the SSH pool.
#[derive(Clone)]
pub struct Hosts {
    store: Store,
    pool: Arc<Pool>,
}

/// A chain of jumps longer than this is surely a mistake (or a loop).
const MAX_JUMPS: usize = 4;

fn host_not_found(name: &str) -> ApiError {
    ApiError::not_found(format!("There is no host {name:?}; add it on the Hosts page."))
}

fn check(new: NewHost) -> Result<HostRow> {
    let name = new.name.trim().to_string();
    if !is_host_name(&name) {
        return Err(ApiError::invalid(format!(
            "{name:?} cannot be a host name: use 1 to {} letters, digits, '-', '_' or '.'.",
            domain::hosts::NAME_CHARS
        ))
        .into());
    }
    let hostname = new.hostname.trim().to_string();
    if hostname.is_empty() || hostname.len() > 255 || hostname.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(ApiError::invalid("The hostname must be a DNS name or an IP address.").into());
    }
    let user = new.user.trim().to_string();
    if user.is_empty() || user.len() > 64 || user.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(ApiError::invalid("The user must be a login name without spaces.").into());
    }
    let port = new.port.unwrap_or(22);
    if port == 0 {
        return Err(ApiError::invalid("The port must be from 1 to 65535.").into());
    }
    let identity_file = new.identity_file.map(|p| p.trim().to_string()).filter(|p| !p.is_empty());
    if let Some(path) = &identity_file
        && !path.starts_with('/')
        && !path.starts_with("~/")
    {
        return Err(ApiError::invalid(
            "The identity file must be an absolute path on the Sleuth server (or start with ~/).",
        )
        .into());
    }
    let proxy_jump = new.proxy_jump.map(|p| p.trim().to_string()).filter(|p| !p.is_empty());
    if proxy_jump.as_deref() == Some(name.as_str()) {
        return Err(ApiError::invalid("A host cannot jump through itself.").into());
    }
    Ok(HostRow {
        name,
        hostname,
        port: i64::from(port),
        user,
        identity_file,
        proxy_jump,
        created_at: 0,
        updated_at: 0,
        price_per_hour: None,
        run_dirs_keep_days: None,
        run_dirs_max_mb: None,
        run_dirs_swept: None,
    })
}

/// How long the host keeps run directories, and its last sweep.
pub fn run_dirs_of(row: &HostRow) -> Result<domain::hosts::RunDirs> {
    let last_sweep =
        crate::error::stored_opt(row.run_dirs_swept.as_deref(), || format!("host {}'s last sweep", row.name))?;
    Ok(domain::hosts::RunDirs {
        keep_days: row
            .run_dirs_keep_days
            .and_then(|d| u32::try_from(d).ok())
            .unwrap_or(domain::hosts::DEFAULT_KEEP_RUN_DIRS_DAYS),
        max_mb: row.run_dirs_max_mb.and_then(|mb| u64::try_from(mb).ok()),
        last_sweep,
    })
}

fn expand_home(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(path),
    }
}

impl Hosts {
    pub fn new(store: Store, pool: Arc<Pool>) -> Self {
        Self { store, pool }
    }

    async fn view(&self, row: HostRow) -> Result<Host> {
        let port = u16::try_from(row.port).unwrap_or(22);
        let trusted_keys = self.pool.known_hosts().fingerprints(&row.hostname, port).await;
        let run_dirs = run_dirs_of(&row)?;
        Ok(Host {
            pending_key: self.pool.pending_fingerprint(&row.hostname, port).await,
            trusted_keys,
            port,
            created_at: timestamp(row.created_at),
            updated_at: timestamp(row.updated_at),
            name: row.name,
            hostname: row.hostname,
            user: row.user,
            identity_file: row.identity_file,
            proxy_jump: row.proxy_jump,
            price_per_hour: row.price_per_hour,
            run_dirs,
            // What the caller may do is the policy's to say (`guarded::hosts`).
            can_manage: false,
            can_use: false,
            patches: Vec::new(),
        })
    }

    async fn row(&self, name: &str) -> Result<HostRow> {
        if !is_host_name(name) {
            return Err(host_not_found(name).into());
        }
        self.store.host(name).await?.ok_or_else(|| host_not_found(name).into())
    }

    /// Whether a host of that name exists (what a step names must).
    pub async fn exists(&self, name: &str) -> Result<bool> {
        Ok(is_host_name(name) && self.store.host(name).await?.is_some())
    }

    /// The SSH target for a host, with its jump hosts resolved.
    pub async fn target(&self, name: &str) -> Result<Target> {
        let mut chain = vec![self.row(name).await?];
        while let Some(jump) = chain.last().and_then(|h| h.proxy_jump.clone()) {
            if chain.len() > MAX_JUMPS || chain.iter().any(|h| h.name == jump) {
                return Err(ApiError::invalid(format!("The ProxyJump chain of {name} loops or is too long.")).into());
            }
            chain.push(self.row(&jump).await?);
        }
        let mut target: Option<Target> = None;
        for row in chain.into_iter().rev() {
            target = Some(Target {
                port: u16::try_from(row.port).unwrap_or(22),
                identity_file: row.identity_file.as_deref().map(expand_home),
                jump: target.map(Box::new),
                name: row.name,
                hostname: row.hostname,
                user: row.user,
            });
        }
        target.ok_or_else(|| host_not_found(name).into())
    }

    /// The SSH pool the hosts are reached through.
    pub fn pool(&self) -> &Arc<Pool> {
        &self.pool
    }

    pub async fn list(&self, _: &Anyone) -> Result<Vec<Host>> {
        let rows = self.store.hosts().await?;
        let mut hosts = Vec::with_capacity(rows.len());
        for row in rows {
            hosts.push(self.view(row).await?);
        }
        Ok(hosts)
    }

    pub async fn get(&self, _: &Anyone, name: &str) -> Result<Host> {
        self.view(self.row(name).await?).await
    }

    pub async fn add(&self, admin: &Admin, new: NewHost) -> Result<Host> {
        let row = check(new)?;
        if self.store.host(&row.name).await?.is_some() {
            return Err(ApiError::new(ErrorCode::Conflict, format!("There is already a host {:?}.", row.name)).into());
        }
        self.save(&row).await?;
        self.view(self.row(&row.name).await?).await.inspect(|_| {
            tracing::info!(host = %row.name, by = %admin.actor().name, "added host");
        })
    }

    pub async fn update(&self, _: &Admin, name: &str, new: NewHost) -> Result<Host> {
        self.row(name).await?;
        let row = check(new)?;
        if row.name != name {
            return Err(ApiError::invalid("A host cannot be renamed; add it under the new name.").into());
        }
        self.save(&row).await?;
        self.pool.forget(name).await;
        self.view(self.row(name).await?).await
    }

    /// Changes the fields `patch` gives. Returns the host, and whether its
    /// price changed (its runs' costs then follow: `Notebook::patch_host`).
    pub async fn patch(&self, _: &Admin, name: &str, patch: HostPatch) -> Result<(Host, bool)> {
        let before = self.row(name).await?;
        let mut repriced = false;
        if let Some(price) = patch.price_per_hour {
            let price = price.map(domain::hosts::check_price).transpose().map_err(ApiError::from)?;
            repriced = price != before.price_per_hour;
            if !self.store.set_host_price(name, price).await? {
                return Err(host_not_found(name).into());
            }
        }
        if patch.run_dirs_keep_days.is_some() || patch.run_dirs_max_mb.is_some() {
            let keep_days = match patch.run_dirs_keep_days {
                Some(days) => days.map(domain::hosts::check_keep_days).transpose().map_err(ApiError::from)?,
                None => before.run_dirs_keep_days.and_then(|d| u32::try_from(d).ok()),
            };
            let max_mb = match patch.run_dirs_max_mb {
                Some(mb) => mb.map(domain::hosts::check_max_mb).transpose().map_err(ApiError::from)?,
                None => before.run_dirs_max_mb.and_then(|mb| u64::try_from(mb).ok()),
            };
            if !self.store.set_run_dirs_policy(name, keep_days, max_mb).await? {
                return Err(host_not_found(name).into());
            }
        }
        Ok((self.view(self.row(name).await?).await?, repriced))
    }

    async fn save(&self, row: &HostRow) -> Result<()> {
        if let Some(jump) = &row.proxy_jump
            && !self.exists(jump).await?
        {
            return Err(ApiError::invalid(format!("The jump host {jump:?} does not exist.")).into());
        }
        self.store.upsert_host(row).await?;
        tracing::info!(host = %row.name, "saved host");
        Ok(())
    }

    pub async fn remove(&self, _: &Admin, name: &str) -> Result<()> {
        self.row(name).await?;
        let dependents = self.store.hosts_jumping_through(name).await?;
        if !dependents.is_empty() {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                format!("{name} is the jump host of {}; change those first.", dependents.join(", ")),
            )
            .into());
        }
        self.pool.forget(name).await;
        self.store.delete_host(name).await?;
        Ok(())
    }

    pub async fn known_hosts(&self, _: &Anyone) -> Result<String> {
        self.pool.known_hosts().openssh().await.context("writing the pinned host keys out")
    }

    pub async fn trust(&self, admin: &Admin, name: &str, fingerprint: &str) -> Result<Host> {
        let result = self.trust_key(name, fingerprint).await;
        let entry = crate::db::NewAudit {
            who: admin.actor().name.clone(),
            action: "host.trust",
            host: Some(name.to_string()),
            target: fingerprint.to_string(),
            outcome: crate::audit::outcome(&result),
            ..Default::default()
        };
        crate::audit::record(&self.store, entry).await;
        result
    }

    async fn trust_key(&self, name: &str, fingerprint: &str) -> Result<Host> {
        let row = self.row(name).await?;
        let port = u16::try_from(row.port).unwrap_or(22);
        if self.pool.pending_fingerprint(&row.hostname, port).await.is_none() {
            // Ask the host for its key first; the expected outcome is "unknown key".
            let target = self.target(name).await?;
            match self.pool.connection(&target).await {
                Ok(_) => return self.view(row).await, // already trusted
                Err(ssh::SshError::UnknownHostKey { .. } | ssh::SshError::HostKeyChanged { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        match self.pool.trust(&row.hostname, port, fingerprint).await {
            Ok(()) => {}
            Err(e @ (ssh::TrustError::NothingOffered | ssh::TrustError::Mismatch { .. })) => {
                return Err(ApiError::invalid(e.to_string()).into());
            }
            Err(ssh::TrustError::Keys(e)) => return Err(Error::internal("pinning a host key", e)),
        }
        tracing::info!(host = %name, %fingerprint, "host key trusted");
        self.view(self.row(name).await?).await
    }

    pub async fn set_passphrase(&self, _: &Admin, name: &str, passphrase: String) -> Result<()> {
        self.row(name).await?;
        self.pool.set_passphrase(name, passphrase);
        self.pool.forget(name).await;
        Ok(())
    }

    pub async fn test(&self, permit: &HostUse) -> Result<ConnectionReport> {
        let name = permit.host();
        let result = self.probe(name).await;
        let entry = crate::db::NewAudit {
            who: permit.actor().name.clone(),
            action: "host.test",
            host: Some(name.to_string()),
            target: "true; uname -a; nvidia-smi -L".into(),
            outcome: crate::audit::outcome(&result),
            ..Default::default()
        };
        crate::audit::record(&self.store, entry).await;
        result
    }

    async fn probe(&self, name: &str) -> Result<ConnectionReport> {
        let target = self.target(name).await?;
        // Connect first so the latency is a round trip on the pooled connection.
        self.pool.connection(&target).await?;
        let started = Instant::now();
        let ping = ssh::exec::capture(&self.pool, &target, "true", 0).await?;
        let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
        if ping.exit_code != Some(0) {
            return Err(Error::bug(format!("`true` exited with {:?} on {name}", ping.exit_code)));
        }
        let probe = "uname -a; if command -v nvidia-smi >/dev/null 2>&1; then nvidia-smi -L 2>&1 | head -n 1; fi";
        let out = ssh::exec::capture(&self.pool, &target, probe, 64 * 1024).await?;
        let text = String::from_utf8_lossy(&out.stdout);
        let mut lines = text.lines();
        let uname = lines.next().unwrap_or_default().to_string();
        let nvidia_smi = lines.next().map(str::to_string).filter(|l| !l.is_empty());
        Ok(ConnectionReport { latency_ms, uname, nvidia_smi })
    }

    /// Who may run on the host (everyone, or the users listed).
    pub async fn access(&self, _: &Anyone, host: &str) -> Result<HostAccess> {
        self.access_of(host).await
    }

    async fn access_of(&self, host: &str) -> Result<HostAccess> {
        self.row(host).await?;
        let (whole_team, users) = self.store.host_access(host).await?;
        Ok(HostAccess { whole_team, users })
    }

    pub async fn set_access(&self, admin: &Admin, host: &str, access: HostAccess) -> Result<HostAccess> {
        self.row(host).await?;
        let mut users = Vec::with_capacity(access.users.len());
        for user in &access.users {
            let row = self.store.user_by_name(user.trim()).await?;
            users.push(
                row.map(|r| r.name).ok_or_else(|| ApiError::invalid(format!("There is no user {:?}.", user.trim())))?,
            );
        }
        self.store.set_host_access(host, access.whole_team, &users).await?;
        tracing::info!(host, by = %admin.actor().name, whole_team = access.whole_team, users = users.len(), "host access changed");
        self.access_of(host).await
    }
}

/// A host name from a hostname (for ProxyJump targets that are not aliases).
fn name_for(hostname: &str) -> String {
    let name: String = hostname
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '-' })
        .take(domain::hosts::NAME_CHARS)
        .collect();
    if name.is_empty() { "jump".to_string() } else { name }
}

impl Hosts {
    /// Adds the hosts an ssh_config defines (existing names are left alone).
    pub async fn import(&self, admin: &Admin, source: HostImport) -> Result<ImportReport> {
        let text = match (source.text, source.path) {
            (Some(text), None) => text,
            (None, Some(path)) => {
                let path = expand_home(path.trim());
                tokio::fs::read_to_string(&path)
                    .await
                    .map_err(|e| ApiError::invalid(format!("Cannot read {}: {e}", path.display())))?
            }
            _ => return Err(ApiError::invalid("Give either `path` (a file on the Sleuth server) or `text`.").into()),
        };
        let parsed = ssh::config::parse(&text);
        let default_user = std::env::var("USER").unwrap_or_else(|_| "root".to_string());
        let aliases: Vec<String> = parsed.hosts.iter().map(|h| h.alias.clone()).collect();
        let mut skipped = parsed.skipped;
        let mut new_hosts: Vec<NewHost> = Vec::new();
        for host in parsed.hosts {
            let proxy_jump = match host.proxy_jump {
                Some(jump) if aliases.contains(&jump) => Some(jump),
                Some(jump) => {
                    // `[user@]host[:port]`: a host of its own.
                    let (user, hostname, port) = ssh::config::parse_jump(&jump);
                    let name = name_for(&hostname);
                    if !new_hosts.iter().any(|h| h.name == name) {
                        new_hosts.push(NewHost {
                            name: name.clone(),
                            hostname,
                            port,
                            user: user.unwrap_or_else(|| default_user.clone()),
                            identity_file: None,
                            proxy_jump: None,
                        });
                    }
                    Some(name)
                }
                None => None,
            };
            new_hosts.push(NewHost {
                name: host.alias,
                hostname: host.hostname,
                port: host.port,
                user: host.user.unwrap_or_else(|| default_user.clone()),
                identity_file: host.identity_file,
                proxy_jump,
            });
        }
        // Jump hosts before the hosts that use them.
        let mut imported = Vec::new();
        let mut pending = new_hosts;
        while !pending.is_empty() {
            let before = pending.len();
            let mut waiting = Vec::new();
            for host in pending {
                let ready = match &host.proxy_jump {
                    None => true,
                    Some(jump) => self.store.host(jump).await?.is_some(),
                };
                if !ready {
                    waiting.push(host);
                    continue;
                }
                let name = host.name.clone();
                match self.add(admin, host).await {
                    Ok(host) => imported.push(host),
                    Err(e) => skipped.push(format!("{name}: {}", ApiError::from(e).message)),
                }
            }
            if waiting.len() == before {
                skipped.extend(waiting.iter().map(|h| format!("{}: its ProxyJump could not be imported", h.name)));
                break;
            }
            pending = waiting;
        }
        tracing::info!(imported = imported.len(), skipped = skipped.len(), "imported hosts from ssh_config");
        Ok(ImportReport { imported, skipped })
    }
}
