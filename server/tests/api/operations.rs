//! Faults an operator meets, on real components: a data disk that fills up (a
//! real tmpfs), a host that freezes (a real sshd, SIGSTOPped), and `/metrics`.

use crate::disk::{Tmpfs, fill_to_the_last_byte};
use crate::helpers::TestApp;
use crate::runs::{add_host, app_with_host, command_step, finished, output, start, wait_for};
use crate::sshd::Sshd;
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};
use std::process::Command;
use std::time::{Duration, Instant};

/// A server with accounts whose SQLite data dir is on a 16 MB tmpfs (`None`
/// on PostgreSQL, whose disk is its server's, or where no tmpfs can be mounted).
/// One at a time: what a full disk leaves (the data dir watched, "refused for
/// a full disk recently") is the process's, and these tests assert on it.
async fn on_a_small_disk() -> Option<(
    TestApp,
    std::sync::Arc<server::auth::Auth>,
    std::path::PathBuf,
    Tmpfs,
    tokio::sync::MutexGuard<'static, ()>,
)> {
    static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    if crate::helpers::on_postgres() {
        return None;
    }
    let turn = ONE_AT_A_TIME.lock().await;
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().join("db");
    let disk = Tmpfs::mount(&dir, "16m")?;
    let database = server::db::Database::Sqlite(dir.clone());
    let options = server::serve::Options { database: Some(database.clone()), ..Default::default() };
    let state = server::serve::state(&dir, &data.path().join("site"), options).await.unwrap();
    let auth = state.auth.clone();
    let app = TestApp { router: server::app(state), data, database, auth: Some(auth.clone()) };
    Some((app, auth, dir, disk, turn))
}

/// A write that fails for space leaves no pooled connection inside a
/// transaction: with the disk full to the last byte, 90 KB notes answer 507
/// (or 201 where the database still had room), never 500, and reads 200; once
/// it is freed every connection of the pool writes again (more writes than
/// the pool has connections) and a step is deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_refused_for_space_leaves_no_connection_in_a_transaction() {
    let Some((app, auth, dir, _disk, _turn)) = on_a_small_disk().await else { return };
    auth.add_user("ops", "a long enough password", true).await.unwrap();
    let ops = crate::migrate::As { app: &app, token: auth.create_token("ops", "t").await.unwrap().token };
    let created = ops.call(Method::POST, "/api/v1/investigations", json!({ "title": "t" })).await;
    let id = created.json()["id"].as_str().unwrap().to_string();
    let steps = format!("/api/v1/investigations/{id}/steps");
    let big = json!({ "kind": "note", "body": "x".repeat(90_000) });
    let first = ops.call(Method::POST, &steps, big.clone()).await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.text());
    let first = first.json()["id"].as_i64().unwrap();

    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(&app.sql().await).await.unwrap();
    let fillers = fill_to_the_last_byte(&dir);
    let mut refused = 0;
    for _ in 0..12 {
        let note = ops.call(Method::POST, &steps, big.clone()).await;
        assert!(
            [StatusCode::INSUFFICIENT_STORAGE, StatusCode::CREATED].contains(&note.status),
            "a big note on a full disk: {} {}",
            note.status,
            note.text()
        );
        refused += usize::from(note.status == StatusCode::INSUFFICIENT_STORAGE);
        let read = ops.call(Method::GET, &format!("/api/v1/investigations/{id}"), Value::Null).await;
        assert_eq!(read.status, StatusCode::OK, "{}", read.text());
    }
    assert!(refused > 0, "the disk refused nothing");

    fillers.iter().for_each(|f| std::fs::remove_file(f).unwrap());
    for n in 0..20 {
        let note = ops.call(Method::POST, &steps, json!({ "kind": "note", "body": format!("after {n}") })).await;
        assert_eq!(note.status, StatusCode::CREATED, "write {n} after freeing: {}", note.text());
    }
    let deleted = ops.call(Method::DELETE, &format!("/api/v1/steps/{first}"), Value::Null).await;
    assert!(deleted.status.is_success(), "{} {}", deleted.status, deleted.text());
}

/// Everything the tests' processes log, for asserting what it never says.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs the step once, as `ops`; the finished run.
async fn run_to_the_end(ops: &crate::migrate::As<'_>, step: &Value) -> Value {
    let step = step["id"].as_i64().unwrap();
    let runs = ops.call(Method::POST, &format!("/api/v1/steps/{step}/runs"), json!({})).await;
    assert_eq!(runs.status, StatusCode::CREATED, "{}", runs.text());
    let run = runs.json()[0]["id"].as_i64().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let json = ops.call(Method::GET, &format!("/api/v1/runs/{run}?wait=10"), Value::Null).await.json();
        if json["status"] != "running" && json["status"] != "queued" {
            return json;
        }
        assert!(Instant::now() < deadline, "{json}");
    }
}

