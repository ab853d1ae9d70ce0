//! Reading the field's report files, and an investigation judged on latency
//! distributions.
//!
//! (a) a 200 MB PyTorch chrome trace (Kineto's shape: kernels with their long
//!     template names, CPU ops, runtime calls, `ProfilerStep#N`, NCCL kernels
//!     and annotations) and (b) a 100 000-request `vllm bench serve
//!     --save-detailed` result (TTFTs, 64 ITLs per request, texts): Sleuth's
//!     reader (`server::reports::read`, release, one thread) against
//!     `python3 -c 'import json; json.load(open(F))'` on the same file, wall
//!     time (median of 3) and peak RSS growth (Sleuth: VmHWM reset with
//!     /proc/self/clear_refs before the read; Python: ru_maxrss minus the
//!     interpreter's own before the load). Goal: faster than the load alone,
//!     ≤ 64 MB growth.
//! (c) an investigation of 1 000 runs (a sweep of 2 scales × 5 seeds, 100
//!     repeats each) whose client writes detailed results (300 requests), with
//!     a hypothesis on p99 TTFT: `GET /i/{id}` p50 of 5 renders after the first
//!     (which computes the bootstrap), and the page's bytes. Goal (issue 13):
//!     ≤ 50 ms, ≤ 1 MB.
//!
//! `SLEUTH_BENCH_QUICK=1`: 5 MB, 2 000 requests, 20 runs.

#[allow(dead_code)] // not every benchmark uses every part of the peer
mod peer;

use domain::runs::RunRequest;
use domain::steps::{StepBody, command::CommandBody};
use peer::{Actor, Peer, median, ms, page_p50, quick, status_kb};
use std::io::Write;
use std::process::Command;
use std::time::{Duration, Instant};

/// A trace of about `bytes`, as Kineto writes one (one event per line).
fn write_trace(path: &std::path::Path, bytes: usize) -> usize {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("trace file"));
    write!(out, "{{\n  \"schemaVersion\": 1,\n  \"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": 0, \"world_size\": 8}},\n  \"traceEvents\": [\n").unwrap();
    let (mut written, mut ts, mut step, mut kernels) = (0usize, 1_000_000.0f64, 0, 0usize);
    let mut first = true;
    let mut event = |out: &mut std::io::BufWriter<std::fs::File>, text: String| {
        let sep = if first { "" } else { ",\n" };
        first = false;
        out.write_all(sep.as_bytes()).unwrap();
        out.write_all(text.as_bytes()).unwrap();
        text.len() + sep.len()
    };
    let names = [
        "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x1_tn_align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x1_tn_align8::Params)",
        "void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, false, false>(Flash_fwd_params)",
        "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3> >(int, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3>)",
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    ];
    while written < bytes {
        step += 1;
        let start = ts;
        for layer in 0..80 {
            for (i, name) in names.iter().enumerate() {
                let cpu = format!(
                    "    {{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, \"ts\": {ts:.3}, \"dur\": 12.5, \"args\": {{\"External id\": {kernels}, \"Sequence number\": {layer}, \"Fwd thread id\": 0, \"Record function id\": 0, \"Ev Idx\": {i}}}}}"
                );
                written += event(&mut out, cpu);
                let kernel = format!(
                    "    {{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"{name}\", \"pid\": 0, \"tid\": 7, \"ts\": {:.3}, \"dur\": {:.3}, \"args\": {{\"External id\": {kernels}, \"queued\": 0, \"device\": 0, \"context\": 1, \"stream\": 7, \"correlation\": {kernels}, \"registers per thread\": 128, \"shared memory\": 0, \"blocks per SM\": 0.5, \"warps per SM\": 4, \"grid\": [132, 1, 1], \"block\": [128, 1, 1], \"est. achieved occupancy %\": 6}}}}",
                    ts + 3.0,
                    8.0 + i as f64
                );
                written += event(&mut out, kernel);
                if i == 3 {
                    let note = format!(
                        "    {{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"nccl:all_reduce\", \"pid\": 1, \"tid\": 1, \"ts\": {:.3}, \"dur\": 5.0}}",
                        ts + 1.0
                    );
                    written += event(&mut out, note);
                }
                kernels += 1;
                ts += 20.0;
            }
        }
        let step_event = format!(
            "    {{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#{step}\", \"pid\": 1, \"tid\": 1, \"ts\": {start:.3}, \"dur\": {:.3}}}",
            ts - start
        );
        written += event(&mut out, step_event);
        ts += 50.0;
    }
    write!(out, "\n  ],\n  \"traceName\": \"bench.json\"\n}}\n").unwrap();
    out.flush().unwrap();
    step
}

