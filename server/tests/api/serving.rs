//! Serving experiments: a server beside each run (`tools/fake-vllm/serve.py`,
//! which prints vLLM's real startup lines and answers `/health` after its load
//! time) and a client that saves a real `--save-result` line as a file in the
//! run's directory. Each run keeps the server's log as a second stream, the
//! file as an artifact and its numbers as measurements; servers are stopped
//! whole, whatever happens to the run, and found after Sleuth was killed.

use crate::helpers::TestApp;
use crate::runs::{app_with_host, command_step, finished, start};
use crate::sshd::Sshd;
use axum::http::StatusCode;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn tool(name: &str) -> String {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/fake-vllm")).join(name).display().to_string()
}

fn startup_log() -> String {
    server::fixtures::dir().join("bench-outputs/vllm_startup_custom_allreduce_issue15340.txt").display().to_string()
}

fn results() -> String {
    server::fixtures::dir().join("reports/vllm-bench-serve/nerdalert_results.json").display().to_string()
}

/// The `output_throughput` of line `n` of the real results file.
fn throughput_of_line(n: usize) -> f64 {
    let text = std::fs::read_to_string(results()).unwrap();
    let line = text.lines().filter(|l| !l.trim().is_empty()).nth(n).unwrap();
    serde_json::from_str::<Value>(line).unwrap()["output_throughput"].as_f64().unwrap()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The fake server's processes for this port still alive on the host (the
/// Python process, not the shells that started it).
fn servers_on(port: u16) -> Vec<String> {
    let out = std::process::Command::new("pgrep").args(["-af", &format!("serve.py --port {port} ")]).output().unwrap();
    let lines = String::from_utf8_lossy(&out.stdout).to_string();
    lines.lines().filter(|l| l.split_whitespace().nth(1) == Some("python3")).map(str::to_string).collect()
}

async fn none_left(port: u16, within: Duration) {
    let deadline = Instant::now() + within;
    while !servers_on(port).is_empty() {
        assert!(Instant::now() < deadline, "left running: {:?}", servers_on(port));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn server(port: u16, extra: &str, ready: Value) -> Value {
    json!({
        "command": format!("python3 {} --port {port} --log {} {extra}", tool("serve.py"), startup_log()),
        "ready": ready,
        "stop_grace_s": 2,
    })
}

fn client(port: u16, extra: &str) -> String {
    format!("python3 {} --port {port} --result-from {} {extra}", tool("bench.py"), results())
}

async fn server_log(app: &TestApp, run: i64) -> String {
    let response = app.get(&format!("/api/v1/runs/{run}/output?stream=server")).await;
    assert_eq!(response.status, StatusCode::OK, "{}", response.text());
    response.text()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_with_a_server_keeps_its_log_its_files_and_their_numbers() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let port = free_port();
    // Each configuration's client saves a different real result.
    let line = "$(case \"${NCCL_PROTO-unset}\" in LL) echo 1;; SIMPLE) echo 2;; *) echo 0;; esac)";
    let mut spec = server(port, "--load-s 1", json!({ "http": format!("http://127.0.0.1:{port}/health") }));
    spec["reuse"] = json!("config");
    let step = command_step(
        &app,
        json!({ "command": client(port, &format!("--line {line}")), "telemetry": false, "server": spec,
                "artifacts": ["result.json"], "matrix": { "NCCL_PROTO": [null, "LL", "SIMPLE"] } }),
    )
    .await;
    let shown = app.get(&format!("/api/v1/steps/{step}")).await.json();
    assert_eq!(shown["server"]["reuse"], "config", "{shown}");
    assert_eq!(shown["server"]["ready_timeout_s"], 600, "the default: {shown}");

    // The investigation's own extractors read the server's log too.
    let investigation = run_investigation(&app, step).await;
    let extractor = json!({ "name": "load_s", "pattern": r"model loaded in ([\d.]+) s", "unit": "s" });
    let added = app.post_json(&format!("/api/v1/investigations/{investigation}/extractors"), extractor).await;
    assert_eq!(added.status, StatusCode::CREATED, "{}", added.text());

    // No order asked: with the server kept, each configuration's runs go together.
    let runs = start(&app, step, json!({ "repeat": 2 })).await;
    assert_eq!(runs.len(), 6);
    let mut ended = Vec::new();
    for run in &runs {
        let run = finished(&app, *run).await;
        assert_eq!(run["status"], "succeeded", "{run}");
        ended.push(run);
    }
    let sweep = app.get(&format!("/api/v1/sweeps/{}", ended[0]["sweep_id"])).await.json();
    assert_eq!(sweep["order"], "grouped", "{sweep}");
    // The Run row offers again what it was asked: 2 each, grouped.
    let page = app.get(&format!("/i/{investigation}")).await.text();
    let row = page.split("class=\"inline run-form\"").nth(1).and_then(|r| r.split("</form>").next()).unwrap_or("");
    assert!(row.contains("name=\"repeat\" inputmode=\"numeric\" value=\"2\""), "{row}");
    assert!(row.contains("value=\"grouped\" selected"), "{row}");
    none_left(port, Duration::from_secs(10)).await;

    let mut pids = Vec::new();
    for (i, run) in ended.iter().enumerate() {
        let id = run["id"].as_i64().unwrap();
        let proto = ["unset", "LL", "SIMPLE"][i / 2];
        let first_of_config = i % 2 == 0;
        let state = &run["server"];
        assert!(state["ready_after_ms"].as_u64().unwrap() >= 1000, "its load time: {state}");
        let log = server_log(&app, id).await;
        if first_of_config {
            // The server was started for this run: its whole startup is here.
            assert!(state["started_by_run"].is_null(), "{state}");
            assert!(log.contains("[custom_all_reduce.py:137] Custom allreduce is disabled"), "{log}");
            assert!(log.contains(&format!("NCCL_PROTO={proto}")), "the configuration's env reached it: {log}");
            let load = run["measurements"].as_array().unwrap().iter().find(|m| m["metric"] == "load_s").cloned();
            let load = load.unwrap_or_else(|| panic!("from the server's log: {}", run["measurements"]));
            assert_eq!(load["key"], "server", "{load}");
            assert!(load["value"].as_f64().unwrap() >= 1.0, "{load}");
            let pid = log.split("pid=").nth(1).and_then(|r| r.split_whitespace().next()).unwrap().to_string();
            pids.push(pid);
        } else {
            // Kept from the run before (same configuration, back to back): not restarted.
            assert_eq!(state["started_by_run"], ended[i - 1]["id"], "{state}");
            assert!(!log.contains("custom_all_reduce"), "only what it printed during this run: {log}");
            // Its page shows the server's log before this run (from the run
            // that started it), then this run's window of it.
            let page = app.get(&format!("/runs/{id}")).await.text();
            let before = page.split("server-before").nth(1).and_then(|r| r.split("</pre>").next()).unwrap_or("");
            assert!(before.contains("Custom allreduce is disabled"), "the start-up, before this run: {page}");
            let by = ended[i - 1]["id"].as_i64().unwrap();
            assert!(page.contains(&format!("href=\"/runs/{by}#server-{by}\"")), "a link to the run that started it");
            assert!(page.contains("class=\"output server-output this-window\""), "this run's window, marked");
        }
        assert!(log.contains("POST /v1/completions"), "the client's requests, in the server's log: {log}");
        let phase = state["phase"].as_str().unwrap();
        assert_eq!(phase, if first_of_config { "kept" } else { "stopped" }, "{state}");
        assert_eq!(state["log_bytes"].as_u64().unwrap(), log.len() as u64);

        // The client's output is its own stream.
        let output = app.get(&format!("/api/v1/runs/{id}/output")).await.text();
        assert!(output.contains("Serving Benchmark Result") && !output.contains("custom_all_reduce"), "{output}");

        // The file it saved: listed, downloadable as an attachment, read into numbers.
        let listed = app.get(&format!("/api/v1/runs/{id}/artifacts")).await.json();
        let artifact = &listed[0];
        assert_eq!((artifact["name"].as_str(), listed.as_array().unwrap().len()), (Some("result.json"), 1), "{listed}");
        let download = app.get(artifact["url"].as_str().unwrap()).await;
        assert_eq!(download.status, StatusCode::OK);
        assert!(download.headers["content-disposition"].to_str().unwrap().starts_with("attachment"));
        assert_eq!(download.headers["x-content-type-options"], "nosniff");
        assert_eq!(artifact["size"].as_u64().unwrap(), download.body.len() as u64);
        assert_eq!(artifact["sha256"].as_str().unwrap(), hex(&Sha256::digest(&download.body)));
        assert!(run["run_dir"].as_str().unwrap().starts_with(&format!("~/.sleuth/runs/{id}-")), "{run}");
        // Each metric and key once; the same number from another source (the
        // printed line and the saved file both give the throughput) under
        // `other_sources`, with its extractor.
        let listed = run["measurements"].as_array().unwrap();
        let mut names: Vec<String> = listed.iter().map(|m| format!("{} {}", m["metric"], m["key"])).collect();
        let all = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all, "one value per metric and key: {listed:?}");
        let others = run["other_sources"].as_array().cloned().unwrap_or_default();
        assert!(!others.is_empty(), "the throughput is read twice: {run}");
        for other in &others {
            assert!(
                listed.iter().any(|m| m["metric"] == other["metric"]
                    && m["key"] == other["key"]
                    && m["extractor"] != other["extractor"]),
                "{other} is a second source of a listed metric"
            );
        }
        let from_file = listed
            .iter()
            .chain(&others)
            .find(|m| m["metric"] == "output_throughput" && m["extractor"] == "vllm-save-result")
            .unwrap_or_else(|| panic!("the saved result's numbers: {run}"))
            .clone();
        assert_eq!(from_file["value"].as_f64().unwrap(), throughput_of_line(i / 2), "{proto}");
    }
    pids.dedup();
    assert_eq!(pids.len(), 3, "one server per configuration: {pids:?}");
    // The last run of each configuration says how its server was stopped.
    let notes = ended[5]["server"]["notes"].to_string();
    assert!(notes.contains("Stopped with SIGTERM"), "{notes}");

    // The zip export holds each run's files and server log beside the report.
    let zip = app.get(&format!("/api/v1/investigations/{investigation}/export?format=zip")).await;
    assert_eq!(zip.status, StatusCode::OK, "{}", zip.text());
    let path = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(path.path(), &zip.body).unwrap();
    let listed = std::process::Command::new("python3")
        .args(["-c", "import sys,zipfile; z=zipfile.ZipFile(sys.argv[1]); [print(i.filename, i.file_size) for i in z.infolist()]; print(z.read([n for n in z.namelist() if n.endswith('.md')][0]).decode())"])
        .arg(path.path())
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout).to_string();
    for run in &ended {
        let id = run["id"].as_i64().unwrap();
        let size = run["artifacts"][0]["size"].as_u64().unwrap();
        assert!(listed.contains(&format!("runs/run-{id}/files/result.json {size}\n")), "{listed}");
        assert!(listed.contains(&format!("runs/run-{id}/server.log ")), "{listed}");
    }
    assert!(listed.contains("## Files from the runs"), "the report lists them: {listed}");

    // A share link's zip holds the files the link serves; one that hides hosts serves none, and its page says so.
    for hide_hosts in [false, true] {
        let link = app
            .post_json(&format!("/api/v1/investigations/{investigation}/shares"), json!({ "hide_hosts": hide_hosts }))
            .await
            .json();
        let token = link["url"].as_str().unwrap().trim_start_matches("/s/").to_string();
        let zip = app.get(&format!("/api/v1/shared/{token}/export?format=zip")).await;
        assert_eq!(zip.status, StatusCode::OK, "{}", zip.text());
        std::fs::write(path.path(), &zip.body).unwrap();
        let names = std::process::Command::new("python3")
            .args(["-c", "import sys,zipfile; print('\\n'.join(zipfile.ZipFile(sys.argv[1]).namelist()))"])
            .arg(path.path())
            .output()
            .unwrap();
        let names = String::from_utf8_lossy(&names.stdout).to_string();
        let id = ended[0]["id"].as_i64().unwrap();
        assert_eq!(names.contains(&format!("runs/run-{id}/files/result.json")), !hide_hosts, "{hide_hosts}: {names}");
        let page = app.get(&format!("/s/{token}")).await.text();
        assert_eq!(page.contains("offers none of these files"), hide_hosts, "{page}");
    }

    // A run's server log is searchable, like its output.
    let deadline = Instant::now() + Duration::from_secs(20);
    let found = loop {
        let found = app.get("/api/v1/search?q=%22Custom%20allreduce%20is%20disabled%22").await.json();
        if found["indexing"] == 0 {
            break found;
        }
        assert!(Instant::now() < deadline, "still indexing: {found}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let hits = found["results"].as_array().unwrap();
    assert_eq!(hits.len(), 3, "the first run of each configuration: {found}");
    let hit = &hits.iter().find(|h| h["run_id"] == ended[0]["id"]).unwrap_or_else(|| panic!("{found}"));
    assert_eq!(hit["kind"], "server_log", "{hit}");
    let line = app.get(hit["output_url"].as_str().unwrap()).await.text();
    assert!(line.contains("[custom_all_reduce.py:137] Custom allreduce is disabled"), "the line itself: {line}");
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_becomes_ready_fails_the_run_with_its_last_lines() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let port = free_port();
    let mut spec = server(port, "--mode hang", json!({ "http": format!("http://127.0.0.1:{port}/health") }));
    spec["ready_timeout_s"] = json!(3);
    let step = command_step(&app, json!({ "command": "echo client ran", "telemetry": false, "server": spec })).await;
    let run = finished(&app, start(&app, step, json!({})).await[0]).await;
    assert_eq!(run["status"], "failed", "{run}");
    let error = run["error"].as_str().unwrap();
    assert!(error.contains("not ready after 3 s"), "{error}");
    assert!(error.contains("vLLM message queue communication handle"), "the log's last lines: {error}");
    assert_eq!(run["server"]["phase"], "stopped", "{run}");
    let output = app.get(&format!("/api/v1/runs/{}/output", run["id"])).await.text();
    assert!(!output.contains("client ran"), "the client never ran: {output}");
    none_left(port, Duration::from_secs(5)).await;

    // Readiness by a line of its log, and by a port: the same server, ready both ways.
    for ready in [json!({ "log": "Application startup complete" }), json!({ "tcp": port })] {
        let spec = server(port, "--load-s 0.5", ready.clone());
        let step =
            command_step(&app, json!({ "command": "echo client ran", "telemetry": false, "server": spec })).await;
        let run = finished(&app, start(&app, step, json!({})).await[0]).await;
        assert_eq!(run["status"], "succeeded", "{ready}: {run}");
        none_left(port, Duration::from_secs(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_exits_fails_the_run_and_says_how() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let port = free_port();
    let health = json!({ "http": format!("http://127.0.0.1:{port}/health") });

    // It dies while loading: the client never runs.
    let step = command_step(
        &app,
        json!({ "command": "echo client ran", "telemetry": false, "server": server(port, "--mode exit", health.clone()) }),
    )
    .await;
    let run = finished(&app, start(&app, step, json!({})).await[0]).await;
    assert_eq!(run["status"], "failed", "{run}");
    assert!(run["error"].as_str().unwrap().contains("server exited with 1 after"), "{run}");
    assert!(run["error"].as_str().unwrap().contains("CUDA out of memory"), "its last lines: {run}");
    assert_eq!(run["server"]["phase"], "failed", "{run}");
    let notes = run["server"]["notes"].to_string();
    assert!(notes.contains("It had ended by itself") && !notes.contains("SIGTERM"), "not said to be stopped: {notes}");

    // It dies under the client's first request: the client is stopped, the run fails.
    let spec = server(port, "--load-s 0.5 --mode crash", health.clone());
    let command = client(port, "--requests 50 --pause-s 0.2");
    let step = command_step(&app, json!({ "command": command, "telemetry": false, "server": spec })).await;
    let started = Instant::now();
    let run = finished(&app, start(&app, step, json!({})).await[0]).await;
    assert_eq!(run["status"], "failed", "{run}");
    assert!(run["error"].as_str().unwrap().contains("server exited with 1 after"), "{run}");
    assert!(started.elapsed() < Duration::from_secs(30), "not left to time out");
    assert!(server_log(&app, run["id"].as_i64().unwrap()).await.contains("Engine core died"));
    none_left(port, Duration::from_secs(5)).await;

    // The client fails, the server is fine: the client's failure is the run's.
    let spec = server(port, "--load-s 0.5", health);
    let step = command_step(&app, json!({ "command": "exit 3", "telemetry": false, "server": spec })).await;
    let run = finished(&app, start(&app, step, json!({})).await[0]).await;
    assert_eq!((run["status"].as_str(), run["exit_code"].as_i64()), (Some("failed"), Some(3)), "{run}");
    assert_eq!(run["server"]["phase"], "stopped", "{run}");
    none_left(port, Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_both_and_a_server_that_ignores_sigterm_is_killed() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let port = free_port();
    let mut spec =
        server(port, "--load-s 0.5 --mode ignore-term", json!({ "http": format!("http://127.0.0.1:{port}/health") }));
    spec["stop_grace_s"] = json!(1);
    let step =
        command_step(&app, json!({ "command": "echo client up; sleep 60", "telemetry": false, "server": spec })).await;
    let run = start(&app, step, json!({})).await[0];
    let deadline = Instant::now() + Duration::from_secs(20);
    while !app.get(&format!("/api/v1/runs/{run}/output")).await.text().contains("client up") {
        assert!(Instant::now() < deadline, "the client never started");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(servers_on(port).len(), 1, "its server runs beside it");
    let cancelled = app.post_json(&format!("/api/v1/runs/{run}/cancel"), json!({})).await;
    assert_eq!(cancelled.status, StatusCode::OK, "{}", cancelled.text());
    let run = finished(&app, run).await;
    assert_eq!(run["status"], "cancelled", "{run}");
    none_left(port, Duration::from_secs(5)).await;
    let notes = run["server"]["notes"].to_string();
    assert!(notes.contains("SIGKILL"), "it had to be killed, and the run says so: {notes}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_left_by_a_killed_sleuth_is_stopped_when_its_run_is_taken_over() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let port = free_port();
    // Ready by HTTP: it prints nothing after (a write to the closed channel would end it).
    let spec = server(port, "--load-s 0.5", json!({ "http": format!("http://127.0.0.1:{port}/health") }));
    // The client's `sleep` is told apart from every other test's by its length.
    let client = format!("sleep 120.{}", std::process::id());
    let command = format!("echo client up; {client}");
    let step = command_step(&app, json!({ "command": command, "telemetry": false, "server": spec })).await;
    let mut sleuth = crate::replicas::Replica::start_on(&app, &[]);
    let (status, runs) = sleuth.post(&format!("/api/v1/steps/{step}/runs"), json!({})).await;
    assert_eq!(status, 201, "{runs}");
    let run = runs[0]["id"].as_i64().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !app.get(&format!("/api/v1/runs/{run}/output")).await.text().contains("client up") {
        assert!(Instant::now() < deadline, "the client never started");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // SIGKILL: nothing of Sleuth's shutdown runs; the server is left behind.
    sleuth.child.kill().unwrap();
    let _ = sleuth.child.wait();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(servers_on(port).len(), 1, "an orphan, holding what it holds: {:?}", servers_on(port));
    assert_eq!(crate::sweeps::running(&client).len(), 1, "its client too: {:?}", crate::sweeps::running(&client));

    // Sleuth again (on PostgreSQL: another replica, once the lease runs out).
    let _again = crate::replicas::Replica::start_on(&app, &[]);
    none_left(port, Duration::from_secs(60)).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    let run = loop {
        let run = app.get(&format!("/api/v1/runs/{run}")).await.json();
        if run["status"] != "running" && run["server"]["notes"].to_string().contains("Left running") {
            break run;
        }
        assert!(Instant::now() < deadline, "not taken over: {run}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(run["status"], "interrupted", "{run}");
    // Its client is stopped as well, and the run says so.
    let deadline = Instant::now() + Duration::from_secs(30);
    let run = loop {
        let run = app.get(&format!("/api/v1/runs/{}", run["id"])).await.json();
        if run["error"].as_str().unwrap_or_default().contains("still running on gpu") {
            break run;
        }
        assert!(Instant::now() < deadline, "its client was not stopped: {run}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(crate::sweeps::running(&client).is_empty(), "left running: {:?}", crate::sweeps::running(&client));
    assert!(run["error"].as_str().unwrap().contains("stopped with SIGTERM"), "{run}");
    let log = server_log(&app, run["id"].as_i64().unwrap()).await;
    assert!(log.contains("Application startup complete"), "what it printed before is kept: {log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_artifacts_are_refused_or_bounded_with_a_note_and_nothing_outside_is_read() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    // A glob that would leave the run's directory is refused when the step is saved.
    let investigation = app.investigation("artifacts").await;
    for bad in ["../secret", "/etc/passwd", "a/../../b"] {
        let refused = app
            .post_json(
                &format!("/api/v1/investigations/{investigation}/steps"),
                json!({ "kind": "command", "host": "gpu", "command": "true", "artifacts": [bad] }),
            )
            .await;
        assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {}", refused.text());
    }

    // A sweep's placeholder may be the server's alone (`--batch {batch}`), not in neither.
    let server_only = json!({ "kind": "command", "host": "gpu", "command": "true", "matrix": { "{batch}": [1, 8] },
                              "server": { "command": "serve --batch {batch}", "ready": { "tcp": 8000 } } });
    let made = app.post_json(&format!("/api/v1/investigations/{investigation}/steps"), server_only.clone()).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
    let mut neither = server_only;
    neither["server"]["command"] = json!("serve");
    let refused = app.post_json(&format!("/api/v1/investigations/{investigation}/steps"), neither).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.text());
    assert!(refused.text().contains("the command has no {batch} (nor has its server's command)"), "{}", refused.text());

    // Outside the run's directory: a secret it must never read.
    let outside = sshd.dir.path().join("outside-secret.txt");
    std::fs::write(&outside, "TOP SECRET").unwrap();
    let markup = "<img src=x onerror=alert(1)>.json";
    let command = format!(
        "echo '{{\"ok\": true}}' > '{markup}'; ln -s {secret} leak.json; mkdir sub; ln -s {dir} sub/up; \
         truncate -s 10G huge.bin; head -c 1048576 /dev/zero > one.bin; head -c 1048576 /dev/zero > two.bin; \
         setsid sh -c 'end=$(($(date +%s) + 60)); i=0; while :; do echo more >> growing.log; i=$((i+1)); \
           if [ $i -ge 150000 ]; then : > growing.log; i=0; [ $(date +%s) -lt $end ] || exit 0; fi; done' \
           </dev/null >/dev/null 2>&1 & sleep 0.5; echo made",
        secret = outside.display(),
        dir = sshd.dir.path().display(),
    );
    let step = command_step(
        &app,
        json!({ "command": command, "telemetry": false, "artifacts": ["**"],
                "artifact_limits": { "file_bytes": 1 << 20, "run_bytes": 2 << 20 } }),
    )
    .await;
    let run = finished(&app, start(&app, step, json!({})).await[0]).await;
    assert_eq!(run["status"], "succeeded", "bad files are notes, never a failed run: {run}");
    let names: Vec<&str> = run["artifacts"].as_array().unwrap().iter().map(|a| a["name"].as_str().unwrap()).collect();
    let notes = run["artifact_notes"].to_string();
    assert!(names.contains(&markup), "a name is only a name: {names:?}");
    assert!(!names.contains(&"leak.json"), "a link out is not followed: {names:?}");
    assert!(notes.contains("leak.json is a link that leads out"), "{notes}");
    assert!(!names.iter().any(|n| n.starts_with("sub/up")), "nor a link to a directory outside: {names:?}");
    assert!(!names.contains(&"huge.bin") && notes.contains("huge.bin is 10.7 GB"), "{names:?} {notes}");
    assert!(notes.contains("growing.log changed while it was read"), "{notes}");
    // It changes all the time for longer than a loaded suite takes to read
    // it, never past 100 KB (emptied every 20 000 lines; the limit per file is
    // 1 MB); it is not left running.
    let _ = std::process::Command::new("pkill").args(["-f", "echo more >> growing.log"]).status();
    // Kept by name: growing.log (small), the markup-named file, one.bin; two.bin passes 2 MiB.
    assert!(names.contains(&"one.bin") && !names.contains(&"two.bin"), "{names:?}");
    assert!(notes.contains("two.bin (1.0 MB) would pass the limit of 2.1 MB per run"), "{notes}");
    assert!(!names.contains(&"result.json"), "only this run's files: {names:?}");
    let total: u64 = run["artifacts"].as_array().unwrap().iter().map(|a| a["size"].as_u64().unwrap()).sum();
    assert!(total <= 2 << 20, "the per-run limit holds: {total}");
    for artifact in run["artifacts"].as_array().unwrap() {
        let body = app.get(artifact["url"].as_str().unwrap()).await;
        assert!(!String::from_utf8_lossy(&body.body).contains("TOP SECRET"), "{}", artifact["name"]);
        let disposition = body.headers["content-disposition"].to_str().unwrap();
        assert!(!disposition.contains('<') && disposition.starts_with("attachment"), "{disposition}");
    }
    // On the page the name is text, its link a download.
    let page = app.get(&format!("/i/{}", run_investigation(&app, step).await)).await.text();
    assert!(page.contains("&lt;img src=x onerror=alert(1)&gt;.json"), "escaped");
    assert!(!page.contains("<img src=x"), "never markup");

    // Its 10 GB (sparse) file is not left in the tester's home, once the writer is done.
    let dir = run["run_dir"].as_str().unwrap().replacen('~', &std::env::var("HOME").unwrap(), 1);
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::fs::remove_dir_all(&dir).is_err() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn run_investigation(app: &TestApp, step: i64) -> String {
    app.get(&format!("/api/v1/steps/{step}")).await.json()["investigation_id"].as_str().unwrap().to_string()
}

/// A served step (a server per run, `result.json` kept) run twice, both
/// succeeded: `(the server's port, step, investigation, runs)`.
async fn served_twice(app: &TestApp) -> (u16, i64, String, Vec<i64>) {
    let port = free_port();
    let spec = server(port, "--load-s 0.2", json!({ "http": format!("http://127.0.0.1:{port}/health") }));
    let step = command_step(
        app,
        json!({ "command": client(port, "--line 0"), "telemetry": false, "server": spec, "artifacts": ["result.json"] }),
    )
    .await;
    let runs = start(app, step, json!({ "repeat": 2 })).await;
    for run in &runs {
        assert_eq!(finished(app, *run).await["status"], "succeeded");
    }
    (port, step, run_investigation(app, step).await, runs)
}

/// `/runs/{id}`: any run of a step, not only its newest, is a page of its own
/// with its server's log, its files, its measurements and its neighbours; the
/// step's run numbers link there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_run_is_a_page_with_its_server_log_files_and_measurements() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let (_, step, investigation, runs) = served_twice(&app).await;
    let (first, second) = (runs[0], runs[1]);

    let page = app.get(&format!("/runs/{first}")).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text());
    let html = page.text();
    assert!(html.contains("Custom allreduce is disabled"), "the first run's server log: {html}");
    assert!(html.contains(&format!("/api/v1/runs/{first}/artifacts/")) && html.contains("result.json"), "its files");
    let throughput = format!("{:.2}", throughput_of_line(0));
    assert!(html.contains(&throughput), "its output_throughput {throughput}");
    assert!(html.contains(&format!("rel=\"next\" href=\"/runs/{second}\"")), "the next run");
    assert!(html.contains(&format!("/i/{investigation}#step-{step}")), "its step");
    assert!(html.contains("run 1 of 2"), "its place in the batch");
    assert!(!html.contains(&format!("/api/v1/runs/{second}/artifacts/")), "only its own files");
    let second_page = app.get(&format!("/runs/{second}")).await.text();
    assert!(second_page.contains(&format!("rel=\"prev\" href=\"/runs/{first}\"")), "the previous run");

    let investigation_page = app.get(&format!("/i/{investigation}")).await.text();
    assert!(investigation_page.contains(&format!("href=\"/runs/{first}\"")), "run numbers link to run pages");

    let missing = app.get("/runs/987654321").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert!(missing.text().contains("There is no run 987654321"), "{}", missing.text());
}

/// The reports keep the experiment: the server and how it was judged ready,
/// the files kept, the SLO, the hypothesis' rationale; each run's cell names
/// each metric once (a number two extractors both read is not listed twice),
/// and the metric the hypothesis is about comes first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_keep_the_server_the_slo_and_the_rationale_and_list_each_number_once() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let (port, step, investigation, _) = served_twice(&app).await;
    let slo =
        app.put_json(&format!("/api/v1/investigations/{investigation}/slo"), json!({ "text": "TTFT <= 200 ms" })).await;
    assert_eq!(slo.status, StatusCode::OK, "{}", slo.text());
    let rationale = "Custom allreduce is off on PCIe, so <em>every</em> token waits on NCCL.";
    let hypothesis = json!({ "statement": "NCCL allreduce bounds decode", "rationale": rationale,
                             "metric": "itl_ms_p99", "baseline": { "steps": [step] }, "treatment": { "steps": [step] } });
    let made = app.post_json(&format!("/api/v1/investigations/{investigation}/hypotheses"), hypothesis).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());

    for format in ["html", "md"] {
        let report = app.get(&format!("/api/v1/investigations/{investigation}/export?format={format}")).await;
        assert_eq!(report.status, StatusCode::OK, "{}", report.text());
        let text = report.text();
        assert!(text.contains(&format!("serve.py --port {port}")), "{format}: the server's command");
        assert!(text.contains(&format!("ready when GET http://127.0.0.1:{port}/health answers 200")), "{format}");
        assert!(text.contains("result.json"), "{format}: the files kept");
        assert!(text.contains("TTFT ≤ 200 ms"), "{format}: the SLO");
        assert!(text.contains("every") && text.contains("token waits on NCCL"), "{format}: the rationale");
        assert!(!text.contains("<em>every</em>") || format == "html", "markdown keeps the rationale as text");
        // The server's log, around the line that says why.
        assert!(text.contains("Server log of run"), "{format}: a server log excerpt");
        assert!(text.contains("Custom allreduce is disabled"), "{format}: the line that warns");
        // Each run's cell: one value per metric, the hypothesis' metric first.
        let rows: Vec<&str> = match format {
            "html" => text.split("<tr id=\"run-").skip(1).filter_map(|r| r.split("</tr>").next()).collect(),
            _ => text.lines().filter(|l| l.starts_with("| ") && l.contains(" = ")).collect(),
        };
        assert_eq!(rows.len(), 2, "{format}: a row per run: {text}");
        // Markdown escapes the underscores.
        let name = |metric: &str| if format == "md" { metric.replace('_', "\\_") } else { metric.to_string() };
        let (output, itl) = (format!("{} = ", name("output_throughput")), format!("{} = ", name("itl_ms_p99")));
        for row in rows {
            assert_eq!(row.matches(&output).count(), 1, "{format}: listed twice in {row}");
            let (itl, out) = (row.find(&itl).unwrap(), row.find(&output).unwrap());
            assert!(itl < out, "{format}: what the hypothesis is about comes first: {row}");
            assert!(row.contains("more (the JSON export"), "{format}: the rest are counted: {row}");
        }
    }
    // The run's page shows a number two extractors read once too.
    let first = app.get(&format!("/api/v1/steps/{step}/runs")).await.json()[0]["id"].as_i64().unwrap();
    let page = app.get(&format!("/runs/{first}")).await.text();
    assert_eq!(page.matches("data-metric=\"output_throughput\"").count(), 1, "one chip for output_throughput");
}