/// The whole story of a full disk: a run fills it (and ends `failed`, saying
/// why), another file takes the last byte; notes answer 507 (or 201 where the
/// database had room), reads 200; deleting the big step works while the disk
/// is still full and frees its output; once the filler is gone writes work,
/// the next run keeps its measurements, and the log never says `transaction depth`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disk_filled_by_a_run_then_to_the_last_byte_loses_nothing_and_deleting_frees_it() {
    let log = Captured::default();
    let writer = log.clone();
    let installed = tracing_subscriber::fmt().with_writer(move || writer.clone()).with_ansi(false).try_init().is_ok();
    let Some((app, auth, dir, _disk, _turn)) = on_a_small_disk().await else { return };
    let sshd = Sshd::start();
    auth.add_user("ops", "a long enough password", true).await.unwrap();
    let ops = crate::migrate::As { app: &app, token: auth.create_token("ops", "t").await.unwrap().token };
    let host = json!({ "name": "gpu", "hostname": "127.0.0.1", "port": sshd.port, "user": crate::sshd::whoami(),
                       "identity_file": sshd.client_key.display().to_string() });
    assert_eq!(ops.call(Method::POST, "/api/v1/hosts", host).await.status, StatusCode::CREATED);
    ops.call(Method::POST, "/api/v1/hosts/gpu/test", json!({})).await;
    let trust = json!({ "fingerprint": sshd.host_key_fingerprint() });
    assert_eq!(ops.call(Method::POST, "/api/v1/hosts/gpu/trust", trust).await.status, StatusCode::OK);
    let created = ops.call(Method::POST, "/api/v1/investigations", json!({ "title": "t" })).await;
    let id = created.json()["id"].as_str().unwrap().to_string();
    let steps = format!("/api/v1/investigations/{id}/steps");
    let step = |command: &str| json!({ "kind": "command", "host": "gpu", "command": command, "telemetry": false });

    // A run prints 40 MB onto the 16 MB disk.
    let big =
        ops.call(Method::POST, &steps, step("yes 0123456789abcdef0123456789abcdef | head -c 40000000")).await.json();
    let ran = run_to_the_end(&ops, &big).await;
    assert_eq!(ran["status"], "failed", "{ran}");
    assert!(ran["error"].as_str().unwrap_or_default().contains("--min-free floor"), "it says why: {ran}");

    // Another file takes the rest, to the last byte.
    let _ = sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(&app.sql().await).await;
    let fillers = fill_to_the_last_byte(&dir);
    let note = json!({ "kind": "note", "body": "x".repeat(90_000) });
    for _ in 0..5 {
        let written = ops.call(Method::POST, &steps, note.clone()).await;
        assert!(
            [StatusCode::INSUFFICIENT_STORAGE, StatusCode::CREATED].contains(&written.status),
            "{} {}",
            written.status,
            written.text()
        );
        let read = ops.call(Method::GET, &format!("/api/v1/investigations/{id}"), Value::Null).await;
        assert_eq!(read.status, StatusCode::OK, "{}", read.text());
    }

    // How an operator frees space: deleting the big step, while the disk is full.
    let before = server::operations::free_bytes(&dir).unwrap();
    let deleted = ops.call(Method::DELETE, &format!("/api/v1/steps/{}", big["id"]), Value::Null).await;
    assert!(deleted.status.is_success(), "{} {}", deleted.status, deleted.text());
    let after = server::operations::free_bytes(&dir).unwrap();
    assert!(after > before + 5_000_000, "its output freed: {before} → {after} bytes free");

    fillers.iter().for_each(|f| std::fs::remove_file(f).unwrap());
    let written = ops.call(Method::POST, &steps, note.clone()).await;
    assert_eq!(written.status, StatusCode::CREATED, "{}", written.text());
    let measured = ops
        .call(
            Method::POST,
            &steps,
            step("echo 'Throughput: 4.05 requests/s, 1234.56 total tokens/s, 617.28 output tokens/s'"),
        )
        .await
        .json();
    let ran = run_to_the_end(&ops, &measured).await;
    assert_eq!(ran["status"], "succeeded", "{ran}");
    let all = ops.call(Method::GET, &format!("/api/v1/investigations/{id}/measurements"), Value::Null).await.json();
    let kept = all.as_array().into_iter().flatten().any(|m| m["run_id"] == ran["id"] && m["value"] == 617.28);
    assert!(kept, "its measurements are kept: {all}");
    if installed {
        let said = String::from_utf8_lossy(&log.0.lock().unwrap()).to_string();
        assert!(!said.contains("transaction depth"), "{said}");
    }
}

