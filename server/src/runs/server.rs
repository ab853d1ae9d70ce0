//! A server beside runs (`vllm serve …` beside `vllm bench serve …`), on the
//! run's host:
//!
//! - **Started** in a session of its own (`setsid -w`), in the run's directory,
//!   with the run's environment and a token (`SLEUTH_SERVER_TOKEN`) by which
//!   its processes are recognised later. Its first line tells Sleuth its
//!   process group; stdout and stderr are one stream, its log.
//! - Its **log** goes to the log of the run using it (`run_logs`, kind
//!   `server`), live like a run's output; a server kept for the next run of a
//!   configuration writes on into that run's log.
//! - **Ready** when its log matches a pattern, or when a probe on the host
//!   (`curl`, else `python3`, else `wget`; for a port `bash`'s `/dev/tcp`, `nc`
//!   or `python3`) gets 200 or a connection, polling every 50 ms.
//! - **Stopped**: SIGTERM to the process group, a grace period, SIGKILL; then
//!   every process still carrying its token (those that left the group too)
//!   and every GPU compute process of the group is killed, and Sleuth waits
//!   until `nvidia-smi` lists none. The report says what it took.
//!
//! The handle (process group and token) is kept on the run while the server
//! may be running, so a Sleuth that was killed (or another replica) finds and
//! stops it ([`stop_orphan`]).

use crate::error::{Error, Result};
use crate::output::{OutputWriter, Stream};
use crate::ssh::exec::{self, Event, Exit};
use crate::ssh::quote::quote;
use crate::ssh::{Pool, Target};
use domain::steps::command::{Ready, ServerSpec};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// The first line the start script prints, before the server's own.
const PGID_LINE: &str = "sleuth-server-pgid ";
/// Log bytes kept in memory while no run takes them (between two runs of a
/// configuration), for the next run's log.
const BETWEEN_RUNS_BYTES: usize = 1024 * 1024;
/// Readiness probes poll this often.
const PROBE_EVERY: &str = "0.05";

/// How to find a server's processes on its host again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Handle {
    pub pgid: u32,
    pub token: String,
}

/// A server's exit, as the host reported it.
#[derive(Clone, Debug, PartialEq)]
pub struct Exited {
    pub how: String,
    pub after: Duration,
}

/// What its log pump shares with the runner.
struct Shared {
    /// Where its log goes now: a run's log writer.
    writer: tokio::sync::Mutex<Option<OutputWriter>>,
    /// Log bytes that came while no run took them.
    between: Mutex<Vec<u8>>,
    last_line: Mutex<String>,
    /// Its log matched the readiness pattern.
    matched: watch::Sender<bool>,
    /// Its process group, once the start script said it.
    pgid: watch::Sender<Option<u32>>,
    /// Set once it ended (or its channel did).
    exited: watch::Sender<Option<Exited>>,
}

/// A server started on a host, running (or ended on its own).
pub struct Server {
    /// What it was started with; a next run reuses it only if its own is the same.
    pub identity: String,
    pub token: String,
    pub started: Instant,
    pub started_at_ms: i64,
    /// The run that started it.
    pub started_by: i64,
    shared: Arc<Shared>,
    pump: tokio::task::JoinHandle<()>,
}

/// The `identity` of a server: its command, environment and directory, and
/// the patch on its host (a server is never kept across a change of patch:
/// it loaded the code it started with).
pub fn identity(
    spec: &ServerSpec,
    env: &[(String, String)],
    unset: &[String],
    cwd: Option<&str>,
    patch: Option<i64>,
) -> String {
    serde_json::json!({ "command": spec.command, "env": env, "unset": unset, "cwd": cwd, "ready": spec.ready, "patch": patch })
        .to_string()
}

