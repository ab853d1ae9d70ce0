//! Several replicas on one PostgreSQL database (the team server), each with a
//! data dir of its own: what one does, the others show — runs, their output
//! as it arrives, changes, presence, sessions — and when the replica driving a
//! run dies, another ends the run within 30 s, keeping its output. Runs only on
//! PostgreSQL (`./dev test` runs the suite there too); on SQLite there is one
//! server by design.

use crate::helpers::{TestApp, on_postgres, spawn_app_with_accounts};
use crate::runs::{app_with_host, command_step};
use crate::sshd::Sshd;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use server::db::Database;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower::ServiceExt;

/// `sleuth serve` in a process of its own, with its own data dir, on a database.
pub struct Replica {
    pub child: Child,
    addr: String,
    /// Its stderr (the server's log), read when a test fails on it.
    log: std::path::PathBuf,
    _data: Option<tempfile::TempDir>,
}

impl Replica {
    fn start(database: &Database, flags: &[&str]) -> Replica {
        let Database::Postgres(_) = database else { panic!("replicas share a PostgreSQL database") };
        let data = tempfile::tempdir().expect("temp dir");
        let mut replica = Self::spawn(data.path(), database, flags);
        replica._data = Some(data);
        replica
    }

    /// `sleuth serve --no-auth` on `app`'s store: on SQLite its very data dir
    /// (as the same server started again), on PostgreSQL another replica.
    pub fn start_on(app: &TestApp, flags: &[&str]) -> Replica {
        let flags: Vec<&str> = ["--no-auth"].into_iter().chain(flags.iter().copied()).collect();
        match &app.database {
            Database::Postgres(_) => Self::start(&app.database, &flags),
            Database::Sqlite(_) => Self::spawn(&app.data.path().join("db"), &app.database, &flags),
        }
    }

    fn spawn(data: &std::path::Path, database: &Database, flags: &[&str]) -> Replica {
        let mut command = Command::new(env!("CARGO_BIN_EXE_sleuth"));
        command
            .args(["serve", "--addr", "127.0.0.1:0"])
            .args(flags)
            .arg("--data")
            .arg(data)
            .arg("--site")
            .arg(data.join("site"))
            .env_remove("SLEUTH_DATABASE")
            .stdout(Stdio::piped());
        static STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let _ = std::fs::create_dir_all(data);
        let log = data.join(format!("replica-{n}.log"));
        match std::fs::File::create(&log) {
            Ok(file) => command.stderr(file),
            Err(_) => command.stderr(Stdio::null()),
        };
        if let Database::Postgres(url) = database {
            command.env("SLEUTH_DATABASE", url);
        }
        let mut child = command.spawn().expect("sleuth serve");
        let stdout = child.stdout.take().expect("stdout");
        // The first line names the address; read it on a thread so a replica
        // that never starts fails the test instead of hanging it.
        let (first, line_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stdout));
            let _ = first.send(lines.next());
            // Keep reading so the replica never blocks on a full pipe.
            lines.for_each(drop);
        });
        let line = match line_rx.recv_timeout(Duration::from_secs(60)) {
            Ok(Some(Ok(line))) => line,
            other => panic!("sleuth serve printed no address within 60 s: {other:?}"),
        };
        let addr = line
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_string();
        Replica { child, addr, log, _data: None }
    }

    /// The last lines of its log, for a failure's message.
    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// SIGTERM, as a deploy sends it.
    fn terminate(&self) {
        let sent = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        assert!(sent.is_ok_and(|s| s.success()), "kill -TERM {}", self.child.id());
    }

    /// Waits for the process to exit, failing the test (with its log) after `within`.
    fn exited_within(&mut self, within: Duration) -> std::process::ExitStatus {
        let deadline = Instant::now() + within;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return status,
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
                other => panic!(
                    "the replica at {} did not exit within {within:?} ({other:?}); its log ends:\n{}",
                    self.addr,
                    self.log_tail()
                ),
            }
        }
    }

    /// One HTTP/1.1 request: the answer's status, head and body.
    async fn request(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String, String) {
        let mut stream = tokio::net::TcpStream::connect(&self.addr).await.expect("connect");
        let mut request = format!("{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n", self.addr);
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
        stream.write_all(request.as_bytes()).await.expect("send");
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.expect("answer");
        let answer = String::from_utf8_lossy(&answer).to_string();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
        let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        (status, head.to_string(), body.to_string())
    }

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let (status, _, body) =
            self.request("POST", path, &[("Content-Type", "application/json")], &body.to_string()).await;
        (status, serde_json::from_str(&body).unwrap_or(Value::Null))
    }

    /// A streaming GET: everything it sends, as it arrives (chunk sizes and all).
    fn follow(&self, path: &str, headers: &[(&str, &str)]) -> Followed {
        let (addr, path) = (self.addr.clone(), path.to_string());
        let headers: String = headers.iter().map(|(n, v)| format!("{n}: {v}\r\n")).collect();
        let seen = Arc::new(Mutex::new(String::new()));
        let task = tokio::spawn({
            let seen = seen.clone();
            async move {
                let mut stream = tokio::net::TcpStream::connect(&addr).await.expect("connect");
                let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}\r\n");
                stream.write_all(request.as_bytes()).await.expect("send");
                let mut buf = vec![0u8; 64 * 1024];
                while let Ok(n) = stream.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    seen.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            }
        });
        Followed { seen, task }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A stream being read in the background.