/// The disk under the data directory fills: reading goes on (even with a
/// token whose last-used stamp cannot be written), writes answer 507 with the
/// sentence, every page says why in a banner, admins see the disk and the
/// refusals on `/hosts` and `/metrics`, and freeing space is enough to go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_data_disk_refuses_writes_with_507_and_reads_go_on() {
    let Some((app, auth, dir, _disk, _turn)) = on_a_small_disk().await else { return };
    auth.add_user("ops", "a long enough password", true).await.unwrap();
    let token = auth.create_token("ops", "before").await.unwrap().token;
    let fresh = auth.create_token("ops", "never used yet").await.unwrap().token;
    auth.add_user("member", "a long enough password", false).await.unwrap();
    let member = auth.create_token("member", "m").await.unwrap().token;
    let admin = |token: &String| crate::migrate::As { app: &app, token: token.clone() };
    let created = admin(&token).call(Method::POST, "/api/v1/investigations", json!({ "title": "t" })).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    let id = created.json()["id"].as_str().unwrap().to_string();
    let host = json!({ "name": "gpu", "hostname": "127.0.0.1", "port": 9, "user": "u", "identity_file": "/k" });
    assert_eq!(admin(&token).call(Method::POST, "/api/v1/hosts", host).await.status, StatusCode::CREATED);
    let step = json!({ "kind": "command", "host": "gpu", "command": "echo hi" });
    let step = admin(&token).call(Method::POST, &format!("/api/v1/investigations/{id}/steps"), step).await;
    let step = step.json()["id"].as_i64().unwrap();

    // Everything in the database file; then nothing left on the disk.
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(&app.sql().await).await.unwrap();
    let fill = dir.join("fill");
    let _ = Command::new("dd").args(["if=/dev/zero", "bs=1M"]).arg(format!("of={}", fill.display())).output();
    assert!(server::operations::free_bytes(&dir).unwrap() < 1 << 20);

    for t in [&token, &fresh] {
        let read = admin(t).call(Method::GET, &format!("/api/v1/investigations/{id}"), Value::Null).await;
        assert_eq!(read.status, StatusCode::OK, "{}", read.text());
    }
    let page = admin(&fresh).call(Method::GET, &format!("/i/{id}"), Value::Null).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text());
    let refused = admin(&token).call(Method::POST, "/api/v1/investigations", json!({ "title": "u" })).await;
    assert_eq!(refused.status, StatusCode::INSUFFICIENT_STORAGE, "{}", refused.text());
    assert_eq!(refused.error_code(), "store_full");
    let message = refused.json()["error"]["message"].as_str().unwrap().to_string();
    // (Which directory it names is the process's one server's; tests run several.)
    assert!(message.starts_with("The data disk is full: ") && message.contains(" bytes free in "), "{message}");
    // New runs are refused by the free-space floor (5 % of this small disk),
    // before anything is written or any host is asked.
    let run = admin(&token).call(Method::POST, &format!("/api/v1/steps/{step}/runs"), json!({})).await;
    assert_eq!(run.status, StatusCode::INSUFFICIENT_STORAGE, "{}", run.text());
    assert!(run.text().contains("under the floor of") && run.text().contains("--min-free"), "{}", run.text());
    let metrics = admin(&token).call(Method::GET, "/metrics", Value::Null).await.text();
    let full: f64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("sleuth_store_errors_total{kind=\"full\"} "))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    assert!(full >= 1.0, "{metrics}");
    // Said on every page, and on the admins' status.
    let status = admin(&token).call(Method::GET, "/api/v1/status", Value::Null).await.json();
    let refusing = status["refusing"].as_str().unwrap_or_default().to_string();
    assert!(refusing.contains("under the floor of") && refusing.contains("Reading works"), "{status}");
    assert!(status["detail"]["store_errors_full"].as_u64() >= Some(1), "{status}");
    assert!(status["detail"]["disk_free_bytes"].as_u64() < status["detail"]["min_free_bytes"].as_u64(), "{status}");
    assert!(status["detail"]["last_full_at"].is_string(), "{status}");
    let banner = |page: &str| {
        page.split("class=\"store-banner\">").nth(1).map(|b| b.split('<').next().unwrap_or_default().to_string())
    };
    for path in [format!("/i/{id}"), "/".to_string()] {
        let page = admin(&token).call(Method::GET, &path, Value::Null).await.text();
        assert_eq!(banner(&page).as_deref(), Some(refusing.as_str()), "{path}");
    }
    let hosts = admin(&token).call(Method::GET, "/hosts", Value::Null).await.text();
    assert!(hosts.contains("id=\"server-state\"") && hosts.contains("new runs are refused"), "the admins' view");
    // A write that returns what it wrote fails too (sqlx used to drop SQLite's
    // error after the first row: the user was answered and not kept).
    let refused = auth.add_user("member", "a long enough password", false).await;
    assert!(refused.is_err(), "a user added on a full disk");
    let theirs = admin(&member).call(Method::GET, "/api/v1/status", Value::Null).await.json();
    assert!(
        theirs["refusing"].is_string() && theirs.get("detail").is_none(),
        "members see why, not the detail: {theirs}"
    );

    std::fs::remove_file(&fill).unwrap();
    let again = admin(&token).call(Method::POST, "/api/v1/investigations", json!({ "title": "u" })).await;
    assert_eq!(again.status, StatusCode::CREATED, "{}", again.text());
    let status = admin(&token).call(Method::GET, "/api/v1/status", Value::Null).await.json();
    assert!(status.get("refusing").is_none(), "{status}");
    assert_eq!(banner(&admin(&token).call(Method::GET, &format!("/i/{id}"), Value::Null).await.text()), None);
}

