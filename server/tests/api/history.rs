//! A step's history and its change points, over real runs on a real sshd: a
//! command whose printed throughput follows a counter file on the host.

use crate::runs::{app_with_host, command_step, finished, start};
use crate::sshd::Sshd;
use axum::http::StatusCode;
use serde_json::json;

/// Prints `vllm bench`'s throughput line: `$LEVEL` (or `$OUTLIER` at run
/// `$AT`) ± 1.5, deterministic per run (the counter in `counter`).
fn command(counter: &std::path::Path) -> String {
    format!(
        "n=$(cat {c} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {c}; \
         v=$(awk -v n=$n -v l=$LEVEL -v o=${{OUTLIER:-0}} -v at=${{AT:-0}} 'BEGIN {{ srand(n * 7919); x = (n == at) ? o : l; printf \"%.2f\", x + (rand() * 2 - 1) * 1.5 }}'); \
         printf '============ Serving Benchmark Result ============\\nOutput token throughput (tok/s):          %s\\n==================================================\\n' $v",
        c = counter.display()
    )
}

async fn run_times(app: &crate::helpers::TestApp, step: i64, n: u32) {
    for run in start(app, step, json!({ "repeat": n })).await {
        assert_eq!(finished(app, run).await["status"], "succeeded");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drop_at_the_thirteenth_run_is_one_regression_and_says_what_changed() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let dir = tempfile::tempdir().unwrap();
    let step = command_step(
        &app,
        json!({ "command": command(&dir.path().join("counter")), "telemetry": false, "env": { "LEVEL": "60", "VERSION": "1" } }),
    )
    .await;
    run_times(&app, step, 12).await;
    // Someone upgrades: the same step, another version, 20 % slower.
    let patched =
        app.patch_json(&format!("/api/v1/steps/{step}"), json!({ "env": { "LEVEL": "48", "VERSION": "2" } })).await;
    assert_eq!(patched.status, StatusCode::OK, "{}", patched.text());
    run_times(&app, step, 12).await;

    let h = app.get(&format!("/api/v1/steps/{step}/history?metric=output_throughput")).await;
    assert_eq!(h.status, StatusCode::OK, "{}", h.text());
    let h = h.json();
    let runs = h["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 24);
    assert_eq!(h["better"], "higher");
    let changes = h["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{h}");
    let c = &changes[0];
    assert_eq!(c["run_id"], runs[12]["run_id"], "the thirteenth run: {c}");
    assert_eq!(c["direction"], "regression");
    let delta = c["delta_pct"].as_f64().unwrap();
    assert!((-23.0..=-17.0).contains(&delta), "{delta}");
    assert!(c["p_value"].as_f64().unwrap() <= 0.01, "{c}");
    assert_eq!(c["between"]["before_run"], runs[11]["run_id"]);
    let differs = c["between"]["differs"].to_string();
    assert!(differs.contains("env VERSION: 1 → 2") && differs.contains("env LEVEL: 60 → 48"), "{differs}");
    assert!(h["svg"].as_str().unwrap().starts_with("<svg"));

    // Lower is better, when asked: the same drop is an improvement.
    let lower = app.get(&format!("/api/v1/steps/{step}/history?metric=output_throughput&better=lower")).await.json();
    assert_eq!(lower["changes"][0]["direction"], "improvement", "{lower}");

    // The page: the chart, the change, the runs either side.
    let investigation =
        app.get(&format!("/api/v1/steps/{step}")).await.json()["investigation_id"].as_str().unwrap().to_string();
    let page = app.get(&format!("/i/{investigation}/history?step={step}")).await;
    assert_eq!(page.status, StatusCode::OK);
    let page = page.text();
    assert!(page.contains("class=\"change regression\"") && page.contains("env VERSION: 1 → 2"), "{page}");
    let card = app.get(&format!("/i/{investigation}")).await.text();
    assert!(card.contains(&format!("/i/{investigation}/history?step={step}")), "the step links to it");

    // What it cannot be: a metric no run has, a configuration the step lacks
    // (422); a better that is neither is a query that does not parse (400).
    for (query, status, says) in [
        ("metric=ttft_ms_p99", StatusCode::UNPROCESSABLE_ENTITY, "measured: output_throughput"),
        ("better=sideways", StatusCode::BAD_REQUEST, "expected `higher` or `lower`"),
        ("config=X%3D1", StatusCode::UNPROCESSABLE_ENTITY, "no configuration"),
    ] {
        let refused = app.get(&format!("/api/v1/steps/{step}/history?{query}")).await;
        assert_eq!(refused.status, status, "{query}");
        assert!(refused.text().contains(says), "{query}: {}", refused.text());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_outlier_is_no_change_and_a_sweep_is_judged_per_configuration() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let dir = tempfile::tempdir().unwrap();
    let step = command_step(
        &app,
        json!({ "command": command(&dir.path().join("counter")), "telemetry": false,
                "env": { "LEVEL": "60", "OUTLIER": "30", "AT": "7" } }),
    )
    .await;
    run_times(&app, step, 24).await;
    let h = app.get(&format!("/api/v1/steps/{step}/history")).await.json();
    assert_eq!(h["runs"].as_array().unwrap().len(), 24, "{h}");
    assert_eq!(h["changes"], json!([]), "one wild run is no change: {h}");

    // A sweep: its configurations differ by design, so one is named.
    let sweep = command_step(
        &app,
        json!({ "command": command(&dir.path().join("counter2")), "telemetry": false, "matrix": { "LEVEL": [50, 60] } }),
    )
    .await;
    run_times(&app, sweep, 2).await;
    let refused = app.get(&format!("/api/v1/steps/{sweep}/history")).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(refused.text().contains("LEVEL=50") && refused.text().contains("LEVEL=60"), "{}", refused.text());
    let one = app.get(&format!("/api/v1/steps/{sweep}/history?config=LEVEL%3D60")).await;
    assert_eq!(one.status, StatusCode::OK, "{}", one.text());
    assert_eq!(one.json()["runs"].as_array().unwrap().len(), 2);
}

/// The walkthrough's series: 8 runs at 425 tok/s, 4 at 418 (−1.6 %), 8 at
/// 188 (−56 %). One regression, at the first 188 run, measured between the
/// segments it separates; the wobble is no change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wobble_before_a_drop_leaves_the_change_at_the_drop() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let dir = tempfile::tempdir().unwrap();
    let step = command_step(
        &app,
        json!({ "command": command(&dir.path().join("counter")), "telemetry": false, "env": { "LEVEL": "425" } }),
    )
    .await;
    for (level, n) in [("425", 8), ("418", 4), ("188", 8)] {
        let patched = app.patch_json(&format!("/api/v1/steps/{step}"), json!({ "env": { "LEVEL": level } })).await;
        assert_eq!(patched.status, StatusCode::OK, "{}", patched.text());
        run_times(&app, step, n).await;
    }
    let h = app.get(&format!("/api/v1/steps/{step}/history")).await.json();
    let runs = h["runs"].as_array().unwrap();
    let changes = h["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{}", h["changes"]);
    assert_eq!(changes[0]["run_id"], runs[12]["run_id"], "the first 188 run: {}", h["changes"]);
    let delta = changes[0]["delta_pct"].as_f64().unwrap();
    assert!((-57.0..=-54.0).contains(&delta), "{delta}");
}
