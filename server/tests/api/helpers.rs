use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::Value;
use server::db::Database;
use tempfile::TempDir;
use tower::ServiceExt;

/// Longer than anything a test asks should take on a loaded 2-core machine.
pub const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

pub struct TestApp {
    pub router: Router,
    pub data: TempDir,
    /// Where its store lives: SQLite in `data/db`, or (with `SLEUTH_TEST_POSTGRES`)
    /// a database of its own on that PostgreSQL server.
    pub database: Database,
    /// With accounts on (`spawn_app_with_accounts`): the server's side of them.
    pub auth: Option<std::sync::Arc<server::auth::Auth>>,
}

pub struct Response {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Response {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    /// Asserts the documented error shape and returns its code.
    pub fn error_code(&self) -> String {
        let json = self.json();
        let message = json["error"]["message"].as_str().unwrap_or_default();
        assert!(!message.is_empty(), "error without a message: {json}");
        json["error"]["code"].as_str().expect("error.code").to_string()
    }
}

/// A server as `sleuth serve --no-auth` runs it: every request is the local admin.
/// The feature tests use it; `accounts.rs` tests signing in.
pub async fn spawn_app() -> TestApp {
    let data = tempfile::tempdir().expect("temp dir");
    let database = test_database(&data).await;
    let router = router_for(&data, &database).await;
    TestApp { router, data, database, auth: None }
}

/// [`spawn_app`] with other serve options (the store, auth and site are the test's).
pub async fn spawn_app_with(options: server::serve::Options) -> TestApp {
    let data = tempfile::tempdir().expect("temp dir");
    let database = test_database(&data).await;
    let router = router_with(&data, &database, options).await;
    TestApp { router, data, database, auth: None }
}

/// [`spawn_app`] on a given store (a PostgreSQL cluster a test stops and starts).
pub async fn spawn_app_on(database: Database) -> TestApp {
    spawn_app_in(tempfile::tempdir().expect("temp dir"), database).await
}

/// [`spawn_app`] on a given store whose data dir is `data/db` (one a test
/// filled beforehand).
pub async fn spawn_app_in(data: TempDir, database: Database) -> TestApp {
    let router = router_for(&data, &database).await;
    TestApp { router, data, database, auth: None }
}

/// A server with accounts, as `sleuth serve` runs by default.
pub async fn spawn_app_with_accounts() -> TestApp {
    let data = tempfile::tempdir().expect("temp dir");
    let database = test_database(&data).await;
    with_accounts(data, database).await
}

/// A server with accounts on a given store (`None`: SQLite in its data dir),
/// with a data dir of its own.
pub async fn spawn_app_with_accounts_on(database: Option<Database>) -> TestApp {
    let data = tempfile::tempdir().expect("temp dir");
    let database = database.unwrap_or_else(|| Database::Sqlite(data.path().join("db")));
    with_accounts(data, database).await
}

async fn with_accounts(data: TempDir, database: Database) -> TestApp {
    let options =
        server::serve::Options { database: Some(database.clone()), watch_min_every_s: Some(1), ..Default::default() };
    let state = server::serve::state(&data.path().join("db"), &data.path().join("site"), options).await.expect("state");
    let auth = state.auth.clone();
    TestApp { router: server::app(state), data, database, auth: Some(auth) }
}

/// The backend the suite runs on: SQLite in the app's data dir, or a fresh
/// database on the PostgreSQL server `SLEUTH_TEST_POSTGRES` names (`./dev test`
/// runs the suite both ways).
async fn test_database(data: &TempDir) -> Database {
    match std::env::var("SLEUTH_TEST_POSTGRES") {
        Ok(admin) => Database::Postgres(server::db::scratch_postgres_database(&admin).await.expect("scratch database")),
        Err(_) => Database::Sqlite(data.path().join("db")),
    }
}

/// Whether the suite runs on PostgreSQL (for the few checks that look at files).
pub fn on_postgres() -> bool {
    std::env::var_os("SLEUTH_TEST_POSTGRES").is_some()
}

async fn router_for(data: &TempDir, database: &Database) -> Router {
    router_with(data, database, server::serve::Options::default()).await
}

/// `--no-auth` on `database`, with the rest of `options`.
async fn router_with(data: &TempDir, database: &Database, options: server::serve::Options) -> Router {
    // No site is needed: these tests read server-rendered HTML and JSON only.
    let site = data.path().join("site");
    // Watches on a test's schedule (a second, not a minute).
    let options = server::serve::Options {
        no_auth: true,
        database: Some(database.clone()),
        watch_min_every_s: options.watch_min_every_s.or(Some(1)),
        ..options
    };
    let state = server::serve::state(&data.path().join("db"), &site, options).await.expect("state");
    server::app(state)
}

impl TestApp {
    /// A new server process on the same data dir and database, as after a restart.
    pub async fn restart(self) -> TestApp {
        drop(self.router);
        let router = router_for(&self.data, &self.database).await;
        TestApp { router, data: self.data, database: self.database, auth: None }
    }

