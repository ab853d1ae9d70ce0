//! What an operator watches: free space where the data lives, the store's
//! failures by kind, and `/metrics` (Prometheus text) with runs, the queue and
//! the SSH pool. Counters are process-wide: one server, one set.

use crate::db::Trouble;
use domain::runs::RunStatus;
use std::path::{Path, PathBuf};
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The data directory of the server in this process (run output, SQLite).
static DATA_DIR: RwLock<Option<PathBuf>> = RwLock::new(None);

static STORE_FULL: AtomicU64 = AtomicU64::new(0);
static STORE_UNAVAILABLE: AtomicU64 = AtomicU64::new(0);
static STORE_OTHER: AtomicU64 = AtomicU64::new(0);
/// When a write was last refused for a full disk (Unix ms; 0: never).
static LAST_FULL_MS: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);
/// Bytes free under the data dir when that write was refused.
static LAST_FULL_FREE: AtomicU64 = AtomicU64::new(0);
/// How long after a write refused for a full disk pages may still say so.
const FULL_SAID_FOR_MS: i64 = 60_000;

pub fn set_data_dir(dir: &Path) {
    if let Ok(mut held) = DATA_DIR.write() {
        *held = Some(dir.to_path_buf());
    }
}

pub fn data_dir() -> Option<PathBuf> {
    DATA_DIR.read().ok().and_then(|d| d.clone())
}

/// Bytes free to an unprivileged writer on the file system holding `path`.
pub fn free_bytes(path: &Path) -> Option<u64> {
    space(path).map(|(free, _)| free)
}

/// Counts a store failure (for `/metrics`).
pub fn count_store_error(trouble: Trouble) {
    let counter = match trouble {
        Trouble::Full => &STORE_FULL,
        Trouble::Unavailable => &STORE_UNAVAILABLE,
        Trouble::Other => &STORE_OTHER,
    };
    counter.fetch_add(1, Ordering::Relaxed);
    if trouble == Trouble::Full {
        LAST_FULL_FREE.store(data_dir().as_deref().and_then(free_bytes).unwrap_or(0), Ordering::Relaxed);
        LAST_FULL_MS.store(crate::time::now_ms(), Ordering::Relaxed);
    }
}

/// Store failures since the start: full, unavailable, other.
pub fn store_errors() -> [u64; 3] {
    [&STORE_FULL, &STORE_UNAVAILABLE, &STORE_OTHER].map(|n| n.load(Ordering::Relaxed))
}

/// When a write was last refused for a full disk.
pub fn last_full_ms() -> Option<i64> {
    Some(LAST_FULL_MS.load(Ordering::Relaxed)).filter(|&ms| ms > 0)
}

/// Whether a write was refused for a full disk within the last minute and
/// no space was freed under the data dir since (a write that succeeds is not
/// seen here; the disk's free space is).
pub fn refused_full_recently() -> bool {
    let recent = last_full_ms().is_some_and(|ms| crate::time::now_ms() - ms < FULL_SAID_FOR_MS);
    let then = LAST_FULL_FREE.load(Ordering::Relaxed);
    recent && data_dir().as_deref().and_then(free_bytes).is_none_or(|free| free <= then.saturating_add(1 << 20))
}

/// The sentence a write refused for a full disk answers with.
pub fn full_disk_message() -> String {
    match data_dir() {
        Some(dir) => format!(
            "The data disk is full: {} bytes free in {}. Free space or raise the limit; nothing was changed, and reading works.",
            free_bytes(&dir).unwrap_or(0),
            dir.display()
        ),
        None => "The database's disk is full. Free space on it; nothing was changed, and reading works.".into(),
    }
}

/// `--min-free`: how much free space new runs need under the data dir.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MinFree {
    Bytes(u64),
    /// A share of the disk's size.
    Percent(f64),
}

impl Default for MinFree {
    /// 2 GiB, or 5 % of a smaller disk: a benchmark's output is megabytes to
    /// gigabytes, and a full disk is what this floor keeps away.
    fn default() -> Self {
        MinFree::Bytes(2 << 30)
    }
}

/// A `--min-free` that is not a size (clap prints it).
#[derive(Debug, PartialEq, thiserror::Error)]
#[error("{0:?} is not a size: write e.g. 2G, 500M, 1048576 or 5%")]
pub struct NotASize(String);

impl std::str::FromStr for MinFree {
    type Err = NotASize;
    /// `2G`, `500M`, `1048576`, `5%`.
    fn from_str(text: &str) -> Result<Self, NotASize> {
        let text = text.trim();
        let wrong = || NotASize(text.to_string());
        if let Some(share) = text.strip_suffix('%') {
            let share: f64 = share.trim().parse().map_err(|_| wrong())?;
            return if (0.0..=100.0).contains(&share) { Ok(MinFree::Percent(share)) } else { Err(wrong()) };
        }
        let (digits, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
            Some(i) => text.split_at(i),
            None => (text, ""),
        };
        let shift = match unit.trim().to_ascii_uppercase().as_str() {
            "" | "B" => 0,
            "K" | "KB" | "KIB" => 10,
            "M" | "MB" | "MIB" => 20,
            "G" | "GB" | "GIB" => 30,
            "T" | "TB" | "TIB" => 40,
            _ => return Err(wrong()),
        };
        let n: u64 = digits.parse().map_err(|_| wrong())?;
        n.checked_mul(1 << shift).map(MinFree::Bytes).ok_or_else(wrong)
    }
}