/// A `--save-detailed` result of `n` requests, each with 64 ITLs, in seconds.
fn write_detailed(path: &std::path::Path, n: usize) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("result file"));
    let mut state = 7u64;
    let mut next = || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    write!(out, "{{\"date\": \"20261203-093000\", \"backend\": \"vllm\", \"model_id\": \"meta-llama/Llama-3.1-70B-Instruct\", \"num_prompts\": {n}, \"request_rate\": 8.0, \"duration\": {}, \"completed\": {n}, \"request_throughput\": 8.0, \"output_throughput\": 512.0, \"mean_ttft_ms\": 120.0, \"p99_ttft_ms\": 400.0", n as f64 / 8.0).unwrap();
    let list = |out: &mut std::io::BufWriter<std::fs::File>, name: &str, values: &mut dyn FnMut() -> String| {
        write!(out, ", \"{name}\": [").unwrap();
        for i in 0..n {
            if i > 0 {
                out.write_all(b", ").unwrap();
            }
            out.write_all(values().as_bytes()).unwrap();
        }
        out.write_all(b"]").unwrap();
    };
    list(&mut out, "input_lens", &mut || "1024".into());
    list(&mut out, "output_lens", &mut || "65".into());
    list(&mut out, "ttfts", &mut || format!("{}", 0.05 + next() * 0.2));
    list(&mut out, "itls", &mut || {
        let itls: Vec<String> = (0..64).map(|_| format!("{}", 0.01 + next() * 0.01)).collect();
        format!("[{}]", itls.join(", "))
    });
    list(&mut out, "generated_texts", &mut || {
        "\"The quick brown fox jumps over the lazy dog, again and again.\"".into()
    });
    list(&mut out, "errors", &mut || "\"\"".into());
    out.write_all(b"}\n").unwrap();
    out.flush().unwrap();
}

/// Sleuth's reader on `path`: (wall time, peak RSS growth in MB, what it found).
fn sleuth_read(path: &std::path::Path) -> (Duration, f64, usize) {
    let before = status_kb("VmRSS:");
    // Resets VmHWM to the current RSS (Linux ≥ 4.0), so the peak is this read's.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let started = Instant::now();
    let file = std::fs::File::open(path).expect("open");
    let report = server::reports::read("bench", file).expect("recognised").expect("read");
    let took = started.elapsed();
    let growth = status_kb("VmHWM:").saturating_sub(before) as f64 / 1024.0;
    (took, growth, report.measurements.len() + report.samples.iter().map(|s| s.values.len()).sum::<usize>())
}

/// `json.load` of `path` in Python: (wall time of the load, RSS growth in MB).
fn python_load(path: &std::path::Path) -> (Duration, f64) {
    let script = "import json, resource, sys, time\n\
                  before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n\
                  t = time.perf_counter(); json.load(open(sys.argv[1])); took = time.perf_counter() - t\n\
                  print(took, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024)";
    let out = Command::new("python3").args(["-c", script]).arg(path).output().expect("python3");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let mut parts = text.split_whitespace().map(|p| p.parse::<f64>().expect("a number"));
    (Duration::from_secs_f64(parts.next().unwrap()), parts.next().unwrap())
}

fn compare(what: &str, path: &std::path::Path) {
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0) as f64 / 1e6;
    let (mut sleuth, mut python) = (Vec::new(), Vec::new());
    let (mut s_rss, mut p_rss, mut found) = (0f64, 0f64, 0);
    for _ in 0..3 {
        let (took, rss, n) = sleuth_read(path);
        sleuth.push(took);
        s_rss = s_rss.max(rss);
        found = n;
        let (took, rss) = python_load(path);
        python.push(took);
        p_rss = p_rss.max(rss);
    }
    let (s, p) = (median(sleuth), median(python));
    println!(
        "({what}) {size:.0} MB: Sleuth reads it in {:.0} ms (+{s_rss:.1} MB peak RSS, {found} values) · python3 json.load {:.0} ms \
         (+{p_rss:.0} MB) · Sleuth / json.load {:.2}×",
        ms(s),
        ms(p),
        ms(s) / ms(p)
    );
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (trace_bytes, requests, runs) = if quick() { (5 << 20, 2_000, 20u32) } else { (200 << 20, 100_000, 1_000) };
    // `SLEUTH_BENCH_RUNS=N`: only (c), with N runs (a multiple of 10).
    let only_runs: Option<u32> = std::env::var("SLEUTH_BENCH_RUNS").ok().and_then(|n| n.parse().ok());
    let runs = only_runs.unwrap_or(runs);
    let tag = if quick() { " (quick mode: not for perf.md)" } else { "" };
    println!("reports benchmark{tag}");

    if only_runs.is_none() {
        files(dir.path(), trace_bytes, requests);
    }
    pages(runs).await;
}

