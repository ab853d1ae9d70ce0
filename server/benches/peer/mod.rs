//! What every benchmark here measures against: one loopback Debian sshd, the
//! OpenSSH client on it (through a ControlMaster, and fresh), and a Sleuth with a
//! host "bench" pointing at the same sshd, its key pinned on both sides.

#[path = "../../tests/api/sshd.rs"]
#[allow(dead_code)]
pub mod sshd;

pub use domain::ports::Actor;
use server::AppState;
use server::serve::Opened;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `SLEUTH_BENCH_QUICK=1`: a few iterations on small inputs, so `./dev test`
/// runs every benchmark once and none can rot; its figures are not for perf.md.
pub fn quick() -> bool {
    std::env::var_os("SLEUTH_BENCH_QUICK").is_some_and(|v| !v.is_empty() && v != "0")
}

pub struct Peer {
    pub sshd: sshd::Sshd,
    /// Holds the data dir and the OpenSSH files until the benchmark ends.
    _dir: tempfile::TempDir,
    pub state: AppState,
    /// What runs and the store do, which benchmarks watch from outside.
    pub live: std::sync::Arc<server::runs::Live>,
    pub store: server::db::Store,
    pub outputs: server::output::Outputs,
    pub investigation: String,
    destination: String,
    known_hosts: PathBuf,
    control: PathBuf,
    master: Child,
}

/// A PostgreSQL server for the benchmarks' team-server parts: the one
/// `SLEUTH_TEST_POSTGRES` names, or a scratch cluster of Debian's binaries
/// (`tools/pg-scratch`), removed when this is dropped. `Err` says why there is none.
pub struct Postgres {
    pub admin_url: String,
    scratch: Option<String>,
}

/// Why there is no PostgreSQL to measure against: `tools/pg-scratch`'s own words.
#[derive(Debug)]
pub struct NoPostgres(pub String);

impl std::fmt::Display for NoPostgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NoPostgres {}

fn pg_scratch() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/pg-scratch"))
}

impl Postgres {
    pub fn start() -> Result<Postgres, NoPostgres> {
        if let Ok(admin_url) = std::env::var("SLEUTH_TEST_POSTGRES") {
            return Ok(Postgres { admin_url, scratch: None });
        }
        Self::scratch()
    }

    /// A cluster of its own (never `SLEUTH_TEST_POSTGRES`'s), for a benchmark
    /// that stops and starts it.
    pub fn scratch() -> Result<Postgres, NoPostgres> {
        let out = Command::new(pg_scratch())
            .arg("start")
            .output()
            .map_err(|e| NoPostgres(format!("tools/pg-scratch: {e}")))?;
        if !out.status.success() {
            return Err(NoPostgres(String::from_utf8_lossy(&out.stderr).trim().to_string()));
        }
        let line = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let (dir, url) = line.split_once(' ').ok_or_else(|| NoPostgres(format!("tools/pg-scratch said {line:?}")))?;
        Ok(Postgres { admin_url: url.to_string(), scratch: Some(dir.to_string()) })
    }

    /// Stops the server (`pg_ctl -m fast`, as a restart for an upgrade does),
    /// keeping the cluster; `up` starts it again on its port.
    pub fn down(&self) -> Result<(), NoPostgres> {
        self.pg_scratch(&["down", "fast"])
    }

    pub fn up(&self) -> Result<(), NoPostgres> {
        self.pg_scratch(&["up"])
    }

    fn pg_scratch(&self, what: &[&str]) -> Result<(), NoPostgres> {
        let dir = self.scratch.as_deref().ok_or_else(|| NoPostgres("not a cluster of this benchmark's own".into()))?;
        let mut args = vec![what[0], dir];
        args.extend(&what[1..]);
        let out = Command::new(pg_scratch())
            .args(&args)
            .output()
            .map_err(|e| NoPostgres(format!("tools/pg-scratch: {e}")))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(NoPostgres(String::from_utf8_lossy(&out.stderr).trim().to_string()))
        }
    }

    /// A new empty database on it, as a `--database` value.
    pub async fn database(&self) -> server::db::Database {
        server::db::Database::Postgres(
            server::db::scratch_postgres_database(&self.admin_url).await.expect("a scratch database"),
        )
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if let Some(dir) = &self.scratch {
            let _ = Command::new(pg_scratch()).args(["stop", dir]).status();
        }
    }
}

impl Peer {
    pub async fn start() -> Peer {
        Self::start_on(None).await
    }

    /// A peer whose Sleuth keeps its store in `database` (`None`: SQLite in its data dir).
    pub async fn start_on(database: Option<server::db::Database>) -> Peer {
        Self::start_with(database, true).await
    }

