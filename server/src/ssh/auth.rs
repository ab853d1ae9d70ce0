//! Logging in: a private key file on the server (OpenSSH ed25519/ecdsa/rsa,
//! optionally passphrase-protected) or the ssh-agent at `SSH_AUTH_SOCK`.
//! Key material and passphrases stay in this process; errors name paths only.

use super::SshError;
use russh::client::{Handle, Handler};
use russh::keys::PrivateKeyWithHashAlg;
use std::path::Path;
use std::sync::Arc;

pub async fn authenticate<H: Handler>(
    handle: &mut Handle<H>,
    host: &str,
    user: &str,
    identity_file: Option<&Path>,
    passphrase: Option<&str>,
) -> Result<(), SshError> {
    let refused = |reason: String| SshError::Auth { host: host.to_string(), user: user.to_string(), reason };
    match identity_file {
        Some(path) => {
            let key = load_key(host, path, passphrase)?;
            let hash = match handle.best_supported_rsa_hash().await {
                Ok(hash) => hash.flatten(),
                Err(e) => return Err(refused(e.to_string())),
            };
            let result = handle
                .authenticate_publickey(user, PrivateKeyWithHashAlg::new(Arc::new(key), hash))
                .await
                .map_err(|e| refused(e.to_string()))?;
            if result.success() {
                Ok(())
            } else {
                Err(refused(format!("the key {} is not authorized", path.display())))
            }
        }
        None => {
            let mut agent = russh::keys::agent::client::AgentClient::connect_env()
                .await
                .map_err(|e| refused(format!("no usable ssh-agent (SSH_AUTH_SOCK): {e}")))?;
            let identities = agent.request_identities().await.map_err(|e| refused(format!("ssh-agent: {e}")))?;
            if identities.is_empty() {
                return Err(refused("the ssh-agent holds no keys".into()));
            }
            for identity in identities {
                let key = identity.public_key().into_owned();
                let hash = handle.best_supported_rsa_hash().await.ok().flatten().flatten();
                if let Ok(result) = handle.authenticate_publickey_with(user, key, hash, &mut agent).await
                    && result.success()
                {
                    return Ok(());
                }
            }
            Err(refused("none of the ssh-agent's keys is authorized".into()))
        }
    }
}

fn load_key(host: &str, path: &Path, passphrase: Option<&str>) -> Result<russh::keys::PrivateKey, SshError> {
    use russh::keys::Error as KeyError;
    match russh::keys::load_secret_key(path, passphrase) {
        Ok(key) => Ok(key),
        Err(KeyError::KeyIsEncrypted) => {
            Err(SshError::NeedsPassphrase { host: host.to_string(), path: path.display().to_string() })
        }
        Err(e) if passphrase.is_some() && e.to_string().to_lowercase().contains("decrypt") => {
            Err(SshError::KeyFile { path: path.display().to_string(), reason: "wrong passphrase".into() })
        }
        Err(e) => Err(SshError::KeyFile { path: path.display().to_string(), reason: e.to_string() }),
    }
}