impl MinFree {
    /// The floor in bytes on a disk of `size` bytes (the default: 5 % of a
    /// disk smaller than 40 GiB).
    pub fn bytes(self, size: u64, default: bool) -> u64 {
        match self {
            MinFree::Bytes(b) if default => b.min(size / 20),
            MinFree::Bytes(b) => b,
            MinFree::Percent(p) => (size as f64 * p / 100.0) as u64,
        }
    }
}

/// (free, size) of the file system holding `path`.
pub fn space(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
    // SAFETY: `c` is a NUL-terminated path and `stat` is a valid out-pointer.
    if unsafe { libc::statvfs(c.as_ptr(), stat.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: statvfs returned 0, so it filled `stat` in.
    let stat = unsafe { stat.assume_init() };
    Some((stat.f_bavail.saturating_mul(stat.f_frsize), stat.f_blocks.saturating_mul(stat.f_frsize)))
}

/// Everything `/metrics` shows, gathered by the handler.
pub struct Snapshot {
    /// Runs by status.
    pub runs: Vec<(domain::runs::RunStatus, i64)>,
    /// Pooled SSH connections by host: whether one is open now.
    pub ssh: Vec<(String, bool)>,
}

/// Prometheus text exposition format, version 0.0.4.
pub fn render(snapshot: &Snapshot) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, samples: &[(String, f64)]| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (labels, value) in samples {
            let _ = writeln!(out, "{name}{labels} {value}");
        }
    };
    let runs: Vec<(String, f64)> =
        snapshot.runs.iter().map(|(status, n)| (format!("{{status=\"{}\"}}", status.as_str()), *n as f64)).collect();
    metric("sleuth_runs", "gauge", "Runs in the store by status.", &runs);
    let queued = snapshot.runs.iter().filter(|(s, _)| *s == RunStatus::Queued).map(|(_, n)| *n).sum::<i64>();
    metric("sleuth_run_queue_depth", "gauge", "Runs waiting to start.", &[(String::new(), queued as f64)]);
    let ssh: Vec<(String, f64)> = snapshot
        .ssh
        .iter()
        .map(|(host, open)| (format!("{{host=\"{}\"}}", label(host)), if *open { 1.0 } else { 0.0 }))
        .collect();
    metric("sleuth_ssh_connection_open", "gauge", "Whether the pooled SSH connection to a host is open.", &ssh);
    let errors = [("full", &STORE_FULL), ("unavailable", &STORE_UNAVAILABLE), ("other", &STORE_OTHER)]
        .map(|(kind, n)| (format!("{{kind=\"{kind}\"}}"), n.load(Ordering::Relaxed) as f64));
    metric("sleuth_store_errors_total", "counter", "Store operations that failed, by why.", &errors);
    metric(
        "sleuth_http_connections_open",
        "gauge",
        "HTTP connections open now.",
        &[(String::new(), crate::listen::open_connections() as f64)],
    );
    if let Ok(entries) = std::fs::read_dir("/proc/self/fd") {
        let limit = open_files_limit();
        let mut fds = vec![(String::new(), entries.count() as f64)];
        fds.extend(limit.map(|l| ("{kind=\"limit\"}".to_string(), l as f64)));
        metric("sleuth_open_files", "gauge", "File descriptors open now (and the process's limit).", &fds);
    }
    if let Some(free) = data_dir().as_deref().and_then(free_bytes) {
        metric(
            "sleuth_data_disk_free_bytes",
            "gauge",
            "Bytes free where run output is kept.",
            &[(String::new(), free as f64)],
        );
    }
    out
}

/// The process's soft limit on open files, from `/proc/self/limits`.
fn open_files_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// A label value as the exposition format quotes it.
fn label(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_quoted_and_runs_counted() {
        let text = render(&Snapshot {
            runs: vec![(RunStatus::Queued, 3), (RunStatus::Succeeded, 7)],
            ssh: vec![("gpu\"1\n".into(), true)],
        });
        assert!(text.contains("sleuth_runs{status=\"succeeded\"} 7\n"), "{text}");
        assert!(text.contains("sleuth_run_queue_depth 3\n"), "{text}");
        assert!(text.contains("sleuth_ssh_connection_open{host=\"gpu\\\"1\\n\"} 1\n"), "{text}");
        assert!(text.contains("# TYPE sleuth_store_errors_total counter"), "{text}");
    }

    #[test]
    fn floors_are_read_as_sizes_or_shares() {
        assert_eq!("2G".parse(), Ok(MinFree::Bytes(2 << 30)));
        assert_eq!(" 500 MiB".parse(), Ok(MinFree::Bytes(500 << 20)));
        assert_eq!("1048576".parse(), Ok(MinFree::Bytes(1 << 20)));
        assert_eq!("5%".parse(), Ok(MinFree::Percent(5.0)));
        for wrong in ["", "-1G", "2 parsecs", "120%", "99999999999T"] {
            assert!(wrong.parse::<MinFree>().is_err(), "{wrong:?}");
        }
        assert_eq!(MinFree::default().bytes(10 << 30, true), (10 << 30) / 20, "5 % of a small disk");
        assert_eq!(MinFree::default().bytes(1 << 40, true), 2 << 30);
        assert_eq!(MinFree::Bytes(7).bytes(1 << 40, false), 7);
    }

    #[test]
    fn free_space_is_read_from_the_file_system() {
        let dir = tempfile::tempdir().unwrap();
        assert!(free_bytes(dir.path()).is_some_and(|b| b > 0));
        assert_eq!(free_bytes(&dir.path().join("missing")), None);
    }
}
