//! The engine's own signals beside each served run: the fake server
//! (`tools/fake-vllm/serve.py`) as an engine with a batch limit, vLLM's
//! metric names on `/metrics`, and a client that streams and measures.

use crate::helpers::TestApp;
use crate::runs::{app_with_host, command_step, finished, start};
use crate::sshd::Sshd;
use axum::http::StatusCode;
use serde_json::{Value, json};
use std::path::PathBuf;

pub fn tool(name: &str) -> String {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/fake-vllm")).join(name).display().to_string()
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The engine: at most `$MAX_BATCH` requests at once, 10 ms a token, 40 % of
/// prompt tokens found in its prefix cache, 70 % of drafted tokens accepted.
fn engine(port: u16, extra: &str) -> Value {
    let startup = server::fixtures::dir().join("bench-outputs/vllm_startup_custom_allreduce_issue15340.txt");
    json!({
        "command": format!(
            "python3 {} --port {port} --log {} --load-s 0.3 --max-batch $MAX_BATCH --token-ms 10 \
             --prefix-hit-pct 40 --spec-accept-pct 70 {extra}",
            tool("serve.py"), startup.display()
        ),
        "ready": { "http": format!("http://127.0.0.1:{port}/health") },
        "stop_grace_s": 2,
        "reuse": "config",
        "metrics": { "url": format!("http://127.0.0.1:{port}/metrics"), "interval_ms": 200 },
    })
}

/// 16 streamed requests of 16 tokens, 8 at a time.
fn client(port: u16) -> String {
    let results = server::fixtures::dir().join("reports/vllm-bench-serve/nerdalert_results.json");
    format!(
        "python3 {} --port {port} --result-from {} --measure --concurrency 8 --requests 16 --max-tokens 16",
        tool("bench.py"),
        results.display()
    )
}

fn measured(run: &Value, metric: &str, key: Option<&str>) -> Option<f64> {
    run["measurements"]
        .as_array()?
        .iter()
        .find(|m| m["metric"] == metric && m["key"].as_str() == key)
        .and_then(|m| m["value"].as_f64())
}

/// Each run once it ended, each having succeeded.
pub async fn succeeded(app: &TestApp, runs: &[i64]) -> Vec<Value> {
    let mut ended = Vec::new();
    for run in runs {
        let run = finished(app, *run).await;
        assert_eq!(run["status"], "succeeded", "{run}");
        ended.push(run);
    }
    ended
}

async fn series(app: &TestApp, run: i64) -> Value {
    let response = app.get(&format!("/api/v1/runs/{run}/engine")).await;
    assert_eq!(response.status, StatusCode::OK, "{}", response.text());
    response.json()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweeps_engine_signals_say_why_its_latency_differs() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let priced = app.patch_json("/api/v1/hosts/gpu", json!({ "price_per_hour": 3.6 })).await;
    assert_eq!(priced.status, StatusCode::OK, "{}", priced.text());
    let port = free_port();
    let step = command_step(
        &app,
        json!({ "command": client(port), "telemetry": false, "server": engine(port, ""),
                "artifacts": ["result.json"], "matrix": { "MAX_BATCH": [1, 8] } }),
    )
    .await;
    let shown = app.get(&format!("/api/v1/steps/{step}")).await.json();
    assert_eq!(shown["server"]["metrics"]["interval_ms"], 200, "{shown}");
    let runs = start(&app, step, json!({ "repeat": 2 })).await;
    let ended = succeeded(&app, &runs).await;
    for run in &ended {
        let id = run["id"].as_i64().unwrap();
        let batch =
            run["config"]["MAX_BATCH"].as_str().map(str::to_string).unwrap_or_else(|| run["config"].to_string());
        // The engine's ratios are what it was built with, over this run only.
        let hit = measured(run, "prefix_cache_hit_pct", None).unwrap_or_else(|| panic!("{}", run["measurements"]));
        assert!((hit - 40.0).abs() <= 5.0, "{hit}");
        let accepted = measured(run, "spec_decode_acceptance_pct", None).unwrap();
        assert!((accepted - 70.0).abs() <= 5.0, "{accepted}");
        // Counters count this run's work, not the kept server's since its start.
        let tokens = measured(run, "generation_tokens", None).unwrap();
        assert!((tokens - 256.0).abs() <= 25.6, "run {id} ({batch}): {tokens} tokens, the client's 256");
        let waiting = measured(run, "requests_waiting_max", None).unwrap();
        let engine_p99 = measured(run, "ttft_ms_p99", Some("source=engine")).expect("the engine's own TTFT");
        assert!(engine_p99 > 0.0, "{engine_p99}");
        if batch.contains('1') && !batch.contains('8') {
            assert!(waiting >= 3.0, "one at a time: a queue of up to 7 ({waiting})");
            let e = series(&app, id).await;
            let queue = e["series"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["metric"] == "vllm:num_requests_waiting")
                .cloned()
                .unwrap_or_else(|| panic!("{e}"));
            assert_eq!(queue["type"], "gauge");
            assert_eq!(queue["labels"]["model_name"], "fake");
            assert!(queue["samples"].as_array().unwrap().len() >= 3, "{queue}");
            assert!(e["notes"].as_array().unwrap().is_empty(), "{e}");
        }
        // What its throughput costs at the host's price: 3.6 an hour is 0.001 a second.
        let throughput = measured(run, "output_throughput", None).unwrap();
        let cost = measured(run, "cost_per_mtok", None).unwrap();
        // (Within 1 %: the throughput a cost is made from may be the printed one, to 2 decimals.)
        assert!((cost - 3.6 / (throughput * 3600.0) * 1e6).abs() < 0.01 * cost, "{cost} at {throughput}");
    }

    // The second run of each configuration used the kept server.
    let second = &ended[1];
    assert!(second["server"]["notes"].to_string().contains("Kept from run"), "{}", second["server"]);

    // The batch of 8 is on the frontier and the best under the SLO.
    let investigation = shown["investigation_id"].as_str().unwrap().to_string();
    let set =
        app.put_json(&format!("/api/v1/investigations/{investigation}/slo"), json!({ "text": "TTFT <= 500 ms" })).await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.text());
    let f = app.get(&format!("/api/v1/steps/{step}/frontier")).await.json();
    let eight = f["points"].as_array().unwrap().iter().find(|p| p["label"] == "MAX_BATCH=8").cloned().unwrap();
    assert_eq!(eight["on_frontier"], true, "{f}");
    assert_eq!(f["best_under_slo"], "MAX_BATCH=8", "{f}");

    // The run page draws the engine on the run's time axis.
    let first = ended[0]["id"].as_i64().unwrap();
    let page = app.get(&format!("/runs/{first}")).await;
    assert_eq!(page.status, StatusCode::OK);
    let page = page.text();
    assert!(page.contains("class=\"engine-chart\""), "{page}");
    assert!(page.contains("requests waiting"), "{page}");
    assert!(page.contains("TTFT ms by start"), "each request by its start, from the saved start_times");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_that_cannot_be_read_are_a_note_never_a_failed_run() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let port = free_port();
    let mut spec = engine(port, "--mode no-metrics");
    spec["reuse"] = json!("run");
    let step = command_step(
        &app,
        json!({ "command": client(port), "telemetry": false, "server": spec, "env": { "MAX_BATCH": "4" } }),
    )
    .await;
    let investigation =
        app.get(&format!("/api/v1/steps/{step}")).await.json()["investigation_id"].as_str().unwrap().to_string();
    let run = start(&app, step, json!({})).await[0];
    let run = finished(&app, run).await;
    assert_eq!(run["status"], "succeeded", "{run}");
    let e = series(&app, run["id"].as_i64().unwrap()).await;
    assert!(e["series"].as_array().unwrap().is_empty(), "{e}");
    let notes = e["notes"].to_string();
    assert!(notes.contains("failed: HTTP 404"), "{notes}");
    assert!(measured(&run, "generation_tokens", None).is_none(), "nothing measured from nothing");

    // A URL the host cannot be asked with is refused when the step is written.
    let mut bad = engine(port, "");
    bad["metrics"]["url"] = json!("file:///etc/passwd");
    let refused = app
        .post_json(
            &format!("/api/v1/investigations/{investigation}/steps"),
            json!({ "kind": "command", "host": "gpu", "command": "true", "server": bad }),
        )
        .await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.text());
    assert!(refused.text().contains("not a metrics URL"), "{}", refused.text());
    let mut fast = engine(port, "");
    fast["metrics"]["interval_ms"] = json!(5);
    let refused = app
        .post_json(
            &format!("/api/v1/investigations/{investigation}/steps"),
            json!({ "kind": "command", "host": "gpu", "command": "true", "server": fast }),
        )
        .await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.text());
}

