//! The engine's metrics (`server::engine`): what keeping them costs, what
//! showing them costs, and what scraping costs a run — each against a peer in
//! the same run:
//!
//! (a) storage: 600 scrapes (ten minutes at 1 s) of a vLLM-shaped exposition
//!     (4 gauges, 8 counters, 7 histograms of 17 buckets: 145 series) from a loaded server
//!     (requests finish every scrape, so most buckets move), stored as the
//!     scraper stores them; the bytes in `run_engine` per 10 000 values seen
//!     (goal: ≤ 1 MB) against the expositions' own text (keeping each scrape);
//!     and reading them back into measurements.
//! (b) a run page with 4 engine series (600 values each) and 3 telemetry
//!     series: `GET /runs/{id}` p50 of 5 after the first (goal: ≤ 50 ms
//!     server-side), against the page of the same kind of run without them.
//! (c) a served run (`tools/fake-vllm/serve.py`, `sleep 1` as the client) with
//!     its metrics asked every 100 ms against the same run without: the run's
//!     wall time (goal: ≤ 1.1x; the first scrape is waited for).
//!
//! (d) a step's history of 10 000 runs with a 10 % step at run 7 000 (2 %
//!     noise): `GET /api/v1/steps/{id}/history` p50 of 5 (goal: ≤ 200 ms),
//!     against the step's `GET /api/v1/steps/{id}` (reading the same runs).
//!
//! `SLEUTH_BENCH_QUICK=1`: 60 scrapes, 2 runs each, 500 runs of history.

#[allow(dead_code)] // not every benchmark uses every part of the peer
mod peer;

use domain::engine::series::{Recorded, Recorder};
use domain::runs::{Run, RunRequest};
use domain::steps::{StepBody, command::CommandBody};
use peer::{Actor, Peer, median, ms, page_p50, quick};
use std::fmt::Write;
use std::time::{Duration, Instant};

/// A deterministic stream of numbers in 0..1.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

const BOUNDS: [f64; 17] =
    [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, f64::INFINITY];

/// A loaded vLLM's `/metrics`, scrape after scrape.
struct Engine {
    rng: Lcg,
    counters: [f64; 8],
    histograms: Vec<(&'static str, Vec<f64>, f64)>,
}

impl Engine {
    fn new() -> Self {
        let names = [
            "vllm:time_to_first_token_seconds",
            "vllm:inter_token_latency_seconds",
            "vllm:e2e_request_latency_seconds",
            "vllm:request_queue_time_seconds",
            "vllm:request_prefill_time_seconds",
            "vllm:request_decode_time_seconds",
            "vllm:request_inference_time_seconds",
        ];
        Self {
            rng: Lcg(7),
            counters: [0.0; 8],
            histograms: names.iter().map(|n| (*n, vec![0.0; BOUNDS.len()], 0.0)).collect(),
        }
    }

