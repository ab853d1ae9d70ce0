//! Replaying an investigation on a second host entry with an extra env: its
//! steps copied and run there, its hypothesis judged again beside the original.

use crate::runs::{add_host, app_with_host, finished, start};
use crate::sshd::Sshd;
use axum::http::StatusCode;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// vLLM's throughput line: 50 ± 1, or 100 ± 1 with `FAST=1`; and what `EXTRA` was.
const COMMAND: &str = "v=$(awk -v f=${FAST:-0} -v s=$$ 'BEGIN { srand(s); printf \"%.2f\", (f == 1 ? 100 : 50) + rand() * 2 - 1 }'); \
    echo \"extra=${EXTRA:-unset}\"; \
    printf '============ Serving Benchmark Result ============\\nOutput token throughput (tok/s):          %s\\n==================================================\\n' $v";

pub async fn replay_done(app: &crate::helpers::TestApp, id: i64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let replay = app.get(&format!("/api/v1/replays/{id}")).await.json();
        if replay["status"] == "finished" {
            return replay;
        }
        assert!(Instant::now() < deadline, "{replay}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_on_another_host_reaches_the_same_conclusion() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    add_host(&app, "gpu2", &sshd, &sshd.client_key.display().to_string()).await;
    let trusted =
        app.post_json("/api/v1/hosts/gpu2/trust", json!({ "fingerprint": sshd.host_key_fingerprint() })).await;
    assert_eq!(trusted.status, StatusCode::OK, "{}", trusted.text());

    let investigation = app.investigation("FAST=1 doubles decode").await;
    let steps = format!("/api/v1/investigations/{investigation}/steps");
    let step = |fast: &str| json!({ "kind": "command", "host": "gpu", "command": COMMAND, "telemetry": false, "env": { "FAST": fast } });
    let baseline = app.post_json(&steps, step("0")).await.json()["id"].as_i64().unwrap();
    let treatment = app.post_json(&steps, step("1")).await.json()["id"].as_i64().unwrap();
    let source = std::env::temp_dir().join(format!("sleuth-replay-{}.py", std::process::id()));
    std::fs::write(&source, "def fast():\n    return 2\n").unwrap();
    let snippet = app
        .post_json(
            &steps,
            json!({ "kind": "snippet", "host": "gpu", "path": source.display().to_string(), "start": 1, "end": 2 }),
        )
        .await;
    assert_eq!(snippet.status, StatusCode::CREATED, "{}", snippet.text());
    let extractor = json!({ "name": "tokps", "pattern": r"throughput \(tok/s\):\s+([\d.]+)", "unit": "tok/s" });
    let added = app.post_json(&format!("/api/v1/investigations/{investigation}/extractors"), extractor).await;
    assert_eq!(added.status, StatusCode::CREATED, "{}", added.text());
    for step in [baseline, treatment] {
        for run in start(&app, step, json!({ "repeat": 3 })).await {
            assert_eq!(finished(&app, run).await["status"], "succeeded");
        }
    }
    let h = app
        .post_json(
            &format!("/api/v1/investigations/{investigation}/hypotheses"),
            json!({ "statement": "FAST=1 doubles throughput", "metric": "output_throughput", "direction": "increase",
                    "baseline": { "steps": [baseline] }, "treatment": { "steps": [treatment] } }),
        )
        .await
        .json();
    assert_eq!(h["comparison"]["outcome"], "increase", "{h}");

    // On the second host entry, with an extra variable, twice each.
    let replayed = app
        .post_json(
            &format!("/api/v1/investigations/{investigation}/replay"),
            json!({ "host": "gpu2", "env": { "EXTRA": "yes" }, "repeat": 2 }),
        )
        .await;
    assert_eq!(replayed.status, StatusCode::CREATED, "{}", replayed.text());
    let id = replayed.json()["id"].as_i64().unwrap();
    let replay = replay_done(&app, id).await;
    assert_eq!(replay["original"], investigation.as_str());
    assert_eq!(replay["original_title"], "FAST=1 doubles decode");
    let runs = replay["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4, "two command steps, twice each: {replay}");
    assert!(runs.iter().all(|r| r["host"] == "gpu2" && r["status"] == "succeeded"), "{replay}");
    let output =
        String::from_utf8_lossy(&app.get(&format!("/api/v1/runs/{}/output", runs[0]["id"])).await.body).to_string();
    assert!(output.contains("extra=yes"), "{output}");
    // Its numbers are read as the original's: its own extractor came along.
    let run = app.get(&format!("/api/v1/runs/{}", runs[0]["id"])).await.json();
    assert!(run["measurements"].to_string().contains("\"tokps\""), "{run}");
    let judged = &replay["hypotheses"][0];
    assert_eq!(judged["original_outcome"], "increase", "{judged}");
    assert_eq!(judged["replayed_outcome"], "increase", "{judged}");
    assert_eq!(judged["same_conclusion"], true, "{judged}");
    assert_eq!(replay["snippets"][0]["source"], "same", "{replay}");
    // The original is as it was: its runs, not the replay's.
    let original = app.get(&format!("/api/v1/hypotheses/{}", h["id"])).await.json();
    assert_eq!(original["baseline_values"].as_array().unwrap().len(), 3, "{original}");

    // The page shows both conclusions.
    let page = app.get(&format!("/replays/{id}")).await;
    assert_eq!(page.status, StatusCode::OK);
    let page = page.text();
    assert!(page.contains("same conclusion") && page.contains("FAST=1 doubles throughput"), "{page}");

    // The team's zip export carries the provenance manifest; replayed from
    // it (as another Sleuth would be given it), on the first host entry.
    let zip = app.get(&format!("/api/v1/investigations/{investigation}/export?format=zip")).await;
    assert_eq!(zip.status, StatusCode::OK);
    let bytes = String::from_utf8_lossy(&zip.body).to_string();
    assert!(
        bytes.contains("provenance.json") && bytes.contains("\"format\": \"sleuth-provenance/1\""),
        "the manifest is in the zip"
    );
    let manifest = app.get(&format!("/api/v1/investigations/{investigation}/provenance")).await.json();
    let runs_in_it: usize =
        manifest["steps"].as_array().unwrap().iter().map(|s| s["runs"].as_array().unwrap().len()).sum();
    assert_eq!(runs_in_it, 6, "every run of the original, with what it ran under");
    assert!(manifest["steps"][2]["snapshots"][0]["sha256"].is_string(), "{}", manifest["steps"][2]);
    assert_eq!(manifest["hypotheses"][0]["outcome"], "increase");
    let from_manifest =
        app.post_json("/api/v1/replays", json!({ "provenance": manifest, "host": "gpu", "repeat": 2 })).await;
    assert_eq!(from_manifest.status, StatusCode::CREATED, "{}", from_manifest.text());
    let again = replay_done(&app, from_manifest.json()["id"].as_i64().unwrap()).await;
    assert!(again["original"].is_null(), "{again}");
    assert_eq!(again["original_title"], "FAST=1 doubles decode");
    assert_eq!(again["hypotheses"][0]["same_conclusion"], true, "{again}");
    assert!(again["runs"].as_array().unwrap().iter().all(|r| r["host"] == "gpu"), "{again}");
    let mut wrong = app.get(&format!("/api/v1/investigations/{investigation}/provenance")).await.json();
    wrong["format"] = json!("something-else/9");
    let refused = app.post_json("/api/v1/replays", json!({ "provenance": wrong })).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.text());

    // What it cannot be: a host that does not exist, a step that is not a command, a replay that does not exist.
    let unknown =
        app.post_json(&format!("/api/v1/investigations/{investigation}/replay"), json!({ "host": "nope" })).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND, "{}", unknown.text());
    let snippet_id = snippet.json()["id"].as_i64().unwrap();
    let not_a_command = app
        .post_json(&format!("/api/v1/investigations/{investigation}/replay"), json!({ "steps": [snippet_id] }))
        .await;
    assert_eq!(not_a_command.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", not_a_command.text());
    assert_eq!(app.get("/api/v1/replays/999999").await.status, StatusCode::NOT_FOUND);
    let _ = std::fs::remove_file(source);
}
