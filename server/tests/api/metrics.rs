//! Extraction through the API and the CLI, on the real outputs in shared/fixtures.

use crate::helpers::spawn_app;
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};
use std::process::Command;

#[tokio::test]
async fn the_api_and_the_cli_find_the_same_measurements() {
    let app = spawn_app().await;
    let path = server::fixtures::dir().join("bench-outputs/vllm_bench_serve_pr36559.txt");
    let text = std::fs::read(&path).unwrap();
    let response = app.send(Method::POST, "/api/v1/extract", Some("text/plain"), text).await;
    assert_eq!(response.status, StatusCode::OK, "{}", response.text());
    let api = response.json();
    let output = api.as_array().unwrap().iter().find(|m| m["metric"] == "output_throughput").unwrap();
    assert_eq!(
        output,
        &json!({"metric":"output_throughput","value":1049.39,"unit":"tok/s","extractor":"vllm-bench-serve"})
    );

    let cli = Command::new(env!("CARGO_BIN_EXE_sleuth")).arg("extract").arg(&path).output().unwrap();
    assert!(cli.status.success(), "{}", String::from_utf8_lossy(&cli.stderr));
    let cli: Value = serde_json::from_slice(&cli.stdout).unwrap();
    assert_eq!(cli, api, "one extractor behind both");
}

