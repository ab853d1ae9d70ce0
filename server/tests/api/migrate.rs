//! `sleuth migrate --from DATA --to postgres://…`: a SQLite notebook with a bit
//! of everything moves into PostgreSQL, and a server on that database (with a
//! data dir of its own, so nothing can come from the old files) answers every
//! investigation, run output, audit row, host and token as the old one did.
//! Needs PostgreSQL (`SLEUTH_TEST_POSTGRES`), which `./dev test` starts.

use crate::helpers::{Response, TestApp, spawn_app_with_accounts_on};
use crate::sshd::{Sshd, whoami};
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};
use server::db::Database;
use std::time::{Duration, Instant};

pub struct As<'a> {
    pub app: &'a TestApp,
    pub token: String,
}

impl As<'_> {
    pub async fn call(&self, method: Method, uri: &str, body: Value) -> Response {
        let auth = format!("Bearer {}", self.token);
        let mut headers = vec![("authorization", auth.as_str())];
        let body = if body.is_null() {
            Vec::new()
        } else {
            headers.push(("content-type", "application/json"));
            body.to_string().into_bytes()
        };
        self.app.send_with(method, uri, &headers, body).await
    }

    pub async fn ok(&self, method: Method, uri: &str, body: Value) -> Value {
        let response = self.call(method, uri, body).await;
        assert!(response.status.is_success(), "{uri}: {} {}", response.status, response.text());
        if response.body.is_empty() { Value::Null } else { response.json() }
    }

    pub async fn finished(&self, run: i64) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let json = self.ok(Method::GET, &format!("/api/v1/runs/{run}?wait=10"), Value::Null).await;
            let ended = !matches!(json["status"].as_str(), Some("queued" | "running"));
            // What is stored just after the end (the telemetry chart) too, so
            // that the notebook compared is the one moved.
            if ended && (json["telemetry"] == false || json["telemetry_drawn"] == true) {
                return json;
            }
            assert!(Instant::now() < deadline, "run {run} did not finish: {json}");
            if ended {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }

    /// Everything a reader of the notebook can see, as JSON, for comparing.
    pub async fn everything(&self) -> Value {
        let investigations = self.ok(Method::GET, "/api/v1/investigations", Value::Null).await;
        let mut whole = Vec::new();
        let mut outputs = Vec::new();
        for listed in investigations.as_array().unwrap() {
            let id = listed["id"].as_str().unwrap();
            let investigation = self.ok(Method::GET, &format!("/api/v1/investigations/{id}"), Value::Null).await;
            for step in investigation["steps"].as_array().unwrap() {
                for run in step["runs"].as_array().into_iter().flatten() {
                    let run = run["id"].as_i64().unwrap();
                    let raw = self.call(Method::GET, &format!("/api/v1/runs/{run}/output"), Value::Null).await;
                    let part = self
                        .call(Method::GET, &format!("/api/v1/runs/{run}/output?offset=1048570&limit=20"), Value::Null)
                        .await;
                    outputs.push(json!({ "run": run, "bytes": raw.body.len(), "sum": checksum(&raw.body),
                                          "part": String::from_utf8_lossy(&part.body) }));
                }
            }
            let shares = self.ok(Method::GET, &format!("/api/v1/investigations/{id}/shares"), Value::Null).await;
            whole.push(json!({ "investigation": investigation, "shares": shares }));
        }
        // Without the run-directory sweep's report: it lands whenever the sweep after a run ends.
        let mut hosts = self.ok(Method::GET, "/api/v1/hosts", Value::Null).await;
        for host in hosts.as_array_mut().into_iter().flatten() {
            host["run_dirs"]["last_sweep"] = Value::Null;
        }
        json!({
            "investigations": investigations,
            "each": whole,
            "outputs": outputs,
            "hosts": hosts,
            "known_hosts": self.call(Method::GET, "/api/v1/known_hosts", Value::Null).await.text(),
            "audit": self.ok(Method::GET, "/api/v1/audit?format=json&limit=100000", Value::Null).await,
            "mentions": self.ok(Method::GET, "/api/v1/mentions?all=true", Value::Null).await,
        })
    }
}

