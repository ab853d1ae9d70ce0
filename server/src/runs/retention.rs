//! What runs leave on their hosts, cleaned up:
//!
//! - **Run directories** (`~/.sleuth/runs/<id>-<tag>`) are swept after runs, at
//!   most once an hour per host: those unchanged for the host's `keep_days`
//!   (default 7) are removed, then the oldest until all of them fit the host's
//!   cap, if it has one. Directories of runs that are queued or running, or
//!   that a server still uses, and any changed in the last hour, are never
//!   removed; nothing that is not named like a run's directory is touched. The
//!   last sweep's report is kept on the host (the Hosts page shows it).
//! - **A deleted run's directory** (its step's, its investigation's) is removed
//!   when it is deleted; a host that cannot be reached then is swept later.
//! - **Commands a killed Sleuth left running**: a run ended `interrupted` while
//!   its command ran is marked `client_left`; whoever starts next (this server
//!   again, or the replica that took its runs over) stops every process on the
//!   host whose environment names the run's directory (`SLEUTH_RUN_DIR`, set
//!   for the command and inherited by all it starts), and says so on the run.

use crate::db::{Store, StoreError};
use crate::hosts::Hosts;
use crate::ssh::quote::quote;
use crate::ssh::{Pool, SshError, Target, exec};
use domain::hosts::{RunDirs, Sweep};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A host is swept at most this often.
const SWEEP_EVERY: Duration = Duration::from_secs(3600);
/// A directory changed more recently than this is never removed (another
/// Sleuth on the same account may be using it).
const FRESH_S: i64 = 3600;
/// How long a sweep's or a removal's script may take.
const WITHIN: Duration = Duration::from_secs(120);

/// Whether `name` is a run directory's name (`<id>-<8 hex>`): only those are removed.
pub fn is_dir_name(name: &str) -> bool {
    let Some((id, tag)) = name.split_once('-') else { return false };
    !id.is_empty()
        && id.len() <= 19
        && id.bytes().all(|b| b.is_ascii_digit())
        && tag.len() == 8
        && tag.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

/// The directory name in a run's stored `run_dir` (`~/.sleuth/runs/<name>`).
pub fn dir_name(run_dir: &str) -> Option<&str> {
    run_dir.strip_prefix("~/.sleuth/runs/").filter(|name| is_dir_name(name))
}

/// A run directory on a host, as the list script saw it.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub name: String,
    /// Its last change, in the host's seconds since the epoch.
    pub changed_s: i64,
    pub bytes: u64,
}

/// Lists the run directories: `now <s>`, then one line each. GNU `du --time`
/// gives each one's size and the newest change of anything in it, for all
/// of them in one process (`<KB>\t<mtime>\t<name>`); elsewhere a loop says
/// `dir <name> <mtime of the directory> <KB>`. Three processes per directory
/// took 13 s for 3 900 directories.
fn list_script() -> String {
    "d=\"$HOME/.sleuth/runs\"\n\
     echo \"now $(date +%s)\"\n\
     cd \"$d\" 2>/dev/null || exit 0\n\
     set -- [0-9]*-*\n\
     [ -d \"$1\" ] || exit 0\n\
     if du -sk --time --time-style=+%s -- \"$1\" >/dev/null 2>&1; then\n\
       du -sk --time --time-style=+%s -- \"$@\" 2>/dev/null\n\
     else\n\
       for e in \"$@\"; do\n\
         [ -d \"$e\" ] || continue\n\
         printf 'dir %s %s %s\\n' \"$e\" \"$(stat -c %Y -- \"$e\")\" \"$(du -sk -- \"$e\" | cut -f1)\"\n\
       done\n\
     fi\n\
     exit 0\n"
        .to_string()
}

/// The host's time and its run directories, from the list script's output.
fn parse_list(text: &str) -> (Option<i64>, Vec<Entry>) {
    let mut now = None;
    let mut entries = Vec::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let (name, changed, kb) = match words.as_slice() {
            ["now", s] => {
                now = s.parse().ok();
                continue;
            }
            ["dir", name, changed, kb] => (*name, *changed, *kb),
            [kb, changed, name] => (*name, *changed, *kb),
            _ => continue,
        };
        if let (true, Ok(changed_s), Ok(kb)) = (is_dir_name(name), changed.parse(), kb.parse::<u64>()) {
            entries.push(Entry { name: name.to_string(), changed_s, bytes: kb.saturating_mul(1024) });
        }
    }
    (now, entries)
}

