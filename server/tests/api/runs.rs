//! Command steps against a real OpenSSH server on loopback.

use crate::helpers::{TestApp, spawn_app};
use crate::sshd::{Sshd, fingerprint_of, whoami};
use axum::http::StatusCode;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// An app with one host "gpu" pointing at `sshd`, its key trusted.
pub async fn app_with_host(sshd: &Sshd) -> TestApp {
    with_host(spawn_app().await, sshd).await
}

/// [`app_with_host`] whose webhooks may reach the tests' receivers on 127.0.0.1
/// (by default a webhook reaches only the outside).
pub async fn app_with_host_and_loopback_webhooks(sshd: &Sshd) -> TestApp {
    let allow = server::watches::webhook::parse_allow("127.0.0.1/32").unwrap();
    let options = server::serve::Options { webhook_allow: allow, ..Default::default() };
    with_host(crate::helpers::spawn_app_with(options).await, sshd).await
}

/// `app` with the host `gpu` on `sshd`, its key trusted.
pub async fn with_host(app: TestApp, sshd: &Sshd) -> TestApp {
    add_host(&app, "gpu", sshd, &sshd.client_key.display().to_string()).await;
    let test = app.post_json("/api/v1/hosts/gpu/test", json!({})).await;
    assert_eq!(test.status, StatusCode::CONFLICT, "{}", test.text());
    let trusted = app.post_json("/api/v1/hosts/gpu/trust", json!({ "fingerprint": sshd.host_key_fingerprint() })).await;
    assert_eq!(trusted.status, StatusCode::OK, "{}", trusted.text());
    app
}

pub async fn add_host(app: &TestApp, name: &str, sshd: &Sshd, key: &str) {
    let response = app
        .post_json(
            "/api/v1/hosts",
            json!({ "name": name, "hostname": "127.0.0.1", "port": sshd.port, "user": whoami(), "identity_file": key }),
        )
        .await;
    assert_eq!(response.status, StatusCode::CREATED, "{}", response.text());
}

/// A command step in a new investigation; returns its id.
pub async fn command_step(app: &TestApp, body: Value) -> i64 {
    let id = app.investigation("runs").await;
    let mut step = json!({ "kind": "command", "host": "gpu" });
    if let (Some(step), Some(body)) = (step.as_object_mut(), body.as_object()) {
        step.extend(body.clone());
    }
    let response = app.post_json(&format!("/api/v1/investigations/{id}/steps"), step).await;
    assert_eq!(response.status, StatusCode::CREATED, "{}", response.text());
    response.json()["id"].as_i64().unwrap()
}

pub async fn start(app: &TestApp, step: i64, request: Value) -> Vec<i64> {
    let response = app.post_json(&format!("/api/v1/steps/{step}/runs"), request).await;
    assert_eq!(response.status, StatusCode::CREATED, "{}", response.text());
    response.json().as_array().unwrap().iter().map(|r| r["id"].as_i64().unwrap()).collect()
}

