//! Soak: a `sleuth serve` process under a mixed load (runs, note edits and
//! deletes, page and stream viewers, searches, run deletes) while faults come
//! in turn: the host's sshd killed, the data disk filled to the last byte,
//! PostgreSQL restarted, Sleuth SIGTERMed and started again, and a flood: 3 000
//! connections that never finish a request head (from six source addresses,
//! each under the per-address cap) while one viewer asks for 1 000 event
//! streams. On SQLite and on PostgreSQL (a scratch cluster of its own, so that
//! it can restart it). The load is signed in: an owner (admin) drives it, a
//! viewer of the investigation floods.
//!
//! It counts what must stay at zero:
//! - answers 5xx other than 503 (unavailable, and said so) and 507 (no space);
//! - bytes lost: a run that says `succeeded` holds its whole output, any other
//!   run holds a prefix of it; a note answered 2xx is there at the end as
//!   written (a note whose delete was answered 204 is gone);
//! - connections left in a transaction: PostgreSQL's `pg_stat_activity`, after
//!   each fault; SQLite has no such view, so there the symptom is counted
//!   instead: errors in Sleuth's log saying `transaction depth`;
//! - runs never ended, and panics in the log;
//! - 429s to anyone but the flooding viewer; and, during the flood, a
//!   `/healthz` slower than 2 s, a half-open connection left open past 35 s,
//!   the viewer's streams not capped (64, then 429 with `Retry-After`), RSS
//!   grown by more than 160 MB, open files not back to where they were.
//!
//! Per fault it prints how the requests were answered and how long until a
//! write was answered 201 again.
//!
//! `SLEUTH_BENCH_QUICK=1`: one round with short phases (about a minute per
//! backend), so `./dev test` runs it; its figures are not for perf.md.

#[path = "../tests/api/disk.rs"]
mod disk;
#[allow(dead_code)] // not every benchmark uses every part of the peer
mod peer;

use peer::sshd::Sshd;
use peer::{Postgres, quick};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Each run prints 20 × 300 numbers over ~2 s: long enough to be cut by a fault.
const COMMAND: &str = "for i in $(seq 1 20); do seq $((i*1000)) $((i*1000+299)); sleep 0.1; done";

fn expected_output() -> Vec<u8> {
    let mut out = String::new();
    for i in 1..=20 {
        for n in i * 1000..=i * 1000 + 299 {
            out.push_str(&format!("{n}\n"));
        }
    }
    out.into_bytes()
}

// ---- one HTTP/1.1 request, answered or not ---------------------------------

enum Reply {
    Answer {
        status: u16,
        body: Vec<u8>,
    },
    /// Nothing listens (Sleuth is restarting), or the connection was cut.
    Refused,
    TimedOut,
}

impl Reply {
    fn status(&self) -> Option<u16> {
        match self {
            Reply::Answer { status, .. } => Some(*status),
            _ => None,
        }
    }

    fn json(&self) -> Value {
        match self {
            Reply::Answer { body, .. } => serde_json::from_slice(body).unwrap_or(Value::Null),
            _ => Value::Null,
        }
    }
}

async fn http(
    addr: &str,
    token: Option<&str>,
    method: &str,
    path: &str,
    json: Option<&Value>,
    within: Duration,
) -> Reply {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        let body = json.map(Value::to_string).unwrap_or_default();
        let bearer = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{bearer}Content-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body.as_bytes()).await?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await?;
        Ok::<_, std::io::Error>(answer)
    };
    match tokio::time::timeout(within, exchange).await {
        Err(_) => Reply::TimedOut,
        Ok(Err(_)) => Reply::Refused,
        Ok(Ok(answer)) => parse(&answer).unwrap_or(Reply::Refused),
    }
}

/// Status and body (de-chunked) of a whole HTTP/1.1 answer; `None` if cut short.
fn parse(answer: &[u8]) -> Option<Reply> {
    let split = answer.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&answer[..split]).to_ascii_lowercase();
    let status = head.split(' ').nth(1)?.parse().ok()?;
    let mut rest = &answer[split + 4..];
    if !head.contains("transfer-encoding: chunked") {
        return Some(Reply::Answer { status, body: rest.to_vec() });
    }
    let mut body = Vec::new();
    loop {
        let line_end = rest.windows(2).position(|w| w == b"\r\n")?;
        let size = usize::from_str_radix(String::from_utf8_lossy(&rest[..line_end]).trim(), 16).ok()?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Some(Reply::Answer { status, body });
        }
        body.extend_from_slice(rest.get(..size)?);
        rest = rest.get(size + 2..)?;
    }
}

// ---- what was answered, by phase ------------------------------------------

#[derive(Default, Clone)]
struct Counts {
    requests: u64,
    ok: u64,
    client_errors: u64,
    unavailable: u64,
    no_space: u64,
    server_errors: u64,
    /// 429: only the flooding viewer may see one (goal 0 here).
    too_many: u64,
    refused: u64,
    timed_out: u64,
}