    /// The next scrape's text: a few requests finished since the last.
    fn scrape(&mut self, gauges_only: bool) -> String {
        let m = "model_name=\"meta-llama/Llama-3.1-8B-Instruct\"";
        let mut out = String::new();
        let waiting = (self.rng.next() * 12.0).floor();
        let running = (self.rng.next() * 64.0).floor();
        for (name, value) in [
            ("vllm:num_requests_waiting", waiting),
            ("vllm:num_requests_running", running),
            ("vllm:kv_cache_usage_perc", running / 64.0),
            ("vllm:cpu_cache_usage_perc", self.rng.next() * 0.1),
        ] {
            let _ = writeln!(out, "# TYPE {name} gauge\n{name}{{{m}}} {value}");
        }
        if gauges_only {
            return out;
        }
        let finished = (self.rng.next() * 8.0).floor();
        for (i, c) in self.counters.iter_mut().enumerate() {
            *c += finished * [1.0, 512.0, 128.0, 0.0, 4096.0, 2048.0, 100.0, 70.0][i];
        }
        let counters = [
            "vllm:request_success_total",
            "vllm:prompt_tokens_total",
            "vllm:generation_tokens_total",
            "vllm:num_preemptions_total",
            "vllm:prefix_cache_queries_total",
            "vllm:prefix_cache_hits_total",
            "vllm:spec_decode_num_draft_tokens_total",
            "vllm:spec_decode_num_accepted_tokens_total",
        ];
        for (name, value) in counters.iter().zip(self.counters) {
            let _ = writeln!(out, "# TYPE {name} counter\n{name}{{{m}}} {value}");
        }
        for (name, buckets, sum) in &mut self.histograms {
            for _ in 0..finished as usize {
                let seconds = self.rng.next().powi(3) * 3.0;
                *sum += seconds;
                for (b, bound) in buckets.iter_mut().zip(BOUNDS) {
                    if seconds <= bound {
                        *b += 1.0;
                    }
                }
            }
            let _ = writeln!(out, "# TYPE {name} histogram");
            for (b, bound) in buckets.iter().zip(BOUNDS) {
                let le = if bound.is_infinite() { "+Inf".to_string() } else { bound.to_string() };
                let _ = writeln!(out, "{name}_bucket{{le=\"{le}\",{m}}} {b}");
            }
            let _ = writeln!(out, "{name}_sum{{{m}}} {sum}\n{name}_count{{{m}}} {}", buckets[BOUNDS.len() - 1]);
        }
        out
    }
}

/// Stores `scrapes` scrapes for `run` as the scraper does (a chunk every 2),
/// 1 s apart from t = -500 ms. Returns (values seen, values written, text bytes, stored bytes).
async fn store_scrapes(peer: &Peer, run: i64, scrapes: usize, gauges_only: bool) -> (usize, usize, usize, usize) {
    let (mut engine, mut recorder) = (Engine::new(), Recorder::default());
    let (mut text_bytes, mut stored, mut seq) = (0, 0, 0);
    for i in 0..scrapes {
        let text = engine.scrape(gauges_only);
        text_bytes += text.len();
        recorder.push(i as i64 * 1000 - 500, &domain::engine::parse(&text));
        let chunk = if i + 1 == scrapes {
            recorder.finish()
        } else if i % 2 == 1 {
            recorder.take()
        } else {
            None
        };
        if let Some(chunk) = chunk {
            seq += 1;
            stored += chunk.len();
            peer.store.insert_engine_chunk(run, seq, &chunk).await.expect("a chunk");
        }
    }
    peer.store.set_engine_notes(run, "[]").await.expect("notes");
    (recorder.seen, recorder.written, text_bytes, stored)
}

async fn add(peer: &Peer, body: CommandBody) -> i64 {
    peer.state.notebook.add_step(&Actor::local(), &peer.investigation, StepBody::Command(body)).await.expect("step").id
}

fn command(text: &str, telemetry: bool) -> CommandBody {
    CommandBody {
        telemetry,
        ..serde_json::from_value(serde_json::json!({ "host": "bench", "command": text })).expect("a command")
    }
}

/// Runs the step once; its wall time and the run.
async fn run_once(peer: &Peer, step: i64) -> (Duration, Run) {
    let mut events = peer.live.subscribe();
    let started = Instant::now();
    let runs = peer.state.notebook.start_runs(&Actor::local(), step, RunRequest::default()).await.expect("start");
    let id = runs[0].id;
    loop {
        let event = events.recv().await.expect("events");
        if event.run.id == id && event.run.status.is_finished() {
            let took = started.elapsed();
            let run = peer.state.notebook.run(&Actor::local(), id).await.expect("the run");
            assert_eq!(run.status.as_str(), "succeeded", "{run:?}");
            return (took, run);
        }
    }
}

#[tokio::main]
async fn main() {
    let peer = Peer::start_with(None, false).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let addr = listener.local_addr().expect("its address");
    let app = server::app(peer.state.clone()).into_make_service_with_connect_info::<std::net::SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let scrapes = if quick() { 60 } else { 600 };

    // (a) what ten minutes of a loaded vLLM's metrics take to keep.
    let plain = add(&peer, command("true", false)).await;
    let (_, run) = run_once(&peer, plain).await;
    let (seen, written, text, stored) = store_scrapes(&peer, run.id, scrapes, false).await;
    let started = Instant::now();
    let chunks = peer.store.engine_chunks(run.id).await.expect("chunks");
    let recorded = Recorded::read(chunks.iter().map(String::as_str));
    let measured = domain::engine::measurements(&recorded.scrapes());
    let read = started.elapsed();
    let per_10k = |bytes: usize, values: usize| bytes as f64 / values.max(1) as f64 * 10_000.0 / 1024.0;
    println!("(a) {scrapes} scrapes of 145 series ({seen} values seen, {written} kept as changes):");
    println!(
        "    stored {:7.0} KB = {:6.1} KB per 10 000 values seen (goal <= 1 024)   {:6.1} KB per 10 000 kept",
        stored as f64 / 1024.0,
        per_10k(stored, seen),
        per_10k(stored, written)
    );
    println!(
        "    the scrapes' own text {:7.0} KB   stored / text = {:.3}x",
        text as f64 / 1024.0,
        stored as f64 / text as f64
    );
    println!("    read back into {} measurements in {:.1} ms", measured.len(), ms(read));

    // (b) a run page with 4 engine series and 3 telemetry series, against one without.
    let sampled = add(&peer, command("true", true)).await;
    let (_, bare) = run_once(&peer, sampled).await;
    let (_, full) = run_once(&peer, sampled).await;
    store_scrapes(&peer, full.id, scrapes, true).await;
    let samples: Vec<(u32, domain::telemetry::Sample)> = (0..scrapes as u64 * 2)
        .map(|i| {
            let sample = domain::telemetry::Sample {
                t_ms: i * 500,
                gpu_util: Some((i % 100) as f64),
                power_w: Some(300.0 + (i % 50) as f64),
                mem_used_mib: Some(70_000.0),
                ..Default::default()
            };
            (0, sample)
        })
        .collect();
    peer.store.insert_samples(full.id, &samples).await.expect("samples");
    let (with, with_page) = page_p50(addr, &format!("/runs/{}", full.id)).await;
    let (without, without_page) = page_p50(addr, &format!("/runs/{}", bare.id)).await;
    let (with_size, without_size) = (with_page.len(), without_page.len());
    println!("(b) a run page, SSR p50 of 5:");
    println!(
        "    with 4 engine series x {scrapes} and 3 telemetry series {:6.1} ms {:5.0} KB (goal <= 50 ms)   with / without = {:.2}x",
        ms(with),
        with_size as f64 / 1024.0,
        ms(with) / ms(without)
    );
    println!(
        "    without                                       {:6.1} ms {:5.0} KB",
        ms(without),
        without_size as f64 / 1024.0
    );

    // (c) a served run with its metrics asked every 100 ms, against one without.
    let tools = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/fake-vllm"));
    let startup = server::fixtures::dir().join("bench-outputs/vllm_startup_custom_allreduce_issue15340.txt");
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("port").local_addr().expect("addr").port();
    let served = |metrics: bool| {
        let mut body = command("sleep 1", false);
        body.server = Some(
            serde_json::from_value(serde_json::json!({
                "command": format!("python3 {} --port {port} --log {} --load-s 0.3", tools.join("serve.py").display(), startup.display()),
                "ready": { "http": format!("http://127.0.0.1:{port}/health") },
                "stop_grace_s": 2,
            }))
            .expect("a server"),
        );
        if let Some(server) = body.server.as_mut().filter(|_| metrics) {
            server.metrics = Some(domain::steps::command::MetricsSpec {
                url: format!("http://127.0.0.1:{port}/metrics"),
                interval_ms: 100,
            });
        }
        body
    };
    let (on, off) = (add(&peer, served(true)).await, add(&peer, served(false)).await);
    let n = if quick() { 2 } else { 8 };
    let (mut with, mut without, mut kept) = (Vec::new(), Vec::new(), 0);
    for _ in 0..n {
        let (took, run) = run_once(&peer, on).await;
        with.push(took);
        kept = peer.store.engine_chunks(run.id).await.expect("chunks").len();
        without.push(run_once(&peer, off).await.0);
    }
    let (w, o) = (median(with), median(without));
    println!("(c) a served run of `sleep 1`, median of {n}:");
    println!(
        "    metrics every 100 ms {:7.1} ms ({kept} chunks)   with / without = {:.2}x (goal <= 1.1)",
        ms(w),
        ms(w) / ms(o)
    );
    println!("    without               {:7.1} ms", ms(o));

    // (d) a step's history of many runs, stored as runs' ends store them.
    let count: usize = if quick() { 500 } else { 10_000 };
    let step = add(&peer, command("true", false)).await;
    let started = Instant::now();
    let mut last = 0;
    for i in 0..count {
        let new = server::db::NewRun {
            step_id: step,
            host: "bench".into(),
            command: "true".into(),
            env: "[]".into(),
            cwd: None,
            timeout_s: None,
            batch_index: 0,
            batch_size: 1,
            warmup: false,
            who: None,
            config: None,
            sweep_id: None,
            sweep_index: None,
            telemetry: false,
            plan: None,
            origin: domain::runs::RunOrigin::Person,
        };
        let row = peer.store.insert_run(&new, None).await.expect("a run");
        last = row.id;
        peer.store.start_run(row.id, "~/.sleuth/runs/bench").await.expect("started");
        let end = server::db::RunEnd {
            status: domain::runs::RunStatus::Succeeded,
            exit_code: Some(0),
            exit_signal: None,
            error: None,
        };
        peer.store.finish_run(row.id, &end).await.expect("finished");
        let level = if i < count * 7 / 10 { 100.0 } else { 90.0 };
        let noise = ((i * 7919) % 1000) as f64 / 1000.0 * 4.0 - 2.0;
        let m = domain::metrics::Measurement {
            metric: "output_throughput".into(),
            value: level + noise,
            unit: "tok/s".into(),
            extractor: "vllm-bench-serve".into(),
            stddev: None,
            key: None,
        };
        peer.store.replace_run_measurements(&peer.investigation, row.id, &[m]).await.expect("measured");
    }
    println!("(d) {count} runs stored in {:.1} s", started.elapsed().as_secs_f64());
    let (history, body) = page_p50(addr, &format!("/api/v1/steps/{step}/history")).await;
    let text = String::from_utf8_lossy(&body);
    let found = text.matches("\"direction\"").count();
    let (plain, _) = page_p50(addr, &format!("/api/v1/steps/{step}")).await;
    println!(
        "    GET …/history p50 {:7.1} ms ({found} change found; goal <= 200 ms)   GET the step p50 {:7.1} ms   history / step = {:.2}x",
        ms(history),
        ms(plain),
        ms(history) / ms(plain)
    );

    // (e) #53's guards on those runs: one run's (judged with every sibling of
    // its configuration), and a hypothesis's over all of them, each arm.
    let (one, _) = page_p50(addr, &format!("/api/v1/runs/{last}")).await;
    let hypothesis = serde_json::json!({ "statement": "the step against itself", "metric": "output_throughput",
        "baseline": { "steps": [step] }, "treatment": { "steps": [step] } });
    let input = serde_json::from_value(hypothesis).expect("a hypothesis");
    let made =
        peer.state.notebook.add_hypothesis(&Actor::local(), &peer.investigation, input).await.expect("a hypothesis");
    let id = made.id;
    assert_eq!(made.guards.len(), 8, "every guard: {:?}", made.guards);
    let (judged, _) = page_p50(addr, &format!("/api/v1/hypotheses/{id}")).await;
    // The guards' own work, apart from reading and drawing: 1 000 runs of a
    // dozen measurements each, five configurations, kept servers of 4 runs.
    let each: Vec<Vec<domain::metrics::Measurement>> = (0..1000)
        .map(|i| {
            let m = |metric: &str, value: f64| domain::metrics::Measurement {
                metric: metric.into(),
                value,
                unit: String::new(),
                extractor: "engine".into(),
                stddev: None,
                key: None,
            };
            let f = i as f64;
            vec![
                m("output_throughput", 100.0 + (f * 7.0) % 5.0),
                m("prefix_cache_hit_pct", (f * 3.0) % 2.0),
                m("spec_decode_acceptance_pct", 70.0 + (f % 3.0)),
                m("requests_waiting_growth", (f % 5.0) / 10.0),
                m("requests_waiting_max", 4.0),
                m("request_rate_asked", 10.0),
                m("send_rate", 9.9),
                m("successful_requests", 300.0),
                m("duration_s", 33.0),
                m("ttft_ms_mean", 55.0),
                m("tpot_ms_mean", 13.7),
                m("total_output_tokens", 81_000.0),
                m("gpu_process_listings", 16.0),
                m("gpu_other_processes", 0.0),
                m("sm_clock_held_pct", f % 3.0),
                m("sm_clock_held_reasons", 4.0),
            ]
        })
        .collect();
    // An 8-GPU host whose GPUs all reach each other, for collective-bound runs.
    let gpus = 8;
    let host = domain::hosts::HostFacts {
        gpus: (0..gpus)
            .map(|index| domain::hosts::GpuFact {
                index,
                name: "NVIDIA H100".into(),
                memory_mib: None,
                pcie_gen: None,
                pcie_width: None,
            })
            .collect(),
        p2p: Some(domain::hosts::Topology {
            devices: (0..gpus).map(|i| format!("GPU{i}")).collect(),
            links: (0..gpus)
                .map(|i| (0..gpus).map(|j| if i == j { "X" } else { "OK" }.to_string()).collect())
                .collect(),
        }),
        ..Default::default()
    }
    .links();
    let facts: Vec<domain::guards::RunFacts<'_>> = each
        .iter()
        .enumerate()
        .map(|(i, ms)| domain::guards::RunFacts {
            id: i as i64,
            measurements: ms,
            value: Some(ms[0].value),
            server: Some((i / 4) as i64),
            collective: true,
            host: Some(&host),
            ..Default::default()
        })
        .collect();
    let configs: Vec<Vec<domain::guards::RunFacts<'_>>> = facts.chunks(200).map(<[_]>::to_vec).collect();
    let bounds = domain::guards::Bounds::default();
    let mut pure = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        let arms = domain::guards::of_arms(&configs[..2], &configs[2..], &bounds);
        let runs: usize =
            configs.iter().map(|c| c.iter().map(|r| domain::guards::of_run(r, c, &bounds).len()).sum::<usize>()).sum();
        assert_eq!((arms.len(), runs), (8, 8000));
        pure.push(started.elapsed());
    }
    println!(
        "(e) guards alone over 1000 runs (a hypothesis's, and each run's with its 200 siblings): median {:7.1} ms (goal <= 1000 ms)",
        ms(median(pure))
    );
    println!(
        "    guards: GET a run of it p50 {:7.1} ms (judged with its {count} siblings; run / step = {:.2}x)",
        ms(one),
        ms(one) / ms(plain)
    );
    println!(
        "    GET a hypothesis over {} runs p50 {:7.1} ms (goal <= 1000 ms)   hypothesis / step = {:.2}x",
        2 * count,
        ms(judged),
        ms(judged) / ms(plain)
    );
}