pub async fn wait_for(app: &TestApp, run: i64, done: impl Fn(&Value) -> bool, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let json = app.get(&format!("/api/v1/runs/{run}")).await.json();
        if done(&json) {
            return json;
        }
        assert!(Instant::now() < deadline, "run {run} did not get there in {within:?}: {json}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub async fn finished(app: &TestApp, run: i64) -> Value {
    wait_for(app, run, |r| !matches!(r["status"].as_str(), Some("queued" | "running")), Duration::from_secs(60)).await
}

pub async fn output(app: &TestApp, run: i64) -> Vec<u8> {
    app.get(&format!("/api/v1/runs/{run}/output")).await.body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_host_key_must_be_confirmed_before_anything_runs() {
    let sshd = Sshd::start();
    let app = spawn_app().await;
    add_host(&app, "gpu", &sshd, &sshd.client_key.display().to_string()).await;
    let marker = sshd.dir.path().join("ran");
    let step = command_step(&app, json!({ "command": format!("touch {}", marker.display()) })).await;

    let run = start(&app, step, json!({})).await[0];
    let run = finished(&app, run).await;
    assert_eq!(run["status"], "failed");
    let expected = sshd.host_key_fingerprint();
    assert!(run["error"].as_str().unwrap().contains(&expected), "{run}");
    assert!(!marker.exists(), "nothing ran on an unknown host");

    let host = app.get("/api/v1/hosts/gpu").await.json();
    assert_eq!(host["pending_key"], expected.as_str(), "the fingerprint is offered as ssh-keygen -lf prints it");
    assert_eq!(host["trusted_keys"], json!([]));

    let wrong = app.post_json("/api/v1/hosts/gpu/trust", json!({ "fingerprint": "SHA256:AAAA" })).await;
    assert_eq!(wrong.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", wrong.text());
    let trusted = app.post_json("/api/v1/hosts/gpu/trust", json!({ "fingerprint": expected })).await;
    assert_eq!(trusted.status, StatusCode::OK, "{}", trusted.text());
    assert_eq!(trusted.json()["trusted_keys"], json!([expected]));

    let report = app.post_json("/api/v1/hosts/gpu/test", json!({})).await;
    assert_eq!(report.status, StatusCode::OK, "{}", report.text());
    assert!(report.json()["uname"].as_str().unwrap().starts_with("Linux"), "{}", report.text());
    assert!(report.json()["latency_ms"].as_f64().unwrap() > 0.0);

    let run = start(&app, step, json!({})).await[0];
    assert_eq!(finished(&app, run).await["status"], "succeeded");
    assert!(marker.exists());

    // The pinned keys as an OpenSSH known_hosts file: ssh-keygen reads it.
    let exported = app.get("/api/v1/known_hosts").await;
    assert_eq!(exported.headers["content-type"], "text/plain; charset=utf-8");
    let known = sshd.dir.path().join("exported_known_hosts");
    std::fs::write(&known, &exported.body).unwrap();
    assert_eq!(fingerprint_of(&known), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_dir_from_before_the_store_held_host_keys_keeps_them() {
    // Until host keys moved into the store, DATA/known_hosts held them.
    let sshd = Sshd::start();
    let app = spawn_app().await;
    add_host(&app, "gpu", &sshd, &sshd.client_key.display().to_string()).await;
    let host_key = std::fs::read_to_string(sshd.dir.path().join("hostkey.pub")).unwrap();
    let key: Vec<&str> = host_key.split_whitespace().take(2).collect();
    let file = app.data.path().join("db").join("known_hosts");
    std::fs::write(&file, format!("# an old file\n[127.0.0.1]:{} {}\n", sshd.port, key.join(" "))).unwrap();

    let app = app.restart().await;
    let host = app.get("/api/v1/hosts/gpu").await.json();
    assert_eq!(host["trusted_keys"], json!([sshd.host_key_fingerprint()]), "{host}");
    assert!(!file.exists() && file.with_extension("imported").exists(), "the old file is set aside");
    let step = command_step(&app, json!({ "command": "echo still trusted" })).await;
    let run = finished(&app, start(&app, step, json!({})).await[0]).await;
    assert_eq!(run["status"], "succeeded", "{run}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_codes_streams_and_hostile_env_values() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;

    let ok = command_step(&app, json!({ "command": "echo out; echo err >&2" })).await;
    let run = finished(&app, start(&app, ok, json!({})).await[0]).await;
    assert_eq!((run["status"].as_str(), run["exit_code"].as_i64()), (Some("succeeded"), Some(0)), "{run}");
    assert_eq!(
        (run["stdout_bytes"].as_u64(), run["stderr_bytes"].as_u64(), run["lines"].as_u64()),
        (Some(4), Some(4), Some(2))
    );

    let three = command_step(&app, json!({ "command": "printf partial; exit 3" })).await;
    let run = finished(&app, start(&app, three, json!({})).await[0]).await;
    assert_eq!((run["status"].as_str(), run["exit_code"].as_i64()), (Some("failed"), Some(3)), "{run}");
    assert_eq!(output(&app, run["id"].as_i64().unwrap()).await, b"partial");

    let hostile = [
        ("SPACES", "a b  c"),
        ("QUOTES", "it's \"quoted\" 'twice'"),
        ("SUBST", "$(touch /tmp/sleuth-env-pwned) `id` ${HOME}"),
        ("NEWLINE", "line1\nline2"),
        ("SEMI", "x; touch /tmp/sleuth-env-pwned2"),
    ];
    let env: serde_json::Map<String, Value> = hostile.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
    let printer = hostile.iter().map(|(k, _)| format!("printf '%s\\0' \"${k}\"")).collect::<Vec<_>>().join("; ");
    let step = command_step(&app, json!({ "command": printer, "env": env, "cwd": "/tmp" })).await;
    let run = finished(&app, start(&app, step, json!({})).await[0]).await;
    assert_eq!(run["status"], "succeeded", "{run}");
    let bytes = output(&app, run["id"].as_i64().unwrap()).await;
    let values: Vec<&[u8]> = bytes.split(|b| *b == 0).filter(|v| !v.is_empty()).collect();
    let expected: Vec<&[u8]> = hostile.iter().map(|(_, v)| v.as_bytes()).collect();
    assert_eq!(values, expected);
    assert!(!std::path::Path::new("/tmp/sleuth-env-pwned").exists());
    assert!(!std::path::Path::new("/tmp/sleuth-env-pwned2").exists());
    assert_eq!(run["env"][0], json!(["NEWLINE", "line1\nline2"]));

    let bad = app
        .post_json(
            &format!("/api/v1/investigations/{}/steps", app.investigation("bad").await),
            json!({ "kind": "command", "host": "gpu", "command": "true", "env": { "A-B": "x" } }),
        )
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changed_host_key_is_refused_and_nothing_runs() {
    let mut sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let old = sshd.host_key_fingerprint();
    sshd.restart_with_new_host_key();
    let new = sshd.host_key_fingerprint();
    let marker = sshd.dir.path().join("ran");
    let step = command_step(&app, json!({ "command": format!("touch {}", marker.display()) })).await;

    let run = finished(&app, start(&app, step, json!({})).await[0]).await;
    assert_eq!(run["status"], "failed");
    let error = run["error"].as_str().unwrap();
    assert!(error.contains("CHANGED") && error.contains(&old) && error.contains(&new), "{error}");
    assert!(!marker.exists());

    let test = app.post_json("/api/v1/hosts/gpu/test", json!({})).await;
    assert_eq!(test.status, StatusCode::CONFLICT);
    assert_eq!(test.error_code(), "host_key_changed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_the_host_does_not_accept_is_a_clear_error() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let stranger = sshd.dir.path().join("stranger");
    std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&stranger)
        .status()
        .unwrap();
    add_host(&app, "other", &sshd, &stranger.display().to_string()).await;
    let test = app.post_json("/api/v1/hosts/other/test", json!({})).await;
    assert_eq!(test.status, StatusCode::BAD_GATEWAY, "{}", test.text());
    assert!(test.text().contains("refused the login"), "{}", test.text());
    assert!(!test.text().contains("BEGIN OPENSSH PRIVATE KEY"));

    let missing = app
        .put_json(
            "/api/v1/hosts/other",
            json!({ "name": "other", "hostname": "127.0.0.1", "port": sshd.port, "user": whoami(), "identity_file": "/nonexistent/key" }),
        )
        .await;
    assert_eq!(missing.status, StatusCode::OK);
    let test = app.post_json("/api/v1/hosts/other/test", json!({})).await;
    assert_eq!(test.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", test.text());
    assert!(test.text().contains("/nonexistent/key"), "{}", test.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_and_timeout_stop_the_command() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;

    // On the host, nothing of a stopped run is left: sshd passes on no signal
    // here, and a closed channel without a terminal ends nothing.
    let running = |pattern: &str| {
        std::process::Command::new("pgrep").args(["-fx", pattern]).output().is_ok_and(|o| o.status.success())
    };
    let step = command_step(&app, json!({ "command": "echo started; sleep 30.123; echo after" })).await;
    let run = start(&app, step, json!({})).await[0];
    wait_for(&app, run, |r| r["stdout_bytes"].as_u64() == Some(8), Duration::from_secs(20)).await;
    let cancelled = app.post_json(&format!("/api/v1/runs/{run}/cancel"), json!({})).await;
    assert_eq!(cancelled.status, StatusCode::OK, "{}", cancelled.text());
    let run = finished(&app, run).await;
    assert_eq!(run["status"], "cancelled", "{run}");
    assert!(run["duration_ms"].as_u64().unwrap() < 10_000, "{run}");
    assert_eq!(output(&app, run["id"].as_i64().unwrap()).await, b"started\n");
    assert!(!running("sleep 30.123"), "the cancelled run's command is still running on the host");
    let again = app.post_json(&format!("/api/v1/runs/{}/cancel", run["id"]), json!({})).await;
    assert_eq!(again.status, StatusCode::CONFLICT);

    // One that ignores SIGINT is killed after the grace.
    let slow = command_step(&app, json!({ "command": "trap '' INT; sleep 30.456; true", "timeout_s": 1 })).await;
    let run = finished(&app, start(&app, slow, json!({})).await[0]).await;
    assert_eq!(run["status"], "timed_out", "{run}");
    assert!(run["duration_ms"].as_u64().unwrap() < 10_000, "{run}");
    assert!(!running("sleep 30.456"), "the timed-out run's command is still running on the host");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_connection_is_lost_with_partial_output_and_the_next_run_reconnects() {
    let mut sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let step = command_step(&app, json!({ "command": "echo before; sleep 60; echo after" })).await;
    let run = start(&app, step, json!({})).await[0];
    wait_for(&app, run, |r| r["stdout_bytes"].as_u64() == Some(7), Duration::from_secs(20)).await;
    sshd.kill();
    let lost = finished(&app, run).await;
    assert_eq!(lost["status"], "lost", "{lost}");
    assert_eq!(output(&app, run).await, b"before\n");

    sshd.restart();
    let quick = command_step(&app, json!({ "command": "echo back" })).await;
    let run = finished(&app, start(&app, quick, json!({})).await[0]).await;
    assert_eq!(run["status"], "succeeded", "{run}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_concurrent_runs_share_one_connection() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let step = command_step(&app, json!({ "command": "sleep 0.3; echo $((6*7))" })).await;
    let mut runs = Vec::new();
    for _ in 0..20 {
        runs.extend(start(&app, step, json!({})).await);
    }
    for run in runs {
        let run = finished(&app, run).await;
        assert_eq!(run["status"], "succeeded", "{run}");
        assert_eq!(output(&app, run["id"].as_i64().unwrap()).await, b"42\n");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeat_with_warmup_runs_in_order_and_keeps_history() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let step = command_step(&app, json!({ "command": "date +%s%N" })).await;
    let runs = start(&app, step, json!({ "repeat": 3, "warmup": 1 })).await;
    assert_eq!(runs.len(), 4);
    let mut ends = Vec::new();
    for run in &runs {
        let run = finished(&app, *run).await;
        assert_eq!(run["status"], "succeeded");
        ends.push((
            run["warmup"].as_bool().unwrap(),
            run["batch_index"].as_u64().unwrap(),
            run["batch_size"].as_u64().unwrap(),
        ));
    }
    assert_eq!(ends, vec![(true, 1, 1), (false, 1, 3), (false, 2, 3), (false, 3, 3)]);
    let stamps: Vec<u128> = {
        let mut v = Vec::new();
        for run in &runs {
            v.push(String::from_utf8(output(&app, *run).await).unwrap().trim().parse().unwrap());
        }
        v
    };
    assert!(stamps.windows(2).all(|w| w[0] < w[1]), "one after another: {stamps:?}");
    let history = app.get(&format!("/api/v1/steps/{step}/runs")).await.json();
    assert_eq!(history.as_array().unwrap().len(), 4);

    let too_many = app.post_json(&format!("/api/v1/steps/{step}/runs"), json!({ "repeat": 1000 })).await;
    assert_eq!(too_many.status, StatusCode::UNPROCESSABLE_ENTITY);
}

fn rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Memory is measured per process, so the measurement runs in a process of its
/// own (this binary again, running only the ignored test below): other tests'
/// allocations (argon2 hashes, big outputs) would otherwise count as its growth.
#[test]
fn a_hundred_megabytes_of_output_with_bounded_memory() {
    crate::helpers::in_a_process_of_its_own("runs::hundred_megabytes_in_a_process_of_its_own");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by a_hundred_megabytes_of_output_with_bounded_memory in a process of its own"]
async fn hundred_megabytes_in_a_process_of_its_own() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let step = command_step(&app, json!({ "command": "head -c 100000000 /dev/zero | tr '\\0' 'x'" })).await;
    let before = rss_kb();
    let run = finished(&app, start(&app, step, json!({})).await[0]).await;
    let growth_mb = rss_kb().saturating_sub(before) / 1024;
    assert_eq!(run["status"], "succeeded", "{run}");
    assert_eq!(run["stdout_bytes"], 100_000_000);
    assert!(growth_mb < 64, "memory grew by {growth_mb} MB");
    let part = app.get(&format!("/api/v1/runs/{}/output?offset=99999990&limit=100", run["id"])).await;
    assert_eq!(part.body, b"xxxxxxxxxx");
    assert_eq!(part.headers["x-output-length"], "100000000");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_left_running_by_a_crash_become_interrupted() {
    // On PostgreSQL, replicas share the database and a run is only over when the
    // replica driving it stops renewing its lease: a real crash (SIGKILL of a
    // `sleuth serve`) is replicas::when_a_replica_dies_…; an in-process restart
    // leaves the old replica alive and driving the run.
    if crate::helpers::on_postgres() {
        return;
    }
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let step = command_step(&app, json!({ "command": "echo x; sleep 30" })).await;
    let run = start(&app, step, json!({})).await[0];
    wait_for(&app, run, |r| r["status"] == "running", Duration::from_secs(20)).await;
    let app = app.restart().await;
    let run = app.get(&format!("/api/v1/runs/{run}")).await.json();
    assert_eq!(run["status"], "interrupted", "{run}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_from_ssh_config_and_run_through_a_proxy_jump() {
    let sshd = Sshd::start();
    let app = spawn_app().await;
    let config = format!(
        "Host gpu-*\n  User {user}\n  IdentityFile {key}\n\nHost gpu-bastion\n  HostName 127.0.0.1\n  Port {port}\n\n\
         Host gpu-behind\n  HostName 127.0.0.1\n  Port {port}\n  ProxyJump gpu-bastion\n\nHost *\n  User nobody-else\n",
        user = whoami(),
        key = sshd.client_key.display(),
        port = sshd.port
    );
    let path = sshd.dir.path().join("ssh_config");
    std::fs::write(&path, config).unwrap();
    let report = app.post_json("/api/v1/hosts/import", json!({ "path": path })).await;
    assert_eq!(report.status, StatusCode::OK, "{}", report.text());
    let report = report.json();
    let names: Vec<&str> = report["imported"].as_array().unwrap().iter().map(|h| h["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["gpu-bastion", "gpu-behind"]);
    assert_eq!(report["imported"][1]["proxy_jump"], "gpu-bastion");
    assert_eq!(report["imported"][1]["user"], whoami(), "the first matching User wins");

    // Importing again changes nothing and says why.
    let again = app.post_json("/api/v1/hosts/import", json!({ "path": path })).await.json();
    assert_eq!(again["imported"], json!([]));
    assert_eq!(again["skipped"].as_array().unwrap().len(), 2, "{again}");

    let fingerprint = sshd.host_key_fingerprint();
    assert_eq!(app.post_json("/api/v1/hosts/gpu-bastion/test", json!({})).await.status, StatusCode::CONFLICT);
    let trusted = app.post_json("/api/v1/hosts/gpu-bastion/trust", json!({ "fingerprint": fingerprint })).await;
    assert_eq!(trusted.status, StatusCode::OK, "{}", trusted.text());

    // gpu-behind is reached through a direct-tcpip channel of gpu-bastion's connection.
    let id = app.investigation("jump").await;
    let step = app
        .post_json(
            &format!("/api/v1/investigations/{id}/steps"),
            json!({ "kind": "command", "host": "gpu-behind", "command": "echo via-jump" }),
        )
        .await
        .json()["id"]
        .as_i64()
        .unwrap();
    let run = finished(&app, start(&app, step, json!({})).await[0]).await;
    assert_eq!(run["status"], "succeeded", "{run}");
    assert_eq!(output(&app, run["id"].as_i64().unwrap()).await, b"via-jump\n");

    let in_use = app.delete("/api/v1/hosts/gpu-bastion").await;
    assert_eq!(in_use.status, StatusCode::CONFLICT, "{}", in_use.text());
    let bad = app.post_json("/api/v1/hosts/import", json!({ "path": "/nonexistent/config" })).await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passphrase_protected_keys_ask_for_the_passphrase() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let locked = sshd.dir.path().join("locked");
    let status = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "open sesame", "-f"])
        .arg(&locked)
        .status()
        .unwrap();
    assert!(status.success());
    let public = std::fs::read_to_string(sshd.dir.path().join("locked.pub")).unwrap();
    let mut authorized = std::fs::read_to_string(sshd.dir.path().join("authorized_keys")).unwrap();
    authorized.push_str(&public);
    std::fs::write(sshd.dir.path().join("authorized_keys"), authorized).unwrap();
    add_host(&app, "locked", &sshd, &locked.display().to_string()).await;

    let test = app.post_json("/api/v1/hosts/locked/test", json!({})).await;
    assert_eq!(test.status, StatusCode::CONFLICT, "{}", test.text());
    assert_eq!(test.error_code(), "needs_passphrase");

    let set = app.post_json("/api/v1/hosts/locked/passphrase", json!({ "passphrase": "wrong" })).await;
    assert_eq!(set.status, StatusCode::NO_CONTENT);
    let test = app.post_json("/api/v1/hosts/locked/test", json!({})).await;
    assert_eq!(test.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", test.text());
    assert!(!test.text().contains("wrong\""), "the passphrase is never echoed: {}", test.text());

    app.post_json("/api/v1/hosts/locked/passphrase", json!({ "passphrase": "open sesame" })).await;
    let test = app.post_json("/api/v1/hosts/locked/test", json!({})).await;
    assert_eq!(test.status, StatusCode::OK, "{}", test.text());
    let host = app.get("/api/v1/hosts/locked").await.text();
    assert!(!host.contains("open sesame"), "{host}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ssh_agent_logs_in_when_no_key_file_is_set() {
    let sshd = Sshd::start();
    let socket = sshd.dir.path().join("agent.sock");
    let agent = std::process::Command::new("ssh-agent").arg("-a").arg(&socket).output().expect("ssh-agent");
    assert!(agent.status.success());
    let added = std::process::Command::new("ssh-add")
        .arg(&sshd.client_key)
        .env("SSH_AUTH_SOCK", &socket)
        .output()
        .expect("ssh-add");
    assert!(added.status.success(), "{}", String::from_utf8_lossy(&added.stderr));
    // SAFETY: no other test reads or writes SSH_AUTH_SOCK; only the agent login reads it.
    unsafe { std::env::set_var("SSH_AUTH_SOCK", &socket) };

    let app = spawn_app().await;
    let response = app
        .post_json(
            "/api/v1/hosts",
            json!({ "name": "agent", "hostname": "127.0.0.1", "port": sshd.port, "user": whoami() }),
        )
        .await;
    assert_eq!(response.status, StatusCode::CREATED);
    assert_eq!(response.json()["identity_file"], Value::Null);
    app.post_json("/api/v1/hosts/agent/test", json!({})).await;
    app.post_json("/api/v1/hosts/agent/trust", json!({ "fingerprint": sshd.host_key_fingerprint() })).await;
    let test = app.post_json("/api/v1/hosts/agent/test", json!({})).await;
    assert_eq!(test.status, StatusCode::OK, "{}", test.text());

    let pid = String::from_utf8_lossy(&agent.stdout)
        .split("SSH_AGENT_PID=")
        .nth(1)
        .and_then(|s| s.split(';').next())
        .map(str::to_string);
    if let Some(pid) = pid {
        let _ = std::process::Command::new("kill").arg(pid).status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_output_stream_resumes_at_an_offset_without_gaps_or_duplicates() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let step = command_step(&app, json!({ "command": "seq 1 2000" })).await;
    let run = finished(&app, start(&app, step, json!({})).await[0]).await;
    let id = run["id"].as_i64().unwrap();
    let all = output(&app, id).await;
    assert_eq!(all.len(), 8893);

    // A client that saw up to the end of line 1000 reconnects with Last-Event-ID.
    let offset = all.iter().enumerate().filter(|(_, b)| **b == b'\n').nth(999).map(|(i, _)| i + 1).unwrap();
    let request = axum::http::Request::get(format!("/api/v1/runs/{id}/stream?offset=0"))
        .header("last-event-id", offset.to_string())
        .body(axum::body::Body::empty())
        .unwrap();
    let response = tower::ServiceExt::oneshot(app.router.clone(), request).await.unwrap();
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let body = http_body_util::BodyExt::collect(response.into_body()).await.unwrap().to_bytes();
    let text = String::from_utf8_lossy(&body);
    let data: String = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: ").or_else(|| (l == "data:").then_some("")))
        .collect::<Vec<_>>()
        .join("\n");
    let numbers: Vec<u32> = data.split_whitespace().filter_map(|n| n.parse().ok()).collect();
    assert_eq!(numbers, (1001..=2000).collect::<Vec<_>>());
    assert!(text.contains("event: end"), "{text}");
    assert!(text.contains(&format!("id: {}", all.len())), "the last id is the end offset");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_offsets_only_stream_says_how_far_the_output_got_and_nothing_else() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let step =
        command_step(&app, json!({ "command": "for i in $(seq 1 5); do echo \"<b>$i</b>\"; sleep 0.2; done" })).await;
    let run = start(&app, step, json!({})).await[0];
    // Followed live, from the start: ids that grow to the whole length, no data.
    let request = axum::http::Request::get(format!("/api/v1/runs/{run}/stream?offset=0&offsets_only=true"))
        .body(axum::body::Body::empty())
        .unwrap();
    let response = tower::ServiceExt::oneshot(app.router.clone(), request).await.unwrap();
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let body = http_body_util::BodyExt::collect(response.into_body()).await.unwrap().to_bytes();
    let text = String::from_utf8_lossy(&body);
    let all = output(&app, run).await;
    assert_eq!(all.len(), 5 * 9);
    let ids: Vec<u64> = text.lines().filter_map(|l| l.strip_prefix("id: ")).filter_map(|n| n.parse().ok()).collect();
    assert!(ids.len() >= 2, "a frame as it grew, then the end: {text}");
    assert!(ids.windows(2).all(|w| w[0] <= w[1]), "{text}");
    assert_eq!(ids.last().copied(), Some(all.len() as u64), "{text}");
    assert!(text.trim_end().ends_with("event: end\nid: 45\ndata: end"), "{text}");
    assert!(!text.contains("<b>") && !text.contains("&lt;b"), "no output in it, raw or rendered: {text}");
    // A finished run: only the end, at its length, from any offset.
    let request = axum::http::Request::get(format!("/api/v1/runs/{run}/stream?offset=9&offsets_only=true"))
        .body(axum::body::Body::empty())
        .unwrap();
    let response = tower::ServiceExt::oneshot(app.router.clone(), request).await.unwrap();
    let body = http_body_util::BodyExt::collect(response.into_body()).await.unwrap().to_bytes();
    assert_eq!(String::from_utf8_lossy(&body), "event: end\nid: 45\ndata: end\n\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_facts_are_captured_on_demand_and_kept() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    assert_eq!(app.get("/api/v1/hosts/gpu/facts").await.status, StatusCode::NOT_FOUND, "nothing captured yet");
    let captured = app.post_json("/api/v1/hosts/gpu/facts", json!({})).await;
    assert_eq!(captured.status, StatusCode::OK, "{}", captured.text());
    let facts = captured.json();
    // This machine has no GPU: fewer facts, said so, and no error.
    assert_eq!(facts["gpus"], json!([]));
    assert!(facts["notes"][0].as_str().unwrap().contains("nvidia-smi"), "{facts}");
    let lscpu = std::process::Command::new("lscpu").output().unwrap().stdout;
    let model = String::from_utf8_lossy(&lscpu)
        .lines()
        .find_map(|l| l.strip_prefix("Model name:").map(|v| v.trim().to_string()));
    assert_eq!(facts["cpu_model"].as_str().map(str::to_string), model, "{facts}");
    assert!(facts["python"].as_str().unwrap().starts_with("python3 (3."), "{facts}");
    assert_eq!(app.get("/api/v1/hosts/gpu/facts").await.json(), facts, "kept as captured");

    let odd =
        app.post_json("/api/v1/hosts/gpu/facts", json!({ "python": "/no/such/python; touch pwned" })).await.json();
    assert!(odd["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().contains("did not run")), "{odd}");
    assert!(!std::path::Path::new(&std::env::var("HOME").unwrap_or_default()).join("pwned").exists(), "quoted");
    assert_eq!(app.post_json("/api/v1/hosts/nope/facts", json!({})).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_waits_for_the_end_of_a_run_without_polling() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let step = command_step(&app, json!({ "command": "sleep 1; echo done" })).await;
    let run = start(&app, step, json!({})).await[0];
    let asked = Instant::now();
    let ended = app.get(&format!("/api/v1/runs/{run}?wait=30")).await;
    let took = asked.elapsed();
    assert_eq!(ended.status, StatusCode::OK, "{}", ended.text());
    assert_eq!(ended.json()["status"], "succeeded", "{}", ended.text());
    assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(10), "answered after {took:?}");
    // A finished run is answered at once.
    let asked = Instant::now();
    assert_eq!(app.get(&format!("/api/v1/runs/{run}?wait=30")).await.json()["status"], "succeeded");
    assert!(asked.elapsed() < Duration::from_secs(1));
    // A run still going when the wait is over is answered as it is then.
    let long = command_step(&app, json!({ "command": "sleep 30" })).await;
    let long = start(&app, long, json!({})).await[0];
    let asked = Instant::now();
    let going = app.get(&format!("/api/v1/runs/{long}?wait=1")).await.json();
    assert!(matches!(going["status"].as_str(), Some("queued" | "running")), "{going}");
    let took = asked.elapsed();
    assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(5), "answered after {took:?}");
    assert_eq!(app.post_json(&format!("/api/v1/runs/{long}/cancel"), json!({})).await.status, StatusCode::OK);
    // Bounds, with reasons.
    let too_long = app.get(&format!("/api/v1/runs/{run}?wait=61")).await;
    assert_eq!(too_long.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(too_long.text().contains("at most 60"), "{}", too_long.text());
    assert_eq!(app.get(&format!("/api/v1/runs/{run}?wait=soon")).await.status, StatusCode::BAD_REQUEST);
}

/// The numbers in an SSE body's `data:` lines, and whether it ended.
fn streamed_numbers(body: &[u8]) -> (Vec<u32>, bool) {
    let text = String::from_utf8_lossy(body);
    let data: String = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: ").or_else(|| (l == "data:").then_some("")))
        .collect::<Vec<_>>()
        .join("\n");
    (data.split_whitespace().filter_map(|n| n.parse().ok()).collect(), text.contains("event: end"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_viewers_of_a_live_run_each_get_every_line_once() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    // 3 000 lines over about two seconds, in bursts.
    let command = "for i in $(seq 1 30); do seq $(( (i-1)*100+1 )) $(( i*100 )); sleep 0.07; done";
    let step = command_step(&app, json!({ "command": command })).await;
    let run = start(&app, step, json!({})).await[0];
    let viewer = |delay_ms: u64, offset: u64| {
        let router = app.router.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            let request = axum::http::Request::get(format!("/api/v1/runs/{run}/stream?offset={offset}"))
                .body(axum::body::Body::empty())
                .unwrap();
            let response = tower::ServiceExt::oneshot(router, request).await.unwrap();
            let body = http_body_util::BodyExt::collect(response.into_body()).await.unwrap().to_bytes();
            streamed_numbers(&body)
        })
    };
    // Viewers from the start, joining late (they catch up from the file), and
    // one resuming after line 100 (offset 292: "1\n".."100\n").
    let mut viewers: Vec<_> = (0..12).map(|i| viewer(i * 150, 0)).collect();
    let resumed = viewer(300, 292);
    wait_for(&app, run, |r| r["status"] == "succeeded", Duration::from_secs(60)).await;
    for (i, viewer) in viewers.drain(..).enumerate() {
        let (numbers, ended) = viewer.await.unwrap();
        assert!(ended, "viewer {i} got the end");
        assert_eq!(numbers, (1..=3000).collect::<Vec<_>>(), "viewer {i}: every line, once, in order");
    }
    let (numbers, _) = resumed.await.unwrap();
    assert_eq!(numbers, (101..=3000).collect::<Vec<_>>());
    // After the end, a new viewer reads it all from the file.
    let (numbers, ended) = viewer(0, 0).await.unwrap();
    assert!(ended);
    assert_eq!(numbers.len(), 3000);
}

/// What runs leave on their host: the sweep after a run removes directories
/// older than the host's retention (and says so on the host), a deleted step's
/// runs' directories go with it, and the retention is the host's to set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_directories_are_swept_by_age_and_removed_with_their_runs() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let home = std::path::PathBuf::from(std::env::var("HOME").unwrap());
    let runs = home.join(".sleuth/runs");
    // As a run of ten days ago left it; and something else of the user's, as old.
    let old = runs.join(format!("{}-0a0b0c0d", 900_000_000 + std::process::id()));
    let theirs = runs.join(format!("notes-of-{}", std::process::id()));
    for dir in [&old, &theirs] {
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/result.json"), "{}").unwrap();
        // Everything in it, as a sweep looks at the newest change inside.
        let touched = std::process::Command::new("find")
            .arg(dir)
            .args(["-exec", "touch", "-d", "10 days ago", "{}", "+"])
            .status()
            .unwrap();
        assert!(touched.success());
    }

    let step = command_step(&app, json!({ "command": "echo kept > result.txt", "telemetry": false })).await;
    let run = finished(&app, start(&app, step, json!({})).await[0]).await;
    assert_eq!(run["status"], "succeeded", "{run}");
    let dir = home.join(run["run_dir"].as_str().unwrap().strip_prefix("~/").unwrap());
    assert_eq!(std::fs::read_to_string(dir.join("result.txt")).unwrap(), "kept\n");

    let deadline = Instant::now() + Duration::from_secs(20);
    let sweep = loop {
        let host = app.get("/api/v1/hosts/gpu").await.json();
        if host["run_dirs"]["last_sweep"].is_object() {
            break host["run_dirs"].clone();
        }
        assert!(Instant::now() < deadline, "no sweep after the run: {host}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(sweep["keep_days"], 7, "{sweep}");
    // Removed by this sweep, or by another test's Sleuth sweeping the same directory meanwhile.
    assert!(sweep["last_sweep"]["error"].is_null(), "{sweep}");
    assert!(!old.exists(), "a run directory older than 7 days is removed: {sweep}");
    assert!(theirs.exists(), "what is not a run directory is never touched");
    assert!(dir.exists(), "a fresh one stays");
    std::fs::remove_dir_all(&theirs).unwrap();

    // The retention is the host's: checked, and shown with the host.
    for (bad, why) in
        [(json!({ "run_dirs_keep_days": 0 }), "1 to 3650 days"), (json!({ "run_dirs_max_mb": 0 }), "at least 1 MB")]
    {
        let refused = app.patch_json("/api/v1/hosts/gpu", bad).await;
        assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.text());
        assert!(refused.text().contains(why), "{}", refused.text());
    }
    let set = app.patch_json("/api/v1/hosts/gpu", json!({ "run_dirs_keep_days": 30, "run_dirs_max_mb": 5000 })).await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.text());
    assert_eq!(
        (set.json()["run_dirs"]["keep_days"].clone(), set.json()["run_dirs"]["max_mb"].clone()),
        (json!(30), json!(5000))
    );
    let price = app.patch_json("/api/v1/hosts/gpu", json!({ "price_per_hour": 2.5 })).await;
    assert_eq!(price.json()["run_dirs"]["keep_days"], 30, "other fields stay: {}", price.text());
    let page = app.get("/hosts").await.text();
    assert!(page.contains("Run directories") && page.contains("kept 30 days"), "the Hosts page shows it");

    // Deleting the step removes its runs' directories on the host.
    assert!(app.delete(&format!("/api/v1/steps/{step}")).await.status.is_success());
    let deadline = Instant::now() + Duration::from_secs(20);
    while dir.exists() {
        assert!(Instant::now() < deadline, "{} is still there after its step was deleted", dir.display());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `DELETE /api/v1/runs/{id}`: a finished run goes with its output, its
/// measurements, its search hits and its directory on the host; its siblings
/// stay; a run still going is refused with what to do instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_run_removes_its_output_measurements_hits_and_directory() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let home = std::path::PathBuf::from(std::env::var("HOME").unwrap());
    let word = format!("quokka{}", std::process::id());
    let step = command_step(
        &app,
        json!({
            "command": format!("echo {word} > kept.txt; echo {word}; echo 'Throughput: 4.05 requests/s, 1234.56 total tokens/s, 617.28 output tokens/s'"),
            "telemetry": false
        }),
    )
    .await;
    let investigation = app.get(&format!("/api/v1/steps/{step}")).await.json()["investigation_id"].clone();
    let investigation = investigation.as_str().unwrap().to_string();
    let ids = start(&app, step, json!({ "repeat": 2 })).await;
    let (gone, kept) = (finished(&app, ids[0]).await, finished(&app, ids[1]).await);
    assert_eq!((gone["status"].as_str(), kept["status"].as_str()), (Some("succeeded"), Some("succeeded")));
    let dir_of = |run: &Value| home.join(run["run_dir"].as_str().unwrap().strip_prefix("~/").unwrap());
    let (gone_dir, kept_dir) = (dir_of(&gone), dir_of(&kept));
    assert!(gone_dir.join("kept.txt").exists() && kept_dir.join("kept.txt").exists());
    let hits = |answer: &Value, run: i64| {
        answer["results"].as_array().is_some_and(|r| r.iter().any(|r| r["run_id"] == run && r["kind"] == "output"))
    };
    let search = format!("/api/v1/search?q={}", crate::helpers::urlencode(&format!("{word} kind:output")));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let answer = app.get(&search).await.json();
        if hits(&answer, ids[0]) && hits(&answer, ids[1]) {
            break;
        }
        assert!(Instant::now() < deadline, "both runs' output is not found: {answer}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // A run still going is refused, and says how to stop it.
    let slow = command_step(&app, json!({ "command": "sleep 30", "telemetry": false })).await;
    let running = start(&app, slow, json!({})).await[0];
    wait_for(&app, running, |r| r["status"] == "running", Duration::from_secs(30)).await;
    let refused = app.delete(&format!("/api/v1/runs/{running}")).await;
    assert_eq!(refused.status, StatusCode::CONFLICT, "{}", refused.text());
    assert!(refused.text().contains("cancel it first"), "{}", refused.text());
    assert_eq!(app.get(&format!("/api/v1/runs/{running}")).await.json()["status"], "running");
    app.post_json(&format!("/api/v1/runs/{running}/cancel"), json!({})).await;

    let deleted = app.delete(&format!("/api/v1/runs/{}", ids[0])).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{}", deleted.text());
    for uri in [format!("/api/v1/runs/{}", ids[0]), format!("/api/v1/runs/{}/output", ids[0])] {
        let answer = app.get(&uri).await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{uri}: {}", answer.text());
        assert!(answer.text().contains(&format!("There is no run {}", ids[0])), "{}", answer.text());
    }
    let again = app.delete(&format!("/api/v1/runs/{}", ids[0])).await;
    assert_eq!(again.status, StatusCode::NOT_FOUND, "{}", again.text());
    let all = app.get(&format!("/api/v1/investigations/{investigation}/measurements")).await.json();
    let of = |run: i64| all.as_array().into_iter().flatten().filter(|m| m["run_id"] == run).count();
    assert_eq!((of(ids[0]), of(ids[1]) > 0), (0, true), "only the deleted run's measurements go: {all}");
    let answer = app.get(&search).await.json();
    assert!(!hits(&answer, ids[0]) && hits(&answer, ids[1]), "only the deleted run's output is gone: {answer}");
    let step_now = app.get(&format!("/api/v1/steps/{step}")).await.json();
    let left: Vec<i64> = step_now["runs"].as_array().unwrap().iter().map(|r| r["id"].as_i64().unwrap()).collect();
    assert_eq!(left, [ids[1]], "{step_now}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while gone_dir.exists() {
        assert!(Instant::now() < deadline, "{} is still there after its run was deleted", gone_dir.display());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(kept_dir.join("kept.txt").exists(), "the other run's directory stays");

    // Deleting the step takes the rest, and its output leaves the index too.
    assert!(app.delete(&format!("/api/v1/steps/{step}")).await.status.is_success());
    let answer = app.get(&search).await.json();
    assert!(!hits(&answer, ids[1]), "a deleted step's output is not found: {answer}");
}

/// `GET /api/v1/compare?runs=A,B` and `/compare`: two configurations of a
/// sweep side by side — the setting that differs, the metrics they share with
/// the change against the first and whether it is more than each
/// configuration's repeats vary; bad lists are 422 with the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_runs_compared_show_what_differs_and_whether_their_numbers_do() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    // Output throughput 100·X plus 0–2 of noise; total throughput the same everywhere.
    let command = "echo \"Throughput: 4.05 requests/s, 1234.56 total tokens/s, \
                   $((X * 100 + 10#$(date +%N) % 3)).0 output tokens/s\"";
    let step = command_step(&app, json!({ "command": command, "telemetry": false, "matrix": { "X": [1, 2] } })).await;
    let runs = start(&app, step, json!({ "repeat": 3 })).await;
    let mut by_x: std::collections::BTreeMap<String, Vec<i64>> = Default::default();
    for id in &runs {
        let run = finished(&app, *id).await;
        assert_eq!(run["status"], "succeeded", "{run}");
        by_x.entry(run["config"]["X"].as_str().unwrap().to_string()).or_default().push(*id);
    }
    let (one, two) = (by_x["1"][0], by_x["2"][0]);

    let compared = app.get(&format!("/api/v1/compare?runs={one},{two}")).await;
    assert_eq!(compared.status, StatusCode::OK, "{}", compared.text());
    let c = compared.json();
    assert_eq!(c["runs"][0]["id"], one);
    assert_eq!(c["runs"][1]["repeats"].as_array().unwrap().len(), 3, "{c}");
    let row = |rows: &Value, name: &str| rows.as_array().unwrap().iter().find(|r| r["name"] == name).cloned();
    let x = row(&c["settings"], "X").expect("the sweep's setting");
    assert_eq!((x["values"].clone(), x["differs"].clone()), (json!(["1", "2"]), json!(true)));
    assert_eq!(row(&c["settings"], "command").unwrap()["differs"], false);
    let metric = |name: &str| c["metrics"].as_array().unwrap().iter().find(|m| m["metric"] == name).cloned().unwrap();
    let output = metric("output_throughput");
    let delta = output["deltas"][1].as_f64().unwrap();
    assert!((95.0..=105.0).contains(&delta), "about +100 %: {output}");
    assert_eq!(output["verdicts"][1]["outcome"], "increase", "{output}");
    assert!(output["verdicts"][0].is_null() && output["deltas"][0].is_null());
    assert_eq!(metric("total_throughput")["verdicts"][1]["outcome"], "within_noise");
    assert_eq!((c["cdfs"].clone(), c["telemetry_svg"].clone()), (json!([]), Value::Null), "nothing sampled");

    // Two runs of one configuration: no setting differs.
    let same = app.get(&format!("/api/v1/compare?runs={},{}", by_x["1"][0], by_x["1"][1])).await.json();
    assert!(same["settings"].as_array().unwrap().iter().all(|r| r["differs"] == false), "{same}");

    for (bad, says) in [
        (format!("{one}"), "Compare 2 to 8 different runs"),
        (format!("{one},abc"), "\\\"abc\\\" is not a run number"),
        (format!("{one},{one}"), "Compare 2 to 8 different runs"),
    ] {
        let refused = app.get(&format!("/api/v1/compare?runs={}", crate::helpers::urlencode(&bad))).await;
        assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {}", refused.text());
        assert!(refused.text().contains(says), "{bad}: {}", refused.text());
    }
    let missing = app.get(&format!("/api/v1/compare?runs={one},987654321")).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND, "{}", missing.text());

    // The page: both runs, the row that differs marked, the verdict in words.
    let page = app.get(&format!("/compare?runs={one},{two}")).await;
    assert_eq!(page.status, StatusCode::OK);
    let html = page.text();
    assert!(html.contains(&format!("href=\"/runs/{one}\"")) && html.contains(&format!("href=\"/runs/{two}\"")));
    assert!(html.contains("class=\"differs\""), "the setting that differs is marked");
    assert!(html.contains("data-outcome=\"increase\""), "{html}");
    let refused = app.get("/compare?runs=7").await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(refused.text().contains("Compare 2 to 8 different runs"));
    // The run page offers the sweep's configurations side by side.
    let run_page = app.get(&format!("/runs/{two}")).await.text();
    assert!(run_page.contains("compare its configurations"), "{run_page}");
}

/// `POST /steps/{id}/duplicate`: a copy of the step right after it, its
/// command, environment and sweep, without its runs. `"only"` runs one
/// configuration of a sweep again (a value, or `null` for unset); one the
/// sweep does not have, or `only` on a step without a sweep, is 422 with why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_is_duplicated_and_one_configuration_runs_again() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let body = json!({ "command": "echo \"X=${X-unset}\"", "telemetry": false, "env": { "KEEP": "<b>yes</b>" },
                       "matrix": { "X": [1, 2, null] } });
    let step = command_step(&app, body).await;
    for run in start(&app, step, json!({})).await {
        assert_eq!(finished(&app, run).await["status"], "succeeded");
    }
    let original = app.get(&format!("/api/v1/steps/{step}")).await.json();
    let investigation = original["investigation_id"].as_str().unwrap().to_string();
    let after = app.note(&investigation, "after").await["id"].as_i64().unwrap();

    let copy = app.post_json(&format!("/api/v1/steps/{step}/duplicate"), json!({})).await;
    assert_eq!(copy.status, StatusCode::CREATED, "{}", copy.text());
    let copy = copy.json();
    for field in ["command", "env", "matrix", "host", "telemetry"] {
        assert_eq!(copy[field], original[field], "{field}: {copy}");
    }
    assert!(copy["runs"].as_array().is_none_or(Vec::is_empty), "no runs of its own: {copy}");
    assert_eq!(copy["position"], original["position"].as_u64().unwrap() + 1, "right after the original");
    let copy_id = copy["id"].as_i64().unwrap();
    assert_eq!(app.step_ids(&investigation).await, vec![step, copy_id, after]);
    let missing = app.post_json("/api/v1/steps/987654321/duplicate", json!({})).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND, "{}", missing.text());

    // A run's page offers its configuration again.
    let first = original["runs"][0]["id"].as_i64().unwrap();
    let page = app.get(&format!("/runs/{first}")).await.text();
    assert!(page.contains("class=\"quiet run-again\""), "{page}");
    // One configuration again, and the unset one.
    for (only, printed) in [(json!({ "X": "2" }), "X=2"), (json!({ "X": null }), "X=unset")] {
        let again = start(&app, step, json!({ "only": only })).await;
        assert_eq!(again.len(), 1, "{only}");
        let run = finished(&app, again[0]).await;
        assert_eq!(run["config"], only, "{run}");
        let output = app.get(&format!("/api/v1/runs/{}/output", again[0])).await.text();
        assert!(output.contains(printed), "{output}");
    }
    let refused = app.post_json(&format!("/api/v1/steps/{step}/runs"), json!({ "only": { "X": "7" } })).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.text());
    assert!(refused.text().contains("No configuration of this sweep has X=7"), "{}", refused.text());
    let plain = command_step(&app, json!({ "command": "true", "telemetry": false })).await;
    let refused = app.post_json(&format!("/api/v1/steps/{plain}/runs"), json!({ "only": { "X": "1" } })).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(refused.text().contains("only are for sweeps"), "{}", refused.text());
}

/// `GET /api/v1/steps/{id}/frontier`: a sweep of MAX_BATCH 1/8/16, two runs
/// each: throughput rises with the batch, p99 TTFT too; 16 is beaten by
/// nothing but misses the SLO, so the best under "TTFT <= 500 ms" is 8.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweeps_frontier_and_its_best_configuration_under_the_slo() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    // Throughput 100·B (+0–2), p99 TTFT 50·B ms (+0–2), as `vllm bench serve` prints them.
    let command = "printf '============ Serving Benchmark Result ============\\n\
                   Output token throughput (tok/s):          %s.0\\nP99 TTFT (ms):                            %s.0\\n\
                   ==================================================\\n' \
                   $((MAX_BATCH * 100 + 10#$(date +%N) % 3)) $((MAX_BATCH * 50 + 10#$(date +%N) % 3))";
    let step =
        command_step(&app, json!({ "command": command, "telemetry": false, "matrix": { "MAX_BATCH": [1, 8, 16] } }))
            .await;
    for run in start(&app, step, json!({ "repeat": 2 })).await {
        assert_eq!(finished(&app, run).await["status"], "succeeded");
    }
    let investigation =
        app.get(&format!("/api/v1/steps/{step}")).await.json()["investigation_id"].as_str().unwrap().to_string();
    let url = format!("/api/v1/steps/{step}/frontier");
    let without = app.get(&url).await.json();
    assert!(without["best_under_slo"].is_null(), "{without}");
    assert!(without["why"].as_str().unwrap().contains("no SLO"), "{without}");
    let set =
        app.put_json(&format!("/api/v1/investigations/{investigation}/slo"), json!({ "text": "TTFT <= 500 ms" })).await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.text());

    let f = app.get(&url).await;
    assert_eq!(f.status, StatusCode::OK, "{}", f.text());
    let f = f.json();
    assert_eq!((f["maximize"].as_str(), f["minimize"].as_str()), (Some("output_throughput"), Some("ttft_ms_p99")));
    let point = |label: &str| f["points"].as_array().unwrap().iter().find(|p| p["label"] == label).cloned().unwrap();
    for (batch, meets) in [(1, true), (8, true), (16, false)] {
        let p = point(&format!("MAX_BATCH={batch}"));
        assert_eq!(p["n"], 2, "{p}");
        let up = p["maximize"].as_f64().unwrap();
        assert!((f64::from(batch) * 100.0..=f64::from(batch) * 100.0 + 2.0).contains(&up), "{p}");
        assert_eq!(p["on_frontier"], true, "more throughput costs latency: nothing beats another on both: {p}");
        assert_eq!(p["meets_slo"], meets, "{p}");
        let (lo, hi) = (p["maximize_ci"][0].as_f64().unwrap(), p["maximize_ci"][1].as_f64().unwrap());
        assert!(lo <= up && up <= hi, "{p}");
    }
    assert_eq!(f["best_under_slo"], "MAX_BATCH=8", "{f}");
    assert!(f["svg"].as_str().unwrap().contains("output_throughput (higher is better)"));

    // The page: the chart, the table, the best.
    let page = app.get(&format!("/i/{investigation}/frontier?step={step}")).await.text();
    assert!(page.contains("Best under") && page.contains("MAX_BATCH=8") && page.contains("frontier-table"), "{page}");
    let card = app.get(&format!("/i/{investigation}")).await.text();
    assert!(card.contains(&format!("/i/{investigation}/frontier?step={step}")), "the sweep links to it");

    // What it cannot be: a step without a sweep, a metric no run has, a step that does not exist.
    let plain = command_step(&app, json!({ "command": "true", "telemetry": false })).await;
    let refused = app.get(&format!("/api/v1/steps/{plain}/frontier")).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(refused.text().contains("sweeps nothing"), "{}", refused.text());
    let unknown = app.get(&format!("{url}?minimize=itl_ms_p99")).await;
    assert_eq!(unknown.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(unknown.text().contains("its runs measured: output_throughput, ttft_ms_p99"), "{}", unknown.text());
    assert_eq!(app.get("/api/v1/steps/987654321/frontier").await.status, StatusCode::NOT_FOUND);
}