/// A run prints more than the disk holds (a 32 MB tmpfs, `--min-free 8M`, a
/// command printing 60 MB): storing stops at half the floor, kept for the
/// notebook itself; the run ends `failed` saying why, keeps every byte it
/// stored and counts no more than it kept; the command ran to its end; the
/// notebook takes writes meanwhile, and once space is freed runs start again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_fills_the_disk_fails_with_the_reason_and_keeps_what_it_stored() {
    if crate::helpers::on_postgres() {
        return; // Output is in the database there.
    }
    let sshd = Sshd::start();
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().join("db");
    let Some(_disk) = Tmpfs::mount(&dir, "32m") else { return };
    let database = server::db::Database::Sqlite(dir.clone());
    let floor = Some(server::operations::MinFree::Bytes(8 << 20));
    let options = server::serve::Options {
        database: Some(database.clone()),
        no_auth: true,
        min_free: floor,
        ..Default::default()
    };
    let state = server::serve::state(&dir, &data.path().join("site"), options).await.unwrap();
    let app = crate::runs::with_host(TestApp { router: server::app(state), data, database, auth: None }, &sshd).await;
    let step =
        command_step(&app, json!({ "command": "head -c 60000000 /dev/zero | tr '\\0' x; echo; echo end" })).await;
    let run = start(&app, step, json!({})).await[0];
    let run =
        wait_for(&app, run, |r| !matches!(r["status"].as_str(), Some("queued" | "running")), Duration::from_secs(200))
            .await;
    assert_eq!(run["status"], "failed", "{run}");
    let error = run["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("Storing output stopped at ") && error.contains("half of the --min-free floor of 8.4 MB"),
        "{run}"
    );
    assert!(error.contains("more bytes were printed and not kept; the command ran to its end"), "{run}");
    let note = app
        .post_json(
            &format!(
                "/api/v1/investigations/{}/steps",
                app.get(&format!("/api/v1/steps/{step}")).await.json()["investigation_id"].as_str().unwrap()
            ),
            json!({ "kind": "note", "body": "still writable" }),
        )
        .await;
    assert_eq!(note.status, StatusCode::CREATED, "{}", note.text());
    let id = run["id"].as_i64().unwrap();
    let kept = output(&app, id).await;
    assert!(kept.len() > 1 << 20 && kept.iter().all(|&b| b == b'x'), "{} bytes kept", kept.len());
    assert_eq!(run["stdout_bytes"].as_u64(), Some(kept.len() as u64), "the run says what it kept: {run}");

    std::fs::remove_file(server::output::out_path(&dir.join("runs"), id)).unwrap();
    let again = command_step(&app, json!({ "command": "echo room again" })).await;
    let run = finished(&app, start(&app, again, json!({})).await[0]).await;
    assert_eq!(run["status"], "succeeded", "{run}");
}

/// `/metrics` is for admins: the runs, the queue and the SSH pool, in
/// Prometheus text format.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_show_runs_and_the_pool() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let step = command_step(&app, json!({ "command": "echo hi" })).await;
    let run = finished(&app, start(&app, step, json!({})).await[0]).await;
    assert_eq!(run["status"], "succeeded", "{run}");
    let metrics = app.get("/metrics").await;
    assert_eq!(metrics.status, StatusCode::OK);
    let content_type = metrics.headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default();
    assert!(content_type.starts_with("text/plain; version=0.0.4"), "{content_type}");
    let text = metrics.text();
    for line in [
        "sleuth_runs{status=\"succeeded\"} 1",
        "sleuth_run_queue_depth 0",
        "sleuth_ssh_connection_open{host=\"gpu\"} 1",
    ] {
        assert!(text.lines().any(|l| l == line), "no {line:?} in:\n{text}");
    }
    assert!(text.contains("sleuth_data_disk_free_bytes "), "{text}");

    let anonymous = crate::helpers::spawn_app_with_accounts().await.get("/metrics").await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
}

/// A host that stops answering (its sshd SIGSTOPped: no RST, no data) is
/// noticed within 45 s — the run's page says "no data from gpu for N s"
/// meanwhile, then the run ends `lost` with what it printed — while a second
/// host runs as usual (a silent command there is not called quiet); once it
/// is back, the pool reconnects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_host_is_lost_within_45_s_and_another_host_is_unaffected() {
    let mut frozen = Sshd::start();
    let other = Sshd::start();
    let app = app_with_host(&frozen).await;
    add_host(&app, "gpu2", &other, &other.client_key.display().to_string()).await;
    let tested = app.post_json("/api/v1/hosts/gpu2/test", json!({})).await;
    assert_eq!(tested.status, StatusCode::CONFLICT, "{}", tested.text());
    let trusted =
        app.post_json("/api/v1/hosts/gpu2/trust", json!({ "fingerprint": other.host_key_fingerprint() })).await;
    assert_eq!(trusted.status, StatusCode::OK, "{}", trusted.text());

    let silent = command_step(&app, json!({ "host": "gpu2", "command": "sleep 120" })).await;
    let silent = start(&app, silent, json!({})).await[0];
    let step = command_step(&app, json!({ "command": "echo before; sleep 300" })).await;
    let investigation = app.get(&format!("/api/v1/steps/{step}")).await.json()["investigation_id"].clone();
    let run = start(&app, step, json!({})).await[0];
    wait_for(&app, run, |r| r["stdout_bytes"].as_u64() == Some(7), Duration::from_secs(20)).await;
    frozen.freeze();
    let froze = Instant::now();

    let elsewhere = command_step(&app, json!({ "host": "gpu2", "command": "echo elsewhere" })).await;
    let started = Instant::now();
    let done = finished(&app, start(&app, elsewhere, json!({})).await[0]).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert!(started.elapsed() < Duration::from_secs(10), "the other host waited {:?}", started.elapsed());

    let quiet = wait_for(&app, run, |r| r["host_quiet_s"].as_u64().is_some(), Duration::from_secs(35)).await;
    let seconds = quiet["host_quiet_s"].as_u64().unwrap_or_default();
    eprintln!("\"no data from gpu for {seconds} s\" shown {:.1} s after the freeze", froze.elapsed().as_secs_f64());
    assert!((15..=30).contains(&seconds) && quiet["status"] == "running", "{quiet}");
    let page = app.get(&format!("/i/{}", investigation.as_str().unwrap_or_default())).await.text();
    assert!(page.contains(&format!("no data from gpu for {seconds} s")), "the page does not say so");
    let elsewhere = app.get(&format!("/api/v1/runs/{silent}")).await.json();
    assert!(elsewhere["status"] == "running" && elsewhere.get("host_quiet_s").is_none(), "{elsewhere}");

    let lost = wait_for(&app, run, |r| r["status"] != "running", Duration::from_secs(60)).await;
    let noticed = froze.elapsed();
    assert!(lost.get("host_quiet_s").is_none(), "an ended run is not quiet: {lost}");
    assert_eq!(app.post_json(&format!("/api/v1/runs/{silent}/cancel"), json!({})).await.status, StatusCode::OK);
    eprintln!("a frozen host noticed after {:.1} s", noticed.as_secs_f64());
    assert_eq!(lost["status"], "lost", "{lost}");
    assert!(noticed <= Duration::from_secs(45), "noticed after {noticed:?}");
    assert_eq!(output(&app, run).await, b"before\n");

    frozen.restart();
    let again = command_step(&app, json!({ "command": "echo back" })).await;
    let run = finished(&app, start(&app, again, json!({})).await[0]).await;
    assert_eq!(run["status"], "succeeded", "{run}");
}