/// The script that starts a server (its env and directory are prepended by the caller).
fn start_script(command: &str, token: &str) -> String {
    format!(
        "SLEUTH_SERVER_TOKEN={token}; export SLEUTH_SERVER_TOKEN\n\
         command -v setsid >/dev/null 2>&1 || {{ echo 'sleuth: this host has no setsid (util-linux): a server needs a session of its own' >&2; exit 98; }}\n\
         if setsid --help 2>&1 | grep -q -- --wait; then w=-w; else w=; fi\n\
         exec setsid $w sh -c 'printf \"{PGID_LINE}%s\\n\" \"$$\"; exec 2>&1; eval \"$1\"' sleuth-server {}\n",
        quote(command)
    )
}

impl Server {
    /// Starts `spec` on `target` with the run's environment; the run's script
    /// lines (`prelude`: directory, env) come first.
    pub async fn start(
        pool: &Pool,
        target: &Target,
        prelude: String,
        spec: &ServerSpec,
        identity: String,
        run: i64,
    ) -> Result<Server> {
        let token = format!("{:016x}{:016x}", rand::random::<u64>(), rand::random::<u64>());
        let script = format!("{prelude}{}", start_script(&spec.command, &token));
        let exec = exec::start(pool, target, &script).await?;
        let pattern = match &spec.ready {
            Ready::Log(pattern) => Some(
                crate::user_regex::compile(pattern, false)
                    .map_err(|e| Error::usage(format!("The server's ready pattern is not a valid regex: {e}")))?,
            ),
            _ => None,
        };
        let shared = Arc::new(Shared {
            writer: tokio::sync::Mutex::new(None),
            between: Mutex::new(Vec::new()),
            last_line: Mutex::new(String::new()),
            matched: watch::channel(false).0,
            pgid: watch::channel(None).0,
            exited: watch::channel(None).0,
        });
        let started = Instant::now();
        let pump = tokio::spawn(pump(exec, shared.clone(), pattern, started));
        Ok(Server { identity, token, started, started_at_ms: crate::time::now_ms(), started_by: run, shared, pump })
    }

    /// Its process group and token, once it said its group (within `within`).
    pub async fn handle(&self, within: Duration) -> Option<Handle> {
        let mut pgid = self.shared.pgid.subscribe();
        let found = tokio::time::timeout(within, pgid.wait_for(Option::is_some)).await.ok()?.ok()?.to_owned();
        found.map(|pgid| Handle { pgid, token: self.token.clone() })
    }

    /// From now on its log goes to `writer` (a run's); what came while no run
    /// took it goes there first.
    pub async fn log_to(&self, mut writer: OutputWriter) {
        let waiting = std::mem::take(&mut *self.shared.between.lock().unwrap_or_else(|e| e.into_inner()));
        if !waiting.is_empty() {
            let _ = writer.append(Stream::Stdout, &waiting, crate::time::now_ms()).await;
        }
        *self.shared.writer.lock().await = Some(writer);
    }

    /// The run's log writer back (its log whole so far), for the run to finish.
    pub async fn take_log(&self) -> Option<OutputWriter> {
        self.shared.writer.lock().await.take()
    }

    pub fn last_line(&self) -> String {
        self.shared.last_line.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// How it ended, if it did.
    pub fn exited(&self) -> Option<Exited> {
        self.shared.exited.borrow().clone()
    }

    /// Resolves when it ends (owning what it needs, so the server can be moved meanwhile).
    pub fn ended(&self) -> impl std::future::Future<Output = Exited> + Send + 'static {
        let mut exited = self.shared.exited.subscribe();
        let started = self.started;
        async move {
            match exited.wait_for(Option::is_some).await {
                Ok(found) => found.clone().unwrap_or_else(|| lost(started)),
                Err(_) => lost(started),
            }
        }
    }

