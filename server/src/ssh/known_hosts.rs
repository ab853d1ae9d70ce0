//! Sleuth's pinned host keys, in the store so that every replica of a team
//! server trusts the same keys and a key confirmed through one replica is
//! trusted by all. Hosts are named as OpenSSH does — `name` for port 22,
//! `[name]:port` otherwise — and [`KnownHosts::openssh`] writes them as a
//! known_hosts file (`GET /api/v1/known_hosts`), which `ssh-keygen -lf` reads
//! and `ssh -o UserKnownHostsFile=` can use.
//!
//! Before the store held them, `DATA/known_hosts` did: [`KnownHosts::import`]
//! takes such a file in once.
//!
//! Where the keys are kept is a [`KeyStore`]: the SSH layer knows what it
//! needs from one, not the database behind it (`crate::hosts::keys` gives it
//! Sleuth's store).

use russh::keys::{HashAlg, PublicKey};
use std::path::Path;
use std::sync::Arc;

/// Why a host key could not be read, kept or written out.
#[derive(Debug, thiserror::Error)]
pub enum KeysError {
    #[error("the host key store failed")]
    Store(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("cannot encode the key")]
    Encode(#[source] russh::keys::ssh_key::Error),
    #[error("cannot read {path}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// Where pinned keys and offered keys are kept, by OpenSSH host pattern
/// (`name`, or `[name]:port`). Keys are `algorithm base64`.
#[async_trait::async_trait]
pub trait KeyStore: Send + Sync + 'static {
    /// `(algorithm, key)` pinned for the pattern.
    async fn pinned(&self, pattern: &str) -> Result<Vec<(String, String)>, KeysError>;
    /// `(pattern, key)` of every pinned key.
    async fn all_pinned(&self) -> Result<Vec<(String, String)>, KeysError>;
    /// Pins `key`, replacing the pattern's key of the same algorithm and any offer.
    async fn pin(&self, pattern: &str, algorithm: &str, key: &str) -> Result<(), KeysError>;
    async fn offer(&self, pattern: &str, key: &str) -> Result<(), KeysError>;
    async fn offered(&self, pattern: &str) -> Result<Option<String>, KeysError>;
}

/// The fingerprint as `ssh-keygen -lf` prints it: `SHA256:` and unpadded base64.
pub fn fingerprint(key: &PublicKey) -> String {
    key.fingerprint(HashAlg::Sha256).to_string()
}

#[derive(Debug, Clone, PartialEq)]
pub enum KeyCheck {
    Trusted,
    Unknown,
    /// Another key of the same algorithm is pinned for this host.
    Changed {
        old: String,
    },
}

pub struct KnownHosts {
    store: Arc<dyn KeyStore>,
}

fn host_pattern(host: &str, port: u16) -> String {
    if port == 22 { host.to_string() } else { format!("[{host}]:{port}") }
}

/// `algorithm base64` (a known_hosts line without host and comment).
fn encode(key: &PublicKey) -> Result<String, KeysError> {
    let encoded = key.to_openssh().map_err(KeysError::Encode)?;
    let mut parts = encoded.split_whitespace();
    Ok(format!("{} {}", parts.next().unwrap_or_default(), parts.next().unwrap_or_default()))
}

fn decode(stored: &str) -> Option<PublicKey> {
    let base64 = stored.split_whitespace().nth(1)?;
    russh::keys::parse_public_key_base64(base64).ok()
}

impl KnownHosts {
    pub fn new(store: Arc<dyn KeyStore>) -> Self {
        Self { store }
    }

    pub async fn check(&self, host: &str, port: u16, key: &PublicKey) -> Result<KeyCheck, KeysError> {
        let pinned = self.store.pinned(&host_pattern(host, port)).await?;
        let algorithm = key.algorithm().to_string();
        let mut changed = None;
        for (pinned_algorithm, stored) in pinned {
            let Some(recorded) = decode(&stored) else { continue };
            if recorded.key_data() == key.key_data() {
                return Ok(KeyCheck::Trusted);
            }
            if pinned_algorithm == algorithm {
                changed = Some(fingerprint(&recorded));
            }
        }
        Ok(match changed {
            Some(old) => KeyCheck::Changed { old },
            None => KeyCheck::Unknown,
        })
    }

    /// Pins `key` as the host's key, replacing any key of the same algorithm
    /// (the caller has had a person confirm the new fingerprint).
    pub async fn trust(&self, host: &str, port: u16, key: &PublicKey) -> Result<(), KeysError> {
        let stored = encode(key)?;
        self.store.pin(&host_pattern(host, port), key.algorithm().as_ref(), &stored).await
    }

    /// The fingerprints pinned for the host.
    pub async fn fingerprints(&self, host: &str, port: u16) -> Vec<String> {
        match self.store.pinned(&host_pattern(host, port)).await {
            Ok(keys) => keys.iter().filter_map(|(_, stored)| decode(stored)).map(|k| fingerprint(&k)).collect(),
            Err(e) => {
                tracing::error!("cannot read the host keys of {host}: {}", crate::error::chain(&e));
                Vec::new()
            }
        }
    }

