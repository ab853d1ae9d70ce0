//! Many viewers of one run's live output (`/api/v1/runs/{id}/stream`).
//!
//! The host prints about 1 MB/s for a while: lines of filler, and every 100 ms
//! a line `MARK <unix ms>` (the host is this machine, so the clocks agree).
//! Sleuth serves on a real loopback port in this process; the viewers are a
//! second process (this binary again, `FANOUT_VIEWERS=N`): one TCP connection
//! each, reading the SSE bytes and only looking for `MARK` and `id:`, so the
//! client is not the bottleneck. Reported per N:
//! - delivery delay of the marked lines (receipt time − the time printed), p50/p99;
//! - whether every viewer got every byte (the last `id:` equals the output length);
//! - the server's CPU per viewer: this process's CPU time (getrusage) during the
//!   run, minus the same run with no viewer, divided by N.
//!
//! `SLEUTH_BENCH_QUICK=1`: 5 and 20 viewers for 2 s.

#[allow(dead_code)] // not every benchmark uses every part of the peer
mod peer;

use domain::runs::RunRequest;
use domain::steps::{StepBody, command::CommandBody};
use peer::{Actor, Peer, quick};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// This process's user + system CPU time, from /proc/self/stat (clock ticks).
fn cpu_time() -> Duration {
    static TICKS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let ticks = *TICKS.get_or_init(|| {
        let out = std::process::Command::new("getconf").arg("CLK_TCK").output();
        out.ok().and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok()).unwrap_or(100)
    });
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line; `rest` starts at field 3.
    let field = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    let used = field(11) + field(12);
    Duration::from_millis(used * 1000 / ticks)
}

/// What one viewer saw.
#[derive(Default)]
struct Seen {
    delays_ms: Vec<u64>,
    last_id: u64,
    ended: bool,
}

