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
