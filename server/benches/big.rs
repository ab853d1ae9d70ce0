//! A long investigation's page, `/i/{id}`: what it costs to render and to open.
//!
//! Two investigations are built through the JSON API on a real loopback port,
//! their commands run over SSH against the peer's sshd: a small one (50 steps)
//! and a big one (500 steps: 250 notes and 250 commands with one run each, each
//! run printing 200 KB of log lines, 50 MB in all). For each it reports
//! - server-side rendering: p50/p90 of 15 `GET /i/{id}` (to the last byte);
//! - the page's bytes, and how much of it is `<script>` text (hydration data,
//!   before pages became server components; now the loader);
//! - the same investigation as the API's JSON (everything, as a script reads
//!   it), the peer the page is measured against: page time / API time;
//! - with a built site (`SLEUTH_SITE`, as `./dev test` sets it) and Chromium,
//!   the median of 3 loads: time to `load` and to hydrated (the app marks
//!   `body[data-hydrated-at]`).
//!
//! How the big page's figures grow over the small one's is the point: a page
//! should cost what it shows, not what the runs printed.
//!
//! Then what a change costs when many have the big page open: every open page
//! draws itself anew from the server (spread over 100–400 ms by the browser),
//! so 50 and 200 viewers are 50 and 200 renders: all of them at once here (the
//! worst case), the time until each viewer has its page (p50, p99, the last),
//! against the same number of API reads of the investigation at once.
//!
//! `SLEUTH_BENCH_QUICK=1`: 50 and 120 steps, 10 KB per run, 3 renders, 10 viewers.

#[allow(dead_code)] // not every benchmark uses every part of the peer
mod peer;

use peer::{Peer, median, ms, quick};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One HTTP/1.1 exchange on a new connection; the whole answer's body.
async fn http(addr: SocketAddr, method: &str, path: &str, body: Option<&str>) -> (u16, Vec<u8>) {
    let mut socket = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let body = body.unwrap_or("");
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(request.as_bytes()).await.expect("send");
    let mut answer = Vec::new();
    socket.read_to_end(&mut answer).await.expect("receive");
    let split = answer.windows(4).position(|w| w == b"\r\n\r\n").expect("an HTTP answer");
    let head = String::from_utf8_lossy(&answer[..split]).to_string();
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let mut body = answer.split_off(split + 4);
    if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        body = dechunk(&body);
    }
    (status, body)
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = data.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(String::from_utf8_lossy(&data[..eol]).trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        let start = eol + 2;
        out.extend_from_slice(&data[start..(start + size).min(data.len())]);
        data = &data[(start + size + 2).min(data.len())..];
    }
    out
}

async fn json(addr: SocketAddr, method: &str, path: &str, body: serde_json::Value) -> serde_json::Value {
    let (status, answer) = http(addr, method, path, Some(&body.to_string())).await;
    assert!((200..300).contains(&status), "{method} {path}: {status} {}", String::from_utf8_lossy(&answer));
    serde_json::from_slice(&answer).expect("JSON")
}

/// A note as people write them here: a heading, a few sentences, a table, code.
fn note(i: usize) -> String {
    format!(
        "## Observation {i}\n\nDecode stays at **57.5 tok/s** with `NCCL_PROTO=LL`; the sweep changes nothing \
         within noise. Next: read the allreduce path and count calls per token.\n\n\
         | setting | tok/s | stddev |\n|---|---:|---:|\n| unset | 57.5 | 0.4 |\n| LL | 57.6 | 0.5 |\n| SIMPLE | 57.3 | 0.6 |\n\n\
         ```\nCustom allreduce is disabled because it's not supported on more than two PCIe-only GPUs.\n```\n"
    )
}