    /// Waits until it is ready as `spec` says: `Ok` with the time it took, or
    /// why not (it ended, the probe could not run). The caller bounds it in time.
    pub fn ready<'a>(
        &self,
        pool: &'a Pool,
        target: &'a Target,
        ready: &'a Ready,
    ) -> impl std::future::Future<Output = Result<Duration>> + 'a {
        let (mut matched, ended, started) = (self.shared.matched.subscribe(), self.ended(), self.started);
        async move {
            tokio::pin!(ended);
            match ready {
                Ready::Log(_) => {
                    tokio::select! {
                        found = matched.wait_for(|m| *m) => {
                            found.map_err(|_| Error::bug("the server's log pump is gone"))?;
                        }
                        exited = &mut ended => return Err(not_ready(&exited)),
                    }
                }
                Ready::Http(_) | Ready::Tcp(_) => {
                    let probe = exec::start(pool, target, &probe_script(ready)).await?;
                    tokio::select! {
                        result = probe_result(probe) => result?,
                        exited = &mut ended => return Err(not_ready(&exited)),
                    }
                }
            }
            Ok(started.elapsed())
        }
    }

    /// Stops it (`stop_grace_s` between SIGTERM and SIGKILL) and makes sure
    /// nothing of it is left; waits for its log to end.
    pub async fn stop(self, pool: &Pool, target: &Target, grace: Duration) -> Result<Stopped> {
        let handle = self.handle(Duration::from_secs(5)).await;
        let stopped = match &handle {
            Some(handle) => stop_on_host(pool, target, handle, grace).await?,
            // It never said its group (it failed to start): nothing to stop.
            None => Stopped::default(),
        };
        // The log ends once the processes holding its pipe are gone.
        let _ = tokio::time::timeout(Duration::from_secs(5), self.ended()).await;
        self.pump.abort();
        Ok(stopped)
    }
}

fn lost(started: Instant) -> Exited {
    Exited { how: "its channel closed".into(), after: started.elapsed() }
}

fn not_ready(exited: &Exited) -> Error {
    Error::usage(format!("The server {} after {} s, before it was ready.", exited.how, exited.after.as_secs()))
}

/// Reads the server's channel: its group, its log, readiness by pattern, its end.
async fn pump(mut exec: exec::Exec, shared: Arc<Shared>, pattern: Option<regex::Regex>, started: Instant) {
    let mut line = Vec::<u8>::new();
    let mut told_group = false;
    let mut exit: Option<Exit> = None;
    let mut flushes = tokio::time::interval(Duration::from_millis(40));
    let mut unflushed = false;
    loop {
        let event = tokio::select! {
            event = exec.next() => event,
            _ = flushes.tick(), if unflushed => {
                if let Some(writer) = shared.writer.lock().await.as_mut() {
                    let _ = writer.flush().await;
                }
                unflushed = false;
                continue;
            }
        };
        let data = match event {
            Some(Event::Stdout(data)) | Some(Event::Stderr(data)) => data,
            Some(Event::Exit(e)) => {
                exit = Some(e);
                continue;
            }
            None => break,
        };
        let data: &[u8] = &data;
        if !told_group {
            // The first line is the start script's: the process group.
            line.extend_from_slice(data);
            let Some(end) = line.iter().position(|b| *b == b'\n') else { continue };
            let first = String::from_utf8_lossy(&line[..end]).to_string();
            match first.strip_prefix(PGID_LINE).and_then(|g| g.trim().parse::<u32>().ok()) {
                Some(pgid) => {
                    shared.pgid.send_replace(Some(pgid));
                    told_group = true;
                    let rest = line[end + 1..].to_vec();
                    line.clear();
                    keep(&shared, &rest).await;
                    see_lines(&shared, &rest, &mut line, pattern.as_ref());
                }
                // Not ours (the host could not start it): it is the log.
                None => {
                    told_group = true;
                    let all = std::mem::take(&mut line);
                    keep(&shared, &all).await;
                    see_lines(&shared, &all, &mut line, pattern.as_ref());
                }
            }
            unflushed = true;
            continue;
        }
        keep(&shared, data).await;
        see_lines(&shared, data, &mut line, pattern.as_ref());
        unflushed = true;
    }
    if let Some(writer) = shared.writer.lock().await.as_mut() {
        let _ = writer.flush().await;
    }
    let how = match exit {
        Some(Exit::Code(code)) => format!("exited with {code}"),
        Some(Exit::Signal(signal)) => format!("was ended by SIG{signal}"),
        None => "lost its channel (the connection dropped, or it left without an exit status)".into(),
    };
    shared.exited.send_replace(Some(Exited { how, after: started.elapsed() }));
}