/// An engine exposing 50 000 series, 0.3 s to answer, scraped every 100 ms:
/// the run keeps scraping (the host loop waits for the answer, then for what
/// is left of the interval), keeps 2 000 series, and says both in notes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_slow_metrics_page_is_capped_and_said() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let port = free_port();
    let server = format!(
        "python3 -c 'import http.server, time\n\
         body = \"\".join(\"vllm:lora_requests{{id=\\\"%d\\\"}} %d\\n\" % (i, i) for i in range(50000)).encode()\n\
         class H(http.server.BaseHTTPRequestHandler):\n\
         \x20   def do_GET(self):\n\
         \x20       time.sleep(0.3)\n\
         \x20       self.send_response(200); self.send_header(\"Content-Length\", str(len(body))); self.end_headers(); self.wfile.write(body)\n\
         \x20   def log_message(self, *a): pass\n\
         http.server.ThreadingHTTPServer((\"127.0.0.1\", {port}), H).serve_forever()'"
    );
    let spec = json!({
        "command": server,
        "ready": { "tcp": port },
        "stop_grace_s": 1,
        "metrics": { "url": format!("http://127.0.0.1:{port}/metrics"), "interval_ms": 100 },
    });
    let step = command_step(&app, json!({ "command": "sleep 3", "telemetry": false, "server": spec })).await;
    let run = start(&app, step, json!({})).await[0];
    let ended = finished(&app, run).await;
    assert_eq!(ended["status"], "succeeded", "{ended}");
    let response = app.get(&format!("/api/v1/runs/{run}/engine")).await;
    assert_eq!(response.status, StatusCode::OK);
    assert!(response.body.len() <= 5 << 20, "{} bytes", response.body.len());
    let engine = response.json();
    let kept = engine["series"].as_array().unwrap();
    assert_eq!(kept.len(), 2000, "the cap");
    let notes = engine["notes"].to_string();
    assert!(notes.contains("more than 2000 series") && notes.contains("vllm:lora_requests"), "{notes}");
    assert!(notes.contains("took longer than the interval of 100 ms"), "{notes}");
    // It kept scraping past the first slow one.
    let samples = kept[0]["samples"].as_array().unwrap().len();
    assert!(samples >= 2, "{}", kept[0]);
}

