//! One SSH connection per host, shared by every run and fetch on that host
//! (channels are multiplexed), opened on demand and reopened after a drop.
//!
//! - Keepalives every 10 s, and no inactivity timeout: a benchmark that prints
//!   nothing for minutes keeps its connection. Three unanswered keepalives
//!   mean the host is gone: a frozen host is noticed within ~40 s, inside
//!   OpenSSH's own ServerAliveInterval 15 × ServerAliveCountMax 3.
//! - OpenSSH allows 10 sessions per connection (MaxSessions); a semaphore per
//!   connection queues channels beyond that instead of failing them.
//! - ProxyJump: the target's SSH stream runs inside a direct-tcpip channel of the
//!   jump host's pooled connection.

use super::known_hosts::{KeyCheck, KnownHosts, fingerprint};
use super::{SshError, auth};
use russh::Channel;
use russh::client::{self, Handle, Msg};
use russh::keys::{PublicKey, PublicKeyOrCertificate};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Sessions per connection; OpenSSH's default MaxSessions.
pub const MAX_CHANNELS: usize = 10;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);
/// How long the SFTP handshake may take before the host is taken to have none.
const SFTP_START_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a channel waits for the server to accept another session.
const CHANNEL_QUEUE_TIMEOUT: Duration = Duration::from_secs(600);

/// Where and how to log in, resolved from a stored host.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Target {
    pub name: String,
    pub hostname: String,
    pub port: u16,
    pub user: String,
    /// `None`: use the ssh-agent.
    pub identity_file: Option<PathBuf>,
    pub jump: Option<Box<Target>>,
}

impl Target {
    fn label(&self) -> String {
        if self.port == 22 { self.hostname.clone() } else { format!("{}:{}", self.hostname, self.port) }
    }
}

enum KeyOutcome {
    Unknown(PublicKey),
    Changed { old: String, new: PublicKey },
}

pub struct ClientHandler {
    hostname: String,
    port: u16,
    known_hosts: Arc<KnownHosts>,
    trust_on_first_use: bool,
    outcome: Arc<Mutex<Option<KeyOutcome>>>,
}

impl ClientHandler {
    fn record(&self, outcome: KeyOutcome) {
        if let Ok(mut slot) = self.outcome.lock() {
            *slot = Some(outcome);
        }
    }
}

impl client::Handler for ClientHandler {
    type Error = russh::Error;

    async fn check_server_key(&mut self, offered: &PublicKeyOrCertificate) -> Result<bool, Self::Error> {
        // Host certificates would need a CA to trust; refusing is the safe answer.
        let PublicKeyOrCertificate::PublicKey { key, .. } = offered else {
            return Ok(false);
        };
        match self.known_hosts.check(&self.hostname, self.port, key).await {
            Ok(KeyCheck::Trusted) => Ok(true),
            Ok(KeyCheck::Unknown) if self.trust_on_first_use => {
                tracing::warn!(host = %self.hostname, fingerprint = %fingerprint(key), "trusting a new host key (--trust-on-first-use)");
                Ok(self.known_hosts.trust(&self.hostname, self.port, key).await.is_ok())
            }
            Ok(KeyCheck::Unknown) => {
                self.record(KeyOutcome::Unknown(key.clone()));
                Ok(false)
            }
            Ok(KeyCheck::Changed { old }) => {
                tracing::warn!(host = %self.hostname, %old, new = %fingerprint(key), "host key changed; refusing");
                self.record(KeyOutcome::Changed { old, new: key.clone() });
                Ok(false)
            }
            Err(e) => {
                tracing::error!("cannot check the key of {}: {}", self.hostname, crate::error::chain(&e));
                Ok(false)
            }
        }
    }
}

pub struct Connection {
    handle: Handle<ClientHandler>,
    channels: Arc<Semaphore>,
    /// One long-lived SFTP session per connection, opened on first use: a file
    /// fetch then costs a round trip, not a new session.
    sftp: tokio::sync::OnceCell<Arc<russh_sftp::client::SftpSession>>,
    /// Whether an SFTP session was opened ahead of need (`Pool::warm_sftp`):
    /// once per connection, so a host without SFTP is not asked on every run.
    sftp_warmed: std::sync::atomic::AtomicBool,
    host: String,
    /// When the host last answered (Unix ms): the connection's opening, then
    /// each answered ping ([`probe`]).
    heard_ms: std::sync::atomic::AtomicI64,
    /// Keeps the jump host's connection (which carries this one) alive.
    _jump: Option<Arc<Connection>>,
}

/// An open session channel and its place among the connection's channels.
pub struct SessionChannel {
    pub channel: Channel<Msg>,
    pub connection: Arc<Connection>,
    _permit: OwnedSemaphorePermit,
}