/// Appends log bytes to the run's log, or keeps them for the next run.
async fn keep(shared: &Shared, data: &[u8]) {
    if data.is_empty() {
        return;
    }
    let mut writer = shared.writer.lock().await;
    match writer.as_mut() {
        Some(writer) => {
            let _ = writer.append(Stream::Stdout, data, crate::time::now_ms()).await;
        }
        None => {
            let mut between = shared.between.lock().unwrap_or_else(|e| e.into_inner());
            let room = BETWEEN_RUNS_BYTES.saturating_sub(between.len());
            between.extend_from_slice(&data[..data.len().min(room)]);
        }
    }
}

/// Follows whole lines: the newest for the page, each against the pattern.
fn see_lines(shared: &Shared, data: &[u8], partial: &mut Vec<u8>, pattern: Option<&regex::Regex>) {
    for &b in data {
        if b == b'\n' {
            let text = String::from_utf8_lossy(partial).trim_end_matches('\r').to_string();
            if pattern.is_some_and(|p| p.is_match(&text)) {
                shared.matched.send_replace(true);
            }
            if !text.trim().is_empty() {
                let shown: String = text.chars().take(300).collect();
                *shared.last_line.lock().unwrap_or_else(|e| e.into_inner()) = shown;
            }
            partial.clear();
        } else if partial.len() < 64 * 1024 {
            partial.push(b);
        }
    }
}

/// Polls the ready URL or port on the host until it answers; prints `ready`.
fn probe_script(ready: &Ready) -> String {
    let check = match ready {
        Ready::Http(url) => {
            let url = quote(url);
            format!(
                "if command -v curl >/dev/null 2>&1; then\n\
                   check() {{ [ \"$(curl -s -o /dev/null -m 2 -w '%{{http_code}}' {url} 2>/dev/null)\" = 200 ]; }}\n\
                 elif command -v python3 >/dev/null 2>&1; then\n\
                   check() {{ python3 -c 'import sys,urllib.request as u; sys.exit(0 if u.urlopen(sys.argv[1], timeout=2).status == 200 else 1)' {url} >/dev/null 2>&1; }}\n\
                 elif command -v wget >/dev/null 2>&1; then\n\
                   check() {{ wget -q -T 2 -O /dev/null {url}; }}\n\
                 else echo 'sleuth: no curl, python3 or wget on the host to ask the server with' >&2; exit 2; fi\n"
            )
        }
        Ready::Tcp(port) => format!(
            "if command -v bash >/dev/null 2>&1; then\n\
               check() {{ bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}' 2>/dev/null; }}\n\
             elif command -v nc >/dev/null 2>&1; then\n\
               check() {{ nc -z 127.0.0.1 {port} 2>/dev/null; }}\n\
             elif command -v python3 >/dev/null 2>&1; then\n\
               check() {{ python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 2)' 2>/dev/null; }}\n\
             else echo 'sleuth: no bash, nc or python3 on the host to try the port with' >&2; exit 2; fi\n"
        ),
        Ready::Log(_) => String::new(),
    };
    format!("{check}until check; do sleep {PROBE_EVERY}; done\necho ready\n")
}