fn checksum(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x100000001b3))
}

pub fn sleuth(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_sleuth"));
    command.args(args).env_remove("SLEUTH_DATABASE");
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().expect("sleuth")
}

/// What a notebook with a bit of everything holds: whose, which ids.
pub struct Notebook<'a> {
    pub ada: As<'a>,
    pub steps: String,
    pub step_id: i64,
    pub runs: Value,
    pub snippet_id: i64,
}

/// Users, hosts (one behind another), an investigation with members, a note,
/// two runs of a command with megabytes of output on both streams, a snippet
/// with an annotation, comments, a hypothesis and a share link.
pub async fn a_notebook_with_everything<'a>(sshd: &Sshd, source: &'a TestApp) -> Notebook<'a> {
    let auth = source.auth.clone().unwrap();
    auth.add_user("ada", "correct horse battery", true).await.unwrap();
    auth.add_user("bob", "correct horse battery", false).await.unwrap();
    let ada = As { app: source, token: auth.create_token("ada", "migrate").await.unwrap().token };

    // Two hosts, one behind the other (a host that names a host), the key confirmed.
    let host = |name: &str, jump: Option<&str>| {
        json!({ "name": name, "hostname": "127.0.0.1", "port": sshd.port, "user": whoami(),
                "identity_file": sshd.client_key.display().to_string(), "proxy_jump": jump })
    };
    ada.ok(Method::POST, "/api/v1/hosts", host("gpu", None)).await;
    assert_eq!(ada.call(Method::POST, "/api/v1/hosts/gpu/test", json!({})).await.status, StatusCode::CONFLICT);
    ada.ok(Method::POST, "/api/v1/hosts/gpu/trust", json!({ "fingerprint": sshd.host_key_fingerprint() })).await;
    ada.ok(Method::POST, "/api/v1/hosts", host("behind", Some("gpu"))).await;

    // An investigation with a bit of everything.
    let inv = ada.ok(Method::POST, "/api/v1/investigations", json!({ "title": "<b>moved</b>", "question": "q" })).await;
    let id = inv["id"].as_str().unwrap().to_string();
    let steps = format!("/api/v1/investigations/{id}/steps");
    ada.ok(Method::PUT, &format!("/api/v1/investigations/{id}/members"), json!({ "user": "bob", "role": "editor" }))
        .await;
    ada.ok(Method::POST, &steps, json!({ "kind": "note", "body": "**before** the move" })).await;
    // Over two megabytes (blocks of one MB in PostgreSQL), both streams, a measurement.
    let command = "head -c 1600000 /dev/zero | tr '\\0' 'x' | fold -w 100; echo oops >&2; \
                   echo 'Output token throughput (tok/s): 57.5'";
    let step = ada.ok(Method::POST, &steps, json!({ "kind": "command", "host": "gpu", "command": command })).await;
    let step_id = step["id"].as_i64().unwrap();
    let runs = ada.ok(Method::POST, &format!("/api/v1/steps/{step_id}/runs"), json!({ "repeat": 2 })).await;
    for run in runs.as_array().unwrap() {
        assert_eq!(ada.finished(run["id"].as_i64().unwrap()).await["status"], "succeeded");
    }
    let file = sshd.dir.path().join("model.py");
    std::fs::write(&file, (1..=40).map(|i| format!("x_{i} = {i}\n")).collect::<String>()).unwrap();
    let snippet = ada
        .ok(
            Method::POST,
            &steps,
            json!({ "kind": "snippet", "host": "gpu", "path": file.display().to_string(),
                                          "start": 1, "end": 20 }),
        )
        .await;
    let snippet_id = snippet["id"].as_i64().unwrap();
    let annotation = ada
        .ok(
            Method::POST,
            &format!("/api/v1/steps/{snippet_id}/annotations"),
            json!({ "start": 2, "end": 4, "body": "here" }),
        )
        .await;
    let comments = format!("/api/v1/investigations/{id}/comments");
    let root = ada.ok(Method::POST, &comments, json!({ "step_id": step_id, "body": "why? @bob" })).await;
    ada.ok(Method::POST, &comments, json!({ "parent_id": root["id"], "body": "a reply" })).await;
    ada.ok(Method::POST, &comments, json!({ "annotation_id": annotation["id"], "body": "on the lines" })).await;
    ada.ok(
        Method::POST,
        &format!("/api/v1/investigations/{id}/hypotheses"),
        json!({ "statement": "the same", "metric": "output_throughput", "direction": "increase",
                "baseline": { "runs": [runs[0]["id"]] }, "treatment": { "runs": [runs[1]["id"]] } }),
    )
    .await;
    ada.ok(
        Method::POST,
        &format!("/api/v1/investigations/{id}/shares"),
        json!({ "label": "vendor", "hide_hosts": true }),
    )
    .await;
    Notebook { ada, steps, step_id, runs, snippet_id }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_notebook_moves_into_postgres_whole() {
    let Ok(admin) = std::env::var("SLEUTH_TEST_POSTGRES") else {
        eprintln!("skipped: the migration needs PostgreSQL (SLEUTH_TEST_POSTGRES)");
        return;
    };
    let sshd = Sshd::start();
    let source = spawn_app_with_accounts_on(None).await;
    let Notebook { ada, steps, step_id, runs, snippet_id } = a_notebook_with_everything(&sshd, &source).await;
    let before = ada.everything().await;
    assert_eq!(before["outputs"].as_array().unwrap().len(), 2);
    assert!(before["outputs"][0]["bytes"].as_u64().unwrap() > 1_600_000);

    // The move.
    // A password in the URL (trust auth ignores it) must never be printed.
    let url =
        server::db::scratch_postgres_database(&admin).await.unwrap().replacen("://postgres@", "://postgres:s3cret@", 1);
    assert!(url.contains("s3cret"), "{url}");
    let from = source.data.path().join("db");
    let moved = sleuth(&["migrate", "--from", &from.display().to_string()], &[("SLEUTH_DATABASE", &url)]);
    let said = format!("{}{}", String::from_utf8_lossy(&moved.stdout), String::from_utf8_lossy(&moved.stderr));
    assert!(moved.status.success(), "{said}");
    assert!(said.contains("Copied") && said.contains("run output: 2 runs"), "{said}");
    assert!(!said.contains("s3cret"), "the password is never printed: {said}");
    // Into a database that holds data: refused, with the reason.
    let again = sleuth(&["migrate", "--from", &from.display().to_string(), "--to", &url], &[]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already holds data"), "{again:?}");
    let nowhere = sleuth(&["migrate", "--from", "/nonexistent", "--to", &url], &[]);
    assert!(String::from_utf8_lossy(&nowhere.stderr).contains("holds no Sleuth notebook"), "{nowhere:?}");

    // A server on the database alone answers the same, to the same token.
    let target = spawn_app_with_accounts_on(Some(Database::Postgres(url))).await;
    let ada_there = As { app: &target, token: ada.token.clone() };
    let after = ada_there.everything().await;
    for key in ["investigations", "each", "outputs", "hosts", "known_hosts", "audit", "mentions"] {
        assert_eq!(before[key], after[key], "{key} differs after the move");
    }
    // It goes on where the old one stopped: the host key holds, ids continue.
    let run = ada_there.ok(Method::POST, &format!("/api/v1/steps/{step_id}/runs"), json!({})).await[0]["id"]
        .as_i64()
        .unwrap();
    assert!(run > runs[1]["id"].as_i64().unwrap());
    assert_eq!(ada_there.finished(run).await["status"], "succeeded");
    let new_step = ada_there.ok(Method::POST, &steps, json!({ "kind": "note", "body": "after" })).await;
    assert!(new_step["id"].as_i64().unwrap() > snippet_id);
    // Sessions moved too: bob signs in there with his password.
    assert!(target.auth.as_ref().unwrap().sign_in("bob", "correct horse battery", "test").await.is_ok());
}
