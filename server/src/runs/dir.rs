//! A run's directory on its host (`~/.sleuth/runs/<id>-<tag>`, `$SLEUTH_RUN_DIR`):
//! the default working directory of its command and its server, and where its
//! artifacts are looked for.
//!
//! Made over the host's SFTP session when one is open, just before the command
//! is sent, so that the run's shell only `cd`s there: a `mkdir` process of its
//! own was a third of a run of `true` on a small host. The shell still makes it
//! when it is not there (no SFTP session yet, a request that lost the race).

use crate::ssh::{Pool, Target};
use std::sync::Arc;

/// The name of a run's directory: its id and a random tag, so that two Sleuth
/// servers (or one reinstalled, its ids counting from 1 again) using the same
/// account on a host never share a directory, and a run never finds files an
/// earlier one left.
pub fn name(run: i64) -> String {
    format!("{run}-{:08x}", rand::random::<u32>())
}

/// The run's directory on its host, as the shell expands it.
pub fn path(name: &str) -> String {
    format!("$HOME/.sleuth/runs/{name}")
}

/// The same, relative to the user's home (where SFTP starts).
pub fn from_home(name: &str) -> String {
    format!(".sleuth/runs/{name}")
}

/// Lines that export the directory as `SLEUTH_RUN_DIR` and go there, making it
/// if it is not there yet (a step's own `cwd` comes after, and wins).
pub fn prelude(name: &str) -> String {
    format!(
        "SLEUTH_RUN_DIR=\"{}\"; export SLEUTH_RUN_DIR\n\
         cd \"$SLEUTH_RUN_DIR\" 2>/dev/null || {{ mkdir -p \"$SLEUTH_RUN_DIR\" && cd \"$SLEUTH_RUN_DIR\"; }} \
         || {{ echo \"sleuth: cannot make $SLEUTH_RUN_DIR\" >&2; exit 97; }}\n",
        path(name)
    )
}

/// Makes the directory over the host's SFTP session if one is open (errors are
/// left to the shell's fallback; without one, the pool opens one for the next
/// run). Polled before the command is sent, so its request goes first.
pub async fn make_early(pool: &Arc<Pool>, target: &Target, name: &str) {
    if let Some(sftp) = pool.open_sftp(target).await {
        let _ = sftp.create_dir(from_home(name)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_directory_is_under_the_users_home() {
        let n = name(7);
        assert!(n.starts_with("7-") && n.len() == 10, "{n}");
        assert_ne!(n, name(7), "never the same twice");
        assert_eq!(path("7-ab"), "$HOME/.sleuth/runs/7-ab");
        assert_eq!(from_home("7-ab"), ".sleuth/runs/7-ab");
        let prelude = prelude("7-ab");
        assert!(prelude.contains("export SLEUTH_RUN_DIR") && prelude.contains("mkdir -p"), "{prelude}");
    }

    /// The prelude in a real shell: it makes the directory when it is missing,
    /// only enters it when it is there, and stops the script when it cannot.
    #[test]
    fn the_prelude_makes_enters_or_refuses() {
        let home = tempfile::tempdir().unwrap();
        let run = |script: &str| {
            std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("{}pwd", prelude("7-ab")))
                .env("HOME", home.path())
                .output()
                .unwrap_or_else(|e| panic!("{script}: {e}"))
        };
        let made = run("missing");
        assert!(made.status.success(), "{made:?}");
        assert!(String::from_utf8_lossy(&made.stdout).trim_end().ends_with(".sleuth/runs/7-ab"), "{made:?}");
        let entered = run("there");
        assert!(entered.status.success(), "{entered:?}");
        std::fs::remove_dir(home.path().join(".sleuth/runs/7-ab")).unwrap();
        std::fs::write(home.path().join(".sleuth/runs/7-ab"), "a file in the way").unwrap();
        let refused = run("blocked");
        assert_eq!(refused.status.code(), Some(97), "{refused:?}");
        assert!(String::from_utf8_lossy(&refused.stderr).contains("cannot make"), "{refused:?}");
    }
}
