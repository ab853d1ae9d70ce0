//! Evidence that does not drift: a watch's runs are marked and leave an
//! earlier verdict alone, runs a person adds change it with the change kept,
//! a replay of chosen sweep runs reaches the same conclusion, a refused
//! replay leaves nothing, and an edit by someone else stops a watch.

use crate::runs::{app_with_host, app_with_host_and_loopback_webhooks, finished, start};
use crate::sshd::Sshd;
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// vLLM's throughput line: 100 ± 1 with `FAST=1`, else 50 ± 1 — or 50 ± 1
/// whatever `FAST` is while the file `$SLOW` exists on the host (an engine
/// slowed under a watch).
const COMMAND: &str = "f=${FAST:-0}; [ -n \"$SLOW\" ] && [ -e \"$SLOW\" ] && f=0; \
    v=$(awk -v f=$f -v s=$$ 'BEGIN { srand(s); printf \"%.2f\", (f == 1 ? 100 : 50) + rand() * 2 - 1 }'); \
    printf '============ Serving Benchmark Result ============\\nOutput token throughput (tok/s):          %s\\n==================================================\\n' $v";

async fn sweep_step(app: &crate::helpers::TestApp, investigation: &str, slow: &std::path::Path) -> i64 {
    let steps = format!("/api/v1/investigations/{investigation}/steps");
    let body = json!({ "kind": "command", "host": "gpu", "command": COMMAND, "telemetry": false,
        "env": { "SLOW": slow.display().to_string() }, "matrix": { "FAST": ["0", "1"] } });
    let created = app.post_json(&steps, body).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    created.json()["id"].as_i64().unwrap()
}