/// #53: the guards. A sweep whose treatment runs on a warm prefix cache: each
/// run carries every guard (prefix hits `fail` on the warm one, `ok` on the
/// cold; what it cannot see `unknown`, never missing), and the hypothesis
/// comparing them is not trusted and says why — in the API, on its page and
/// in its report.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_prefix_cache_in_one_arm_is_a_hazard_the_verdict_names() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let port = free_port();
    let mut server = engine(port, "");
    let command = server["command"].as_str().unwrap().replace("--prefix-hit-pct 40", "--prefix-hit-pct $HIT");
    server["command"] = json!(command);
    let step = command_step(
        &app,
        json!({ "command": client(port), "telemetry": false, "server": server,
                "env": { "MAX_BATCH": "8" }, "matrix": { "HIT": [0, 60] } }),
    )
    .await;
    let runs = start(&app, step, json!({ "repeat": 2 })).await;
    let ended = succeeded(&app, &runs).await;
    let names = [
        "prefix_cache_warm",
        "spec_acceptance_drift",
        "oversaturated",
        "client_saturated",
        "gpu_contended",
        "first_after_start",
        "restart_regimes",
        "topology",
    ];
    for run in &ended {
        let guards = run["guards"].as_array().unwrap_or_else(|| panic!("{run}"));
        assert_eq!(guards.iter().map(|g| g["name"].as_str().unwrap()).collect::<Vec<_>>(), names, "{run}");
        let warm = run["config"]["HIT"] == "60";
        let prefix = &guards[0];
        assert_eq!(prefix["level"], if warm { "fail" } else { "ok" }, "{prefix}");
        assert!(prefix["evidence"].as_array().is_some_and(|e| !e.is_empty()), "{prefix}");
        if !warm {
            assert!(guards.iter().all(|g| g["level"] == "ok" || g["level"] == "unknown"), "a clean run: {run}");
        }
        for g in guards.iter().filter(|g| g["level"] == "unknown") {
            assert!(!g["text"].as_str().unwrap().is_empty(), "an unknown says why: {g}");
        }
    }

    let investigation =
        app.get(&format!("/api/v1/steps/{step}")).await.json()["investigation_id"].as_str().unwrap().to_string();
    let made = app
        .post_json(
            &format!("/api/v1/investigations/{investigation}/hypotheses"),
            json!({ "statement": "A bigger cache speeds it up", "metric": "output_throughput", "direction": "increase",
                    "baseline": { "configs": [{ "step": step, "config": { "HIT": "0" } }] },
                    "treatment": { "configs": [{ "step": step, "config": { "HIT": "60" } }] } }),
        )
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
    let h = made.json();
    assert_eq!(h["trusted"], false, "{h}");
    let hazards = h["hazards"].as_str().unwrap_or_else(|| panic!("{h}"));
    assert!(hazards.contains("treatment runs: prefix-cache hits up to 6") && hazards.contains("differ"), "{hazards}");
    let prefix = &h["guards"][0];
    assert_eq!((prefix["name"].as_str(), prefix["level"].as_str()), (Some("prefix_cache_warm"), Some("fail")), "{h}");

    // The hypothesis's page and report say so; the warm run's page shows its guards.
    let page = app.get(&format!("/i/{investigation}")).await.text();
    assert!(page.contains("⚠ Hazards: ") && page.contains("prefix-cache hits up to 6"), "the page says the hazard");
    let report = app.get(&format!("/api/v1/investigations/{investigation}/export?format=markdown")).await.text();
    assert!(report.contains("⚠ Hazards: ") && report.contains("prefix-cache hits up to 6"), "{report}");
    // The sweep's frontier marks the configuration whose runs a guard flags.
    let f = app.get(&format!("/api/v1/steps/{step}/frontier")).await.json();
    let point = |label: &str| f["points"].as_array().unwrap().iter().find(|p| p["label"] == label).cloned().unwrap();
    assert!(point("HIT=60")["hazards"].as_str().is_some_and(|h| h.contains("prefix-cache hits")), "{f}");
    assert_eq!(point("HIT=60")["guard_level"], "fail", "{f}");
    assert!(point("HIT=0")["hazards"].is_null(), "{f}");
    // Bounds set for the investigation: a looser fail bound makes the warm arm a warning;
    // a bound that cannot be one is refused with its name; `{}` is the defaults again.
    let bounds = format!("/api/v1/investigations/{investigation}/guards");
    let set = app.put_json(&bounds, json!({ "prefix_hit_fail_pct": 70 })).await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.text());
    assert_eq!(
        (set.json()["bounds"]["prefix_hit_fail_pct"].as_f64(), set.json()["bounds"]["prefix_hit_warn_pct"].as_f64()),
        (Some(70.0), Some(5.0))
    );
    let id = h["id"].as_i64().unwrap();
    let loosened = app.get(&format!("/api/v1/hypotheses/{id}")).await.json();
    assert_eq!(loosened["guards"][0]["level"], "warn", "{loosened}");
    for (bad, says) in
        [(json!({ "prefix_hit_fail_pct": -1 }), "prefix_hit_fail_pct"), (json!({ "prefix_warn": 1 }), "prefix_warn")]
    {
        let refused = app.put_json(&bounds, bad).await;
        assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.text());
        assert!(refused.text().contains(says), "{}", refused.text());
    }
    assert_eq!(
        app.get(&bounds).await.json()["set"],
        json!({ "prefix_hit_fail_pct": 70.0 }),
        "a refused change changes nothing"
    );
    assert_eq!(app.put_json(&bounds, json!({})).await.json()["set"], json!({}));
    assert_eq!(app.get(&format!("/api/v1/hypotheses/{id}")).await.json()["guards"][0]["level"], "fail");
    let warm = ended.iter().find(|r| r["config"]["HIT"] == "60").unwrap()["id"].as_i64().unwrap();
    let run_page = app.get(&format!("/runs/{warm}")).await.text();
    assert!(run_page.contains("guards: 1 fail") && run_page.contains("prefix_cache_warm"), "the run page badge");
}