struct Followed {
    seen: Arc<Mutex<String>>,
    task: tokio::task::JoinHandle<()>,
}

impl Followed {
    fn text(&self) -> String {
        self.seen.lock().unwrap().clone()
    }

    /// Waits until what arrived satisfies `ready` (or fails the test after `within`).
    async fn wait_for(&self, what: &str, within: Duration, ready: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + within;
        loop {
            let text = self.text();
            if ready(&text) {
                return text;
            }
            assert!(Instant::now() < deadline, "{what} did not arrive in {within:?}; got:\n{text}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Followed {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A streaming GET on the in-process app.
fn follow_in_process(app: &TestApp, path: &str, token: Option<&str>) -> Followed {
    let mut request = Request::get(path);
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let request = request.body(Body::empty()).unwrap();
    let router = app.router.clone();
    let seen = Arc::new(Mutex::new(String::new()));
    let task = tokio::spawn({
        let seen = seen.clone();
        async move {
            let response = router.oneshot(request).await.unwrap();
            let mut body = response.into_body();
            while let Some(Ok(frame)) = body.frame().await {
                if let Some(data) = frame.data_ref() {
                    seen.lock().unwrap().push_str(&String::from_utf8_lossy(data));
                }
            }
        }
    });
    Followed { seen, task }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_replica_shows_a_run_live_and_ends_it_when_its_replica_dies() {
    if !on_postgres() {
        eprintln!("skipped: replicas need PostgreSQL (SLEUTH_TEST_POSTGRES)");
        return;
    }
    let sshd = Sshd::start();
    // B: in process, where the host key was confirmed. A: `sleuth serve` on the
    // same database with a data dir of its own, so it trusts that key and
    // stores output only through the database.
    let b = app_with_host(&sshd).await;
    let mut a = Replica::start(&b.database, &["--no-auth"]);
    let step = command_step(
        &b,
        json!({ "command": "for i in 1 2 3 4 5; do echo line-$i; sleep 0.3; done; echo line-late >&2; sleep 120" }),
    )
    .await;
    let investigation =
        b.get(&format!("/api/v1/steps/{step}")).await.json()["investigation_id"].as_str().unwrap().to_string();
    let events = follow_in_process(&b, &format!("/api/v1/investigations/{investigation}/events"), None);

    let (status, runs) = a.post(&format!("/api/v1/steps/{step}/runs"), json!({})).await;
    assert_eq!(status, 201, "{runs}");
    let run = runs[0]["id"].as_i64().expect("run id");

    // B's viewer of the run gets its output as A's run prints it, line by line.
    let output = follow_in_process(&b, &format!("/api/v1/runs/{run}/stream?offset=0"), None);
    let first = output.wait_for("line-1 on B", Duration::from_secs(20), |t| t.contains("line-1")).await;
    assert!(!first.contains("line-5"), "arrived as it was printed, not at the end: {first}");
    output.wait_for("line-late on B", Duration::from_secs(20), |t| t.contains("line-late")).await;
    events
        .wait_for("the run starting, on B's event stream", Duration::from_secs(10), |t| {
            t.contains(&format!("\"id\":{run},")) && t.contains("\"status\":\"running\"")
        })
        .await;
    assert_eq!(b.get(&format!("/api/v1/runs/{run}")).await.json()["status"], "running");

    // A change made through A: B's pages hear of it.
    let (status, note) = a
        .post(&format!("/api/v1/investigations/{investigation}/steps"), json!({ "kind": "note", "body": "from A" }))
        .await;
    assert_eq!(status, 201, "{note}");
    events.wait_for("a change event on B", Duration::from_secs(10), |t| t.contains("event: change")).await;

    // SIGKILL: no shutdown, no lease given back.
    a.child.kill().expect("kill -9");
    let killed = Instant::now();
    let ended = loop {
        let json = b.get(&format!("/api/v1/runs/{run}")).await.json();
        if json["status"] != "running" {
            break json;
        }
        assert!(killed.elapsed() < Duration::from_secs(30), "still running 30 s after its replica died: {json}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(ended["status"], "interrupted", "{ended}");
    assert!(ended["error"].as_str().unwrap_or_default().contains("stopped answering"), "{ended}");
    // B's viewers are told; the stored output holds all they were shown.
    let shown = output.wait_for("the end of B's stream", Duration::from_secs(10), |t| t.contains("event: end")).await;
    events.wait_for("the interrupted run on B", Duration::from_secs(10), |t| t.contains("interrupted")).await;
    let stored = b.get(&format!("/api/v1/runs/{run}/output")).await.text();
    for line in shown.lines().filter_map(|l| l.strip_prefix("data: ")).filter(|l| l.starts_with("line-")) {
        assert!(stored.contains(line), "{line} was shown but is not stored: {stored:?}");
    }
    assert!(stored.contains("line-5\n") && stored.contains("line-late"), "{stored:?}");
    // Its driver would have indexed its output at the end; B does.
    searched_output(&b, "\"line late\"", run).await;

    // B itself keeps running runs: its own lease is renewed.
    let own = crate::runs::start(&b, step, json!({})).await[0];
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(b.get(&format!("/api/v1/runs/{own}")).await.json()["status"], "running");
    assert_eq!(b.post_json(&format!("/api/v1/runs/{own}/cancel"), json!({})).await.status, 200);
}

/// Searches `app` until `q` finds output of `run` and nothing waits to be indexed.
async fn searched_output(app: &TestApp, q: &str, run: i64) -> Value {
    let uri = format!("/api/v1/search?q={}", crate::helpers::urlencode(q));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let answer = app.get(&uri).await.json();
        let hit = answer["results"].as_array().is_some_and(|r| r.iter().any(|r| r["run_id"] == run));
        if hit && answer["indexing"] == 0 {
            return answer;
        }
        assert!(Instant::now() < deadline, "{q} did not find run {run}'s output in 30 s: {answer}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A replica that dies while indexing a run's output leaves the run claimed;
/// a live one gives it back to the index (within a lease renewal) and indexes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_a_dead_replica_was_indexing_is_indexed_by_another() {
    if !on_postgres() {
        eprintln!("skipped: replicas need PostgreSQL (SLEUTH_TEST_POSTGRES)");
        return;
    }
    let sshd = Sshd::start();
    let b = app_with_host(&sshd).await;
    let step = command_step(&b, json!({ "command": "echo quetzal-marker" })).await;
    let run = crate::runs::start(&b, step, json!({})).await[0];
    crate::runs::finished(&b, run).await;
    searched_output(&b, "quetzal kind:output", run).await;

    // Another replica takes the run for indexing (dropping what was indexed) and
    // dies before it is done: it never renews a lease, as after a SIGKILL.
    let dead = server::db::Store::open(&b.database).await.expect("a second store on the database");
    dead.forget_index().await.expect("runs waiting again");
    assert!(dead.claim_run_for_index(run).await.expect("claim"), "the dead replica's claim");
    let waiting = b.get(&format!("/api/v1/search?q={}", crate::helpers::urlencode("quetzal kind:output"))).await.json();
    assert_eq!(waiting["results"].as_array().map(Vec::len), Some(0), "its rows went with the claim: {waiting}");
    assert_eq!(waiting["indexing"], 1, "and the run waits: {waiting}");

    let released = Instant::now();
    searched_output(&b, "quetzal kind:output", run).await;
    assert!(
        released.elapsed() < server::db::LEASE_RENEW + server::db::LEASE_EXPIRY + Duration::from_secs(5),
        "given back within a renewal after the lease expired: {:?}",
        released.elapsed()
    );
}

const PASSWORD: &str = "correct horse battery staple";

/// The session cookie a sign-in through `replica` sets (`name=value`).
async fn sign_in(replica: &Replica, name: &str, password: &str) -> Option<String> {
    let form = format!("name={name}&password={}", password.replace(' ', "+"));
    let (status, head, _) =
        replica.request("POST", "/auth/login", &[("Content-Type", "application/x-www-form-urlencoded")], &form).await;
    assert_eq!(status, 303, "{head}");
    head.lines()
        .filter_map(|l| l.strip_prefix("set-cookie: ").or_else(|| l.strip_prefix("Set-Cookie: ")))
        .find(|c| !c.contains("Max-Age=0"))
        .and_then(|c| c.split(';').next())
        .map(str::to_string)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_presence_and_the_sign_in_limiter_span_replicas() {
    if !on_postgres() {
        eprintln!("skipped: replicas need PostgreSQL (SLEUTH_TEST_POSTGRES)");
        return;
    }
    let setup = spawn_app_with_accounts().await;
    let auth = setup.auth.clone().unwrap();
    let a = Replica::start(&setup.database, &[]);
    let c = Replica::start(&setup.database, &[]);

    // The setup link one replica printed works through another (once).
    let token = auth.setup_token_if_empty().await.unwrap().expect("no users yet");
    let form = format!("token={token}&name=ada&password={}", PASSWORD.replace(' ', "+"));
    let form_type = [("Content-Type", "application/x-www-form-urlencoded")];
    let (status, head, _) = a.request("POST", "/auth/setup", &form_type, &form).await;
    assert!(status == 303 && head.contains("location: /\r\n"), "{head}");
    let (_, again, _) = c.request("POST", "/auth/setup", &form_type, &form.replace("ada", "eve")).await;
    assert!(again.contains("not%20valid"), "used up everywhere: {again}");
    auth.add_user("bob", PASSWORD, false).await.unwrap();

    // Signed in through A, working through C: sessions are shared.
    let cookie = sign_in(&a, "ada", PASSWORD).await.expect("a session cookie");
    let session = [("Cookie", cookie.as_str()), ("Content-Type", "application/json")];
    let (status, _, body) =
        c.request("POST", "/api/v1/investigations", &session, &json!({ "title": "across replicas" }).to_string()).await;
    assert_eq!(status, 201, "{body}");
    let investigation = serde_json::from_str::<Value>(&body).unwrap()["id"].as_str().unwrap().to_string();
    let member = json!({ "user": "bob", "role": "viewer" }).to_string();
    let (status, _, body) =
        a.request("PUT", &format!("/api/v1/investigations/{investigation}/members"), &session, &member).await;
    assert_eq!(status, 200, "{body}");

    // Presence: ada has it open through A; bob, through C, sees her there.
    let events = format!("/api/v1/investigations/{investigation}/events");
    let _ada = a.follow(&events, &[("Cookie", cookie.as_str())]);
    let bob_cookie = sign_in(&c, "bob", PASSWORD).await.expect("bob's session");
    let bob = c.follow(&events, &[("Cookie", bob_cookie.as_str())]);
    bob.wait_for("ada's presence on C", Duration::from_secs(10), |t| t.contains("event: presence\ndata: [\"ada\"]"))
        .await;
    // And a change through A reaches bob on C.
    let note = json!({ "kind": "note", "body": "hello bob" }).to_string();
    let (status, _, _) =
        a.request("POST", &format!("{}/steps", events.trim_end_matches("/events")), &session, &note).await;
    assert_eq!(status, 201);
    bob.wait_for("ada's change on C", Duration::from_secs(10), |t| t.contains("event: change\ndata: {\"by\":\"ada\"}"))
        .await;

    // Wrong passwords through A and C count together.
    for i in 0..server::auth::limiter::PAIR_FAILURES {
        let through = if i % 2 == 0 { &a } else { &c };
        assert_eq!(sign_in(through, "bob", "wrong wrong wrong").await, None);
    }
    let (_, head, _) = c
        .request(
            "POST",
            "/auth/login",
            &[("Content-Type", "application/x-www-form-urlencoded")],
            &format!("name=bob&password={}", PASSWORD.replace(' ', "+")),
        )
        .await;
    assert!(head.contains("Too%20many") || head.contains("Too+many"), "the right password is refused now: {head}");
    assert_eq!(setup.get("/api/v1/investigations").await.status, StatusCode::UNAUTHORIZED);
}

/// A TCP load balancer in front of replicas (or of PostgreSQL's primary): each
/// connection goes to the next backend in the list that accepts it. Taking a backend out of the list (as
/// a deploy does before stopping it) leaves its open connections alone.
pub struct Proxy {
    pub addr: String,
    backends: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    pub async fn start(backends: Vec<String>) -> Proxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let backends = Arc::new(Mutex::new(backends));
        let task = tokio::spawn({
            let backends = backends.clone();
            async move {
                let mut next = 0usize;
                while let Ok((mut inbound, _)) = listener.accept().await {
                    let list = backends.lock().unwrap().clone();
                    next += 1;
                    let first = next;
                    tokio::spawn(async move {
                        for i in 0..list.len() {
                            if let Ok(mut outbound) =
                                tokio::net::TcpStream::connect(&list[(first + i) % list.len()]).await
                            {
                                let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                                return;
                            }
                        }
                    });
                }
            }
        });
        Proxy { addr, backends, task }
    }

    fn set(&self, backends: &[&Replica]) {
        self.point(backends.iter().map(|r| r.addr.clone()).collect());
    }

    /// New connections go to these addresses from now on.
    pub fn point(&self, backends: Vec<String>) {
        *self.backends.lock().unwrap() = backends;
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A viewer of a run's live output through `addr`, as EventSource does it:
/// when the connection drops before `end`, it connects again from the last
/// event id (a byte offset). Returns the `line-N` numbers in the order they
/// arrived, and how many connections it took.
async fn view_run(addr: String, run: i64) -> (Vec<u32>, usize) {
    let mut offset = 0u64;
    let mut lines = Vec::new();
    let mut connections = 0;
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        assert!(Instant::now() < deadline, "the viewer did not reach the end; it saw {lines:?}");
        let Ok(mut stream) = tokio::net::TcpStream::connect(&addr).await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        connections += 1;
        // HTTP/1.0: the body is the stream itself, up to the close (no chunks).
        let request = format!("GET /api/v1/runs/{run}/stream?offset={offset} HTTP/1.0\r\nHost: {addr}\r\n\r\n");
        if stream.write_all(request.as_bytes()).await.is_err() {
            continue;
        }
        let mut text = String::new();
        let mut buf = vec![0u8; 16 * 1024];
        let mut in_body = false;
        loop {
            // A stream that goes silent past the deadline fails the test, never hangs it.
            let left = deadline.saturating_duration_since(Instant::now());
            let n = match tokio::time::timeout(left, stream.read(&mut buf)).await {
                Ok(Ok(0) | Err(_)) => break,
                Ok(Ok(n)) => n,
                Err(_) => panic!("the viewer's stream went silent; it saw {lines:?} over {connections} connections"),
            };
            text.push_str(&String::from_utf8_lossy(&buf[..n]));
            if !in_body {
                let Some((head, body)) = text.split_once("\r\n\r\n") else { continue };
                if !head.starts_with("HTTP/1.1 200") && !head.starts_with("HTTP/1.0 200") {
                    break; // A replica on its way out, say: try again.
                }
                in_body = true;
                text = body.to_string();
            }
            // Whole frames only; the rest waits for more bytes.
            while let Some((frame, rest)) = text.split_once("\n\n") {
                let (frame, rest) = (frame.to_string(), rest.to_string());
                text = rest;
                let field = |name: &str| frame.lines().find_map(|l| l.strip_prefix(name)).map(str::to_string);
                match field("event: ").as_deref() {
                    Some("output") => {
                        for data in frame.lines().filter_map(|l| l.strip_prefix("data: ")) {
                            for part in data.split("line-").skip(1) {
                                let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
                                lines.extend(digits.parse::<u32>());
                            }
                        }
                        offset = field("id: ").and_then(|id| id.parse().ok()).unwrap_or(offset);
                    }
                    Some("end") => return (lines, connections),
                    _ => {}
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A rolling restart of two replicas behind a load balancer, while a run goes
/// and a viewer follows it through the balancer: the replica the viewer is on
/// stops (its viewer moves to the other one mid-run), comes back, then the
/// replica driving the run stops — taken out of the balancer, it lets the run
/// end within its grace — and comes back. The viewer got every line once, in
/// order; the run `succeeded` with all of it stored; a viewer who came during
/// the second stop, on the new replica, saw it live too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_restart_behind_a_proxy_loses_nothing_a_viewer_saw() {
    use crate::operations::http;
    if !on_postgres() {
        eprintln!("skipped: replicas need PostgreSQL (SLEUTH_TEST_POSTGRES)");
        return;
    }
    let sshd = Sshd::start();
    let b = app_with_host(&sshd).await; // trusts the host key in the shared store
    let flags = ["--no-auth", "--shutdown-grace", "30"];
    let mut one = Replica::start(&b.database, &flags);
    let mut two = Replica::start(&b.database, &flags);
    let step = command_step(&b, json!({ "command": "for i in $(seq 1 60); do echo line-$i; sleep 0.2; done" })).await;

    // The run is driven by `one`; the viewer lands on `two`.
    let proxy = Proxy::start(vec![two.addr.clone()]).await;
    let (status, runs) = one.post(&format!("/api/v1/steps/{step}/runs"), json!({})).await;
    assert_eq!(status, 201, "{runs}");
    let run = runs[0]["id"].as_i64().unwrap();
    let viewer = tokio::spawn(view_run(proxy.addr.clone(), run));
    tokio::time::sleep(Duration::from_secs(2)).await;

    // `two` restarts: out of the balancer, SIGTERM (it drives nothing, so it
    // exits at once), a new `two` in.
    proxy.set(&[&one]);
    two.terminate();
    let (two_was, exited) = tokio::task::spawn_blocking(move || {
        let exited = two.exited_within(Duration::from_secs(20));
        (two, exited)
    })
    .await
    .unwrap();
    assert!(exited.success(), "{exited:?}; its log ends:\n{}", two_was.log_tail());
    drop(two_was);
    let two = Replica::start(&b.database, &flags);
    proxy.set(&[&one, &two]);
    let (status, during) = http(&proxy.addr, "GET", &format!("/api/v1/runs/{run}"), Value::Null).await;
    assert_eq!(status, 200, "{during}");
    assert!(during.contains("\"status\":\"running\""), "{during}");

    // `one`, which drives the run, restarts: out of the balancer, SIGTERM; it
    // lets the run end (within its grace) and then exits.
    proxy.set(&[&two]);
    one.terminate();
    let late = tokio::spawn(view_run(proxy.addr.clone(), run));
    let stopped = tokio::task::spawn_blocking(move || {
        let exited = one.exited_within(Duration::from_secs(60));
        (one, exited)
    });
    let (viewed, connections) = viewer.await.unwrap();
    let (late, _) = late.await.unwrap();
    let (one_was, exited) = stopped.await.unwrap();
    assert!(exited.success(), "{exited:?}; its log ends:\n{}", one_was.log_tail());
    drop(one_was);
    let one = Replica::start(&b.database, &flags);
    proxy.set(&[&one, &two]);

    eprintln!("rolling restart: the viewer followed the run over {connections} connections");
    let all: Vec<u32> = (1..=60).collect();
    assert_eq!(viewed, all, "the viewer, over {connections} connections");
    assert!(connections >= 2, "the viewer moved between replicas ({connections} connection)");
    assert_eq!(late, all, "the viewer who came during the driver's stop");
    let (_, ended) = http(&proxy.addr, "GET", &format!("/api/v1/runs/{run}"), Value::Null).await;
    assert!(ended.contains("\"status\":\"succeeded\""), "{ended}");
    let (_, stored) = http(&proxy.addr, "GET", &format!("/api/v1/runs/{run}/output"), Value::Null).await;
    let stored: Vec<u32> = stored.lines().filter_map(|l| l.strip_prefix("line-")?.parse().ok()).collect();
    assert_eq!(stored, all);
}

/// A replica hears that a run driven elsewhere ended through a notice; when
/// that notice is lost (it started listening late, its connection dropped
/// meanwhile), its viewers must still reach the end: the store is read again
/// after a few seconds without news. Here the run's end is written to the
/// database behind every replica's back, as a lost notice would leave it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_viewer_reaches_the_end_of_a_run_whose_end_notice_was_lost() {
    if !on_postgres() {
        eprintln!("skipped: replicas need PostgreSQL (SLEUTH_TEST_POSTGRES)");
        return;
    }
    let sshd = Sshd::start();
    let b = app_with_host(&sshd).await;
    let a = Replica::start(&b.database, &["--no-auth"]);
    let step = command_step(&b, json!({ "command": "echo line-1; sleep 120" })).await;
    let (status, runs) = a.post(&format!("/api/v1/steps/{step}/runs"), json!({})).await;
    assert_eq!(status, 201, "{runs}");
    let run = runs[0]["id"].as_i64().expect("run id");
    let output = follow_in_process(&b, &format!("/api/v1/runs/{run}/stream?offset=0"), None);
    let lengths = follow_in_process(&b, &format!("/api/v1/runs/{run}/stream?offset=0&offsets_only=true"), None);
    output.wait_for("line-1 on B", Duration::from_secs(20), |t| t.contains("line-1")).await;

    let db = b.sql().await;
    sqlx::query("UPDATE runs SET status = 'succeeded', exit_code = 0 WHERE id = $1")
        .bind(run)
        .execute(&db)
        .await
        .unwrap();
    let ended = Instant::now();
    output.wait_for("the end on B, without its notice", Duration::from_secs(20), |t| t.contains("event: end")).await;
    lengths.wait_for("the end of the lengths stream", Duration::from_secs(20), |t| t.contains("event: end")).await;
    eprintln!("a lost end notice: the viewer ended {:?} after the store said so", ended.elapsed());
    drop(a);
}

/// Two replicas tick for one watch: each firing is claimed in the database,
/// so a watch every second runs about once a second, not once per replica.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_run_a_watch_once_per_firing() {
    if !on_postgres() {
        eprintln!("skipped: replicas need PostgreSQL (SLEUTH_TEST_POSTGRES)");
        return;
    }
    let sshd = Sshd::start();
    let b = app_with_host(&sshd).await;
    let _a = Replica::start(&b.database, &["--no-auth"]);
    let step = command_step(&b, json!({ "command": "true", "telemetry": false })).await;
    let created = b.post_json(&format!("/api/v1/steps/{step}/watch"), json!({ "every_s": 1 })).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    let watch = created.json();
    tokio::time::sleep(Duration::from_secs(8)).await;
    let deleted = b.delete(&format!("/api/v1/watches/{}", watch["id"])).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    let runs = b.get(&format!("/api/v1/steps/{step}/runs")).await.json().as_array().map_or(0, Vec::len);
    assert!((4..=10).contains(&runs), "about one run a second for 8 s, not one per replica: {runs}");
}