/// `sleuth backup` while the server serves, `sleuth restore` into an empty
/// data dir: a server there answers everything as the first did (every
/// investigation, run output, host, key, share, comment, audit row), to the
/// same token. Refusals: a non-empty destination, a notebook already there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_while_serving_restores_everything() {
    use crate::migrate::{As, a_notebook_with_everything, sleuth};
    if crate::helpers::on_postgres() {
        return; // PostgreSQL's backup is pg_dump (the command says so; see below).
    }
    let sshd = Sshd::start();
    let source = crate::helpers::spawn_app_with_accounts_on(None).await;
    let notebook = a_notebook_with_everything(&sshd, &source).await;
    let before = notebook.ada.everything().await;

    let root = tempfile::tempdir().unwrap();
    let (dest, restored) = (root.path().join("backup"), root.path().join("restored"));
    let data = source.data.path().join("db").display().to_string();
    let path = |p: &std::path::Path| p.display().to_string();
    let backup = sleuth(&["backup", &path(&dest), "--data", &data], &[]);
    let said = format!("{}{}", String::from_utf8_lossy(&backup.stdout), String::from_utf8_lossy(&backup.stderr));
    assert!(backup.status.success() && said.contains("Backed up"), "{said}");
    let again = sleuth(&["backup", &path(&dest), "--data", &data], &[]);
    assert!(!again.status.success() && String::from_utf8_lossy(&again.stderr).contains("is not empty"), "{again:?}");
    let pg = sleuth(&["backup", &path(&dest), "--database", "postgres://u@127.0.0.1:1/x"], &[]);
    assert!(String::from_utf8_lossy(&pg.stderr).contains("pg_dump"), "{pg:?}");

    let restore = sleuth(&["restore", &path(&dest), "--data", &path(&restored)], &[]);
    let said = format!("{}{}", String::from_utf8_lossy(&restore.stdout), String::from_utf8_lossy(&restore.stderr));
    assert!(restore.status.success() && said.contains("Restored"), "{said}");
    let over = sleuth(&["restore", &path(&dest), "--data", &data], &[]);
    assert!(String::from_utf8_lossy(&over.stderr).contains("already holds a notebook"), "{over:?}");

    let database = server::db::Database::Sqlite(restored.clone());
    let options = server::serve::Options { database: Some(database.clone()), ..Default::default() };
    let state = server::serve::state(&restored, &root.path().join("site"), options).await.unwrap();
    let auth = state.auth.clone();
    let target = TestApp { router: server::app(state), data: tempfile::tempdir().unwrap(), database, auth: Some(auth) };
    let after = As { app: &target, token: notebook.ada.token.clone() }.everything().await;
    for key in ["investigations", "each", "outputs", "hosts", "known_hosts", "audit", "mentions"] {
        assert_eq!(before[key], after[key], "{key} differs after the restore");
    }
    assert_eq!(after["outputs"].as_array().map(Vec::len), Some(2), "{}", after["outputs"]);
}

/// One request to a server in another process; (status, body).
pub async fn http(addr: &str, method: &str, path: &str, body: Value) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut socket = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let body = if body.is_null() { String::new() } else { body.to_string() };
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(request.as_bytes()).await.expect("send");
    let mut answer = Vec::new();
    socket.read_to_end(&mut answer).await.expect("receive");
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = answer.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (status, body)
}

