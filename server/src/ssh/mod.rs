//! SSH to GPU hosts: one pooled russh connection per host, host keys pinned in
//! Sleuth's own known_hosts file, and commands built so that no value a user
//! typed can escape its quoting.
//!
//! There is deliberately no way to accept a host key without a person (or the
//! opt-in `--trust-on-first-use` flag) having said so: an unknown key stops the
//! connection and is offered for confirmation by its SHA256 fingerprint; a changed
//! key is refused with both fingerprints.

mod auth;
pub mod config;
pub mod exec;
pub mod known_hosts;
mod pool;
pub mod quote;

pub use known_hosts::{KeyStore, KeysError, KnownHosts, fingerprint};
pub use pool::{Connection, MAX_CHANNELS, Pool, SessionChannel, Target, TrustError};

/// Why talking to a host failed, in terms a person can act on.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SshError {
    #[error(
        "The host key of {host} is not known yet. Its fingerprint is {fingerprint} ({algorithm}); \
         confirm it to trust this host."
    )]
    UnknownHostKey { host: String, fingerprint: String, algorithm: String },
    #[error(
        "The host key of {host} has CHANGED: Sleuth trusts {old}, the host now presents {new}. \
         Nothing was run. If the host was reinstalled, confirm the new fingerprint; otherwise someone \
         may be intercepting the connection."
    )]
    HostKeyChanged { host: String, old: String, new: String },
    #[error("Cannot connect to {host}: {reason}")]
    Connect { host: String, reason: String },
    #[error("{host} refused the login of {user}: {reason}")]
    Auth { host: String, user: String, reason: String },
    #[error("The key {path} is protected by a passphrase; enter it for host {host}.")]
    NeedsPassphrase { host: String, path: String },
    #[error("Cannot use the key {path}: {reason}")]
    KeyFile { path: String, reason: String },
    #[error("The connection to {host} was lost: {reason}")]
    Lost { host: String, reason: String },
}