/// Creates `steps` steps (every second one a command whose run prints about
/// `bytes` of log lines) and waits for every run to end; answers the
/// investigation's id and the output bytes its runs printed.
async fn build(addr: SocketAddr, steps: usize, bytes: usize) -> (String, u64) {
    let created =
        json(addr, "POST", "/api/v1/investigations", serde_json::json!({"title": format!("{steps} steps")})).await;
    let id = created["id"].as_str().expect("id").to_string();
    let lines = bytes / 100;
    let mut runs = Vec::new();
    for i in 0..steps {
        let step = if i % 2 == 0 {
            serde_json::json!({"kind": "note", "body": note(i)})
        } else {
            // ~100-byte log lines with a colour, like a benchmark's progress.
            let command = format!(
                "seq -f '\\033[32mINFO\\033[0m step %06g: decode 57.5 tok/s, allreduce 156 calls/token, NCCL_PROTO=LL ok' 1 {lines}"
            );
            serde_json::json!({"kind": "command", "host": "bench", "command": command, "env": {"NCCL_PROTO": "LL"}})
        };
        let step = json(addr, "POST", &format!("/api/v1/investigations/{id}/steps"), step).await;
        if i % 2 == 1 {
            let started =
                json(addr, "POST", &format!("/api/v1/steps/{}/runs", step["id"]), serde_json::json!({})).await;
            runs.extend(started.as_array().expect("runs").iter().map(|r| r["id"].as_i64().expect("run id")));
        }
    }
    let mut printed = 0;
    for run in runs {
        loop {
            let (_, answer) = http(addr, "GET", &format!("/api/v1/runs/{run}?wait=60"), None).await;
            let run: serde_json::Value = serde_json::from_slice(&answer).expect("run JSON");
            match run["status"].as_str() {
                Some("succeeded") => {
                    let out = run["stdout_bytes"].as_u64().unwrap_or(0);
                    assert!(out as usize >= bytes * 9 / 10, "run {} printed {out} bytes", run["id"]);
                    printed += out;
                    break;
                }
                Some("queued" | "running") => continue,
                other => panic!("run {run} ended {other:?}"),
            }
        }
    }
    (id, printed)
}

/// Bytes inside `<script>` elements: the hydration data.
fn script_bytes(html: &str) -> usize {
    let mut total = 0;
    let mut rest = html;
    while let Some(open) = rest.find("<script") {
        let after = &rest[open..];
        let Some(start) = after.find('>') else { break };
        let Some(end) = after[start..].find("</script>") else { break };
        total += end - 1;
        rest = &after[start + end..];
    }
    total
}

/// `n` GETs of `path` at once, each on its own connection: (p50, p99, the last).
async fn burst(addr: SocketAddr, path: &str, n: usize) -> (Duration, Duration, Duration) {
    let started = Instant::now();
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let path = path.to_string();
            tokio::spawn(async move {
                let (status, _) = http(addr, "GET", &path, None).await;
                assert_eq!(status, 200, "{path}");
                started.elapsed()
            })
        })
        .collect();
    let mut times = Vec::with_capacity(n);
    for task in tasks {
        times.push(task.await.expect("a viewer"));
    }
    let last = times.iter().copied().max().unwrap_or_default();
    (percentile(times.clone(), 0.5), percentile(times, 0.99), last)
}

fn percentile(mut samples: Vec<Duration>, p: f64) -> Duration {
    samples.sort();
    samples[((samples.len() - 1) as f64 * p).round() as usize]
}

struct Figures {
    steps: usize,
    ssr_p50: Duration,
    ssr_p90: Duration,
    html: usize,
    scripts: usize,
    api: Duration,
    api_bytes: usize,
    browser: Option<(f64, f64)>,
}

async fn measure(addr: SocketAddr, id: &str, steps: usize, renders: usize) -> Figures {
    let page = format!("/i/{id}");
    let mut times = Vec::new();
    let mut html = Vec::new();
    for _ in 0..renders {
        let started = Instant::now();
        let (status, body) = http(addr, "GET", &page, None).await;
        times.push(started.elapsed());
        assert_eq!(status, 200, "{page}");
        html = body;
    }
    let html = String::from_utf8_lossy(&html).to_string();
    assert!(html.contains("data-kind=\"note\""), "the page shows steps");
    let mut api_times = Vec::new();
    let mut api_bytes = 0;
    for _ in 0..renders {
        let started = Instant::now();
        let (status, body) = http(addr, "GET", &format!("/api/v1/investigations/{id}"), None).await;
        api_times.push(started.elapsed());
        assert_eq!(status, 200);
        api_bytes = body.len();
    }
    Figures {
        steps,
        ssr_p50: percentile(times.clone(), 0.5),
        ssr_p90: percentile(times, 0.9),
        scripts: script_bytes(&html),
        html: html.len(),
        api: median(api_times),
        api_bytes,
        browser: browser(addr, &page),
    }
}