struct Soak {
    addr: String,
    /// The owner's API token: the steady load acts as a signed-in team member.
    token: String,
    phase: Mutex<String>,
    counts: Mutex<BTreeMap<String, Counts>>,
    /// The first few 5xx other than 503/507, to say what they were.
    bad: Mutex<Vec<String>>,
    stop: AtomicBool,
    /// Runs finished and checked, by status; bytes they lost; outputs not a prefix.
    runs: Mutex<BTreeMap<String, u64>>,
    bytes_lost: AtomicU64,
    runs_garbled: AtomicU64,
    runs_deleted: AtomicU64,
    runs_never_ended: Mutex<Vec<i64>>,
    /// Why runs that did not succeed ended, and how many each.
    run_errors: Mutex<BTreeMap<String, u64>>,
    /// Notes as last answered 2xx (`None`: deleted), and the writes whose
    /// answer never came (either outcome is right).
    notes: Mutex<BTreeMap<i64, Note>>,
    /// The slowest `/healthz` answer seen in each phase, in seconds.
    healthz: Mutex<BTreeMap<String, f64>>,
    flood: Mutex<Option<Flooded>>,
}

#[derive(Default)]
struct Note {
    /// Bodies any of which may be the note's now (the last acknowledged, and
    /// any later write that went unanswered); empty: deleted.
    may_be: Vec<String>,
    maybe_deleted: bool,
}

impl Soak {
    fn phase(&self, name: &str) {
        *self.phase.lock().unwrap() = name.to_string();
    }

    async fn call(&self, method: &str, path: &str, json: Option<&Value>) -> Reply {
        self.call_within(method, path, json, Duration::from_secs(30)).await
    }

