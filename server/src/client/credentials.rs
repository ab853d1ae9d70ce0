//! Which server the client talks to, with which token: `SLEUTH_URL` and
//! `SLEUTH_TOKEN`, else what `sleuth login` kept in
//! `$XDG_CONFIG_HOME/sleuth/credentials.json` (`~/.config/…`), readable by its
//! owner only.

use super::api::ClientError;
use std::io::Write;
use std::path::PathBuf;

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Credentials {
    pub url: String,
    /// None: a server under `--no-auth`.
    pub token: Option<String>,
}

pub fn path() -> Result<PathBuf, ClientError> {
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").filter(|d| !d.is_empty()).map(|home| PathBuf::from(home).join(".config")))
        .ok_or_else(|| {
            ClientError::Usage("Neither XDG_CONFIG_HOME nor HOME is set: nowhere to keep a token.".into())
        })?;
    Ok(config.join("sleuth").join("credentials.json"))
}

/// The environment first (a CI job), then the file; a token in the file is
/// used only for the URL it was kept with.
pub fn current() -> Result<Credentials, ClientError> {
    let env = |name| std::env::var(name).ok().filter(|v: &String| !v.trim().is_empty());
    let kept = read()?;
    match (env("SLEUTH_URL"), env("SLEUTH_TOKEN")) {
        (Some(url), token @ Some(_)) => Ok(Credentials { url, token }),
        (Some(url), None) => {
            let token = kept.filter(|k| same_server(&k.url, &url)).and_then(|k| k.token);
            Ok(Credentials { url, token })
        }
        (None, token) => {
            let kept = kept.ok_or_else(|| {
                ClientError::Usage(
                    "Not signed in: run `sleuth login URL`, or set SLEUTH_URL (and SLEUTH_TOKEN for a team server)."
                        .into(),
                )
            })?;
            Ok(Credentials { url: kept.url, token: token.or(kept.token) })
        }
    }
}

fn same_server(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

fn read() -> Result<Option<Credentials>, ClientError> {
    let path = path()?;
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            ClientError::Usage(format!(
                "{} is not what `sleuth login` writes ({e}); run `sleuth login` again.",
                path.display()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ClientError::Io { what: format!("reading {}", path.display()), source: e }),
    }
}

/// Writes the file whole or not at all (a temporary file renamed over it),
/// created 0600 in a 0700 directory: the token is a password.
pub fn write(credentials: &Credentials) -> Result<PathBuf, ClientError> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let path = path()?;
    let io = |what: String| move |source| ClientError::Io { what, source };
    let dir = path.parent().map(PathBuf::from).unwrap_or_default();
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(io(format!("creating {}", dir.display())))?;
    let temporary = dir.join(format!(".credentials.{}.tmp", std::process::id()));
    let json = serde_json::to_vec_pretty(credentials)
        .map_err(|e| ClientError::Usage(format!("the credentials did not serialize: {e}")))?;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temporary)
        .map_err(io(format!("creating {}", temporary.display())))?;
    let written = file.write_all(&json).and_then(|()| file.sync_all());
    if let Err(e) = written.and_then(|()| std::fs::rename(&temporary, &path)) {
        let _ = std::fs::remove_file(&temporary);
        return Err(ClientError::Io { what: format!("writing {}", path.display()), source: e });
    }
    Ok(path)
}