async fn all_succeed(app: &crate::helpers::TestApp, runs: Vec<i64>) -> Vec<i64> {
    for run in &runs {
        assert_eq!(finished(app, *run).await["status"], "succeeded");
    }
    runs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watchs_runs_are_marked_and_leave_an_earlier_verdict_alone() {
    let sshd = Sshd::start();
    let app = app_with_host_and_loopback_webhooks(&sshd).await;
    let slow = sshd.dir.path().join("slowed");
    let investigation = app.investigation("FAST=1 doubles decode").await;
    let step = sweep_step(&app, &investigation, &slow).await;
    all_succeed(&app, start(&app, step, json!({ "repeat": 4 })).await).await;
    let created = app
        .post_json(
            &format!("/api/v1/investigations/{investigation}/hypotheses"),
            json!({ "statement": "FAST=1 doubles decode", "metric": "output_throughput", "direction": "increase",
                    "baseline": { "configs": [{ "step": step, "config": { "FAST": "0" } }] },
                    "treatment": { "configs": [{ "step": step, "config": { "FAST": "1" } }] } }),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    let h = created.json();
    let id = h["id"].as_i64().unwrap();
    assert_eq!((&h["status"], &h["verdict_word"]), (&json!("supported"), &json!("as expected")), "{h}");
    let delta = h["comparison"]["delta_pct"].as_f64().unwrap();
    assert!((90.0..110.0).contains(&delta), "{h}");

    // The engine slows; a watch on FAST=1 runs it on its schedule and tells a webhook.
    std::fs::write(&slow, "").unwrap();
    let (webhook, mut told) = crate::watches::receiver().await;
    // Made through http://localhost:3000: its links point there.
    let body = json!({ "every_s": 1, "config": "FAST=1", "webhook": webhook }).to_string().into_bytes();
    let headers = [("host", "localhost:3000"), ("content-type", "application/json")];
    let watch = app.send_with(Method::POST, &format!("/api/v1/steps/{step}/watch"), &headers, body).await;
    assert_eq!(watch.status, StatusCode::CREATED, "{}", watch.text());
    let watch = watch.json();
    let message = tokio::time::timeout(Duration::from_secs(120), told.recv()).await.expect("told").unwrap();
    // An absolute link that opens the configuration's history, never an error page.
    let url = message["url"].as_str().unwrap();
    assert!(url.starts_with(&format!("http://localhost:3000/i/{investigation}/history?step={step}")), "{message}");
    assert!(url.contains("config=FAST%3D1"), "{message}");
    assert!(message["text"].as_str().unwrap().contains(url), "{message}");
    assert_eq!(app.delete(&format!("/api/v1/watches/{}", watch["id"])).await.status, StatusCode::NO_CONTENT);
    // Wait for the watch's last run to end.
    let deadline = Instant::now() + Duration::from_secs(60);
    let runs = loop {
        let runs = app.get(&format!("/api/v1/steps/{step}/runs")).await.json();
        let runs = runs.as_array().unwrap().clone();
        if runs.iter().all(|r| r["status"] != "queued" && r["status"] != "running") {
            break runs;
        }
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let by_watch: Vec<i64> =
        runs.iter().filter(|r| r["origin"]["kind"] == "watch").map(|r| r["id"].as_i64().unwrap()).collect();
    assert!(by_watch.len() >= 4, "the watch ran until it told a change: {runs:?}");
    assert!(runs.iter().filter(|r| r["origin"]["kind"] == "watch").all(|r| r["origin"]["id"] == watch["id"]));
    assert!(
        runs.iter().filter(|r| !by_watch.contains(&r["id"].as_i64().unwrap())).all(|r| r["origin"]["kind"] == "person")
    );

    // The hypothesis did not move: same runs, same verdict, nothing joined.
    let same = app.get(&format!("/api/v1/hypotheses/{id}")).await.json();
    assert_eq!(same["treatment_values"].as_array().unwrap().len(), 4, "{same}");
    assert_eq!(same["comparison"]["delta_pct"].as_f64().unwrap(), delta, "{same}");
    assert!(same["verdict_change"].is_null(), "{same}");
    // The frontier leaves them out too, unless asked.
    let frontier = app.get(&format!("/api/v1/steps/{step}/frontier?minimize=output_throughput")).await;
    assert_eq!(frontier.status, StatusCode::OK, "{}", frontier.text());
    let now = app.get(&format!("/api/v1/steps/{step}/runs")).await.json();
    let watch_runs = now.as_array().unwrap().iter().filter(|r| r["origin"]["kind"] == "watch").count();
    let f = frontier.json();
    assert_eq!(f["watch_runs_left_out"].as_u64().unwrap() as usize, watch_runs, "{}", f["points"]);
    assert!(f["points"].as_array().unwrap().iter().all(|p| p["n"] == 4), "{}", f["points"]);
    // An arm that asks for watch runs gets them.
    let with = app
        .patch_json(
            &format!("/api/v1/hypotheses/{id}"),
            json!({ "treatment": { "configs": [{ "step": step, "config": { "FAST": "1" } }], "include_watch_runs": true } }),
        )
        .await
        .json();
    assert_eq!(with["treatment_values"].as_array().unwrap().len(), 4 + by_watch.len(), "{with}");
    let back = app
        .patch_json(
            &format!("/api/v1/hypotheses/{id}"),
            json!({ "treatment": { "configs": [{ "step": step, "config": { "FAST": "1" } }] } }),
        )
        .await
        .json();
    assert_eq!(back["treatment_values"].as_array().unwrap().len(), 4, "{back}");

    // A person runs FAST=1 again on the slowed engine: those runs join, and the change is kept and said.
    let joined = all_succeed(&app, start(&app, step, json!({ "repeat": 4, "only": { "FAST": "1" } })).await).await;
    let moved = app.get(&format!("/api/v1/hypotheses/{id}")).await.json();
    assert_eq!(moved["treatment_values"].as_array().unwrap().len(), 8, "{moved}");
    let change = &moved["verdict_change"];
    assert_eq!(change["joined"], json!(joined), "{moved}");
    let text = change["text"].as_str().unwrap();
    assert!(text.starts_with("was +") && text.contains("on 8 runs; now") && text.contains("on 12 runs"), "{text}");
    assert!(text.contains("joined"), "{text}");
    // And still, on the next read (kept, not recomputed away).
    let again = app.get(&format!("/api/v1/hypotheses/{id}")).await.json();
    assert_eq!(again["verdict_change"]["text"], change["text"], "{again}");
    // Keeping the arm to the first launch brings the old verdict back.
    let first_launch = runs.iter().map(|r| r["launch"].as_i64().unwrap()).min().unwrap();
    let kept = app
        .patch_json(
            &format!("/api/v1/hypotheses/{id}"),
            json!({ "treatment": { "configs": [{ "step": step, "config": { "FAST": "1" } }], "launch": first_launch } }),
        )
        .await
        .json();
    assert_eq!(kept["treatment_values"].as_array().unwrap().len(), 4, "{kept}");
    assert_eq!(kept["comparison"]["delta_pct"].as_f64().unwrap(), delta, "{kept}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_of_chosen_sweep_runs_reaches_the_same_conclusion() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let investigation = app.investigation("chosen runs").await;
    let step = sweep_step(&app, &investigation, &sshd.dir.path().join("never")).await;
    let runs = all_succeed(&app, start(&app, step, json!({ "repeat": 3 })).await).await;
    let mut fast = Vec::new();
    let mut slow = Vec::new();
    for run in &runs {
        let r = app.get(&format!("/api/v1/runs/{run}")).await.json();
        if r["config"]["FAST"] == "1" { fast.push(*run) } else { slow.push(*run) }
    }
    let h = app
        .post_json(
            &format!("/api/v1/investigations/{investigation}/hypotheses"),
            json!({ "statement": "chosen", "metric": "output_throughput", "direction": "increase",
                    "baseline": { "runs": slow }, "treatment": { "runs": fast } }),
        )
        .await
        .json();
    assert_eq!(h["comparison"]["outcome"], "increase", "{h}");
    let replay = app.post_json(&format!("/api/v1/investigations/{investigation}/replay"), json!({ "repeat": 3 })).await;
    assert_eq!(replay.status, StatusCode::CREATED, "{}", replay.text());
    let id = replay.json()["id"].as_i64().unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let done = loop {
        let r = app.get(&format!("/api/v1/replays/{id}")).await.json();
        if r["status"] == "finished" {
            break r;
        }
        assert!(Instant::now() < deadline, "{r}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    assert_eq!(done["hypotheses"][0]["same_conclusion"], true, "{done}");
    // The replay's runs say whose they are.
    let run = done["runs"][0]["id"].as_i64().unwrap();
    assert_eq!(app.get(&format!("/api/v1/runs/{run}")).await.json()["origin"], json!({ "kind": "replay", "id": id }));
}

#[tokio::test]
async fn a_refused_replay_leaves_no_copy() {
    let app = crate::helpers::spawn_app().await;
    let investigation = app.investigation("to replay").await;
    app.note(&investigation, "a note").await;
    let count = || async { app.get("/api/v1/investigations").await.json().as_array().unwrap().len() };
    let before = count().await;
    let unknown =
        app.post_json(&format!("/api/v1/investigations/{investigation}/replay"), json!({ "host": "nope" })).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND, "{}", unknown.text());
    // A manifest too big to copy: refused before anything is written.
    let mut manifest = app.get(&format!("/api/v1/investigations/{investigation}/provenance")).await.json();
    let step = manifest["steps"][0].clone();
    manifest["steps"] = json!(
        (0..501)
            .map(|i| {
                let mut s = step.clone();
                s["id"] = json!(i);
                s
            })
            .collect::<Vec<_>>()
    );
    let big = app.post_json("/api/v1/replays", json!({ "provenance": manifest })).await;
    assert_eq!(big.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", big.text());
    assert!(big.text().contains("at most 500"), "{}", big.text());
    // A step that cannot be saved as it is: refused whole, no half copy.
    let mut manifest = app.get(&format!("/api/v1/investigations/{investigation}/provenance")).await.json();
    manifest["steps"][0]["body"] = json!({ "kind": "command", "host": "nowhere", "command": "" });
    let bad = app.post_json("/api/v1/replays", json!({ "provenance": manifest })).await;
    assert!(bad.status.is_client_error(), "{}", bad.text());
    assert_eq!(count().await, before, "no copy was left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_runs_only_what_its_creator_approved() {
    let sshd = Sshd::start();
    let team = crate::permissions::team(&sshd).await;
    let (investigation, command, _) = team.shared_investigation(&sshd).await;
    let watch = team
        .ok(
            "run",
            Method::POST,
            &format!("/api/v1/steps/{command}/watch"),
            json!({ "every_s": 1, "max_failures": 100 }),
        )
        .await;
    // The runner's own edit: the watch carries on with the new version.
    team.ok("run", Method::PATCH, &format!("/api/v1/steps/{command}"), json!({ "command": "echo hi again" })).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let w = team.ok("view", Method::GET, &format!("/api/v1/watches/{}", watch["id"]), Value::Null).await;
    assert!(w["stopped"].is_null(), "{w}");
    // An editor changes the command: the next firing stops the watch, and nothing of theirs runs.
    let pwned = sshd.dir.path().join("pwned");
    let hostile = format!("touch {}", pwned.display());
    team.ok("edit", Method::PATCH, &format!("/api/v1/steps/{command}"), json!({ "command": hostile })).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let stopped = loop {
        let w = team.ok("view", Method::GET, &format!("/api/v1/watches/{}", watch["id"]), Value::Null).await;
        if !w["stopped"].is_null() {
            break w;
        }
        assert!(Instant::now() < deadline, "{w}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    let why = stopped["stopped"].as_str().unwrap();
    assert!(why.contains("changed by edit") && why.contains("start it again"), "{why}");
    assert_eq!(stopped["stop_reason"], "step_changed", "{stopped}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!pwned.exists(), "the editor's command never ran");
    let runs = team.ok("view", Method::GET, &format!("/api/v1/steps/{command}/runs"), Value::Null).await;
    assert!(runs.as_array().unwrap().iter().all(|r| r["command"] != json!(hostile)), "{runs}");
    let _ = investigation;
}