    async fn call_within(&self, method: &str, path: &str, json: Option<&Value>, within: Duration) -> Reply {
        let reply = http(&self.addr, Some(&self.token), method, path, json, within).await;
        let phase = self.phase.lock().unwrap().clone();
        let mut counts = self.counts.lock().unwrap();
        let c = counts.entry(phase.clone()).or_default();
        c.requests += 1;
        match &reply {
            Reply::Answer { status, body } => match status {
                503 => c.unavailable += 1,
                507 => c.no_space += 1,
                429 => c.too_many += 1,
                500.. => {
                    c.server_errors += 1;
                    let mut bad = self.bad.lock().unwrap();
                    if bad.len() < 10 {
                        let said = String::from_utf8_lossy(&body[..body.len().min(300)]).to_string();
                        bad.push(format!("{phase}: {method} {path} → {status} {said}"));
                    }
                }
                400..=499 => c.client_errors += 1,
                _ => c.ok += 1,
            },
            Reply::Refused => c.refused += 1,
            Reply::TimedOut => c.timed_out += 1,
        }
        reply
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

// ---- the load --------------------------------------------------------------

/// Runs the step, waits for each run's end, checks its output against what
/// the command prints, and deletes every fifth.
async fn runner(soak: Arc<Soak>, step: i64) {
    let expected = expected_output();
    let mut n = 0u64;
    while !soak.stopped() {
        let started = soak.call("POST", &format!("/api/v1/steps/{step}/runs"), Some(&json!({}))).await;
        let Some(run) = (started.status() == Some(201)).then(|| started.json()[0]["id"].as_i64()).flatten() else {
            tokio::time::sleep(Duration::from_millis(300)).await;
            continue;
        };
        n += 1;
        // A person presses Run again after a failure, not at once: runs that
        // fail in a millisecond (the host down) would otherwise be most of the load.
        if !check_run(&soak, run, &expected).await {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        if n.is_multiple_of(5) && soak.call("DELETE", &format!("/api/v1/runs/{run}"), None).await.status() == Some(204)
        {
            soak.runs_deleted.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Waits (through faults) for the run to end, then checks what it kept;
/// whether it succeeded.
async fn check_run(soak: &Soak, run: i64, expected: &[u8]) -> bool {
    let deadline = Instant::now() + Duration::from_secs(180);
    let (status, error) = loop {
        let reply =
            soak.call_within("GET", &format!("/api/v1/runs/{run}?wait=10"), None, Duration::from_secs(20)).await;
        let json = reply.json();
        let status = json["status"].as_str().unwrap_or_default().to_string();
        if !status.is_empty() && status != "queued" && status != "running" {
            break (status, json["error"].as_str().unwrap_or_default().to_string());
        }
        if Instant::now() > deadline {
            soak.runs_never_ended.lock().unwrap().push(run);
            return false;
        }
        if reply.status() != Some(200) {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    };
    let output = loop {
        match soak.call("GET", &format!("/api/v1/runs/{run}/output"), None).await {
            Reply::Answer { status: 200, body } => break body,
            _ if Instant::now() > deadline => return false,
            _ => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    };
    let kept = output.iter().zip(expected).take_while(|(a, b)| a == b).count();
    if kept < output.len() {
        soak.runs_garbled.fetch_add(1, Ordering::Relaxed);
    }
    if status == "succeeded" {
        soak.bytes_lost.fetch_add((expected.len() - kept) as u64, Ordering::Relaxed);
    }
    if status != "succeeded" {
        let mut said = soak.run_errors.lock().unwrap();
        let words: String = error.chars().take(100).collect();
        *said.entry(format!("{status}: {words}")).or_default() += 1;
    }
    let succeeded = status == "succeeded";
    *soak.runs.lock().unwrap().entry(status).or_default() += 1;
    succeeded
}

/// Adds notes (with markup in them), edits each once, deletes every third,
/// remembering what each answer said is now there.
async fn editor(soak: Arc<Soak>, investigation: String) {
    let mut k = 0u64;
    while !soak.stopped() {
        k += 1;
        let body = format!("soak note {k} <script>alert({k})</script> {}", "x".repeat(2000));
        let created = soak
            .call(
                "POST",
                &format!("/api/v1/investigations/{investigation}/steps"),
                Some(&json!({ "kind": "note", "body": body })),
            )
            .await;
        let (Some(201), Some(id)) = (created.status(), created.json()["id"].as_i64()) else {
            tokio::time::sleep(Duration::from_millis(300)).await;
            continue;
        };
        soak.notes.lock().unwrap().insert(id, Note { may_be: vec![body], maybe_deleted: false });
        let edited = format!("soak note {k}, edited **twice** <img src=x onerror=alert(1)>");
        let patch = json!({ "body": edited, "version": created.json()["version"] });
        let reply = soak.call("PATCH", &format!("/api/v1/steps/{id}"), Some(&patch)).await;
        note_answered(&soak, id, reply.status(), Some(edited));
        if k.is_multiple_of(3) {
            let reply = soak.call("DELETE", &format!("/api/v1/steps/{id}"), None).await;
            note_answered(&soak, id, reply.status(), None);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// What a write's answer says the note is now (`None`: a delete).
fn note_answered(soak: &Soak, id: i64, status: Option<u16>, body: Option<String>) {
    let mut notes = soak.notes.lock().unwrap();
    let Some(note) = notes.get_mut(&id) else { return };
    match (status, body) {
        (Some(200), Some(body)) => note.may_be = vec![body],
        (Some(204), None) => note.may_be.clear(),
        // No answer: it may have happened.
        (None | Some(500..), Some(body)) => note.may_be.push(body),
        (None | Some(500..), None) => note.maybe_deleted = true,
        _ => {}
    }
}

async fn viewer(soak: Arc<Soak>, investigation: String, step: i64) {
    while !soak.stopped() {
        soak.call("GET", &format!("/i/{investigation}"), None).await;
        let runs = soak.call("GET", &format!("/api/v1/steps/{step}/runs"), None).await.json();
        let finished = runs.as_array().into_iter().flatten().rev().find(|r| r["status"] == "succeeded");
        if let Some(run) = finished.and_then(|r| r["id"].as_i64()) {
            let stream = format!("/api/v1/runs/{run}/stream?offset=0");
            soak.call_within("GET", &stream, None, Duration::from_secs(5)).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn searcher(soak: Arc<Soak>) {
    let mut k = 0;
    while !soak.stopped() {
        k += 1;
        let q = ["soak+note", "edited", "12345", "alert"][k % 4];
        soak.call("GET", &format!("/api/v1/search?q={q}"), None).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// How long `/healthz` takes to answer, through every phase: the slowest per phase.
async fn health(soak: Arc<Soak>) {
    while !soak.stopped() {
        let asked = Instant::now();
        let reply = http(&soak.addr, None, "GET", "/healthz", None, Duration::from_secs(10)).await;
        // Nothing listening (Sleuth restarting) is not slowness: the restart phase counts it as refused.
        if !matches!(reply, Reply::Refused) {
            let took = asked.elapsed().as_secs_f64();
            let phase = soak.phase.lock().unwrap().clone();
            let mut slowest = soak.healthz.lock().unwrap();
            let seen = slowest.entry(phase).or_default();
            *seen = seen.max(took);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

// ---- a flood: half-open connections, and one viewer opening a thousand streams

/// Half-open connections per source address: under the per-address cap
/// (`listen::PER_ADDRESS`, 512), so that what closes them is the header timeout.
const HALF_OPEN_PER_ADDRESS: usize = 500;

/// What the flood did, and what it cost the server.
#[derive(Default, Clone)]
struct Flooded {
    half_open: usize,
    /// Half-open connections the server closed, and the longest one stayed open.
    closed: usize,
    never_connected: usize,
    longest_open_s: f64,
    streams_asked: usize,
    streams_held: usize,
    streams_refused: usize,
    /// Of the 429s, how many said when to come back (`Retry-After`).
    retry_after: usize,
    streams_other: BTreeMap<String, usize>,
    rss_before_mb: f64,
    rss_peak_mb: f64,
    /// Two seconds after the flood stopped.
    rss_after_mb: f64,
    fds_before: usize,
    fds_peak: usize,
    /// Two seconds after the flood stopped.
    fds_after: usize,
}

fn rss_mb(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kb = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.split_whitespace().next());
    kb.and_then(|kb| kb.parse::<f64>().ok()).unwrap_or(0.0) / 1024.0
}

fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count)
}

enum HalfOpen {
    NotConnected,
    ClosedAfter(Duration),
    StillOpen,
}

/// A connection that sends half a request head and nothing more; how long
/// until the server closes it (a 408 first is fine).
async fn half_open(addr: std::net::SocketAddr, from: std::net::Ipv4Addr) -> HalfOpen {
    let connected = async {
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.bind((from, 0).into())?;
        let mut stream = socket.connect(addr).await?;
        stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: soak\r\n").await?;
        Ok::<_, std::io::Error>(stream)
    };
    let Ok(Ok(mut stream)) = tokio::time::timeout(Duration::from_secs(30), connected).await else {
        return HalfOpen::NotConnected;
    };
    let opened = Instant::now();
    let mut buf = [0u8; 512];
    loop {
        match tokio::time::timeout(Duration::from_secs(60), stream.read(&mut buf)).await {
            Err(_) => return HalfOpen::StillOpen,
            Ok(Ok(0) | Err(_)) => return HalfOpen::ClosedAfter(opened.elapsed()),
            Ok(Ok(_)) => {}
        }
    }
}

enum Streamed {
    Held(tokio::net::TcpStream),
    TooMany { retry_after: bool },
    Other(String),
}

/// Opens an event stream as `token` from its own address; holds it if it was granted.
async fn open_stream(addr: std::net::SocketAddr, token: String, path: String) -> Streamed {
    let opened = async {
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.bind((std::net::Ipv4Addr::new(127, 0, 2, 1), 0).into())?;
        let mut stream = socket.connect(addr).await?;
        let head = format!("GET {path} HTTP/1.1\r\nHost: soak\r\nAuthorization: Bearer {token}\r\n\r\n");
        stream.write_all(head.as_bytes()).await?;
        let mut answer = Vec::new();
        let mut buf = [0u8; 1024];
        while !answer.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = stream.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            answer.extend_from_slice(&buf[..n]);
        }
        Ok::<_, std::io::Error>((stream, String::from_utf8_lossy(&answer).to_ascii_lowercase()))
    };
    match tokio::time::timeout(Duration::from_secs(10), opened).await {
        Err(_) => Streamed::Other("no answer within 10 s".into()),
        Ok(Err(e)) => Streamed::Other(e.kind().to_string()),
        Ok(Ok((stream, head))) => match head.split(' ').nth(1) {
            Some("200") => Streamed::Held(stream),
            Some("429") => Streamed::TooMany { retry_after: head.contains("\r\nretry-after:") },
            other => Streamed::Other(format!("answered {}", other.unwrap_or("nothing"))),
        },
    }
}

/// Half-open connections from several addresses, and one viewer (`token`)
/// opening streams of the investigation's events, held `hold` while the rest of
/// the load goes on; the server's RSS and open files sampled throughout.
async fn flood(soak: &Soak, pid: u32, investigation: &str, token: &str, hold: Duration) -> Flooded {
    let (half, streams) = if quick() { (300, 200) } else { (3000, 1000) };
    let addr: std::net::SocketAddr = soak.addr.parse().expect("a socket address");
    let mut flooded = Flooded {
        half_open: half,
        streams_asked: streams,
        rss_before_mb: rss_mb(pid),
        fds_before: fds(pid),
        ..Flooded::default()
    };
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let sampling = sampling.clone();
        tokio::spawn(async move {
            let (mut rss, mut files) = (0.0f64, 0usize);
            while sampling.load(Ordering::Relaxed) {
                rss = rss.max(rss_mb(pid));
                files = files.max(fds(pid));
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            (rss, files)
        })
    };
    let mut half_open_ones = tokio::task::JoinSet::new();
    for i in 0..half {
        let from = std::net::Ipv4Addr::new(127, 0, 1, 1 + (i / HALF_OPEN_PER_ADDRESS) as u8);
        half_open_ones.spawn(half_open(addr, from));
    }
    let path = format!("/api/v1/investigations/{investigation}/events");
    let mut held = Vec::new();
    for batch in (0..streams).collect::<Vec<_>>().chunks(100) {
        let mut opening = tokio::task::JoinSet::new();
        for _ in batch {
            opening.spawn(open_stream(addr, token.to_string(), path.clone()));
        }
        while let Some(streamed) = opening.join_next().await {
            match streamed.unwrap_or_else(|e| Streamed::Other(e.to_string())) {
                Streamed::Held(stream) => held.push(stream),
                Streamed::TooMany { retry_after } => {
                    flooded.streams_refused += 1;
                    flooded.retry_after += usize::from(retry_after);
                }
                Streamed::Other(what) => *flooded.streams_other.entry(what).or_default() += 1,
            }
        }
    }
    flooded.streams_held = held.len();
    tokio::time::sleep(hold).await;
    while let Some(done) = half_open_ones.join_next().await {
        match done {
            Ok(HalfOpen::ClosedAfter(took)) => {
                flooded.closed += 1;
                flooded.longest_open_s = flooded.longest_open_s.max(took.as_secs_f64());
            }
            Ok(HalfOpen::NotConnected) => flooded.never_connected += 1,
            Ok(HalfOpen::StillOpen) | Err(_) => {}
        }
    }
    drop(held);
    tokio::time::sleep(Duration::from_secs(2)).await;
    sampling.store(false, Ordering::Relaxed);
    (flooded.rss_peak_mb, flooded.fds_peak) = sampler.await.unwrap_or_default();
    flooded.fds_after = fds(pid);
    flooded.rss_after_mb = rss_mb(pid);
    flooded
}

// ---- what the load runs against ---------------------------------------------

struct Rig {
    sshd: Sshd,
    postgres: Option<(Postgres, String)>,
    _dir: tempfile::TempDir,
    data: PathBuf,
    site: PathBuf,
    log: PathBuf,
    /// The data dir's own small disk (`None`: no tmpfs here, so no disk fault).
    disk: Option<disk::Tmpfs>,
    port: u16,
    sleuth: Option<Child>,
    /// API tokens of the owner (an admin, who drives the load) and of the
    /// viewer who floods.
    owner: String,
    flooder: String,
}

impl Rig {
    fn new(postgres: Option<(Postgres, String)>) -> Rig {
        let dir = tempfile::tempdir().expect("temp dir");
        let data = dir.path().join("data");
        let disk = disk::Tmpfs::mount(&data, "128m");
        let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        let site = std::env::var_os("SLEUTH_SITE").map_or_else(|| dir.path().join("site"), PathBuf::from);
        let mut rig = Rig {
            sshd: Sshd::start(),
            postgres,
            log: dir.path().join("sleuth.log"),
            data,
            site,
            _dir: dir,
            disk,
            port,
            sleuth: None,
            owner: String::new(),
            flooder: String::new(),
        };
        rig.owner = rig.account("soak-owner", true);
        rig.flooder = rig.account("soak-flooder", false);
        rig
    }

    /// A Sleuth command on the rig's store (`sleuth user add`, `token create`).
    fn sleuth(&self, args: &[&str], stdin: &str) -> String {
        let mut command = Command::new(env!("CARGO_BIN_EXE_sleuth"));
        command.args(args).arg("--data").arg(&self.data).env_remove("SLEUTH_DATABASE");
        if let Some((_, url)) = &self.postgres {
            command.env("SLEUTH_DATABASE", url);
        }
        let mut child =
            command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("sleuth");
        std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), stdin.as_bytes()).expect("stdin");
        let out = child.wait_with_output().expect("sleuth exits");
        assert!(out.status.success(), "sleuth {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// A user (an admin or not) and an API token for them.
    fn account(&self, name: &str, admin: bool) -> String {
        let mut add = vec!["user", "add", name, "--password-stdin"];
        if admin {
            add.push("--admin");
        }
        self.sleuth(&add, "soak-password-1\n");
        self.sleuth(&["token", "create", "--user", name], "")
    }

    fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// `sleuth serve` on the rig's port and data dir, its log appended to `log`.
    async fn start_sleuth(&mut self) {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&self.log).expect("log");
        let mut command = Command::new(env!("CARGO_BIN_EXE_sleuth"));
        command
            .args(["serve", "--shutdown-grace", "5", "--addr", &self.addr()])
            .arg("--data")
            .arg(&self.data)
            .arg("--site")
            .arg(&self.site)
            .env_remove("SLEUTH_DATABASE")
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(log);
        if let Some((_, url)) = &self.postgres {
            command.env("SLEUTH_DATABASE", url);
        }
        self.sleuth = Some(command.spawn().expect("sleuth serve"));
        let deadline = Instant::now() + Duration::from_secs(60);
        while http(&self.addr(), None, "GET", "/healthz", None, Duration::from_secs(2)).await.status() != Some(200) {
            assert!(Instant::now() < deadline, "sleuth serve did not answer within 60 s; see {}", self.log.display());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// SIGTERM, as a deploy sends; it drains its runs (5 s grace) and exits.
    fn stop_sleuth(&mut self) {
        let Some(mut child) = self.sleuth.take() else { return };
        let _ = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status();
        let deadline = Instant::now() + Duration::from_secs(60);
        while child.try_wait().ok().flatten().is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.wait();
    }

    fn log_lines_saying(&self, words: &str) -> usize {
        std::fs::read_to_string(&self.log).unwrap_or_default().lines().filter(|l| l.contains(words)).count()
    }

    /// Connections of Sleuth's database idle inside a transaction for over 5 s.
    async fn connections_in_a_transaction(&self) -> Option<i64> {
        use sqlx::Connection;
        let (postgres, url) = self.postgres.as_ref()?;
        let database = url.rsplit('/').next()?.to_string();
        let mut admin = sqlx::PgConnection::connect(&postgres.admin_url).await.ok()?;
        let (n,): (i64,) = sqlx::query_as(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = $1
               AND state LIKE 'idle in transaction%' AND now() - state_change > interval '5 seconds'",
        )
        .bind(database)
        .fetch_one(&mut admin)
        .await
        .ok()?;
        Some(n)
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        self.stop_sleuth();
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Fault {
    SshdKilled,
    DiskFull,
    PostgresRestarted,
    Sigterm,
    Flood,
}

impl Fault {
    fn name(self) -> &'static str {
        match self {
            Fault::SshdKilled => "sshd killed",
            Fault::DiskFull => "disk full",
            Fault::PostgresRestarted => "PostgreSQL restarted",
            Fault::Sigterm => "SIGTERM, restart",
            Fault::Flood => "flood",
        }
    }
}

/// Brings the fault on, holds it `hold`, and ends it.
async fn inject(rig: &mut Rig, soak: &Soak, investigation: &str, fault: Fault, hold: Duration) {
    match fault {
        Fault::Flood => {
            let pid = rig.sleuth.as_ref().expect("sleuth is serving").id();
            let flooded = flood(soak, pid, investigation, &rig.flooder, hold).await;
            *soak.flood.lock().unwrap() = Some(flooded);
        }
        Fault::SshdKilled => {
            rig.sshd.kill();
            tokio::time::sleep(hold).await;
            rig.sshd.restart();
        }
        Fault::DiskFull => {
            let data = rig.data.clone();
            let fillers = tokio::task::spawn_blocking(move || disk::fill_to_the_last_byte(&data)).await.expect("fill");
            tokio::time::sleep(hold).await;
            fillers.iter().for_each(|f| drop(std::fs::remove_file(f)));
        }
        Fault::PostgresRestarted => {
            let Some((postgres, _)) = &rig.postgres else { return };
            postgres.down().expect("pg_ctl stop");
            tokio::time::sleep(hold).await;
            postgres.up().expect("pg_ctl start");
        }
        Fault::Sigterm => {
            rig.stop_sleuth();
            tokio::time::sleep(hold.min(Duration::from_secs(2))).await;
            rig.start_sleuth().await;
        }
    }
}

/// Seconds until a note is written again (201), at most 120.
async fn recovered(soak: &Soak, investigation: &str) -> f64 {
    let start = Instant::now();
    let probe = json!({ "kind": "note", "body": "soak probe" });
    let path = format!("/api/v1/investigations/{investigation}/steps");
    while start.elapsed() < Duration::from_secs(120) {
        let reply = soak.call_within("POST", &path, Some(&probe), Duration::from_secs(10)).await;
        if reply.status() == Some(201) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    start.elapsed().as_secs_f64()
}

/// Adds the host (its key pinned), an investigation and the command step.
async fn setup(soak: &Soak, sshd: &Sshd) -> (String, i64) {
    let host = json!({
        "name": "soak", "hostname": "127.0.0.1", "port": sshd.port, "user": peer::sshd::whoami(),
        "identity_file": sshd.client_key.display().to_string()
    });
    assert_eq!(soak.call("POST", "/api/v1/hosts", Some(&host)).await.status(), Some(201), "host");
    soak.call("POST", "/api/v1/hosts/soak/test", Some(&json!({}))).await;
    let trust = json!({ "fingerprint": sshd.host_key_fingerprint() });
    assert_eq!(soak.call("POST", "/api/v1/hosts/soak/trust", Some(&trust)).await.status(), Some(200), "trust");
    let created = soak.call("POST", "/api/v1/investigations", Some(&json!({ "title": "soak" }))).await.json();
    let investigation = created["id"].as_str().expect("investigation").to_string();
    let step = json!({ "kind": "command", "host": "soak", "command": COMMAND, "telemetry": false });
    let step = soak.call("POST", &format!("/api/v1/investigations/{investigation}/steps"), Some(&step)).await.json();
    (investigation, step["id"].as_i64().expect("step"))
}

/// Every acknowledged note as acknowledged, every deleted one gone: the
/// bytes of those that are not.
async fn notes_lost(soak: &Soak) -> (u64, usize) {
    let notes: Vec<(i64, Vec<String>, bool)> =
        soak.notes.lock().unwrap().iter().map(|(id, n)| (*id, n.may_be.clone(), n.maybe_deleted)).collect();
    let mut lost = 0;
    for (id, may_be, maybe_deleted) in &notes {
        let reply = soak.call("GET", &format!("/api/v1/steps/{id}"), None).await;
        let now = match reply.status() {
            Some(200) => Some(reply.json()["body"].as_str().unwrap_or_default().to_string()),
            Some(404) => None,
            _ => continue,
        };
        let right = match &now {
            Some(body) => may_be.contains(body),
            None => may_be.is_empty() || *maybe_deleted,
        };
        if !right {
            lost += may_be.last().map_or(1, |b| b.len() as u64);
        }
    }
    (lost, notes.len())
}

struct Report {
    backend: &'static str,
    seconds: f64,
    phases: Vec<(String, Counts, Option<f64>)>,
    bad: Vec<String>,
    runs: BTreeMap<String, u64>,
    run_errors: BTreeMap<String, u64>,
    runs_deleted: u64,
    bytes_lost: u64,
    runs_garbled: u64,
    never_ended: Vec<i64>,
    notes: usize,
    note_bytes_lost: u64,
    in_transaction: Option<i64>,
    transaction_depth: usize,
    panics: usize,
    disk: bool,
    healthz: BTreeMap<String, f64>,
    flood: Option<Flooded>,
}

async fn soak_on(postgres: Option<(Postgres, String)>) -> Report {
    let started = Instant::now();
    let backend = if postgres.is_some() { "PostgreSQL" } else { "SQLite" };
    let mut rig = Rig::new(postgres);
    rig.start_sleuth().await;
    let soak = Arc::new(Soak {
        addr: rig.addr(),
        token: rig.owner.clone(),
        healthz: Mutex::default(),
        flood: Mutex::default(),
        phase: Mutex::new("steady".into()),
        counts: Mutex::default(),
        bad: Mutex::default(),
        stop: AtomicBool::new(false),
        runs: Mutex::default(),
        bytes_lost: AtomicU64::new(0),
        runs_garbled: AtomicU64::new(0),
        runs_deleted: AtomicU64::new(0),
        runs_never_ended: Mutex::default(),
        run_errors: Mutex::default(),
        notes: Mutex::default(),
    });
    let (investigation, step) = setup(&soak, &rig.sshd).await;
    let viewer_role = json!({ "user": "soak-flooder", "role": "viewer" });
    let member = soak.call("PUT", &format!("/api/v1/investigations/{investigation}/members"), Some(&viewer_role)).await;
    assert_eq!(member.status(), Some(200), "the flooding viewer made a member");
    let mut load = vec![tokio::spawn(health(soak.clone()))];
    for _ in 0..2 {
        load.push(tokio::spawn(runner(soak.clone(), step)));
        load.push(tokio::spawn(viewer(soak.clone(), investigation.clone(), step)));
    }
    load.push(tokio::spawn(editor(soak.clone(), investigation.clone())));
    load.push(tokio::spawn(searcher(soak.clone())));

    let (steady, hold, rounds) = if quick() {
        (Duration::from_secs(3), Duration::from_secs(3), 1)
    } else {
        (Duration::from_secs(20), Duration::from_secs(15), 2)
    };
    let mut faults = vec![Fault::SshdKilled, Fault::DiskFull, Fault::PostgresRestarted, Fault::Sigterm, Fault::Flood];
    faults.retain(|f| {
        (*f != Fault::PostgresRestarted || rig.postgres.is_some()) && (*f != Fault::DiskFull || rig.disk.is_some())
    });
    let mut recoveries: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut in_transaction: Option<i64> = None;
    for _ in 0..rounds {
        for fault in &faults {
            tokio::time::sleep(steady).await;
            soak.phase(fault.name());
            inject(&mut rig, &soak, &investigation, *fault, hold).await;
            let took = recovered(&soak, &investigation).await;
            recoveries.entry(fault.name().to_string()).or_default().push(took);
            soak.phase("steady");
            if let Some(n) = rig.connections_in_a_transaction().await {
                in_transaction = Some(in_transaction.unwrap_or(0).max(n));
            }
        }
    }
    tokio::time::sleep(steady).await;
    soak.stop.store(true, Ordering::Relaxed);
    soak.phase("checking");
    for task in load {
        let _ = task.await;
    }
    let (note_bytes_lost, notes) = notes_lost(&soak).await;
    if let Some(n) = rig.connections_in_a_transaction().await {
        in_transaction = Some(in_transaction.unwrap_or(0).max(n));
    }
    let counts = soak.counts.lock().unwrap().clone();
    let mut phases: Vec<(String, Counts, Option<f64>)> = Vec::new();
    for name in std::iter::once("steady").chain(faults.iter().map(|f| f.name())).chain(["checking"]) {
        let took = recoveries.get(name).map(|t| t.iter().copied().fold(0.0, f64::max));
        phases.push((name.to_string(), counts.get(name).cloned().unwrap_or_default(), took));
    }
    let report = Report {
        backend,
        seconds: started.elapsed().as_secs_f64(),
        phases,
        bad: soak.bad.lock().unwrap().clone(),
        runs: soak.runs.lock().unwrap().clone(),
        run_errors: soak.run_errors.lock().unwrap().clone(),
        runs_deleted: soak.runs_deleted.load(Ordering::Relaxed),
        bytes_lost: soak.bytes_lost.load(Ordering::Relaxed),
        runs_garbled: soak.runs_garbled.load(Ordering::Relaxed),
        never_ended: soak.runs_never_ended.lock().unwrap().clone(),
        notes,
        note_bytes_lost,
        in_transaction,
        transaction_depth: rig.log_lines_saying("transaction depth"),
        panics: rig.log_lines_saying("panicked"),
        disk: rig.disk.is_some(),
        healthz: soak.healthz.lock().unwrap().clone(),
        flood: soak.flood.lock().unwrap().clone(),
    };
    rig.stop_sleuth();
    report
}

fn print(report: &Report) {
    println!(
        "\nsoak on {}: {:.0} s{}",
        report.backend,
        report.seconds,
        if quick() { " (quick mode: not for perf.md)" } else { "" }
    );
    println!(
        "    {:<22} {:>8} {:>7} {:>6} {:>5} {:>6} {:>6} {:>9} {:>8} {:>8} {:>12} {:>9}",
        "phase",
        "requests",
        "2xx/3xx",
        "4xx",
        "429",
        "503",
        "507",
        "other 5xx",
        "refused",
        "timeout",
        "write again",
        "/healthz"
    );
    for (name, c, took) in &report.phases {
        println!(
            "    {:<22} {:>8} {:>7} {:>6} {:>5} {:>6} {:>6} {:>9} {:>8} {:>8} {:>12} {:>9}",
            name,
            c.requests,
            c.ok,
            c.client_errors,
            c.too_many,
            c.unavailable,
            c.no_space,
            c.server_errors,
            c.refused,
            c.timed_out,
            took.map_or(String::new(), |t| format!("≤ {t:.1} s")),
            report.healthz.get(name).map_or(String::new(), |t| format!("≤ {t:.2} s"))
        );
    }
    println!("    (429: answers to the load, not to the flooding viewer; /healthz: the slowest answer in the phase)");
    if let Some(f) = &report.flood {
        println!(
            "    flood: {} half-open connections from {} source addresses: {} closed by the server, the longest after {:.1} s (goal ≤ 35 s); {} never connected",
            f.half_open,
            f.half_open.div_ceil(HALF_OPEN_PER_ADDRESS),
            f.closed,
            f.longest_open_s,
            f.never_connected
        );
        println!(
            "    flood: one viewer asked for {} event streams: {} held, {} answered 429 ({} with Retry-After), other: {:?}",
            f.streams_asked, f.streams_held, f.streams_refused, f.retry_after, f.streams_other
        );
        println!(
            "    flood: server RSS {:.0} MB before, {:.0} MB at most, {:.0} MB two seconds after; open files {} before, {} at most, {} after",
            f.rss_before_mb, f.rss_peak_mb, f.rss_after_mb, f.fds_before, f.fds_peak, f.fds_after
        );
    }
    if !report.disk {
        println!("    (no tmpfs could be mounted here: the disk fault was left out)");
    }
    let other_5xx: u64 = report.phases.iter().map(|(_, c, _)| c.server_errors).sum();
    let runs: u64 = report.runs.values().sum();
    let statuses: Vec<String> = report.runs.iter().map(|(s, n)| format!("{n} {s}")).collect();
    println!(
        "    runs checked: {runs} ({}), {} deleted while the load went on",
        statuses.join(", "),
        report.runs_deleted
    );
    for (said, n) in &report.run_errors {
        println!("        {n:>4} × {said}");
    }
    println!("    5xx other than 503/507: {other_5xx} (goal 0)");
    for bad in &report.bad {
        println!("        {bad}");
    }
    println!(
        "    bytes lost: {} of succeeded runs' output, {} of {} notes (goal 0); outputs not a prefix of what was printed: {}",
        report.bytes_lost, report.note_bytes_lost, report.notes, report.runs_garbled
    );
    match report.in_transaction {
        Some(n) => println!(
            "    connections idle in a transaction > 5 s after a fault (pg_stat_activity, most seen): {n} (goal 0)"
        ),
        None => println!(
            "    connections left in a transaction: SQLite has no view of them; log lines saying `transaction depth`: {} (goal 0)",
            report.transaction_depth
        ),
    }
    println!("    runs never ended: {} (goal 0); panics in the log: {}", report.never_ended.len(), report.panics);
}

#[tokio::main]
async fn main() {
    let sqlite = soak_on(None).await;
    print(&sqlite);
    let postgres = match Postgres::scratch() {
        Ok(postgres) => {
            let server::db::Database::Postgres(database) = postgres.database().await else {
                panic!("a scratch PostgreSQL database is on PostgreSQL")
            };
            Some(soak_on(Some((postgres, database))).await)
        }
        Err(why) => {
            println!("\nsoak on PostgreSQL: skipped ({why})");
            None
        }
    };
    if let Some(report) = &postgres {
        print(report);
    }
    // What must never happen, whatever the mode: a benchmark that saw it fails.
    for report in std::iter::once(&sqlite).chain(&postgres) {
        let other_5xx: u64 = report.phases.iter().map(|(_, c, _)| c.server_errors).sum();
        let lost = report.bytes_lost + report.note_bytes_lost + report.runs_garbled;
        assert_eq!((other_5xx, lost, report.never_ended.len()), (0, 0, 0), "soak on {} broke a goal", report.backend);
        let too_many: u64 = report.phases.iter().map(|(_, c, _)| c.too_many).sum();
        assert_eq!(too_many, 0, "soak on {}: the load (not the flooding viewer) was answered 429", report.backend);
        let slowest = report.healthz.get("flood").copied().unwrap_or(f64::MAX);
        assert!(slowest <= 2.0, "soak on {}: /healthz took {slowest:.2} s during the flood", report.backend);
        let f = report.flood.as_ref().expect("the flood ran");
        assert!(
            f.closed + f.never_connected == f.half_open && f.longest_open_s <= 35.0,
            "soak on {}: half-open connections not all closed within 35 s",
            report.backend
        );
        assert!(
            f.streams_held <= 64 && f.streams_refused == f.retry_after && f.streams_refused > 0,
            "soak on {}: the flooding viewer's streams were not capped with a 429 and Retry-After",
            report.backend
        );
        // About 30 KB per open connection (hyper's buffers, the task): 3 000 take ~90 MB.
        assert!(
            f.rss_peak_mb - f.rss_before_mb <= 160.0,
            "soak on {}: RSS grew {:.0} MB during the flood",
            report.backend,
            f.rss_peak_mb - f.rss_before_mb
        );
        assert!(
            f.fds_after <= f.fds_before + 64,
            "soak on {}: {} files open after the flood, {} before",
            report.backend,
            f.fds_after,
            f.fds_before
        );
    }
}
