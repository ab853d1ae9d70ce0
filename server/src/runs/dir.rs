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

/// A script that sends `signal` (`INT`, `KILL`) to every process of the run
/// `name` on the host, and prints their numbers: the shell sshd started for
/// it (its command line holds [`prelude`]'s first line) and every process
/// started under it (their environment holds the `SLEUTH_RUN_DIR` it
/// exported, also one that started a session of its own). A server beside
/// the run carries that too, and is left alone: it carries its token, and is
/// stopped as a server (`runs::server`), or kept for the next run.
pub fn signal_script(name: &str, signal: &str) -> String {
    // The shell first: a child killed before it would let it go on to its
    // next line. The patterns are put together at run time, so that this
    // script's own command line does not match them.
    format!(
        "n={name}\n\
         for f in $(grep -lsaF \"SLEUTH_RUN_DIR=\\\"\\$HOME/.sleuth/runs/$n\\\"\" /proc/[0-9]*/cmdline 2>/dev/null) \
                  $(grep -lsazxF \"SLEUTH_RUN_DIR=$HOME/.sleuth/runs/$n\" /proc/[0-9]*/environ 2>/dev/null); do\n\
           p=${{f#/proc/}}; p=${{p%/*}}\n\
           [ \"$p\" = \"$$\" ] && continue\n\
           grep -qsaz '^SLEUTH_SERVER_TOKEN=' \"/proc/$p/environ\" && continue\n\
           kill -{signal} \"$p\" 2>/dev/null && echo \"$p\"\n\
         done\n\
         exit 0\n",
        name = crate::ssh::quote::quote(name),
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

    /// A run's shell (which did not exec its last command) and what it started
    /// — a child, a grandchild in a session of its own, one that ignores
    /// SIGINT — are all signalled; another run and a server beside this one
    /// are not. Real processes, found as on a host (Linux `/proc`).
    #[test]
    fn the_signal_script_reaches_the_whole_run_and_nothing_else() {
        use std::process::{Command, Stdio};
        let home = tempfile::tempdir().unwrap();
        let spawn = |name: &str, command: &str| {
            Command::new("bash")
                .arg("-c")
                .arg(format!("{}{command}", prelude(name)))
                .env("HOME", home.path())
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        };
        let mut run = spawn("7-aaaaaaaa", "trap '' INT; sleep 31.7 & setsid sleep 31.8 & sleep 31.9; echo after");
        let mut other = spawn("8-bbbbbbbb", "sleep 32.1; true");
        let mut server = spawn("7-aaaaaaaa", "SLEUTH_SERVER_TOKEN=t; export SLEUTH_SERVER_TOKEN; exec sleep 32.2");
        let alive =
            |pattern: &str| Command::new("pgrep").args(["-fx", pattern]).output().is_ok_and(|o| o.status.success());
        let signal = |sig: &str| {
            let out =
                Command::new("sh").arg("-c").arg(signal_script("7-aaaaaaaa", sig)).env("HOME", home.path()).output();
            String::from_utf8_lossy(&out.unwrap().stdout).split_whitespace().count()
        };
        for _ in 0..50 {
            if ["sleep 31.7", "sleep 31.8", "sleep 31.9", "sleep 32.1", "sleep 32.2"].iter().all(|p| alive(p)) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        // The shell ignores SIGINT, and so do the children it started after the trap.
        assert_eq!(signal("INT"), 4, "the shell and its three children");
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(alive("sleep 31.7") && alive("sleep 31.8"), "they ignore SIGINT");
        assert_eq!(signal("KILL"), 4);
        let status = run.wait().unwrap();
        assert!(status.code().is_none(), "the shell was killed, not left to echo: {status:?}");
        std::thread::sleep(std::time::Duration::from_millis(300));
        for gone in ["sleep 31.7", "sleep 31.8", "sleep 31.9"] {
            assert!(!alive(gone), "{gone} is still running");
        }
        assert!(alive("sleep 32.1") && alive("sleep 32.2"), "another run and the server are left alone");
        let _ = (other.kill(), server.kill(), other.wait(), server.wait());
        let _ = Command::new("pkill").args(["-fx", "sleep 32.[12]"]).status();
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
