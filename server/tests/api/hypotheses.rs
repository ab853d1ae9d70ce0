//! Hypotheses whose experiments compare real runs (loopback sshd) on an extracted metric.

use axum::http::StatusCode;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_experiment_compares_the_runs_of_two_steps() {
    let sshd = crate::sshd::Sshd::start();
    let app = crate::runs::app_with_host(&sshd).await;
    // A stand-in benchmark: prints the next of its configuration's values as
    // `vllm bench throughput` would. The first value of each list is a warm-up's.
    let dir = sshd.dir.path();
    std::fs::write(
        dir.join("bench.sh"),
        "n=$(cat \"$1.n\" 2>/dev/null || echo 0); n=$((n+1)); echo $n > \"$1.n\"\n\
         v=$(sed -n \"${n}p\" \"$1.values\")\n\
         echo \"Throughput: 1.00 requests/s, 120.00 total tokens/s, $v output tokens/s\"\n",
    )
    .unwrap();
    std::fs::write(dir.join("default.values"), "999\n57.4\n57.6\n57.5\n57.3\n57.7\n").unwrap();
    std::fs::write(dir.join("ll.values"), "999\n57.9\n57.2\n58.1\n57.6\n").unwrap();
    let bench = |config: &str| format!("cd {} && sh bench.sh {config}", dir.display());
    let baseline = crate::runs::command_step(&app, json!({ "command": bench("default") })).await;
    let investigation =
        app.get(&format!("/api/v1/steps/{baseline}")).await.json()["investigation_id"].as_str().unwrap().to_string();
    let treatment = app
        .post_json(
            &format!("/api/v1/investigations/{investigation}/steps"),
            json!({ "kind": "command", "host": "gpu", "command": bench("ll"), "env": { "NCCL_PROTO": "LL" } }),
        )
        .await
        .json()["id"]
        .as_i64()
        .unwrap();
    for (step, repeat) in [(baseline, 5), (treatment, 4)] {
        let runs = crate::runs::start(&app, step, json!({ "repeat": repeat, "warmup": 1 })).await;
        for run in runs {
            crate::runs::finished(&app, run).await;
        }
    }

    let hypotheses = format!("/api/v1/investigations/{investigation}/hypotheses");
    let created = app
        .post_json(
            &hypotheses,
            json!({
                "statement": "NCCL_PROTO=LL speeds up decode",
                "rationale": "LL has lower latency for **small** messages.",
                "metric": "output_throughput",
                "direction": "increase",
                "expected_pct": 15,
                "baseline": { "steps": [baseline] },
                "treatment": { "steps": [treatment] }
            }),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    let h = created.json();
    assert_eq!(h["status"], "open");
    assert!(h["rationale_html"].as_str().unwrap().contains("<strong>small</strong>"));
    let c = &h["comparison"];
    assert_eq!(
        (c["baseline"]["n"].as_u64(), c["treatment"]["n"].as_u64()),
        (Some(5), Some(4)),
        "warm-ups left out: {h}"
    );
    assert_eq!(c["outcome"], "within_noise", "{h}");
    // The interval is scipy's (see metrics::stats), in percent of the baseline mean 57.5.
    let (lo, hi) = (c["ci_pct"][0].as_f64().unwrap(), c["ci_pct"][1].as_f64().unwrap());
    assert!((lo - -0.39112088227713915 / 57.5 * 100.0).abs() < 1e-9, "{lo}");
    assert!((hi - 0.7911208822771306 / 57.5 * 100.0).abs() < 1e-9, "{hi}");
    assert!(c["verdict"].as_str().unwrap().ends_with("within noise"), "{c}");
    assert_eq!(h["as_expected"], serde_json::Value::Null, "noise says nothing either way");
    assert_eq!(h["unit"], "tok/s");
    assert!(h["chart_svg"].as_str().unwrap().starts_with("<svg"), "the experiment is drawn");

    // A person decides; the page's summary shows it.
    let id = h["id"].as_i64().unwrap();
    let decided = app.patch_json(&format!("/api/v1/hypotheses/{id}"), json!({ "status": "refuted" })).await;
    assert_eq!(decided.status, StatusCode::OK, "{}", decided.text());
    assert_eq!(decided.json()["status"], "refuted");
    let page = app.get(&format!("/i/{investigation}")).await.text();
    let row = page
        .split(&format!("<tr id=\"hypothesis-{id}\""))
        .nth(1)
        .expect("a summary row")
        .split("</tr>")
        .next()
        .unwrap();
    assert!(row.contains("data-status=\"refuted\""), "{row}");
    assert!(row.contains("NCCL_PROTO=LL speeds up decode") && row.contains("within noise"), "{row}");
    assert!(row.contains("57.50 tok/s (n=5)"), "baseline mean in the row: {row}");
    let figure =
        page.split(&format!("id=\"chart-{id}\"")).nth(1).expect("a chart figure").split("</figure>").next().unwrap();
    assert!(figure.contains("<svg") && figure.contains("<circle"), "the chart, server-rendered: {figure}");
    assert_eq!(app.get(&format!("/api/v1/investigations/{investigation}")).await.json()["hypotheses"][0]["id"], id);

    // A single run per side: noise unknown, and what to do about it.
    let single = app
        .post_json(
            &hypotheses,
            json!({ "statement": "one run each", "metric": "output_throughput",
                    "baseline": { "runs": [h["baseline_values"][0][0]] }, "treatment": { "runs": [h["treatment_values"][0][0]] } }),
        )
        .await
        .json();
    assert_eq!(single["comparison"]["outcome"], "noise_unknown", "{single}");
    assert!(single["comparison"]["verdict"].as_str().unwrap().contains("repeat 5"), "{single}");

    // Bad input gets a reason.
    for (bad, needle) in [
        (json!({ "metric": "x" }), "statement"),
        (json!({ "statement": "s", "status": "maybe" }), "status"),
        (json!({ "statement": "s", "direction": "up" }), "increase or decrease"),
        (json!({ "statement": "s", "expected_pct": -3 }), "percentage"),
        (json!({ "statement": "s", "metric": "a b" }), "metric"),
    ] {
        let response = app.post_json(&hypotheses, bad.clone()).await;
        assert_eq!(response.status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {}", response.text());
        assert!(response.text().contains(needle), "{bad}: {}", response.text());
    }
    assert_eq!(app.delete(&format!("/api/v1/hypotheses/{id}")).await.status, StatusCode::NO_CONTENT);
    assert_eq!(app.get(&format!("/api/v1/hypotheses/{id}")).await.status, StatusCode::NOT_FOUND);
}
