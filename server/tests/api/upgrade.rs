//! A database written by an older Sleuth opens in this one, on both backends.
//! Each fixture in `tests/fixtures/upgrade/` is a notebook written through
//! the API by the real binary of one migration level in git history
//! (`tools/upgrade-fixtures/`): an investigation, a note, a host, a command
//! step with a finished run, a measurement, a hypothesis. Opened here, all of
//! it reads back — page, output, search — and it takes writes.

use crate::helpers::{TestApp, spawn_app_in};
use axum::http::StatusCode;
use serde_json::{Value, json};
use server::db::Database;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn fixtures(backend: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upgrade");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(&format!("-{backend}.tar.gz")))
        .collect();
    found.sort();
    assert!(!found.is_empty(), "no {backend} fixtures in {}", dir.display());
    found
}

/// The fixture unpacked: its data dir as `DIR/db` (where the test app keeps
/// it), its manifest, and the PostgreSQL dump if it has one.
fn unpack(fixture: &Path) -> (tempfile::TempDir, Value, Option<PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    let unpacked = Command::new("tar").arg("-xzf").arg(fixture).arg("-C").arg(dir.path()).status().unwrap();
    assert!(unpacked.success(), "{}", fixture.display());
    std::fs::rename(dir.path().join("data"), dir.path().join("db")).unwrap();
    let manifest = serde_json::from_slice(&std::fs::read(dir.path().join("manifest.json")).unwrap()).unwrap();
    let dump = Some(dir.path().join("dump.sql")).filter(|p| p.exists());
    (dir, manifest, dump)
}

async fn everything_is_there(app: &TestApp, manifest: &Value) {
    let which = format!("{} {}", manifest["commit"], manifest["backend"]);
    let id = manifest["investigation"].as_str().unwrap();
    let inv = app.get(&format!("/api/v1/investigations/{id}")).await;
    assert_eq!(inv.status, StatusCode::OK, "{which}: {}", inv.text());
    let inv = inv.json();
    assert_eq!(inv["title"], manifest["title"], "{which}");
    let steps = inv["steps"].as_array().cloned().unwrap_or_default();
    assert!(steps.iter().any(|s| s["body"] == manifest["note"]), "{which}: the note: {inv}");
    assert!(steps.iter().any(|s| s["id"] == manifest["step"]), "{which}: the command step: {inv}");

    let run = app.get(&format!("/api/v1/runs/{}", manifest["run"])).await.json();
    assert_eq!(run["status"], "succeeded", "{which}: {run}");
    let output = app.get(&format!("/api/v1/runs/{}/output", manifest["run"])).await.text();
    for line in manifest["output"].as_array().unwrap() {
        assert!(output.contains(line.as_str().unwrap()), "{which}: {line} not in {output:?}");
    }
    let measurements = app.get(&format!("/api/v1/investigations/{id}/measurements")).await.json();
    let by_hand = measurements.as_array().and_then(|m| m.iter().find(|m| m["id"] == manifest["measurement"]));
    assert_eq!(by_hand.map(|m| m["value"].clone()), Some(json!(57.5)), "{which}: {measurements}");
    let hypothesis = app.get(&format!("/api/v1/hypotheses/{}", manifest["hypothesis"])).await;
    assert_eq!(hypothesis.status, StatusCode::OK, "{which}: {}", hypothesis.text());
    assert_eq!(hypothesis.json()["statement"], "NCCL allreduce is the bottleneck", "{which}");
    assert_eq!(app.get("/api/v1/hosts/gpu").await.status, StatusCode::OK, "{which}");

    let page = app.get(&format!("/i/{id}")).await;
    assert_eq!(page.status, StatusCode::OK, "{which}");
    assert!(page.text().contains("Upgrade fixture &lt;b&gt;kept&lt;/b&gt;"), "{which}: the page");

    // Its words are found (the index of an older notebook is brought up to date).
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let found = app.get("/api/v1/search?q=%22old%20binary%22").await.json();
        if found["results"].as_array().is_some_and(|r| !r.is_empty()) {
            break;
        }
        assert!(Instant::now() < deadline, "{which}: search does not find the note: {found}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let added = app
        .post_json(
            &format!("/api/v1/investigations/{id}/steps"),
            json!({ "kind": "note", "body": "after the upgrade" }),
        )
        .await;
    assert_eq!(added.status, StatusCode::CREATED, "{which}: {}", added.text());
}

/// A new migration needs a notebook made by the binary before it: run
/// `tools/upgrade-fixtures/build-old.sh` and `make.mjs` once it is committed.
#[test]
fn there_is_a_fixture_from_the_level_before_the_newest_migration() {
    let migrations = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations/sqlite");
    let newest = std::fs::read_dir(migrations).unwrap().count();
    let level =
        |p: &PathBuf| -> usize { p.file_name().and_then(|n| n.to_str()?.split('-').next()?.parse().ok()).unwrap_or(0) };
    let covered = fixtures("sqlite").iter().map(level).max().unwrap_or(0);
    assert!(covered + 1 >= newest, "the newest fixture is of level {covered}, the newest migration {newest}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_older_sqlite_notebook_opens_with_everything_in_it() {
    for fixture in fixtures("sqlite") {
        let (dir, manifest, _) = unpack(&fixture);
        let database = Database::Sqlite(dir.path().join("db"));
        let app = spawn_app_in(dir, database).await;
        everything_is_there(&app, &manifest).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_older_postgres_notebook_opens_with_everything_in_it() {
    let Ok(admin) = std::env::var("SLEUTH_TEST_POSTGRES") else {
        eprintln!("skipped: needs PostgreSQL (SLEUTH_TEST_POSTGRES)");
        return;
    };
    for fixture in fixtures("postgres") {
        let (dir, manifest, dump) = unpack(&fixture);
        let url = server::db::scratch_postgres_database(&admin).await.unwrap();
        let dump = dump.expect("dump.sql");
        let restored = Command::new("psql")
            .args(["-q", "-v", "ON_ERROR_STOP=1", &url, "-f"])
            .arg(&dump)
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(restored.success(), "{}", fixture.display());
        let app = spawn_app_in(dir, Database::Postgres(url)).await;
        everything_is_there(&app, &manifest).await;
    }
}