/// Which directories a sweep removes: those older than `keep_days`, then the
/// oldest until the rest fit `max_bytes`; never one in `in_use`, nor one
/// changed in the last hour.
pub fn choose<'a>(
    entries: &'a [Entry],
    now_s: i64,
    keep_days: u32,
    max_bytes: Option<u64>,
    in_use: &HashSet<String>,
) -> Vec<&'a Entry> {
    let removable = |e: &Entry| !in_use.contains(&e.name) && now_s - e.changed_s >= FRESH_S;
    let keep_s = i64::from(keep_days) * 86_400;
    let mut oldest_first: Vec<&Entry> = entries.iter().collect();
    oldest_first.sort_by_key(|e| (e.changed_s, e.name.clone()));
    let mut chosen: Vec<&Entry> =
        oldest_first.iter().copied().filter(|e| removable(e) && now_s - e.changed_s > keep_s).collect();
    if let Some(max) = max_bytes {
        let mut total: u64 = entries.iter().map(|e| e.bytes).sum::<u64>() - chosen.iter().map(|e| e.bytes).sum::<u64>();
        for entry in oldest_first {
            if total <= max {
                break;
            }
            if removable(entry) && !chosen.iter().any(|c| c.name == entry.name) {
                total -= entry.bytes;
                chosen.push(entry);
            }
        }
    }
    chosen
}

/// Removes the named run directories (names checked: nothing else is touched).
fn remove_script(names: &[&str]) -> Option<String> {
    let names: Vec<String> = names.iter().filter(|n| is_dir_name(n)).map(|n| quote(n)).collect();
    (!names.is_empty())
        .then(|| format!("cd \"$HOME/.sleuth/runs\" 2>/dev/null || exit 0\nrm -rf -- {}\n", names.join(" ")))
}

/// Stops what is left of a run's command: every process of this user whose
/// environment names the run's directory. SIGTERM, 5 s, SIGKILL.
fn stop_client_script(name: &str) -> String {
    format!(
        "t=\"SLEUTH_RUN_DIR=$HOME/.sleuth/runs/\"{}\n\
         ours() {{ for e in $(grep -lsaF -- \"$t\" /proc/[0-9]*/environ 2>/dev/null); do p=${{e#/proc/}}; echo \"${{p%/environ}}\"; done; }}\n\
         ps=$(ours)\n\
         if [ -z \"$ps\" ]; then echo none; exit 0; fi\n\
         echo \"found $(echo $ps | wc -w)\"\n\
         kill -TERM $ps 2>/dev/null\n\
         i=0; while [ $i -lt 50 ]; do [ -z \"$(ours)\" ] && break; sleep 0.1; i=$((i+1)); done\n\
         ps=$(ours); if [ -n \"$ps\" ]; then kill -KILL $ps 2>/dev/null; echo killed; fi\n\
         echo done\n",
        quote(name)
    )
}