/// (a) and (b).
fn files(dir: &std::path::Path, trace_bytes: usize, requests: usize) {
    let trace = dir.join("trace.json");
    let steps = write_trace(&trace, trace_bytes);
    println!("(a) a trace of {steps} steps, 80 layers × 4 kernels each");
    compare("a", &trace);
    std::fs::remove_file(&trace).ok();

    let detailed = dir.join("result.json");
    write_detailed(&detailed, requests);
    println!("(b) a detailed result of {requests} requests × 64 ITLs");
    compare("b", &detailed);
    std::fs::remove_file(&detailed).ok();
}

/// (c) `runs` runs with distributions: the page before and after a hypothesis on them.
async fn pages(runs: u32) {
    let peer = Peer::start_with(None, false).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let addr = listener.local_addr().expect("its address");
    let app = server::app(peer.state.clone()).into_make_service_with_connect_info::<std::net::SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let (notebook, actor) = (peer.state.notebook.clone(), Actor::local());
    let client = "python3 - <<'EOF'\nimport json, random\nscale = float({scale}); r = random.Random(int({seed}) * 7919 + int(scale * 10))\nn = 300\n\
                  ttft = [scale * 0.08 * r.lognormvariate(0, 0.35) for _ in range(n)]\n\
                  itls = [[0.015 * r.lognormvariate(0, 0.2) for _ in range(8)] for _ in range(n)]\n\
                  json.dump({\"backend\": \"vllm\", \"completed\": n, \"duration\": n / 4, \"request_throughput\": 4.0, \"ttfts\": ttft, \"itls\": itls, \"errors\": [\"\"] * n}, open(\"result.json\", \"w\"))\nEOF";
    let seeds: Vec<serde_json::Value> = (1..=5).map(serde_json::Value::from).collect();
    let matrix = serde_json::json!({ "{scale}": [1.0, 0.8], "{seed}": seeds });
    let body = CommandBody {
        host: "bench".into(),
        command: client.into(),
        telemetry: false,
        artifacts: vec!["result.json".into()],
        matrix: domain::sweeps::deserialize_matrix(matrix).expect("a matrix"),
        ..serde_json::from_value(serde_json::json!({ "host": "bench", "command": "true" })).expect("a command")
    };
    let step = notebook.add_step(&actor, &peer.investigation, StepBody::Command(body)).await.expect("step").id;
    let started = Instant::now();
    let repeat = runs / 10;
    let queued = notebook
        .start_runs(&actor, step, RunRequest { repeat: Some(repeat), ..RunRequest::default() })
        .await
        .expect("start");
    assert_eq!(queued.len(), runs as usize);
    let last = queued.last().expect("runs").id;
    loop {
        let run = notebook.run(&actor, last).await.expect("the run");
        if run.status.is_finished() && run.measurements.iter().any(|m| m.metric == "ttft_ms_p99") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!("(c) {runs} runs with samples in {:.1} s", started.elapsed().as_secs_f64());
    let pick = |scale: f64| serde_json::json!({ "configs": [{ "step": step, "config": { "{scale}": scale } }] });
    let input: domain::hypotheses::HypothesisInput = serde_json::from_value(serde_json::json!({
        "statement": "p99 TTFT falls 20 % at scale 0.8", "metric": "ttft_ms_p99", "direction": "decrease",
        "baseline": pick(1.0), "treatment": pick(0.8)
    }))
    .expect("a hypothesis");
    let path = format!("/i/{}", peer.investigation);
    let page = |label: &'static str| {
        let path = path.clone();
        async move {
            let (p50, body) = page_p50(addr, &path).await;
            if let Ok(out) = std::env::var("SLEUTH_BENCH_PAGE_OUT") {
                std::fs::write(format!("{out}.{}.html", label.len()), &body).ok();
            }
            println!(
                "(c) the {runs}-run page {label}: SSR p50 {:.1} ms, {:.0} KB (goals: ≤ 50 ms, ≤ 1 024 KB)",
                ms(p50),
                body.len() as f64 / 1024.0
            );
        }
    };
    page("without a hypothesis").await;
    let first = Instant::now();
    let h = notebook.add_hypothesis(&actor, &peer.investigation, input).await.expect("hypothesis");
    let d = h.distribution.expect("a bootstrap");
    println!(
        "    first view (bootstrap of {} + {} runs): {:.0} ms — {}",
        d.runs.0,
        d.runs.1,
        ms(first.elapsed()),
        d.verdict
    );
    page("with a hypothesis on p99 TTFT").await;
}
