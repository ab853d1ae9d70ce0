//! Report files as evidence: a sweep whose client writes vLLM's detailed
//! results (per-request TTFTs and ITLs from a seeded distribution), judged on a
//! percentile against an SLO; and the field's other report files kept as
//! artifacts, read by content, a broken one a note.

use crate::helpers::TestApp;
use crate::runs::{app_with_host, command_step, finished, start};
use crate::sshd::Sshd;
use axum::http::StatusCode;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Writes `result.json` as `vllm bench serve --save-result --save-detailed`
/// does (TTFTs and ITLs in seconds), its model name markup, and prints what
/// Python computes from the same numbers: the p99 of TTFT in ms (numpy's
/// interpolation) and how many requests meet TTFT ≤ 100 ms and TPOT ≤ 20 ms.
const CLIENT: &str = r#"python3 - <<'EOF'
import json, random
scale = float({scale})
r = random.Random(int({seed}) * 1000 + int(scale * 100))
n = 400
ttft = [scale * 0.08 * r.lognormvariate(0, 0.35) for _ in range(n)]
itls = [[scale * 0.015 * r.lognormvariate(0, 0.2) for _ in range(8)] for _ in range(n)]
json.dump({"backend": "vllm", "model_id": "<script>alert(1)</script>", "completed": n, "failed": 0,
           "request_throughput": 4.0, "output_throughput": 36.0, "mean_ttft_ms": 1000 * sum(ttft) / n,
           "ttfts": ttft, "itls": itls, "errors": [""] * n, "generated_texts": ["<b>x</b>"] * n,
           "output_lens": [9] * n}, open("result.json", "w"))
ms = sorted(t * 1000 for t in ttft)
k = 0.99 * (n - 1); lo = int(k)
p99 = ms[lo] + (ms[lo + 1] - ms[lo]) * (k - lo)
good = sum(1 for t, i in zip(ttft, itls) if t * 1000 <= 100 and sum(i) / len(i) * 1000 <= 20)
print(f"p99_ttft_ms={p99!r} good={good} n={n}")
EOF"#;

fn measured(run: &Value, metric: &str) -> Option<f64> {
    run["measurements"].as_array()?.iter().find(|m| m["metric"] == metric && m["key"].is_null())?["value"].as_f64()
}