/// A deploy's SIGTERM to a real server with real runs: no new run starts
/// (503, while pages are still served), a run that ends within the grace
/// period ends as it would have, one that does not is `interrupted` with the
/// reason and its output, and the process exits soon after the grace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_runs_end_within_the_grace_then_interrupts_the_rest() {
    use std::io::BufRead;
    if crate::helpers::on_postgres() {
        return; // The same drain serves both; this drives SQLite's data dir.
    }
    let sshd = Sshd::start();
    let data = tempfile::tempdir().unwrap();
    let mut server = Command::new(env!("CARGO_BIN_EXE_sleuth"))
        .args(["serve", "--no-auth", "--addr", "127.0.0.1:0", "--shutdown-grace", "4", "--data"])
        .arg(data.path())
        .arg("--site")
        .arg(data.path().join("site"))
        .env_remove("SLEUTH_DATABASE")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    let mut said = std::io::BufReader::new(server.stdout.take().unwrap());
    said.read_line(&mut first).unwrap();
    // Read on, or its next line would meet a closed pipe.
    std::thread::spawn(move || std::io::copy(&mut said, &mut std::io::sink()));
    let addr = first.split("http://").nth(1).and_then(|s| s.split('/').next()).unwrap().to_string();

    let host = json!({ "name": "gpu", "hostname": "127.0.0.1", "port": sshd.port, "user": crate::sshd::whoami(),
                       "identity_file": sshd.client_key.display().to_string() });
    assert_eq!(http(&addr, "POST", "/api/v1/hosts", host).await.0, 201);
    assert_eq!(http(&addr, "POST", "/api/v1/hosts/gpu/test", json!({})).await.0, 409);
    let trust = json!({ "fingerprint": sshd.host_key_fingerprint() });
    assert_eq!(http(&addr, "POST", "/api/v1/hosts/gpu/trust", trust).await.0, 200);
    let (_, created) = http(&addr, "POST", "/api/v1/investigations", json!({ "title": "deploy" })).await;
    let id = serde_json::from_str::<Value>(&created).unwrap()["id"].as_str().unwrap().to_string();
    let mut runs = Vec::new();
    for command in ["echo short; sleep 2; echo done", "echo long; sleep 60; echo never"] {
        let step = json!({ "kind": "command", "host": "gpu", "command": command });
        let (_, step) = http(&addr, "POST", &format!("/api/v1/investigations/{id}/steps"), step).await;
        let step = serde_json::from_str::<Value>(&step).unwrap()["id"].as_i64().unwrap();
        let (status, started) = http(&addr, "POST", &format!("/api/v1/steps/{step}/runs"), json!({})).await;
        assert_eq!(status, 201, "{started}");
        runs.push((step, serde_json::from_str::<Value>(&started).unwrap()[0]["id"].as_i64().unwrap()));
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    for (_, run) in &runs {
        loop {
            let (_, json) = http(&addr, "GET", &format!("/api/v1/runs/{run}"), Value::Null).await;
            if serde_json::from_str::<Value>(&json).unwrap()["stdout_bytes"].as_u64().unwrap_or(0) > 0 {
                break;
            }
            assert!(Instant::now() < deadline, "run {run} did not start: {json}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    let stopping = Instant::now();
    assert!(Command::new("kill").args(["-TERM", &server.id().to_string()]).status().unwrap().success());
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, refused) = http(&addr, "POST", &format!("/api/v1/steps/{}/runs", runs[0].0), json!({})).await;
    assert_eq!(status, 503, "{refused}");
    assert!(refused.contains("shutting_down") && refused.contains("shutting down"), "{refused}");
    assert_eq!(http(&addr, "GET", &format!("/api/v1/investigations/{id}"), Value::Null).await.0, 200, "pages go on");
    let exited = tokio::task::spawn_blocking(move || server.wait()).await.unwrap().unwrap();
    let took = stopping.elapsed();
    eprintln!("SIGTERM to exit with a run past the grace of 4 s: {:.1} s", took.as_secs_f64());
    assert!(exited.success(), "{exited:?}");
    assert!(took >= Duration::from_secs(4) && took < Duration::from_secs(12), "{took:?}");

    let store = server::db::Store::open(&server::db::Database::Sqlite(data.path().to_path_buf())).await.unwrap();
    let short = store.run(runs[0].1).await.unwrap().unwrap();
    assert_eq!(short.status, domain::runs::RunStatus::Succeeded, "{short:?}");
    let long = store.run(runs[1].1).await.unwrap().unwrap();
    assert_eq!(long.status, domain::runs::RunStatus::Interrupted, "{long:?}");
    assert!(long.error.as_deref().is_some_and(|e| e.contains("SIGTERM") && e.contains("4 s grace")), "{long:?}");
    assert_eq!(long.stdout_bytes, 5, "{long:?}");
}

/// A step's output limit: storing stops there with a note, the command runs
/// to its end and its exit decides the status; a limit out of range is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_past_the_steps_limit_is_not_kept_and_the_run_says_so() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let command = "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo done > \"$SLEUTH_RUN_DIR/finished.txt\"";
    let step = command_step(&app, json!({ "command": command, "output_limit_bytes": 1 << 20 })).await;
    let run = finished(&app, start(&app, step, json!({})).await[0]).await;
    assert_eq!(run["status"], "succeeded", "{run}");
    assert_eq!(run["stdout_bytes"], 1 << 20, "{run}");
    let id = run["id"].as_i64().unwrap();
    assert_eq!(output(&app, id).await.len(), 1 << 20);
    let note = run["error"].as_str().unwrap_or_default();
    assert!(note.contains("limit of 1.0 MB") && note.contains("the command ran to its end"), "{run}");
    // It ran to its end: what it wrote after the limit is there.
    let home = std::env::var("HOME").unwrap_or_default();
    let dir = run["run_dir"].as_str().unwrap_or_default().replacen('~', &home, 1);
    assert_eq!(
        std::fs::read_to_string(std::path::Path::new(&dir).join("finished.txt")).unwrap_or_default(),
        "done\n",
        "{run}"
    );
    let dropped: u64 =
        note.split('(').nth(1).and_then(|s| s.split(' ').next()).and_then(|n| n.parse().ok()).unwrap_or(0);
    assert!(dropped > 3_000_000 - (1 << 20), "{note}");

    let id = app.investigation("limits").await;
    let tiny = json!({ "kind": "command", "host": "gpu", "command": "true", "output_limit_bytes": 10 });
    let refused = app.post_json(&format!("/api/v1/investigations/{id}/steps"), tiny).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.text());
    assert!(refused.text().contains("output_limit_bytes"), "{}", refused.text());
}

/// A PostgreSQL cluster of the test's own (`tools/pg-scratch`), which it may
/// stop and start; removed when dropped.
struct Cluster {
    dir: String,
    url: String,
}