/// The probe's verdict: `ready`, or why it stopped.
async fn probe_result(mut probe: exec::Exec) -> Result<()> {
    let mut said = Vec::new();
    let mut ready = false;
    while let Some(event) = probe.next().await {
        match event {
            Event::Stdout(data) => ready |= String::from_utf8_lossy(&data).contains("ready"),
            Event::Stderr(data) if said.len() < 4096 => said.extend_from_slice(&data),
            _ => {}
        }
        if ready {
            probe.close().await;
            return Ok(());
        }
    }
    let said = String::from_utf8_lossy(&said).trim().to_string();
    Err(Error::usage(if said.is_empty() { "The readiness probe stopped on the host.".to_string() } else { said }))
}

/// What stopping a server took.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stopped {
    /// Its group was alive and was sent SIGTERM (else it had already ended).
    pub termed: bool,
    /// SIGKILL was needed after the grace period.
    pub killed: bool,
    /// Processes of it still alive after SIGKILL (none, normally).
    pub left: usize,
    /// Processes that had left its group (still carrying its token), killed.
    pub escaped: Vec<u32>,
    /// GPU compute processes of it found, killed.
    pub gpu: Vec<u32>,
    /// Whether `nvidia-smi` was there to ask.
    pub gpu_checked: bool,
    /// Its GPU processes still listed after 10 s (their memory not freed).
    pub gpu_left: Vec<u32>,
}

impl Stopped {
    /// What to say on the run.
    pub fn notes(&self, grace: Duration) -> Vec<String> {
        let mut notes = Vec::new();
        notes.push(match (self.killed, self.termed) {
            (true, _) => format!("Stopped with SIGKILL: it did not end within {} s of SIGTERM.", grace.as_secs()),
            (false, true) => "Stopped with SIGTERM.".into(),
            // A server that exited by itself (its exit is said already) was not stopped.
            (false, false) => "It had ended by itself: there was nothing to stop.".into(),
        });
        if !self.escaped.is_empty() {
            notes.push(format!("Killed {} of its processes that had left its process group.", self.escaped.len()));
        }
        if !self.gpu.is_empty() {
            notes.push(format!("Killed {} of its processes that held GPU memory.", self.gpu.len()));
        }
        if self.left > 0 {
            notes.push(format!("{} of its processes were still alive after SIGKILL.", self.left));
        }
        match (self.gpu_checked, self.gpu_left.is_empty()) {
            (true, true) => notes.push("nvidia-smi lists none of its processes: its GPU memory is free.".into()),
            (true, false) => notes.push(format!(
                "nvidia-smi still lists {} of its processes after 10 s (GPU memory not freed): {:?}.",
                self.gpu_left.len(),
                self.gpu_left
            )),
            (false, _) => {}
        }
        notes
    }
}

/// SIGTERM, grace, SIGKILL to the group; then anything still carrying the
/// token, and its GPU processes; waits for the GPUs to be free of it.
fn stop_script(handle: &Handle, grace: Duration) -> String {
    let (g, t) = (handle.pgid, quote(&handle.token));
    let tenths = grace.as_millis().div_ceil(100);
    format!(
        "g={g}; t={t}\n\
         ours() {{ grep -qsa \"SLEUTH_SERVER_TOKEN=$t\" \"/proc/$1/environ\"; }}\n\
         alive() {{ kill -0 -- \"-$g\" 2>/dev/null; }}\n\
         # A process group of that number that is not the server's is left alone.\n\
         if alive && [ -r \"/proc/$g/environ\" ] && ! ours \"$g\"; then echo notours; exit 0; fi\n\
         if alive; then kill -TERM -- \"-$g\" 2>/dev/null; echo term; fi\n\
         i=0; while alive && [ $i -lt {tenths} ]; do sleep 0.1; i=$((i+1)); done\n\
         if alive; then kill -KILL -- \"-$g\" 2>/dev/null; echo killed; sleep 0.2; fi\n\
         alive && echo \"left $(ps -o pid= -g \"$g\" 2>/dev/null | wc -l)\"\n\
         for e in $(grep -lsa \"SLEUTH_SERVER_TOKEN=$t\" /proc/[0-9]*/environ); do p=${{e#/proc/}}; p=${{p%/environ}}; kill -KILL \"$p\" 2>/dev/null && echo \"escaped $p\"; done\n\
         if command -v nvidia-smi >/dev/null 2>&1; then\n\
           echo gpu-checked\n\
           j=0\n\
           while :; do\n\
             found=\n\
             for p in $(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null); do\n\
               if [ \"$(ps -o pgid= -p \"$p\" 2>/dev/null | tr -d ' ')\" = \"$g\" ] || ours \"$p\"; then found=\"$found $p\"; [ $j = 0 ] && echo \"gpu $p\"; kill -KILL \"$p\" 2>/dev/null; fi\n\
             done\n\
             [ -z \"$found\" ] && break\n\
             j=$((j+1)); [ $j -ge 100 ] && {{ echo \"gpu-left$found\"; break; }}\n\
             sleep 0.1\n\
           done\n\
         fi\n\
         echo done\n"
    )
}