    /// `search`: whether this Sleuth keeps a search index (indexing a run's
    /// output after it ends would run beside the next measurement).
    pub async fn start_with(database: Option<server::db::Database>, search: bool) -> Peer {
        let sshd = sshd::Sshd::start();
        let dir = tempfile::tempdir().expect("temp dir");
        let user = sshd::whoami();
        // OpenSSH with Sleuth's strictness: the host key is pinned, nothing else accepted.
        let host_key = std::fs::read_to_string(sshd.dir.path().join("hostkey.pub")).expect("host key");
        let known_hosts = dir.path().join("known_hosts");
        std::fs::write(&known_hosts, format!("[127.0.0.1]:{} {host_key}", sshd.port)).expect("known_hosts");
        let control = dir.path().join("cm");
        // A built site (`./dev build`) lets a browser hydrate the pages; without
        // one they are served all the same.
        let site = std::env::var_os("SLEUTH_SITE").map_or_else(|| dir.path().join("site"), PathBuf::from);
        let Opened { state, live, store, outputs, .. } =
            Self::sleuth_with(&dir.path().join("data"), &site, database, search).await;
        let (notebook, actor) = (state.notebook.clone(), Actor::local());
        notebook
            .add_host(
                &actor,
                domain::hosts::NewHost {
                    name: "bench".into(),
                    hostname: "127.0.0.1".into(),
                    port: Some(sshd.port),
                    user: user.clone(),
                    identity_file: Some(sshd.client_key.display().to_string()),
                    proxy_jump: None,
                },
            )
            .await
            .expect("host");
        let _ = notebook.test_host(&actor, "bench").await;
        notebook.trust_host(&actor, "bench", &sshd.host_key_fingerprint()).await.expect("trust");
        let investigation = notebook
            .create_investigation(&actor, domain::model::NewInvestigation { title: "bench".into(), question: None })
            .await
            .expect("investigation")
            .id;
        let mut peer = Peer {
            destination: format!("{user}@127.0.0.1"),
            master: Command::new("true").spawn().expect("placeholder"),
            sshd,
            _dir: dir,
            state,
            live,
            store,
            outputs,
            investigation,
            known_hosts,
            control,
        };
        let control_opt = peer.control_opt();
        peer.master = peer
            .ssh(&["-o", "ControlMaster=yes", "-o", &control_opt, "-N"])
            .arg(&peer.destination)
            .spawn()
            .expect("master");
        while !peer.control.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        peer
    }

    /// A Sleuth (another replica, on PostgreSQL) with a data dir of its own.
    pub async fn sleuth(
        data: &std::path::Path,
        site: &std::path::Path,
        database: Option<server::db::Database>,
    ) -> AppState {
        Self::sleuth_with(data, site, database, true).await.state
    }

    pub async fn sleuth_with(
        data: &std::path::Path,
        site: &std::path::Path,
        database: Option<server::db::Database>,
        search: bool,
    ) -> Opened {
        let options =
            server::serve::Options { no_auth: true, database, no_search_index: !search, ..Default::default() };
        server::serve::open(data, site, options).await.expect("state")
    }

    fn ssh(&self, extra: &[&str]) -> Command {
        let mut c = Command::new("ssh");
        c.args(["-q", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes"])
            .arg("-o")
            .arg(format!("UserKnownHostsFile={}", self.known_hosts.display()))
            .arg("-i")
            .arg(&self.sshd.client_key)
            .arg("-p")
            .arg(self.sshd.port.to_string())
            .args(extra);
        c
    }

    fn control_opt(&self) -> String {
        format!("ControlPath={}", self.control.display())
    }

    /// `ssh -S <ControlMaster socket> host <command>`.
    pub fn via_master(&self, command: &str) -> Command {
        let mut c = self.ssh(&["-o", &self.control_opt()]);
        c.arg(&self.destination).arg(command);
        c
    }

    /// `scp` of `remote` (on the host, `~` allowed) to `local`, over the ControlMaster.
    pub fn scp_via_master(&self, remote: &str, local: &std::path::Path) -> Command {
        let mut c = Command::new("scp");
        c.args(["-q", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes"])
            .arg("-o")
            .arg(format!("UserKnownHostsFile={}", self.known_hosts.display()))
            .arg("-o")
            .arg(self.control_opt())
            .arg("-i")
            .arg(&self.sshd.client_key)
            .arg("-P")
            .arg(self.sshd.port.to_string())
            .arg(format!("{}:{}", self.destination, remote))
            .arg(local);
        c
    }

    /// `ssh host <command>` with a new connection.
    pub fn fresh(&self, command: &str) -> Command {
        let mut c = self.ssh(&["-o", "ControlPath=none"]);
        c.arg(&self.destination).arg(command);
        c
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.master.kill();
    }
}

/// A field of /proc/self/status in kB (`VmRSS:`, `VmHWM:`).
pub fn status_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

pub fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Runs `command` to completion (output discarded) and times it.
pub fn timed(command: &mut Command) -> Duration {
    let started = Instant::now();
    let status = command.stdout(Stdio::null()).stderr(Stdio::inherit()).status().expect("ssh runs");
    assert!(status.success(), "{command:?}");
    started.elapsed()
}

/// `GET path` over a fresh connection 6 times: the p50 of the last 5 (the
/// first computes what later ones find cached) and the last answer's bytes.
pub async fn page_p50(addr: std::net::SocketAddr, path: &str) -> (Duration, Vec<u8>) {
    let (mut times, mut last) = (Vec::new(), Vec::new());
    for i in 0..6 {
        let started = Instant::now();
        let mut socket = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
        tokio::io::AsyncWriteExt::write_all(&mut socket, request.as_bytes()).await.expect("send");
        let mut body = Vec::new();
        tokio::io::AsyncReadExt::read_to_end(&mut socket, &mut body).await.expect("receive");
        if i > 0 {
            times.push(started.elapsed());
        }
        last = body;
    }
    (median(times), last)
}