/// The run once its measurements (read after its end) are there.
async fn measured_run(app: &TestApp, id: i64, metric: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let run = finished(app, id).await;
        if measured(&run, metric).is_some() || Instant::now() > deadline {
            return run;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn printed(output: &str, name: &str) -> f64 {
    let at = output.find(&format!("{name}=")).unwrap_or_else(|| panic!("{name} in {output}"));
    output[at + name.len() + 1..].split_whitespace().next().unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_percentile_hypothesis_on_per_request_samples_and_goodput_under_an_slo() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let step = command_step(
        &app,
        json!({ "command": CLIENT, "telemetry": false, "artifacts": ["result.json"],
                "matrix": { "{scale}": [1.0, 0.7, 1.02], "{seed}": [1, 2, 3] } }),
    )
    .await;
    let investigation =
        app.get(&format!("/api/v1/steps/{step}")).await.json()["investigation_id"].as_str().unwrap().to_string();
    // The SLO first: goodput is counted as runs are read.
    let slo_url = format!("/api/v1/investigations/{investigation}/slo");
    let bad = app.put_json(&slo_url, json!({ "text": "TTFT <= soon" })).await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", bad.text());
    assert!(bad.text().contains("the bound is a positive number"), "{}", bad.text());
    let set = app.put_json(&slo_url, json!({ "text": "TTFT <= 100 ms and TPOT <= 20 ms" })).await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.text());
    assert_eq!(set.json()["slo"]["bounds"][1]["metric"], "tpot_ms");

    let runs = start(&app, step, json!({})).await;
    assert_eq!(runs.len(), 9);
    for id in &runs {
        let run = measured_run(&app, *id, "goodput_pct").await;
        assert_eq!(run["status"], "succeeded", "{run}");
        let output = String::from_utf8(app.get(&format!("/api/v1/runs/{id}/output")).await.body).unwrap();
        // The p99 Sleuth computed from the file's samples is Python's from the same numbers.
        let (p99, python) = (measured(&run, "ttft_ms_p99").unwrap(), printed(&output, "p99_ttft_ms"));
        assert!((p99 - python).abs() < 1e-9 * python, "run {id}: {p99} vs {python}");
        // Goodput is the hand count.
        let share = 100.0 * printed(&output, "good") / printed(&output, "n");
        assert_eq!(measured(&run, "goodput_pct"), Some(share), "run {id}");
        assert_eq!(measured(&run, "goodput_req_s"), Some(4.0 * share / 100.0));
        let reports = run["reports"].as_array().unwrap();
        assert_eq!(reports[0]["format"], "vllm-save-result", "{run}");
        assert_eq!(reports[0]["metadata"]["model_id"], "<script>alert(1)</script>", "kept as the file has it");
    }

    // Two runs compared: their requests' distributions overlaid, a line each.
    let (first, second) = (runs[0], runs[3]);
    let compared = app.get(&format!("/api/v1/compare?runs={first},{second}")).await.json();
    let cdfs = compared["cdfs"].as_array().unwrap();
    let ttft = cdfs.iter().find(|c| c["metric"] == "ttft_ms").unwrap_or_else(|| panic!("a TTFT CDF: {compared}"));
    let svg = ttft["svg"].as_str().unwrap();
    // These TTFTs span more than a factor of ten: a log axis, with its linear twin to switch to.
    assert_eq!(ttft["axis"], "log", "{ttft}");
    assert!(svg.contains("log scale") && ttft["linear_svg"].as_str().is_some_and(|l| !l.contains("log scale")));
    let texts: Vec<&str> = svg.split("</text>").filter_map(|t| t.rsplit('>').next()).map(str::trim).collect();
    assert!(texts.contains(&format!("run {first}").as_str()) && texts.contains(&format!("run {second}").as_str()));
    assert!(cdfs.iter().any(|c| c["metric"] == "itl_ms"), "each per-request metric: {cdfs:?}");
    let html = app.get(&format!("/compare?runs={first},{second}")).await.text();
    assert!(html.contains("data-metric=\"ttft_ms\"") && html.contains("Distributions"), "{html}");

    let pick = |scale: f64| json!({ "configs": [{ "step": step, "config": { "{scale}": scale } }] });
    let hypothesis = |treatment: f64| {
        json!({ "statement": format!("p99 TTFT at scale {treatment} decreases by ≥ 20 %"), "metric": "ttft_ms_p99",
                "direction": "decrease", "expected_pct": 20.0, "baseline": pick(1.0), "treatment": pick(treatment) })
    };
    let url = format!("/api/v1/investigations/{investigation}/hypotheses");
    let faster = app.post_json(&url, hypothesis(0.7)).await.json();
    let d = &faster["distribution"];
    assert_eq!(d["outcome"], "decrease", "{faster}");
    assert_eq!(d["runs"], json!([3, 3]));
    assert_eq!(d["requests"], json!([1200, 1200]));
    assert!((d["delta_pct"].as_f64().unwrap() + 30.0).abs() < 8.0, "{d}");
    assert!(d["ci_pct"][1].as_f64().unwrap() < 0.0, "{d}");
    assert_eq!(faster["as_expected"], true);
    assert!(d["verdict"].as_str().unwrap().contains("noise dominated"), "{d}");
    assert!(faster["chart_svg"].as_str().unwrap().contains("share of requests"), "a CDF chart");

    let same = app.post_json(&url, hypothesis(1.02)).await.json();
    assert_eq!(same["distribution"]["outcome"], "within_noise", "{same}");
    assert!(same["as_expected"].is_null(), "{same}");

    // The page and the export show both, the model's markup as text.
    let page = app.get(&format!("/i/{investigation}")).await.text();
    assert!(page.contains("share of requests") && page.contains("within noise"), "CDF and verdict on the page");
    // The pooled p99 beside the mean of the runs' own p99s (the table's number), each named.
    let own = |side: &str| faster["comparison"][side]["mean"].as_f64().unwrap();
    assert!(page.contains("of all requests pooled; the runs' own values average"), "both numbers said");
    assert!(page.contains(&format!("{:.1}", own("baseline"))) || page.contains(&format!("{:.2}", own("baseline"))));
    assert!(!page.contains("<script>alert(1)"), "markup never runs");
    let export = app.get(&format!("/api/v1/investigations/{investigation}/export?format=html")).await.text();
    let at = export.find("id=\"hypotheses\"").unwrap_or(0);
    assert!(
        export.contains("req pooled; the runs&#39; own average")
            || export.contains("req pooled; the runs' own average")
    );
    assert!(
        export.contains("share of requests") && export.contains("request-to-request"),
        "in the export too: {}",
        &export[at..(at + 3000).min(export.len())]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_artifacts_are_read_by_content_and_a_broken_one_is_a_note() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let fixture = |path: &str| server::fixtures::dir().join(path).display().to_string();
    let guidellm = fixture("reports/guidellm/benchmarks_stripped.json");
    let command = format!(
        "cp {guidellm} sweep.out; cp {aiperf} requests.data; cp {trace} trace.gz; head -c 3000 {guidellm} > cut.json; \
         cp {sglang} online.jsonl",
        aiperf = fixture("reports/genai-perf-aiperf/profile_export.jsonl"),
        sglang = fixture("reports/sglang-bench-serving/llama_3_3_70b_online_output.jsonl"),
        trace = fixture("reports/pytorch-profiler/hta_nccl_data.json.gz"),
    );
    let step = command_step(&app, json!({ "command": command, "telemetry": false, "artifacts": ["*"] })).await;
    let investigation =
        app.get(&format!("/api/v1/steps/{step}")).await.json()["investigation_id"].as_str().unwrap().to_string();
    let set =
        app.put_json(&format!("/api/v1/investigations/{investigation}/slo"), json!({ "text": "TTFT <= 25 ms" })).await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.text());
    let id = start(&app, step, json!({})).await[0];
    let run = measured_run(&app, id, "collective_calls_per_step").await;
    assert_eq!(run["status"], "succeeded", "{run}");
    let format_of =
        |name: &str| run["reports"].as_array().unwrap().iter().find(|r| r["name"] == name).map(|r| r["format"].clone());
    assert_eq!(format_of("sweep.out"), Some(json!("guidellm")), "{run}");
    assert_eq!(format_of("requests.data"), Some(json!("aiperf-requests")));
    assert_eq!(format_of("trace.gz"), Some(json!("torch-trace")));
    assert_eq!(format_of("cut.json"), Some(Value::Null), "recognised, not read: {run}");
    let cut = run["reports"].as_array().unwrap().iter().find(|r| r["name"] == "cut.json").unwrap();
    assert!(cut["notes"][0].as_str().unwrap().starts_with("cut.json: not valid JSON"), "{cut}");
    // GuideLLM's one benchmark meets p99 TTFT ≤ 25 ms at its one rate: that is no knee.
    let doc: Value = serde_json::from_slice(&std::fs::read(&guidellm).unwrap()).unwrap();
    let p99 = doc["benchmarks"][0]["metrics"]["time_to_first_token_ms"]["successful"]["percentiles"]["p99"].as_f64();
    assert!(p99.unwrap() < 25.0);
    assert_eq!(measured(&run, "knee_request_rate"), None, "one rate, no knee");
    // The trace's collectives per step, beside everything else the run measured…
    assert_eq!(measured(&run, "collective_calls_per_step"), Some(7.0));
    // …and beside the collective calculator's prediction.
    let calculator = app
        .post_json(
            &format!("/api/v1/investigations/{investigation}/steps"),
            json!({ "kind": "calculator", "calculator": "collective", "layers": 78, "per_layer": 2, "latency_us": 40.0 }),
        )
        .await;
    assert_eq!(calculator.status, StatusCode::CREATED, "{}", calculator.text());
    let inv = app.get(&format!("/api/v1/investigations/{investigation}")).await.json();
    let calc = inv["steps"].as_array().unwrap().iter().find(|s| s["kind"] == "calculator").unwrap();
    assert_eq!(calc["results"]["calls_per_token"], 156, "{calc}");
    assert_eq!(calc["results"]["measured"]["calls_per_step"], 7.0, "{calc}");
    // SGLang's sweep (two appended in one file) is a line of the rate chart; it has
    // no knee: the SLO holds p99, which this SGLang never printed.
    let rates = &inv["rates"];
    assert_eq!(rates["metric"], "ttft_ms", "{rates}");
    let line =
        rates["lines"].as_array().unwrap().iter().find(|l| l["points"] == 7).expect("the SGLang file's seven rates");
    assert!(line["knee"].is_null(), "no p99 in the file, so not known to meet the SLO: {line}");
    assert!(rates["svg"].as_str().unwrap().contains("achieved request rate"));
    let page = app.get(&format!("/i/{investigation}")).await.text();
    assert!(page.contains("id=\"rates\"") && page.contains("measured by a profile"), "both on the page");
}