/// One viewer: a raw HTTP/1.1 request, then the SSE bytes until `event: end`.
async fn view(addr: std::net::SocketAddr, run: i64) -> Seen {
    let mut seen = Seen::default();
    let Ok(mut socket) = tokio::net::TcpStream::connect(addr).await else { return seen };
    let request =
        format!("GET /api/v1/runs/{run}/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n");
    if socket.write_all(request.as_bytes()).await.is_err() {
        return seen;
    }
    let mut buf = vec![0u8; 256 * 1024];
    // The end of the previous read, so a marker cut in two is still found.
    let mut carry: Vec<u8> = Vec::new();
    loop {
        let n = match socket.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let at = now_ms();
        let mut text = std::mem::take(&mut carry);
        text.extend_from_slice(&buf[..n]);
        let mut from = 0;
        while let Some(i) = find(&text[from..], b"MARK ") {
            let digits = &text[from + i + 5..];
            let end = digits.iter().position(|b| !b.is_ascii_digit()).unwrap_or(digits.len());
            if end == digits.len() {
                break; // cut: look again with the next read
            }
            if let Ok(t) = std::str::from_utf8(&digits[..end]).unwrap_or("").parse::<u64>() {
                seen.delays_ms.push(at.saturating_sub(t));
            }
            from += i + 5 + end;
        }
        let mut scan = 0;
        while let Some(i) = find(&text[scan..], b"\nid: ") {
            let digits = &text[scan + i + 5..];
            let end = digits.iter().position(|b| !b.is_ascii_digit()).unwrap_or(digits.len());
            if end < digits.len()
                && let Ok(id) = std::str::from_utf8(&digits[..end]).unwrap_or("").parse::<u64>()
            {
                seen.last_id = seen.last_id.max(id);
            }
            scan += i + 5;
        }
        if find(&text, b"event: end").is_some() {
            seen.ended = true;
            break;
        }
        carry = text[text.len().saturating_sub(32).max(from)..].to_vec();
    }
    seen
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The viewer process: `FANOUT_VIEWERS=N FANOUT_ADDR=… FANOUT_RUN=…`; prints one
/// line per viewer: `last_id ended delay delay …`.
async fn viewers(n: usize, addr: std::net::SocketAddr, run: i64) {
    let tasks: Vec<_> = (0..n).map(|_| tokio::spawn(view(addr, run))).collect();
    for task in tasks {
        let seen = task.await.unwrap_or_default();
        let delays: Vec<String> = seen.delays_ms.iter().map(u64::to_string).collect();
        println!("{} {} {}", seen.last_id, seen.ended, delays.join(" "));
    }
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::main]
async fn main() {
    if let Ok(n) = std::env::var("FANOUT_VIEWERS") {
        let addr = std::env::var("FANOUT_ADDR").expect("FANOUT_ADDR").parse().expect("an address");
        let run = std::env::var("FANOUT_RUN").expect("FANOUT_RUN").parse().expect("a run id");
        return viewers(n.parse().expect("a number of viewers"), addr, run).await;
    }
    let peer = Peer::start().await;
    let (notebook, actor) = (peer.state.notebook.clone(), Actor::local());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let addr = listener.local_addr().expect("its address");
    let app = server::app(peer.state.clone()).into_make_service_with_connect_info::<std::net::SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, app).await });

    let (seconds, counts): (u32, Vec<usize>) = if quick() { (2, vec![5, 20]) } else { (10, vec![50, 200, 1000]) };
    // ~1 MB/s: every 100 ms a marker and 1 000 lines of 100 bytes.
    let program = format!(
        "import sys,time\nfill=('x'*99+'\\n')*1000\nfor i in range({}):\n t=time.time()\n \
         sys.stdout.write('MARK %d\\n'%int(t*1000)+fill)\n sys.stdout.flush()\n \
         time.sleep(max(0,0.1-(time.time()-t)))\n",
        seconds * 10
    );
    let command = format!("python3 -u -c \"{}\"", program.replace('"', "\\\""));
    let body = StepBody::Command(CommandBody {
        host: "bench".into(),
        command,
        env: Default::default(),
        cwd: None,
        timeout_s: None,
        matrix: Default::default(),
        // Sleuth's own path, as before telemetry; its cost is measured apart.
        telemetry: false,
        server: None,
        artifacts: Vec::new(),
        artifact_limits: None,
        output_limit_bytes: None,
        patch: None,
    });
    let step = notebook.add_step(&actor, &peer.investigation, body).await.expect("step").id;
    let run_once = |viewers: usize| {
        let notebook = notebook.clone();
        let actor = actor.clone();
        async move {
            let run = notebook.start_runs(&actor, step, RunRequest::default()).await.expect("start")[0].id;
            let cpu = cpu_time();
            let client = (viewers > 0).then(|| {
                std::process::Command::new(std::env::current_exe().expect("this binary"))
                    .env("FANOUT_VIEWERS", viewers.to_string())
                    .env("FANOUT_ADDR", addr.to_string())
                    .env("FANOUT_RUN", run.to_string())
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .expect("the viewer process")
            });
            let done = notebook.wait_for_run(&actor, run, Duration::from_secs(120)).await.expect("the run");
            assert_eq!(done.status.as_str(), "succeeded", "{done:?}");
            let output = match client {
                Some(client) => {
                    let out = tokio::task::spawn_blocking(|| client.wait_with_output()).await;
                    String::from_utf8_lossy(&out.expect("join").expect("viewers").stdout).into_owned()
                }
                None => String::new(),
            };
            (cpu_time().saturating_sub(cpu), done.stdout_bytes + done.stderr_bytes, output)
        }
    };

    let started = Instant::now();
    let (baseline, _, _) = run_once(0).await;
    println!(
        "fan-out: a run printing ~1 MB/s for {seconds} s, viewers in another process{}",
        if quick() { " (quick mode: not for perf.md)" } else { "" }
    );
    println!("    no viewer: {:.2} s of server CPU for the run itself", baseline.as_secs_f64());
    for n in counts {
        let (cpu, bytes, output) = run_once(n).await;
        let mut delays = Vec::new();
        let (mut complete, mut ended) = (0, 0);
        for line in output.lines() {
            let mut fields = line.split(' ');
            let last_id: u64 = fields.next().and_then(|f| f.parse().ok()).unwrap_or(0);
            complete += usize::from(last_id == bytes);
            ended += usize::from(fields.next() == Some("true"));
            delays.extend(fields.filter_map(|f| f.parse::<u64>().ok()));
        }
        delays.sort_unstable();
        let per_viewer_ms = cpu.saturating_sub(baseline).as_secs_f64() * 1000.0 / n as f64;
        let per_10mb = per_viewer_ms * 10_000_000.0 / bytes.max(1) as f64;
        println!(
            "    {n:>5} viewers: delay p50 {:>5} ms, p99 {:>5} ms ({} marks); {complete}/{n} got all {bytes} bytes, \
             {ended}/{n} ended; server CPU {per_viewer_ms:.1} ms per viewer ({per_10mb:.1} ms per 10 MB)",
            percentile(&delays, 0.5),
            percentile(&delays, 0.99),
            delays.len()
        );
        assert_eq!(complete, n, "every viewer gets every byte");
    }
    println!("    ({:.0} s in all)", started.elapsed().as_secs_f64());
}