    /// A connection of its own to the app's database, for tests that set up
    /// what no API can (an expired link).
    pub async fn sql(&self) -> sqlx::AnyPool {
        sqlx::any::install_default_drivers();
        sqlx::AnyPool::connect(&self.database.url()).await.expect("the test database")
    }

    /// The command-line flags that point `sleuth user …` at this app's store.
    pub fn store_env(&self) -> Vec<(&'static str, String)> {
        let mut env = vec![("SLEUTH_DATA", self.data.path().join("db").display().to_string())];
        if let Database::Postgres(url) = &self.database {
            env.push(("SLEUTH_DATABASE", url.clone()));
        }
        env
    }

    pub async fn send(&self, method: Method, uri: &str, content_type: Option<&str>, body: Vec<u8>) -> Response {
        let headers: Vec<(&str, &str)> = content_type.map(|ct| ("content-type", ct)).into_iter().collect();
        self.send_with(method, uri, &headers, body).await
    }

    /// A request with any headers (cookies, `Authorization`, `Origin`…).
    /// A request that takes longer than [`REQUEST_TIMEOUT`] fails the test, naming
    /// itself, rather than hanging the suite.
    pub async fn send_with(&self, method: Method, uri: &str, headers: &[(&str, &str)], body: Vec<u8>) -> Response {
        let mut request = Request::builder().method(method.clone()).uri(uri);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request.body(Body::from(body)).expect("request");
        let answer = async {
            let response = self.router.clone().oneshot(request).await.expect("infallible");
            let status = response.status();
            let headers = response.headers().clone();
            let body = response.into_body().collect().await.expect("body").to_bytes().to_vec();
            Response { status, headers, body }
        };
        match tokio::time::timeout(REQUEST_TIMEOUT, answer).await {
            Ok(response) => response,
            Err(_) => panic!("{method} {uri} got no answer in {REQUEST_TIMEOUT:?}"),
        }
    }

    pub async fn get(&self, uri: &str) -> Response {
        self.send(Method::GET, uri, None, Vec::new()).await
    }

    pub async fn delete(&self, uri: &str) -> Response {
        self.send(Method::DELETE, uri, None, Vec::new()).await
    }

    pub async fn post_json(&self, uri: &str, json: Value) -> Response {
        self.send(Method::POST, uri, Some("application/json"), json.to_string().into_bytes()).await
    }

    pub async fn put_json(&self, uri: &str, json: Value) -> Response {
        self.send(Method::PUT, uri, Some("application/json"), json.to_string().into_bytes()).await
    }

    pub async fn patch_json(&self, uri: &str, json: Value) -> Response {
        self.send(Method::PATCH, uri, Some("application/json"), json.to_string().into_bytes()).await
    }

    /// Creates an investigation and returns its id.
    pub async fn investigation(&self, title: &str) -> String {
        let response = self.post_json("/api/v1/investigations", serde_json::json!({ "title": title })).await;
        assert_eq!(response.status, StatusCode::CREATED, "{}", response.text());
        response.json()["id"].as_str().expect("id").to_string()
    }

    /// Adds a note and returns the step JSON.
    pub async fn note(&self, investigation: &str, markdown: &str) -> Value {
        let response = self
            .post_json(
                &format!("/api/v1/investigations/{investigation}/steps"),
                serde_json::json!({ "kind": "note", "body": markdown }),
            )
            .await;
        assert_eq!(response.status, StatusCode::CREATED, "{}", response.text());
        response.json()
    }

    pub async fn step_ids(&self, investigation: &str) -> Vec<i64> {
        let json = self.get(&format!("/api/v1/investigations/{investigation}")).await.json();
        json["steps"]
            .as_array()
            .expect("steps")
            .iter()
            .enumerate()
            .map(|(i, s)| {
                assert_eq!(s["position"], i as u64 + 1, "positions are 1..n in order: {json}");
                s["id"].as_i64().expect("id")
            })
            .collect()
    }
}

/// `text` as a query-string value (everything but unreserved characters percent-encoded).
pub fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            b => format!("%{b:02X}"),
        })
        .collect()
}

/// Runs the ignored test `name` (`module::test`) alone in a process of its own
/// (this binary again) and fails unless it passes: memory is measured per
/// process, and other tests' allocations would count as its growth.
pub fn in_a_process_of_its_own(name: &str) {
    let exe = std::env::current_exe().expect("the test binary");
    let out = std::process::Command::new(exe)
        .args(["--exact", name, "--ignored", "--nocapture"])
        .output()
        .expect("run the test binary");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.contains("1 passed"), "{text}");
}

/// This process's peak resident memory so far (`VmHWM`), in KB.
pub fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("VmHWM"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}