/// Why cleaning a host did not happen; a sweep's report says it.
#[derive(Debug, thiserror::Error)]
pub enum CleanError {
    #[error("the store: {0}")]
    Store(#[from] StoreError),
    #[error("{0}")]
    Host(#[from] crate::error::Error),
    #[error("{0}")]
    Ssh(#[from] SshError),
    #[error("{what} took over {} s", WITHIN.as_secs())]
    TooLong { what: &'static str },
    #[error("the host did not say its time")]
    NoTime,
    #[error("{what} failed: {said}")]
    Failed { what: &'static str, said: String },
}

/// Runs a cleaning script on the host, within [`WITHIN`]; its stdout.
async fn on_host(pool: &Pool, target: &Target, script: &str, what: &'static str) -> Result<String, CleanError> {
    let done = tokio::time::timeout(WITHIN, exec::capture(pool, target, script, 4 << 20))
        .await
        .map_err(|_| CleanError::TooLong { what })??;
    if done.exit_code != Some(0) {
        let said = String::from_utf8_lossy(&done.stderr).trim().chars().take(300).collect();
        return Err(CleanError::Failed { what, said });
    }
    Ok(String::from_utf8_lossy(&done.stdout).into_owned())
}

/// Sweeps hosts after runs, and removes what deleted runs left.
pub struct Retention {
    store: Store,
    pool: Arc<Pool>,
    hosts: Hosts,
    /// When each host was last swept by this server.
    swept: Mutex<HashMap<String, Instant>>,
}

impl Retention {
    pub fn new(store: Store, pool: Arc<Pool>) -> Arc<Self> {
        let hosts = Hosts::new(store.clone(), pool.clone());
        Arc::new(Self { store, pool, hosts, swept: Mutex::default() })
    }

    /// After a run on `target`: sweeps it in the background if it is due.
    pub fn after_run(self: &Arc<Self>, target: &Target) {
        {
            let mut swept = self.swept.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if swept.get(&target.name).is_some_and(|at| at.elapsed() < SWEEP_EVERY) {
                return;
            }
            swept.insert(target.name.clone(), Instant::now());
        }
        let (this, target) = (self.clone(), target.clone());
        tokio::spawn(async move { this.sweep(&target).await });
    }

    /// Sweeps `target`'s run directories now and keeps the report on the host.
    async fn sweep(&self, target: &Target) {
        let report = self.try_sweep(target).await.unwrap_or_else(|error| Sweep {
            at: crate::time::timestamp(crate::time::now_ms()),
            error: Some(error.to_string()),
            ..Sweep::default()
        });
        match serde_json::to_string(&report) {
            Ok(json) => {
                if let Err(e) = self.store.set_run_dirs_swept(&target.name, &json).await {
                    tracing::error!(host = %target.name, "cannot keep the sweep's report: {e}");
                }
            }
            Err(e) => tracing::error!("a sweep's report as JSON: {e}"),
        }
        if report.removed > 0 || report.error.is_some() {
            tracing::info!(host = %target.name, removed = report.removed, freed = report.removed_bytes, error = ?report.error, "swept run directories");
        }
    }

    async fn try_sweep(&self, target: &Target) -> Result<Sweep, CleanError> {
        let row = self.store.host(&target.name).await?;
        let policy: RunDirs = row.as_ref().map(crate::hosts::run_dirs_of).transpose()?.unwrap_or_default();
        let in_use: HashSet<String> = self
            .store
            .run_dirs_in_use(&target.name)
            .await?
            .iter()
            .filter_map(|d| dir_name(d))
            .map(str::to_string)
            .collect();
        let listed = on_host(&self.pool, target, &list_script(), "listing the run directories").await?;
        let (now, entries) = parse_list(&listed);
        let now = now.ok_or(CleanError::NoTime)?;
        let max_bytes = policy.max_mb.map(|mb| mb.saturating_mul(1 << 20));
        let chosen = choose(&entries, now, policy.keep_days, max_bytes, &in_use);
        let names: Vec<&str> = chosen.iter().map(|e| e.name.as_str()).collect();
        let (removed, removed_bytes) = (chosen.len() as u64, chosen.iter().map(|e| e.bytes).sum::<u64>());
        if let Some(script) = remove_script(&names) {
            on_host(&self.pool, target, &script, "removing run directories").await?;
        }
        let total: u64 = entries.iter().map(|e| e.bytes).sum();
        Ok(Sweep {
            at: crate::time::timestamp(crate::time::now_ms()),
            kept: entries.len() as u64 - removed,
            kept_bytes: total - removed_bytes,
            removed,
            removed_bytes,
            error: None,
        })
    }

    /// Removes the directories of deleted runs (`(host, run_dir)` as stored),
    /// in the background, after `wait` (their commands were just cancelled).
    pub fn remove_deleted(self: &Arc<Self>, runs: Vec<(String, String)>, wait: Duration) {
        let mut by_host: HashMap<String, Vec<String>> = HashMap::new();
        for (host, run_dir) in runs {
            if let Some(name) = dir_name(&run_dir) {
                by_host.entry(host).or_default().push(name.to_string());
            }
        }
        for (host, names) in by_host {
            let this = self.clone();
            tokio::spawn(async move {
                tokio::time::sleep(wait).await;
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                let Some(script) = remove_script(&names) else { return };
                let removed = async {
                    let target = this.hosts.target(&host).await?;
                    on_host(&this.pool, &target, &script, "removing deleted runs' directories").await
                };
                match removed.await {
                    Ok(_) => tracing::info!(host, n = names.len(), "removed deleted runs' directories"),
                    Err(e) => tracing::warn!(host, "cannot remove deleted runs' directories (a sweep will): {e}"),
                }
            });
        }
    }

    /// Stops the commands killed Sleuths left running (runs marked
    /// `client_left`), each claimed first so that one replica does it.
    /// Returns the runs that were told so, with their investigations.
    pub async fn stop_clients_left(&self) -> Vec<(String, i64)> {
        let left = match self.store.clients_left().await {
            Ok(left) => left,
            Err(e) => {
                tracing::error!("cannot look for commands left running: {e}");
                return Vec::new();
            }
        };
        let mut told = Vec::new();
        for (run, host, run_dir) in left {
            if !matches!(self.store.claim_client_left(run).await, Ok(true)) {
                continue;
            }
            let said = match dir_name(&run_dir) {
                Some(name) => {
                    let script = stop_client_script(name);
                    let stopped = async {
                        let target = self.hosts.target(&host).await?;
                        on_host(&self.pool, &target, &script, "stopping what a run left").await
                    };
                    match stopped.await {
                        Ok(said) => said,
                        Err(e) => {
                            tracing::warn!(
                                run,
                                host,
                                "cannot stop what its command left running (tried again at the next start): {e}"
                            );
                            let _ = self.store.unclaim_client_left(run).await;
                            continue;
                        }
                    }
                }
                // No directory: the command never started.
                None => String::new(),
            };
            let note = client_note(&said, &host);
            if let Err(e) = self.store.client_stopped(run, note.as_deref()).await {
                tracing::error!(run, "cannot record how its command was stopped: {e}");
            }
            if note.is_some() {
                tracing::warn!(run, host, "stopped what a run's command left running");
                if let Ok(Some(investigation)) = self.store.run_investigation(run).await {
                    told.push((investigation, run));
                }
            }
        }
        told
    }
}

/// The run's note from what the stop script said (`None`: nothing was left).
fn client_note(said: &str, host: &str) -> Option<String> {
    let found: usize =
        said.lines().find_map(|l| l.strip_prefix("found ")).and_then(|n| n.trim().parse().ok()).unwrap_or(0);
    if found == 0 {
        return None;
    }
    let how = if said.lines().any(|l| l == "killed") { "SIGTERM, then SIGKILL" } else { "SIGTERM" };
    Some(format!(
        "Its command was still running on {host} ({found} process{}) when Sleuth started again: stopped with {how}.",
        if found == 1 { "" } else { "es" }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, age_days: f64, mb: u64) -> Entry {
        Entry { name: name.into(), changed_s: 100 * 86_400 - (age_days * 86_400.0) as i64, bytes: mb << 20 }
    }

    #[test]
    fn only_run_directory_names_are_touched() {
        assert!(is_dir_name("12-0a1b2c3d"));
        for bad in ["12-0A1B2C3D", "12-0a1b2c3", "x-0a1b2c3d", "-0a1b2c3d", "12_0a1b2c3d", "..", "12-0a1b2c3d/..", ""] {
            assert!(!is_dir_name(bad), "{bad}");
        }
        assert_eq!(dir_name("~/.sleuth/runs/7-deadbeef"), Some("7-deadbeef"));
        assert_eq!(dir_name("~/.sleuth/runs/../../etc"), None);
        assert_eq!(
            remove_script(&["7-deadbeef", "'; rm -rf /"]).unwrap(),
            "cd \"$HOME/.sleuth/runs\" 2>/dev/null || exit 0\nrm -rf -- '7-deadbeef'\n"
        );
        assert_eq!(remove_script(&["../x"]), None);
    }

    #[test]
    fn old_ones_go_then_the_oldest_until_the_cap_fits_never_those_in_use_or_fresh() {
        let now = 100 * 86_400;
        let entries = [
            entry("1-00000001", 30.0, 100),
            entry("2-00000002", 8.0, 100),
            entry("3-00000003", 6.0, 300),
            entry("4-00000004", 5.0, 300),
            entry("5-00000005", 2.0, 300),
            entry("6-00000006", 0.01, 900), // changed 15 minutes ago
        ];
        let none = HashSet::new();
        let names = |chosen: Vec<&Entry>| chosen.iter().map(|e| e.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(choose(&entries, now, 7, None, &none)), ["1-00000001", "2-00000002"]);
        // A cap of 1000 MB: 2000 in all, 200 gone by age, then 3 and 4 (oldest first); the fresh one stays.
        assert_eq!(
            names(choose(&entries, now, 7, Some(1000 << 20), &none)),
            ["1-00000001", "2-00000002", "3-00000003", "4-00000004", "5-00000005"]
        );
        let in_use: HashSet<String> = ["1-00000001".to_string(), "3-00000003".to_string()].into();
        assert_eq!(
            names(choose(&entries, now, 7, Some(1500 << 20), &in_use)),
            ["2-00000002", "4-00000004", "5-00000005"]
        );
        assert!(choose(&entries, now, 3650, None, &none).is_empty());
    }

    #[test]
    fn the_list_is_read_and_odd_lines_ignored() {
        let (now, entries) = parse_list(
            "now 1700000000\ndir 5-0a0b0c0d 1699990000 12\ndir ../x 1 1\nnoise\ndir 6-0a0b0c0e x 1\n\
             40\t1699980000\t7-0a0b0c0f\n40\t1699980000\t../etc\n",
        );
        assert_eq!(now, Some(1_700_000_000));
        assert_eq!(
            entries,
            [
                Entry { name: "5-0a0b0c0d".into(), changed_s: 1_699_990_000, bytes: 12 * 1024 },
                Entry { name: "7-0a0b0c0f".into(), changed_s: 1_699_980_000, bytes: 40 * 1024 },
            ]
        );
    }

    /// The scripts in a real shell: the list sees run directories only; the
    /// stop script finds a process by its environment and stops it.
    #[test]
    fn the_scripts_run_in_a_real_shell() {
        let home = tempfile::tempdir().unwrap();
        let runs = home.path().join(".sleuth/runs");
        std::fs::create_dir_all(runs.join("9-0a0b0c0d")).unwrap();
        std::fs::create_dir_all(runs.join("not-a-run")).unwrap();
        std::fs::write(runs.join("9-0a0b0c0d/out.bin"), vec![0u8; 10_000]).unwrap();
        let sh = |script: &str| {
            std::process::Command::new("sh").arg("-c").arg(script).env("HOME", home.path()).output().unwrap()
        };
        let listed = sh(&list_script());
        let (now, entries) = parse_list(&String::from_utf8_lossy(&listed.stdout));
        assert!(now.is_some(), "{listed:?}");
        assert_eq!(entries.len(), 1, "{entries:?}");
        assert!(entries[0].bytes >= 10_000, "{entries:?}");

        let dir = runs.join("9-0a0b0c0d");
        let mut child = std::process::Command::new("sleep").arg("30").env("SLEUTH_RUN_DIR", &dir).spawn().unwrap();
        let said = String::from_utf8_lossy(&sh(&stop_client_script("9-0a0b0c0d")).stdout).to_string();
        assert!(said.contains("found 1") && said.contains("done"), "{said}");
        assert!(child.wait().unwrap().code().is_none(), "ended by a signal");
        assert_eq!(
            client_note(&said, "gpu").as_deref(),
            Some("Its command was still running on gpu (1 process) when Sleuth started again: stopped with SIGTERM.")
        );
        let again = String::from_utf8_lossy(&sh(&stop_client_script("9-0a0b0c0d")).stdout).to_string();
        assert_eq!(again.trim(), "none");
        assert_eq!(client_note(&again, "gpu"), None);

        sh(&remove_script(&["9-0a0b0c0d"]).unwrap());
        assert!(!dir.exists() && runs.join("not-a-run").exists());
    }
}