impl Cluster {
    fn script() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tools/pg-scratch")
    }

    /// Durable as a deployment's: these tests crash it, and with
    /// `synchronous_commit = off` (the scratch default, for speed) PostgreSQL
    /// may lose commits it acknowledged, by design.
    fn start() -> Cluster {
        let out = Command::new(Self::script()).args(["start", "--durable"]).output().expect("tools/pg-scratch");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let said = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let (dir, url) = said.split_once(' ').expect("DIR URL");
        Cluster { dir: dir.to_string(), url: url.to_string() }
    }

    fn down(&self, mode: &str) {
        assert!(Command::new(Self::script()).args(["down", &self.dir, mode]).status().unwrap().success());
    }

    fn up(&self) {
        assert!(Command::new(Self::script()).args(["up", &self.dir]).status().unwrap().success());
    }

    /// A streaming standby of this cluster (`pg_basebackup -R`), running.
    fn standby(&self) -> Cluster {
        let out = Command::new(Self::script()).args(["standby", &self.dir]).output().expect("tools/pg-scratch");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let said = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let (dir, url) = said.split_once(' ').expect("DIR URL");
        Cluster { dir: dir.to_string(), url: url.to_string() }
    }

    fn promote(&self) {
        assert!(Command::new(Self::script()).args(["promote", &self.dir]).status().unwrap().success());
    }

    /// `127.0.0.1:PORT`.
    fn addr(&self) -> String {
        self.url.split('@').nth(1).and_then(|rest| rest.split('/').next()).unwrap_or_default().to_string()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(Self::script()).args(["stop", &self.dir]).status();
    }
}

/// A server on a fresh database of the PostgreSQL at `admin_url`, with `sshd` as its host `gpu`.
async fn app_on(admin_url: &str, sshd: &Sshd) -> TestApp {
    let url = server::db::scratch_postgres_database(admin_url).await.expect("a database");
    crate::runs::with_host(crate::helpers::spawn_app_on(server::db::Database::Postgres(url)).await, sshd).await
}

