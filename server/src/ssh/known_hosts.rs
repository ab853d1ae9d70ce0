//! Sleuth's own known_hosts file (OpenSSH format) in the data dir. Hosts are
//! written as OpenSSH does: `name` for port 22, `[name]:port` otherwise, so the
//! file can be read with `ssh-keygen -lf` or reused with `ssh -o UserKnownHostsFile=`.

use russh::keys::known_hosts::known_host_keys_path;
use russh::keys::{HashAlg, PublicKey};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;

/// The fingerprint as `ssh-keygen -lf` prints it: `SHA256:` and unpadded base64.
pub fn fingerprint(key: &PublicKey) -> String {
    key.fingerprint(HashAlg::Sha256).to_string()
}

#[derive(Debug, Clone, PartialEq)]
pub enum KeyCheck {
    Trusted,
    Unknown,
    /// The file holds another key of the same algorithm for this host.
    Changed {
        old: String,
    },
}

pub struct KnownHosts {
    path: PathBuf,
    /// Serializes appends from concurrent trust decisions.
    write: Mutex<()>,
}

impl KnownHosts {
    pub fn new(path: PathBuf) -> Self {
        Self { path, write: Mutex::new(()) }
    }

    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    pub fn check(&self, host: &str, port: u16, key: &PublicKey) -> Result<KeyCheck, String> {
        let known = known_host_keys_path(host, port, &self.path)
            .map_err(|e| format!("cannot read {}: {e}", self.path.display()))?;
        let mut changed = None;
        for (_, recorded) in known {
            if recorded.key_data() == key.key_data() {
                return Ok(KeyCheck::Trusted);
            }
            if recorded.algorithm() == key.algorithm() {
                changed = Some(fingerprint(&recorded));
            }
        }
        Ok(match changed {
            Some(old) => KeyCheck::Changed { old },
            None => KeyCheck::Unknown,
        })
    }

    /// Records `key` as the host's key, replacing any key of the same algorithm
    /// (the caller has had a person confirm the new fingerprint).
    pub fn trust(&self, host: &str, port: u16, key: &PublicKey) -> Result<(), String> {
        let _guard = self.write.lock().map_err(|_| "known_hosts lock poisoned".to_string())?;
        let pattern = host_pattern(host, port);
        let existing = std::fs::read_to_string(&self.path).unwrap_or_default();
        let algorithm = key.algorithm().to_string();
        let mut kept: Vec<&str> = existing
            .lines()
            .filter(|line| {
                let mut fields = line.split_whitespace();
                let same_host = fields.next().is_some_and(|h| h.split(',').any(|h| h == pattern));
                let same_algorithm = fields.next() == Some(algorithm.as_str());
                !(same_host && same_algorithm)
            })
            .collect();
        let encoded = key.to_openssh().map_err(|e| format!("cannot encode the key: {e}"))?;
        // to_openssh gives "algorithm base64 [comment]"; keep the first two fields.
        let mut parts = encoded.split_whitespace();
        let line = format!("{pattern} {} {}", parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
        kept.push(&line);
        let tmp = self.path.with_extension("tmp");
        let mut file = std::fs::File::create(&tmp).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
        for line in kept {
            writeln!(file, "{line}").map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
        }
        file.sync_all().map_err(|e| e.to_string())?;
        std::fs::rename(&tmp, &self.path).map_err(|e| format!("cannot replace {}: {e}", self.path.display()))
    }
}

fn host_pattern(host: &str, port: u16) -> String {
    if port == 22 { host.to_string() } else { format!("[{host}]:{port}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(seed: u8) -> PublicKey {
        let private =
            russh::keys::PrivateKey::from(russh::keys::ssh_key::private::Ed25519Keypair::from_seed(&[seed; 32]));
        private.public_key().clone()
    }

    #[test]
    fn unknown_then_trusted_then_changed() {
        let dir = tempfile::tempdir().unwrap();
        let hosts = KnownHosts::new(dir.path().join("known_hosts"));
        let (a, b) = (key(1), key(2));
        assert_eq!(hosts.check("gpu1", 2222, &a).unwrap(), KeyCheck::Unknown);
        hosts.trust("gpu1", 2222, &a).unwrap();
        assert_eq!(hosts.check("gpu1", 2222, &a).unwrap(), KeyCheck::Trusted);
        assert_eq!(hosts.check("gpu1", 22, &a).unwrap(), KeyCheck::Unknown, "ports are distinct hosts");
        assert_eq!(hosts.check("gpu1", 2222, &b).unwrap(), KeyCheck::Changed { old: fingerprint(&a) });
        hosts.trust("gpu1", 2222, &b).unwrap();
        assert_eq!(hosts.check("gpu1", 2222, &b).unwrap(), KeyCheck::Trusted);
        assert_eq!(hosts.check("gpu1", 2222, &a).unwrap(), KeyCheck::Changed { old: fingerprint(&b) });
        let text = std::fs::read_to_string(hosts.path()).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.starts_with("[gpu1]:2222 ssh-ed25519 "), "{text}");
        assert!(fingerprint(&a).starts_with("SHA256:"));
    }
}