    /// Keeps the key a host offered until a person confirms (or not) its fingerprint.
    pub async fn offer(&self, host: &str, port: u16, key: &PublicKey) -> Result<(), KeysError> {
        self.store.offer(&host_pattern(host, port), &encode(key)?).await
    }

    /// The key the host offered that is waiting for confirmation.
    pub async fn offered(&self, host: &str, port: u16) -> Option<PublicKey> {
        match self.store.offered(&host_pattern(host, port)).await {
            Ok(stored) => stored.as_deref().and_then(decode),
            Err(e) => {
                tracing::error!("cannot read the host key {host} offered: {}", crate::error::chain(&e));
                None
            }
        }
    }

    /// Every pinned key as known_hosts lines.
    pub async fn openssh(&self) -> Result<String, KeysError> {
        let keys = self.store.all_pinned().await?;
        Ok(keys.iter().map(|(pattern, key)| format!("{pattern} {key}\n")).collect())
    }

    /// Pins the keys of an OpenSSH known_hosts file (`host[,host] algorithm
    /// base64`; hashed names and markers are skipped, since they name no host
    /// Sleuth could look up). Returns how many keys were taken in.
    pub async fn import(&self, path: &Path) -> Result<usize, KeysError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| KeysError::Read { path: path.display().to_string(), source })?;
        let mut taken = 0;
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
            let mut fields = line.split_whitespace();
            let (Some(hosts), Some(algorithm), Some(base64)) = (fields.next(), fields.next(), fields.next()) else {
                continue;
            };
            if hosts.starts_with('|') || hosts.starts_with('@') || decode(&format!("{algorithm} {base64}")).is_none() {
                continue;
            }
            for pattern in hosts.split(',') {
                self.store.pin(pattern, algorithm, &format!("{algorithm} {base64}")).await?;
                taken += 1;
            }
        }
        Ok(taken)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(seed: u8) -> PublicKey {
        let private =
            russh::keys::PrivateKey::from(russh::keys::ssh_key::private::Ed25519Keypair::from_seed(&[seed; 32]));
        private.public_key().clone()
    }

    #[tokio::test]
    async fn unknown_then_trusted_then_changed() {
        for (_dir, _database, store) in crate::db::test_stores().await {
            let hosts = KnownHosts::new(std::sync::Arc::new(crate::hosts::keys::StoredKeys::new(store)));
            let (a, b) = (key(1), key(2));
            assert_eq!(hosts.check("gpu1", 2222, &a).await.unwrap(), KeyCheck::Unknown);
            hosts.offer("gpu1", 2222, &a).await.unwrap();
            assert_eq!(hosts.offered("gpu1", 2222).await, Some(a.clone()));
            hosts.trust("gpu1", 2222, &a).await.unwrap();
            assert_eq!(hosts.offered("gpu1", 2222).await, None, "trusting withdraws the offer");
            assert_eq!(hosts.check("gpu1", 2222, &a).await.unwrap(), KeyCheck::Trusted);
            assert_eq!(hosts.check("gpu1", 22, &a).await.unwrap(), KeyCheck::Unknown, "ports are distinct hosts");
            assert_eq!(hosts.check("gpu1", 2222, &b).await.unwrap(), KeyCheck::Changed { old: fingerprint(&a) });
            hosts.trust("gpu1", 2222, &b).await.unwrap();
            assert_eq!(hosts.check("gpu1", 2222, &b).await.unwrap(), KeyCheck::Trusted);
            assert_eq!(hosts.check("gpu1", 2222, &a).await.unwrap(), KeyCheck::Changed { old: fingerprint(&b) });
            assert_eq!(hosts.fingerprints("gpu1", 2222).await, vec![fingerprint(&b)]);
            let text = hosts.openssh().await.unwrap();
            assert_eq!(text.lines().count(), 1, "{text}");
            assert!(text.starts_with("[gpu1]:2222 ssh-ed25519 "), "{text}");
            assert!(fingerprint(&a).starts_with("SHA256:"));
        }
    }

    #[tokio::test]
    async fn an_old_known_hosts_file_is_taken_in() {
        for (dir, _database, store) in crate::db::test_stores().await {
            let hosts = KnownHosts::new(std::sync::Arc::new(crate::hosts::keys::StoredKeys::new(store)));
            let (a, b) = (key(3), key(4));
            let line = |pattern: &str, key: &PublicKey| format!("{pattern} {}\n", encode(key).unwrap());
            let file = dir.path().join("known_hosts");
            let text = format!(
                "# a comment\n{}{}|1|hashed= ssh-ed25519 AAAA\n@cert-authority * ssh-ed25519 AAAA\ngarbage\n",
                line("[gpu1]:2222,gpu1-alias", &a),
                line("gpu2", &b)
            );
            std::fs::write(&file, text).unwrap();
            assert_eq!(hosts.import(&file).await.unwrap(), 3);
            assert_eq!(hosts.check("gpu1", 2222, &a).await.unwrap(), KeyCheck::Trusted);
            assert_eq!(hosts.check("gpu1-alias", 22, &a).await.unwrap(), KeyCheck::Trusted);
            assert_eq!(hosts.check("gpu2", 22, &b).await.unwrap(), KeyCheck::Trusted);
        }
    }
}