/// Chromium's median `load` and hydrated times, when a built site and a browser exist.
fn browser(addr: SocketAddr, page: &str) -> Option<(f64, f64)> {
    let site = std::env::var_os("SLEUTH_SITE")?;
    if !std::path::Path::new(&site).join("pkg").exists() {
        println!("  (no built site at {}: no browser timings; run ./dev build)", site.to_string_lossy());
        return None;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/page-timing.mjs");
    let times = if quick() { "1" } else { "3" };
    let out = std::process::Command::new("node").arg(script).arg(format!("http://{addr}{page}")).arg(times).output();
    let out = match out {
        Ok(out) if out.status.success() => out,
        Ok(out) => panic!("page-timing.mjs failed: {}", String::from_utf8_lossy(&out.stderr)),
        Err(e) => {
            println!("  (node not found: {e}; no browser timings)");
            return None;
        }
    };
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("page-timing JSON");
    assert_eq!(report["problems"], serde_json::json!([]), "the page had errors in Chromium");
    Some((report["load_ms"].as_f64()?, report["hydrated_ms"].as_f64()?))
}

fn print(f: &Figures) {
    println!(
        "{:>4} steps: SSR p50 {:7.1} ms p90 {:7.1} ms · HTML {:8.1} KB ({:7.1} KB in <script>) · API JSON {:7.1} ms, {:8.1} KB · page/API {:.2}×",
        f.steps,
        ms(f.ssr_p50),
        ms(f.ssr_p90),
        f.html as f64 / 1024.0,
        f.scripts as f64 / 1024.0,
        ms(f.api),
        f.api_bytes as f64 / 1024.0,
        ms(f.ssr_p50) / ms(f.api),
    );
    if let Some((load, hydrated)) = f.browser {
        println!("            Chromium: load {load:7.0} ms · hydrated {hydrated:7.0} ms");
    }
}

#[tokio::main]
async fn main() {
    // Without the search index: indexing the 50 MB just printed would run
    // beside the renders being timed (the search benchmark measures it).
    let peer = Peer::start_with(None, false).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let addr = listener.local_addr().expect("its address");
    let app = server::app(peer.state.clone()).into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, app).await });

    let (sizes, bytes, renders) = if quick() { ([50, 120], 10_000, 3) } else { ([50, 500], 200_000, 15) };
    let mut figures = Vec::new();
    let mut ids = Vec::new();
    for steps in sizes {
        let started = Instant::now();
        let (id, printed) = build(addr, steps, bytes).await;
        println!(
            "built {steps} steps ({} runs, {:.1} MB of output) in {:.1} s",
            steps / 2,
            printed as f64 / 1e6,
            started.elapsed().as_secs_f64()
        );
        let f = measure(addr, &id, steps, renders).await;
        print(&f);
        figures.push(f);
        ids.push(id);
    }
    let big_id = ids.last().expect("the big investigation");
    for viewers in if quick() { vec![10] } else { vec![50, 200] } {
        let pages = burst(addr, &format!("/i/{big_id}"), viewers).await;
        let api = burst(addr, &format!("/api/v1/investigations/{big_id}"), viewers).await;
        println!(
            "{viewers:>4} viewers redraw the {}-step page at once: p50 {:7.1} ms p99 {:7.1} ms, all in {:7.1} ms · \
             the API read as often: all in {:7.1} ms · pages/API {:.2}×",
            figures[1].steps,
            ms(pages.0),
            ms(pages.1),
            ms(pages.2),
            ms(api.2),
            ms(pages.2) / ms(api.2),
        );
    }
    let (small, big) = (&figures[0], &figures[1]);
    println!(
        "growth {}→{} steps: SSR {:.1}×, HTML {:.1}× (steps {:.0}×)",
        small.steps,
        big.steps,
        ms(big.ssr_p50) / ms(small.ssr_p50),
        big.html as f64 / small.html as f64,
        big.steps as f64 / small.steps as f64,
    );
}