/// Waits until `path` answers 200 again: within 10 s of `since` (`what` happened).
async fn answering_again(app: &TestApp, path: &str, since: Instant, what: &str) {
    while app.get(path).await.status != StatusCode::OK {
        assert!(since.elapsed() < Duration::from_secs(10), "not answering 10 s after {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// PostgreSQL stops mid-run (immediate and fast) and comes back 4 s later:
/// what the host printed meanwhile (24 MB of it, past what is held in memory,
/// so through the spill file) is stored when it is back, in order, and the
/// run ends `succeeded` with every byte; requests during the outage answer
/// 503 with the sentence, and the server answers again within 10 s of the
/// database's return.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_restarting_mid_run_loses_no_output() {
    if !crate::helpers::on_postgres() {
        eprintln!("skipped: needs PostgreSQL (SLEUTH_TEST_POSTGRES)");
        return;
    }
    let sshd = Sshd::start();
    for mode in ["immediate", "fast"] {
        let cluster = Cluster::start();
        let app = app_on(&cluster.url, &sshd).await;
        let mark = sshd.dir.path().join(format!("outage-{mode}"));
        let dump = 24_000_000;
        let command = format!(
            "for i in $(seq 1 50); do echo line-$i; done; while [ ! -e {mark} ]; do sleep 0.05; done; \
             yes 0123456789abcdef | head -c {dump}; for i in $(seq 51 250); do echo line-$i; sleep 0.02; done",
            mark = mark.display()
        );
        let step = command_step(&app, json!({ "command": command })).await;
        let investigation =
            app.get(&format!("/api/v1/steps/{step}")).await.json()["investigation_id"].as_str().unwrap().to_string();
        let run = start(&app, step, json!({})).await[0];
        wait_for(&app, run, |r| r["stdout_bytes"].as_u64().unwrap_or(0) > 200, Duration::from_secs(20)).await;

        cluster.down(mode);
        let went = Instant::now();
        std::fs::write(&mark, "").unwrap();
        let spill = app.data.path().join("db/runs/spill").join(format!("run-{run}.blocks"));
        while !spill.exists() {
            assert!(went.elapsed() < Duration::from_secs(20), "nothing spilled to {}", spill.display());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // The output kept flowing: nothing on the run's way waits for the
        // database (its interim counts once did, 10 s a time, and the host's
        // command stalled behind them).
        let spilled = went.elapsed();
        assert!(spilled < Duration::from_secs(8), "16 MB took {spilled:?} to reach the spill file");
        let asked = Instant::now();
        let refused = app.get(&format!("/api/v1/investigations/{investigation}")).await;
        let answered = asked.elapsed();
        assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE, "{}", refused.text());
        assert_eq!(refused.error_code(), "store_unavailable");
        assert!(refused.text().contains("cannot be reached"), "{}", refused.text());
        // That request waited the pool's timeout (PostgreSQL might have come
        // back meanwhile); the database is known to be away now, and the
        // next ones are answered at once while it is asked in the background.
        let again = Instant::now();
        for _ in 0..5 {
            assert_eq!(app.get("/api/v1/investigations").await.status, StatusCode::SERVICE_UNAVAILABLE);
        }
        let five = again.elapsed();
        assert!(five < Duration::from_secs(1), "five 503s took {five:?}");
        tokio::time::sleep(Duration::from_secs(4).saturating_sub(went.elapsed())).await;

        cluster.up();
        let back = Instant::now();
        answering_again(&app, &format!("/api/v1/investigations/{investigation}"), back, "PostgreSQL returned").await;
        eprintln!(
            "pg_ctl stop -m {mode}: spilling after {:.1} s; the first 503 in {:.2} s, the next five in {:.2} s; \
             down {:.1} s; answering again {:.2} s after it returned",
            spilled.as_secs_f64(),
            answered.as_secs_f64(),
            five.as_secs_f64(),
            (back - went).as_secs_f64(),
            back.elapsed().as_secs_f64()
        );

        let ended = finished(&app, run).await;
        assert_eq!(ended["status"], "succeeded", "{ended}");
        let mut expected = String::new();
        for i in 1..=50 {
            expected.push_str(&format!("line-{i}\n"));
        }
        expected.push_str(&"0123456789abcdef\n".repeat(dump / 17 + 1)[..dump]);
        for i in 51..=250 {
            expected.push_str(&format!("line-{i}\n"));
        }
        let stored = output(&app, run).await;
        let differ = stored.iter().zip(expected.as_bytes()).position(|(a, b)| a != b);
        assert_eq!(stored.len(), expected.len(), "first difference at byte {differ:?}: {ended}");
        assert!(stored == expected.as_bytes(), "the bytes differ");
        assert_eq!(ended["stdout_bytes"].as_u64(), Some(expected.len() as u64), "{ended}");
        assert!(!spill.exists(), "the spill file is removed once stored");
    }
}

/// A failover: the primary stops mid-run (`-m fast`), its streaming standby
/// is promoted, and the address Sleuth connects to (a TCP balancer here;
/// pgbouncer, HAProxy or a virtual IP in a deployment — sqlx takes one host)
/// is pointed at it. The run ends `succeeded` with every line; the server
/// answers again within 10 s of the promotion, without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failover_to_a_streaming_standby_loses_no_output() {
    if !crate::helpers::on_postgres() {
        eprintln!("skipped: needs PostgreSQL (SLEUTH_TEST_POSTGRES)");
        return;
    }
    let sshd = Sshd::start();
    let primary = Cluster::start();
    let standby = primary.standby();
    let proxy = crate::replicas::Proxy::start(vec![primary.addr()]).await;
    let app = app_on(&format!("postgres://postgres@{}/postgres", proxy.addr), &sshd).await;
    let step = command_step(&app, json!({ "command": "for i in $(seq 1 80); do echo line-$i; sleep 0.1; done" })).await;
    let investigation =
        app.get(&format!("/api/v1/steps/{step}")).await.json()["investigation_id"].as_str().unwrap().to_string();
    let run = start(&app, step, json!({})).await[0];
    wait_for(&app, run, |r| r["stdout_bytes"].as_u64().unwrap_or(0) > 100, Duration::from_secs(20)).await;

    primary.down("fast");
    standby.promote();
    proxy.point(vec![standby.addr()]);
    let promoted = Instant::now();
    answering_again(&app, &format!("/api/v1/investigations/{investigation}"), promoted, "the failover").await;
    eprintln!("failover: answering again {:.2} s after the promotion", promoted.elapsed().as_secs_f64());

    let ended = finished(&app, run).await;
    assert_eq!(ended["status"], "succeeded", "{ended}");
    let stored = String::from_utf8(output(&app, run).await).unwrap();
    let expected: String = (1..=80).map(|i| format!("line-{i}\n")).collect();
    assert_eq!(stored, expected);
}

/// Two replicas on one database that is away for longer than a lease
/// (`LEASE_EXPIRY`): every lease lapses with it, the live one's too.
/// When it is back, the replica that does not drive the run must not take
/// the lapsed lease as a dead replica: the run goes on and ends `succeeded`
/// with every line, on the replica that drove it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_away_longer_than_a_lease_ends_no_live_replicas_run() {
    if !crate::helpers::on_postgres() {
        eprintln!("skipped: needs PostgreSQL (SLEUTH_TEST_POSTGRES)");
        return;
    }
    let sshd = Sshd::start();
    let cluster = Cluster::start();
    // B: in process, judging leases; A: `sleuth serve` on the same database, driving the run.
    let b = app_on(&cluster.url, &sshd).await;
    let a = crate::replicas::Replica::start_on(&b, &[]);
    let away = server::db::LEASE_EXPIRY + Duration::from_secs(6);
    let lines = 70;
    let step =
        command_step(&b, json!({ "command": format!("for i in $(seq 1 {lines}); do echo line-$i; sleep 1; done") }))
            .await;
    let (status, runs) = a.post(&format!("/api/v1/steps/{step}/runs"), json!({})).await;
    assert_eq!(status, 201, "{runs}");
    let run = runs[0]["id"].as_i64().expect("run id");
    wait_for(&b, run, |r| r["stdout_bytes"].as_u64().unwrap_or(0) > 0, Duration::from_secs(20)).await;

    cluster.down("fast");
    tokio::time::sleep(away).await;
    cluster.up();
    answering_again(&b, &format!("/api/v1/runs/{run}"), Instant::now(), "PostgreSQL returned").await;
    // B's lease loop looks every LEASE_RENEW: several times by the run's end.
    let ended = finished(&b, run).await;
    assert_eq!(ended["status"], "succeeded", "{ended}");
    let expected: String = (1..=lines).map(|i| format!("line-{i}\n")).collect();
    assert_eq!(String::from_utf8_lossy(&output(&b, run).await), expected);
}