impl Connection {
    pub fn is_closed(&self) -> bool {
        self.handle.is_closed()
    }

    /// How long the host has not answered a ping (0 right after one). A run's
    /// page says so once it is long ("no data from gpu1 for 20 s").
    pub fn silent_for(&self) -> Duration {
        let heard = self.heard_ms.load(std::sync::atomic::Ordering::Relaxed);
        Duration::from_millis(u64::try_from(crate::time::now_ms() - heard).unwrap_or(0))
    }

    pub fn host(&self) -> &str {
        &self.host
    }

    async fn open_session(self: &Arc<Self>) -> Result<SessionChannel, SshError> {
        let permit = self.channels.clone().acquire_owned().await.map_err(|_| self.lost("pool closed"))?;
        // The server may still count sessions we have closed (or have a lower
        // MaxSessions than we assume): a refused channel waits and tries again.
        let mut delay = Duration::from_millis(20);
        let deadline = tokio::time::Instant::now() + CHANNEL_QUEUE_TIMEOUT;
        loop {
            match self.handle.channel_open_session().await {
                Ok(channel) => return Ok(SessionChannel { channel, connection: self.clone(), _permit: permit }),
                Err(russh::Error::ChannelOpenFailure(_)) if tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(1));
                }
                Err(e) => return Err(self.lost(&e.to_string())),
            }
        }
    }

    async fn sftp(self: &Arc<Self>) -> Result<Arc<russh_sftp::client::SftpSession>, SshError> {
        self.sftp
            .get_or_try_init(|| async {
                let session = self.open_session().await?;
                // The SFTP channel lives as long as the connection: keep its place.
                let SessionChannel { channel, _permit: permit, .. } = session;
                channel.request_subsystem(true, "sftp").await.map_err(|e| self.lost(&e.to_string()))?;
                // A host without an SFTP subsystem never answers the handshake.
                let sftp = tokio::time::timeout(
                    SFTP_START_TIMEOUT,
                    russh_sftp::client::SftpSession::new(channel.into_stream()),
                )
                .await
                .map_err(|_| self.lost("the host did not start an SFTP session (is its `Subsystem sftp` enabled?)"))?
                .map_err(|e| self.lost(&format!("the host's SFTP subsystem did not start: {e}")))?;
                // Only once it started: a failed start gives its place back.
                permit.forget();
                Ok(Arc::new(sftp))
            })
            .await
            .cloned()
    }

    fn lost(&self, reason: &str) -> SshError {
        SshError::Lost { host: self.host.clone(), reason: reason.to_string() }
    }
}

/// Why a fingerprint was not trusted.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("This host has not offered a key to confirm; test the connection first.")]
    NothingOffered,
    #[error("The fingerprint does not match: the host offered {offered}.")]
    Mismatch { offered: String },
    #[error(transparent)]
    Keys(#[from] super::known_hosts::KeysError),
}

const KEEPALIVE: Duration = Duration::from_secs(10);
/// How often the connection is pinged for [`Connection::silent_for`].
const PING_EVERY: Duration = Duration::from_secs(5);

/// Pings the host every [`PING_EVERY`] while the connection is open and
/// notes each answer. Keepalives (russh's) decide when the host is gone; this
/// only tells how long it has been quiet, which they do not expose. A frozen
/// host leaves a ping unanswered until the keepalives close the connection.
fn probe(connection: &Arc<Connection>) {
    let weak = Arc::downgrade(connection);
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(PING_EVERY).await;
            let Some(connection) = weak.upgrade() else { break };
            if connection.is_closed() || connection.handle.send_ping().await.is_err() || connection.is_closed() {
                break;
            }
            connection.heard_ms.store(crate::time::now_ms(), std::sync::atomic::Ordering::Relaxed);
        }
    });
}
const KEEPALIVES_UNANSWERED: usize = 3;

/// A host's pooled connection, if open; its lock serializes connecting.
type Slot = Arc<tokio::sync::Mutex<Option<Arc<Connection>>>>;

pub struct Pool {
    known_hosts: Arc<KnownHosts>,
    trust_on_first_use: bool,
    /// One slot per host name; the slot's lock serializes connecting.
    slots: Mutex<HashMap<String, Slot>>,
    /// Passphrases for protected keys, by host name; memory only.
    passphrases: Mutex<HashMap<String, String>>,
}

impl Pool {
    pub fn new(known_hosts: KnownHosts, trust_on_first_use: bool) -> Self {
        Self {
            known_hosts: Arc::new(known_hosts),
            trust_on_first_use,
            slots: Mutex::new(HashMap::new()),
            passphrases: Mutex::new(HashMap::new()),
        }
    }