#[tokio::test]
async fn user_extractors_through_json_and_their_errors() {
    let app = spawn_app().await;
    let decode = std::fs::read_to_string(server::fixtures::dir().join("gpu-host-h200x2/decode.log")).unwrap();
    let body = json!({ "text": decode, "extractors": [{ "name": "decode", "pattern": r"decode throughput: ([\d.]+) tok/s", "unit": "tok/s" }] });
    let response = app.post_json("/api/v1/extract", body).await;
    assert_eq!(response.status, StatusCode::OK, "{}", response.text());
    let values: Vec<f64> = response.json().as_array().unwrap().iter().map(|m| m["value"].as_f64().unwrap()).collect();
    assert_eq!(values, [18.15, 156.37, 625.35]);

    let bad = app
        .post_json(
            "/api/v1/extract",
            json!({ "text": "x", "extractors": [{ "name": "d", "pattern": "(", "unit": "s" }] }),
        )
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", bad.text());
    assert!(bad.text().contains("not a valid regex"), "{}", bad.text());
    let shape = app.post_json("/api/v1/extract", json!({ "txt": "x" })).await;
    assert_eq!(shape.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", shape.text());
    let nothing = app.send(Method::POST, "/api/v1/extract", Some("text/plain"), b"no numbers here".to_vec()).await;
    assert_eq!(nothing.json(), json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finished_runs_keep_their_measurements_and_extractors_reread_them() {
    let sshd = crate::sshd::Sshd::start();
    let app = crate::runs::app_with_host(&sshd).await;
    let fixtures = server::fixtures::dir();
    let command = format!(
        "cat {} {}",
        fixtures.join("bench-outputs/vllm_bench_serve_pr36559.txt").display(),
        fixtures.join("gpu-host-h200x2/decode.log").display()
    );
    let step = crate::runs::command_step(&app, json!({ "command": command })).await;
    let run = crate::runs::start(&app, step, json!({})).await[0];
    crate::runs::finished(&app, run).await;

    let shown = app.get(&format!("/api/v1/steps/{step}")).await.json();
    let measured = shown["runs"][0]["measurements"].as_array().unwrap().clone();
    assert!(measured.iter().any(|m| m["metric"] == "output_throughput" && m["value"] == 1049.39), "{measured:?}");
    assert!(measured.iter().all(|m| m["extractor"] == "vllm-bench-serve"), "nothing else matches yet");
    // The run's own JSON carries them too (as docs/api.md says).
    let alone = app.get(&format!("/api/v1/runs/{run}")).await.json();
    assert_eq!(alone["measurements"].as_array(), Some(&measured), "{alone}");
    let investigation = shown["investigation_id"].as_str().unwrap().to_string();

    // An extractor added afterwards reads the runs already there.
    let extractors = format!("/api/v1/investigations/{investigation}/extractors");
    let def = json!({ "name": "decode", "pattern": r"decode throughput: ([\d.]+) tok/s", "unit": "tok/s" });
    let added = app.post_json(&extractors, def.clone()).await;
    assert_eq!(added.status, StatusCode::CREATED, "{}", added.text());
    assert_eq!(app.post_json(&extractors, def).await.status, StatusCode::CONFLICT);
    let all = app.get(&format!("/api/v1/investigations/{investigation}/measurements")).await.json();
    let decode: Vec<f64> = all
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["metric"] == "decode")
        .map(|m| m["value"].as_f64().unwrap())
        .collect();
    assert_eq!(decode, [18.15, 156.37, 625.35]);
    assert!(all.as_array().unwrap().iter().all(|m| m["run_id"] == run));

    // A number measured elsewhere, by hand.
    let manual = app
        .post_json(
            &format!("/api/v1/investigations/{investigation}/measurements"),
            json!({ "metric": "output_throughput", "value": 57.5, "unit": "tok/s", "label": "8×PCIe, NCCL default", "note": "from the customer's run" }),
        )
        .await;
    assert_eq!(manual.status, StatusCode::CREATED, "{}", manual.text());
    let manual = manual.json();
    assert_eq!((manual["extractor"].as_str(), manual["run_id"].is_null()), (Some("manual"), true));
    let bad = app
        .post_json(
            &format!("/api/v1/investigations/{investigation}/measurements"),
            json!({ "metric": "", "value": 1, "unit": "x" }),
        )
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", bad.text());
    assert_eq!(app.delete(&format!("/api/v1/measurements/{}", manual["id"])).await.status, StatusCode::NO_CONTENT);
    let from_run = all[0]["id"].as_i64().unwrap();
    assert_eq!(
        app.delete(&format!("/api/v1/measurements/{from_run}")).await.status,
        StatusCode::NOT_FOUND,
        "runs own theirs"
    );

    // Removing the extractor removes what it found.
    assert_eq!(app.delete(&format!("{extractors}/decode")).await.status, StatusCode::NO_CONTENT);
    let all = app.get(&format!("/api/v1/investigations/{investigation}/measurements")).await.json();
    assert!(all.as_array().unwrap().iter().all(|m| m["metric"] != "decode"), "{all}");
    assert_eq!(app.get("/api/v1/investigations/nope/measurements").await.status, StatusCode::NOT_FOUND);
}

/// A host's price per hour: each finished run on it with a throughput gets
/// `cost_per_mtok`, following the price as it changes, and losing it with the price.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hosts_price_gives_its_runs_a_cost_per_million_tokens() {
    let sshd = crate::sshd::Sshd::start();
    let app = crate::runs::app_with_host(&sshd).await;
    let bench = server::fixtures::dir().join("bench-outputs/vllm_bench_serve_pr36559.txt");
    let step = crate::runs::command_step(&app, json!({ "command": format!("cat {}", bench.display()) })).await;
    let cost_of = async |run: i64| -> Option<f64> {
        let run = app.get(&format!("/api/v1/runs/{run}")).await.json();
        let measured = run["measurements"].as_array().unwrap().clone();
        let costs: Vec<&Value> = measured.iter().filter(|m| m["metric"] == "cost_per_mtok").collect();
        assert!(costs.len() <= 1, "one cost per key: {costs:?}");
        costs.first().map(|m| {
            assert_eq!((m["unit"].as_str(), m["extractor"].as_str()), (Some("per Mtok"), Some("cost")));
            m["value"].as_f64().unwrap()
        })
    };
    let first = crate::runs::start(&app, step, json!({})).await[0];
    crate::runs::finished(&app, first).await;
    assert_eq!(cost_of(first).await, None, "no price, no cost");

    // 1049.39 output tok/s at 3.6 an hour: 3.6 / (1049.39 × 3600) × 10⁶.
    let priced = app.patch_json("/api/v1/hosts/gpu", json!({ "price_per_hour": 3.6 })).await;
    assert_eq!(priced.status, StatusCode::OK, "{}", priced.text());
    assert_eq!(priced.json()["price_per_hour"], 3.6);
    assert_eq!(priced.json()["hostname"], "127.0.0.1", "the rest as it was");
    assert_eq!(cost_of(first).await, Some(0.952935), "the run before the price follows it");
    let second = crate::runs::start(&app, step, json!({})).await[0];
    crate::runs::finished(&app, second).await;
    assert_eq!(cost_of(second).await, Some(0.952935), "a run after it too");
    assert_eq!(app.get("/api/v1/hosts/gpu").await.json()["price_per_hour"], 3.6);
    // The whole host replaced (PUT) keeps its price.
    let host = app.get("/api/v1/hosts/gpu").await.json();
    let replaced = json!({ "name": "gpu", "hostname": host["hostname"], "port": host["port"], "user": host["user"], "identity_file": host["identity_file"] });
    assert_eq!(app.put_json("/api/v1/hosts/gpu", replaced).await.json()["price_per_hour"], 3.6);

    app.patch_json("/api/v1/hosts/gpu", json!({ "price_per_hour": 7.2 })).await;
    assert_eq!(cost_of(first).await, Some(1.90587));
    let unchanged = app.patch_json("/api/v1/hosts/gpu", json!({})).await;
    assert_eq!(unchanged.json()["price_per_hour"], 7.2, "a field left out stays");

    for (bad, says) in [
        (json!({ "price_per_hour": -1 }), "from 0 to 1000000"),
        (json!({ "price_per_hour": 1e9 }), "from 0 to 1000000"),
        (json!({ "price_per_hour": "3 USD" }), "price_per_hour"),
        (json!({ "price": 3 }), "price"),
    ] {
        let refused = app.patch_json("/api/v1/hosts/gpu", bad.clone()).await;
        assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {}", refused.text());
        assert!(refused.text().contains(says), "{bad}: {}", refused.text());
    }
    assert_eq!(cost_of(first).await, Some(1.90587), "nothing refused changed anything");
    let missing = app.patch_json("/api/v1/hosts/nope", json!({ "price_per_hour": 1 })).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND, "{}", missing.text());

    let cleared = app.patch_json("/api/v1/hosts/gpu", json!({ "price_per_hour": null })).await;
    assert!(cleared.json()["price_per_hour"].is_null(), "{}", cleared.text());
    assert_eq!((cost_of(first).await, cost_of(second).await), (None, None), "no price, no cost");
}