/// Runs the stop script and reads what it said.
pub async fn stop_on_host(pool: &Pool, target: &Target, handle: &Handle, grace: Duration) -> Result<Stopped> {
    let script = stop_script(handle, grace);
    let out = crate::ssh::exec::capture(pool, target, &script, 64 * 1024).await?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !text.lines().any(|l| l == "done" || l == "notours") {
        return Err(Error::internal(
            "stopping a server",
            format!("the stop script did not finish: {}", String::from_utf8_lossy(&out.stderr).trim()),
        ));
    }
    let mut stopped = Stopped::default();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        match (words.next(), words.next()) {
            (Some("term"), _) => stopped.termed = true,
            (Some("killed"), _) => stopped.killed = true,
            (Some("left"), Some(n)) => stopped.left = n.parse().unwrap_or(0),
            (Some("escaped"), Some(p)) => stopped.escaped.extend(p.parse::<u32>().ok()),
            (Some("gpu"), Some(p)) => stopped.gpu.extend(p.parse::<u32>().ok()),
            (Some("gpu-checked"), _) => stopped.gpu_checked = true,
            (Some("gpu-left"), _) => {
                stopped.gpu_left = line.split_whitespace().skip(1).filter_map(|p| p.parse().ok()).collect()
            }
            _ => {}
        }
    }
    Ok(stopped)
}

/// Stops a server a run left behind (its Sleuth was killed, its replica
/// died), by the handle kept on the run.
pub async fn stop_orphan(pool: &Pool, target: &Target, handle: &str) -> Result<Stopped> {
    let handle: Handle = crate::error::stored(handle, || "a kept server's handle".to_string())?;
    stop_on_host(pool, target, &handle, Duration::from_secs(10)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_quote_what_users_wrote() {
        let hostile = "vllm serve 'x'; rm -rf / $(touch pwned)";
        let s = start_script(hostile, "abc");
        assert!(s.contains(&quote(hostile)), "{s}");
        let probe = probe_script(&Ready::Http("http://127.0.0.1:8000/health'; rm -rf /".into()));
        assert!(probe.contains(&quote("http://127.0.0.1:8000/health'; rm -rf /")), "{probe}");
        assert!(stop_script(&Handle { pgid: 42, token: "t'x".into() }, Duration::from_secs(3)).contains("-lt 30"));
    }

    #[test]
    fn stop_reports_say_what_it_took() {
        let plain = Stopped { termed: true, gpu_checked: true, ..Default::default() };
        assert_eq!(plain.notes(Duration::from_secs(10))[0], "Stopped with SIGTERM.");
        let gone = Stopped::default();
        assert_eq!(gone.notes(Duration::from_secs(10)), ["It had ended by itself: there was nothing to stop."]);
        let hard = Stopped { killed: true, gpu: vec![9], gpu_checked: true, gpu_left: vec![9], ..Default::default() };
        let notes = hard.notes(Duration::from_secs(10)).join(" ");
        assert!(notes.contains("SIGKILL") && notes.contains("GPU memory not freed"), "{notes}");
    }
}