    /// A new session channel on the host's pooled connection, connecting (again)
    /// if needed. Waits while the connection already has MAX_CHANNELS open.
    pub async fn session(&self, target: &Target) -> Result<SessionChannel, SshError> {
        let connection = self.connection(target).await?;
        match connection.open_session().await {
            Ok(session) => Ok(session),
            // The connection died between uses: one fresh attempt.
            Err(_) if connection.is_closed() => {
                self.drop_connection(&target.name, &connection).await;
                self.connection(target).await?.open_session().await
            }
            Err(e) => Err(e),
        }
    }

    /// The host's long-lived SFTP session, reconnecting once if the connection died.
    pub async fn sftp(&self, target: &Target) -> Result<Arc<russh_sftp::client::SftpSession>, SshError> {
        let connection = self.connection(target).await?;
        match connection.sftp().await {
            Ok(sftp) => Ok(sftp),
            Err(_) if connection.is_closed() => {
                self.drop_connection(&target.name, &connection).await;
                self.connection(target).await?.sftp().await
            }
            Err(e) => Err(e),
        }
    }

    /// The host's SFTP session if one is open now (never waits to open one);
    /// without one, opens one in the background for next time, once per
    /// connection.
    pub async fn open_sftp(self: &Arc<Self>, target: &Target) -> Option<Arc<russh_sftp::client::SftpSession>> {
        let connection = {
            let slot = self.slot(&target.name);
            let slot = slot.lock().await;
            slot.as_ref().filter(|c| !c.is_closed())?.clone()
        };
        if let Some(sftp) = connection.sftp.get() {
            return Some(sftp.clone());
        }
        if !connection.sftp_warmed.swap(true, std::sync::atomic::Ordering::Relaxed) {
            let host = target.name.clone();
            tokio::spawn(async move {
                if let Err(e) = connection.sftp().await {
                    tracing::debug!(host, "no SFTP session ahead of need: {e}");
                }
            });
        }
        None
    }

    /// The host's pooled connection, opened if there is none or it was lost.
    pub async fn connection(&self, target: &Target) -> Result<Arc<Connection>, SshError> {
        let slot = self.slot(&target.name);
        let mut slot = slot.lock().await;
        if let Some(connection) = slot.as_ref()
            && !connection.is_closed()
        {
            return Ok(connection.clone());
        }
        let connection = Arc::new(Box::pin(self.connect(target)).await?);
        probe(&connection);
        *slot = Some(connection.clone());
        Ok(connection)
    }

    /// Closes and forgets the host's connection (after an edit or removal).
    pub async fn forget(&self, name: &str) {
        let slot = self.slot(name);
        let mut slot = slot.lock().await;
        if let Some(connection) = slot.take() {
            let _ = connection.handle.disconnect(russh::Disconnect::ByApplication, "", "en").await;
        }
    }

    async fn drop_connection(&self, name: &str, dead: &Arc<Connection>) {
        let slot = self.slot(name);
        let mut slot = slot.lock().await;
        if slot.as_ref().is_some_and(|c| Arc::ptr_eq(c, dead)) {
            *slot = None;
        }
    }

    fn slot(&self, name: &str) -> Slot {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots.entry(name.to_string()).or_default().clone()
    }

    pub fn set_passphrase(&self, host: &str, passphrase: String) {
        self.passphrases.lock().unwrap_or_else(|e| e.into_inner()).insert(host.to_string(), passphrase);
    }

    /// The fingerprint a host offered that is waiting for confirmation (offered
    /// to this replica or another).
    pub async fn pending_fingerprint(&self, hostname: &str, port: u16) -> Option<String> {
        self.known_hosts.offered(hostname, port).await.map(|key| fingerprint(&key))
    }

    /// Trusts the key the host offered, if its fingerprint is `confirmed`.
    pub async fn trust(&self, hostname: &str, port: u16, confirmed: &str) -> Result<(), TrustError> {
        let Some(key) = self.known_hosts.offered(hostname, port).await else {
            return Err(TrustError::NothingOffered);
        };
        let offered = fingerprint(&key);
        if offered != confirmed.trim() {
            return Err(TrustError::Mismatch { offered });
        }
        Ok(self.known_hosts.trust(hostname, port, &key).await?)
    }

    /// Each host this pool has connected to, and whether its connection is
    /// open now (one being opened counts as not yet).
    pub fn states(&self) -> Vec<(String, bool)> {
        let slots: Vec<(String, Slot)> = {
            let slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            slots.iter().map(|(name, slot)| (name.clone(), slot.clone())).collect()
        };
        let mut states: Vec<(String, bool)> = slots
            .into_iter()
            .map(|(name, slot)| {
                let open = slot.try_lock().is_ok_and(|c| c.as_ref().is_some_and(|c| !c.is_closed()));
                (name, open)
            })
            .collect();
        states.sort();
        states
    }

    pub fn known_hosts(&self) -> &KnownHosts {
        &self.known_hosts
    }

    async fn connect(&self, target: &Target) -> Result<Connection, SshError> {
        let outcome = Arc::new(Mutex::new(None));
        let handler = ClientHandler {
            hostname: target.hostname.clone(),
            port: target.port,
            known_hosts: self.known_hosts.clone(),
            trust_on_first_use: self.trust_on_first_use,
            outcome: outcome.clone(),
        };
        let config = Arc::new(client::Config {
            // AES-GCM runs on the CPU's AES instructions (ring); it ingests
            // output faster than ChaCha20 here. Both are offered.
            preferred: russh::Preferred {
                cipher: std::borrow::Cow::Borrowed(&[
                    russh::cipher::AES_256_GCM,
                    russh::cipher::CHACHA20_POLY1305,
                    russh::cipher::AES_256_CTR,
                ]),
                ..russh::Preferred::DEFAULT
            },
            // A larger window than russh's 2 MB lets the host send ahead while we
            // store output; 8 MB ingests as fast as 16 MB did (perf.md), in less memory.
            window_size: 8 * 1024 * 1024,
            keepalive_interval: Some(KEEPALIVE),
            keepalive_max: KEEPALIVES_UNANSWERED,
            inactivity_timeout: None,
            nodelay: true,
            ..Default::default()
        });
        let cannot = |reason: String| SshError::Connect { host: target.label(), reason };

        let (jump, connecting) = match &target.jump {
            Some(jump) => {
                let via = self.connection(jump).await?;
                let channel = via
                    .handle
                    .channel_open_direct_tcpip(target.hostname.clone(), u32::from(target.port), "127.0.0.1", 0)
                    .await
                    .map_err(|e| cannot(format!("via {}: {e}", jump.name)))?;
                let stream = channel.into_stream();
                (
                    Some(via),
                    tokio::time::timeout(CONNECT_TIMEOUT, client::connect_stream(config, stream, handler)).await,
                )
            }
            None => (
                None,
                tokio::time::timeout(
                    CONNECT_TIMEOUT,
                    client::connect(config, (target.hostname.as_str(), target.port), handler),
                )
                .await,
            ),
        };
        let mut handle = match connecting {
            Err(_) => return Err(cannot(format!("no answer within {} s", CONNECT_TIMEOUT.as_secs()))),
            Ok(Ok(handle)) => handle,
            Ok(Err(e)) => {
                let refused = self.key_error(target, &outcome).await;
                return Err(refused.unwrap_or_else(|| cannot(e.to_string())));
            }
        };

        let passphrase = self.passphrases.lock().unwrap_or_else(|e| e.into_inner()).get(&target.name).cloned();
        auth::authenticate(
            &mut handle,
            &target.label(),
            &target.user,
            target.identity_file.as_deref(),
            passphrase.as_deref(),
        )
        .await?;
        tracing::info!(host = %target.name, "connected");
        Ok(Connection {
            handle,
            channels: Arc::new(Semaphore::new(MAX_CHANNELS)),
            sftp: tokio::sync::OnceCell::new(),
            sftp_warmed: std::sync::atomic::AtomicBool::new(false),
            host: target.name.clone(),
            heard_ms: std::sync::atomic::AtomicI64::new(crate::time::now_ms()),
            _jump: jump,
        })
    }

    /// Turns a refused host key into its error, keeping the offered key so a
    /// person can confirm it.
    async fn key_error(&self, target: &Target, outcome: &Mutex<Option<KeyOutcome>>) -> Option<SshError> {
        let outcome = outcome.lock().ok()?.take()?;
        let host = target.label();
        let (error, offered) = match outcome {
            KeyOutcome::Unknown(key) => {
                let error = SshError::UnknownHostKey {
                    host,
                    fingerprint: fingerprint(&key),
                    algorithm: key.algorithm().to_string(),
                };
                (error, key)
            }
            // A changed key can be confirmed too, after a person read both fingerprints.
            KeyOutcome::Changed { old, new } => (SshError::HostKeyChanged { host, old, new: fingerprint(&new) }, new),
        };
        if let Err(e) = self.known_hosts.offer(&target.hostname, target.port, &offered).await {
            tracing::error!("cannot keep the key {} offered: {}", target.hostname, crate::error::chain(&e));
        }
        Some(error)
    }
}
