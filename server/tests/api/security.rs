//! What issue "safe for a team" asked for, against the real router: a
//! loopback-only `--no-auth`, a policy on every page, remote actions that need a
//! runner and never happen on GET, runs that name the version they saw, event
//! streams that end when access does, a sign-in limiter that holds under a
//! burst, and thousands of malformed requests without one 5xx.

use crate::helpers::{Response, spawn_app, spawn_app_with_accounts};
use crate::permissions::team;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tower::ServiceExt;

#[tokio::test]
async fn without_accounts_only_loopback_names_are_answered() {
    let app = spawn_app().await;
    let body = json!({ "title": "rebound" }).to_string().into_bytes();
    let rebound = app
        .send_with(
            Method::POST,
            "/api/v1/investigations",
            &[
                ("host", "evil.example:3000"),
                ("origin", "http://evil.example:3000"),
                ("content-type", "application/json"),
            ],
            body.clone(),
        )
        .await;
    assert_eq!(rebound.status, StatusCode::FORBIDDEN, "{}", rebound.text());
    assert!(rebound.text().contains("answers only to 127.0.0.1, localhost or [::1]"), "{}", rebound.text());
    let page = app.send_with(Method::GET, "/", &[("host", "evil.example:3000")], vec![]).await;
    assert_eq!(page.status, StatusCode::FORBIDDEN, "reads too: the page lists investigations");
    for host in ["127.0.0.1:3000", "localhost:3000", "[::1]:3000"] {
        let own = app
            .send_with(
                Method::POST,
                "/api/v1/investigations",
                &[("host", host), ("origin", &format!("http://{host}")), ("content-type", "application/json")],
                body.clone(),
            )
            .await;
        assert_eq!(own.status, StatusCode::CREATED, "{host}: {}", own.text());
    }
}

/// The nonces on a page's `<script>` tags.
fn script_nonces(html: &str) -> Vec<String> {
    html.split("<script").skip(1).map(|tag| tag.split('>').next().unwrap_or_default().to_string()).collect()
}

#[tokio::test]
async fn pages_carry_a_policy_that_allows_only_their_own_scripts() {
    let app = spawn_app().await;
    let id = app.investigation("</title><script>alert(1)</script>").await;
    let page = app.get(&format!("/i/{id}")).await;
    assert_eq!(page.status, StatusCode::OK);
    let policy = page.headers["content-security-policy"].to_str().unwrap().to_string();
    let nonce = policy.split("'nonce-").nth(1).and_then(|n| n.split('\'').next()).expect("a nonce").to_string();
    assert!(nonce.len() >= 16, "{policy}");
    for part in ["object-src 'none'", "base-uri 'none'", "frame-ancestors 'none'", "'wasm-unsafe-eval'"] {
        assert!(policy.contains(part), "{part}: {policy}");
    }
    let scripts = policy.split(';').find(|d| d.trim().starts_with("script-src")).unwrap_or_default();
    assert!(!scripts.contains("unsafe-inline"), "{policy}");
    let html = page.text();
    let tags = script_nonces(&html);
    assert!(!tags.is_empty(), "the hydration bootstrap is inline");
    for tag in &tags {
        assert!(tag.contains(&format!("nonce=\"{nonce}\"")), "a script without the page's nonce: <script{tag}>");
    }
    // The title is text in the head, not the end of it.
    assert!(html.contains("<title>&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt; · Sleuth</title>"), "{html}");
    assert!(!html.contains("</title><script>alert(1)"));
    // A second response gets another nonce.
    let again = app.get(&format!("/i/{id}")).await;
    assert!(!again.headers["content-security-policy"].to_str().unwrap().contains(&nonce));
    for response in [&page, &app.get("/api/v1/investigations").await, &app.get("/nowhere").await] {
        assert_eq!(response.headers["x-content-type-options"], "nosniff");
        assert_eq!(response.headers["x-frame-options"], "DENY");
        assert_eq!(response.headers["referrer-policy"], "same-origin");
        assert!(response.headers.contains_key("content-security-policy"));
    }
    let json = app.get("/api/v1/investigations").await;
    assert!(!json.headers["content-security-policy"].to_str().unwrap().contains("nonce"));
}

#[tokio::test]
async fn the_source_page_title_is_text() {
    let app = spawn_app().await;
    let page = app.get("/runs/1/source?file=%3C%2Ftitle%3E%3Cscript%3Ealert(1)%3C%2Fscript%3E.py&line=1").await;
    assert!(!page.text().contains("<script>alert(1)"), "{}", page.text());
}

#[tokio::test]
async fn file_names_too_long_for_any_file_system_are_not_found() {
    let app = spawn_app().await;
    for path in [
        format!("/pkg/{}", "a".repeat(2000)),
        format!("/{}", "b".repeat(300)),
        format!("/pkg/x/{}.js", "c".repeat(256)),
    ] {
        let response = app.get(&path).await;
        assert_eq!(response.status, StatusCode::NOT_FOUND, "{path}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_tests_and_facts_need_a_runner_and_only_admins_choose_the_python() {
    let sshd = crate::sshd::Sshd::start();
    let team = team(&sshd).await;
    let (id, command, _) = team.shared_investigation(&sshd).await;
    let status = |r: Response| r.status;
    // Testing the connection is a remote action.
    for (who, expected) in [("view", 403), ("edit", 403), ("stranger", 403), ("run", 200), ("admin", 200)] {
        let tested = team.call(who, Method::POST, "/api/v1/hosts/gpu/test", Value::Null).await;
        assert_eq!(tested.status.as_u16(), expected, "{who}: {}", tested.text());
    }
    let refused = team.call("edit", Method::POST, "/api/v1/hosts/gpu/facts", Value::Null).await;
    assert!(refused.text().contains("needs the runner role in some investigation"), "{}", refused.text());
    // The python a capture names is used by every automatic capture: admins only.
    let chosen = team.call("run", Method::POST, "/api/v1/hosts/gpu/facts", json!({ "python": "/tmp/evil" })).await;
    assert_eq!(chosen.status, StatusCode::FORBIDDEN, "{}", chosen.text());
    team.ok("admin", Method::POST, "/api/v1/hosts/gpu/facts", json!({ "python": "python3" })).await;
    let captured = team.ok("run", Method::POST, "/api/v1/hosts/gpu/facts", Value::Null).await;
    assert_eq!(captured["python_command"], "python3", "the last python, not a default: {captured}");
    // Reading facts: those who may use the host…
    assert_eq!(status(team.call("view", Method::GET, "/api/v1/hosts/gpu/facts", Value::Null).await), 403);
    team.ok("run", Method::GET, "/api/v1/hosts/gpu/facts", Value::Null).await;
    // …and readers of an investigation whose run points at them.
    let run = team.ok("own", Method::POST, &format!("/api/v1/steps/{command}/runs"), json!({})).await;
    let run_id = run[0]["id"].as_i64().unwrap();
    let mut facts_id = None;
    for _ in 0..200 {
        let run = team.ok("own", Method::GET, &format!("/api/v1/runs/{run_id}"), Value::Null).await;
        if let Some(id) = run["facts_id"].as_i64() {
            facts_id = Some(id);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let facts = format!("/api/v1/facts/{}", facts_id.expect("the run points at facts"));
    team.ok("view", Method::GET, &facts, Value::Null).await;
    assert_eq!(status(team.call("stranger", Method::GET, &facts, Value::Null).await), 404);
    let _ = id;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_step_with_a_run_in_progress_needs_a_runner() {
    let sshd = crate::sshd::Sshd::start();
    let team = team(&sshd).await;
    let (id, _, _) = team.shared_investigation(&sshd).await;
    let steps = format!("/api/v1/investigations/{id}/steps");
    let step =
        team.ok("own", Method::POST, &steps, json!({ "kind": "command", "host": "gpu", "command": "sleep 30" })).await;
    let step = step["id"].as_i64().unwrap();
    let run =
        team.ok("run", Method::POST, &format!("/api/v1/steps/{step}/runs"), json!({})).await[0]["id"].as_i64().unwrap();
    let refused = team.call("edit", Method::DELETE, &format!("/api/v1/steps/{step}"), Value::Null).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.text());
    assert!(refused.text().contains("run in progress"), "{}", refused.text());
    let still = team.ok("own", Method::GET, &format!("/api/v1/runs/{run}"), Value::Null).await;
    assert!(matches!(still["status"].as_str(), Some("queued" | "running")), "{still}");
    assert_eq!(team.call("run", Method::DELETE, &format!("/api/v1/steps/{step}"), Value::Null).await.status, 204);
    // A step with no run in progress is the editor's to delete.
    let note = team.ok("edit", Method::POST, &steps, json!({ "kind": "note", "body": "x" })).await;
    let note = format!("/api/v1/steps/{}", note["id"]);
    assert_eq!(team.call("edit", Method::DELETE, &note, Value::Null).await.status, 204);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_is_of_the_command_its_runner_saw() {
    let sshd = crate::sshd::Sshd::start();
    let team = team(&sshd).await;
    let (_, command, _) = team.shared_investigation(&sshd).await;
    let step = format!("/api/v1/steps/{command}");
    let seen = team.ok("run", Method::GET, &step, Value::Null).await["version"].as_i64().unwrap();
    team.ok("edit", Method::PATCH, &step, json!({ "command": "echo changed; rm -rf /tmp/nothing-here" })).await;
    let runs = format!("/api/v1/steps/{command}/runs");
    let stale = team.call("run", Method::POST, &runs, json!({ "version": seen })).await;
    assert_eq!(stale.status, StatusCode::CONFLICT, "{}", stale.text());
    let message = stale.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("changed by edit") && message.contains("echo changed; rm -rf"), "{message}");
    assert!(message.contains("Nothing ran"), "{message}");
    assert_eq!(team.ok("run", Method::GET, &runs, Value::Null).await.as_array().unwrap().len(), 0);
    let now = team.ok("run", Method::GET, &step, Value::Null).await["version"].as_i64().unwrap();
    assert_eq!(team.call("run", Method::POST, &runs, json!({ "version": now })).await.status, StatusCode::CREATED);
}

/// Opens an event stream as `token` and returns how long it lived, reading it
/// until it ends (or `limit`).
async fn stream_lifetime(router: axum::Router, uri: &str, token: &str, limit: Duration) -> Option<Duration> {
    let request = Request::get(uri).header("authorization", format!("Bearer {token}")).body(Body::empty()).unwrap();
    let response = router.oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let started = Instant::now();
    let mut body = response.into_body();
    tokio::time::timeout(limit, async {
        while let Some(frame) = body.frame().await {
            if frame.is_err() {
                break;
            }
        }
    })
    .await
    .ok()
    .map(|()| started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_streams_end_soon_after_access_is_lost() {
    let sshd = crate::sshd::Sshd::start();
    let team = team(&sshd).await;
    let (id, command, _) = team.shared_investigation(&sshd).await;
    let events = format!("/api/v1/investigations/{id}/events");
    let run = team.ok("own", Method::POST, &format!("/api/v1/steps/{command}/runs"), json!({})).await;
    let _ = run;
    // The viewer's membership is removed two seconds in: their stream ends
    // within the recheck interval (10 s), well inside 30 s.
    let viewer = tokio::spawn({
        let (router, token) = (team.app.router.clone(), team.token("view"));
        let events = events.clone();
        async move { stream_lifetime(router, &events, &token, Duration::from_secs(40)).await }
    });
    tokio::time::sleep(Duration::from_secs(2)).await;
    team.ok(
        "own",
        Method::PUT,
        &format!("/api/v1/investigations/{id}/members"),
        json!({ "user": "view", "role": "none" }),
    )
    .await;
    let lived = viewer.await.unwrap().expect("the viewer's stream ended");
    assert!(lived < Duration::from_secs(15), "lived {lived:?}");
    // A runner whose token is revoked: the same.
    let runner = tokio::spawn({
        let (router, token) = (team.app.router.clone(), team.token("run"));
        async move { stream_lifetime(router, &events, &token, Duration::from_secs(40)).await }
    });
    tokio::time::sleep(Duration::from_secs(2)).await;
    let auth = team.app.auth.clone().unwrap();
    let tokens = auth.tokens("run").await.unwrap();
    auth.revoke_token("run", tokens[0].id).await.unwrap();
    let lived = runner.await.unwrap().expect("the revoked token's stream ended");
    assert!(lived < Duration::from_secs(15), "lived {lived:?}");
}

/// Measured in a process of its own (see `runs::a_hundred_megabytes_of_output_with_bounded_memory`).
#[test]
fn a_burst_of_sign_ins_is_bounded() {
    crate::helpers::in_a_process_of_its_own("security::sign_in_burst_in_a_process_of_its_own");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by a_burst_of_sign_ins_is_bounded in a process of its own"]
async fn sign_in_burst_in_a_process_of_its_own() {
    use server::auth::limiter::{CLIENT_FAILURES, CONCURRENT_CHECKS, PAIR_FAILURES};
    let app = spawn_app_with_accounts().await;
    app.auth.clone().unwrap().add_user("ada", "correct horse battery", false).await.unwrap();
    let sign_in = |name: String| {
        let router = app.router.clone();
        async move {
            let form = format!("name={name}&password=guess+number+one&next=/");
            let request = Request::post("/auth/login")
                .header("content-type", "application/x-www-form-urlencoded")
                .body(Body::from(form))
                .unwrap();
            let response = router.oneshot(request).await.unwrap();
            response.headers()["location"].to_str().unwrap().to_string()
        }
    };
    let before = crate::helpers::peak_rss_kb();
    // 60 guesses at one name at once: only the pair's budget is verified.
    let guesses: Vec<String> = futures::future::join_all((0..60).map(|_| sign_in("ada".into()))).await;
    let verified = guesses.iter().filter(|l| l.contains("Wrong")).count();
    let refused = guesses.iter().filter(|l| l.contains("Too+many") || l.contains("Too%20many")).count();
    assert!(verified <= PAIR_FAILURES, "{verified} verified: {guesses:?}");
    assert_eq!(verified + refused, 60, "{guesses:?}");
    // 60 names at once from one address: the address's budget, CONCURRENT_CHECKS at a time.
    let names: Vec<String> = futures::future::join_all((0..60).map(|i| sign_in(format!("user{i}")))).await;
    let verified = names.iter().filter(|l| l.contains("Wrong")).count();
    assert!(verified <= CLIENT_FAILURES, "{verified} verified");
    let growth_mb = crate::helpers::peak_rss_kb().saturating_sub(before) / 1024;
    // argon2 takes 19 MiB a check: unbounded, 60 at once would be over a gigabyte.
    let bound = (CONCURRENT_CHECKS as u64) * 19 + 48;
    println!("sign-in burst: peak RSS grew {growth_mb} MB (bound {bound} MB)");
    assert!(growth_mb <= bound, "peak RSS grew {growth_mb} MB");
}

/// A tiny deterministic generator (xorshift), so the fuzz cases are the same every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_malformed_requests_get_no_5xx() {
    let app = spawn_app().await;
    let id = app.investigation("fuzzed").await;
    let step = app.note(&id, "a note").await["id"].as_i64().unwrap();
    // (path, the methods it takes); other methods are tried too, less often.
    let routes: Vec<(&str, Vec<Method>)> = [
        ("/api/v1/investigations", "GET POST"),
        ("/api/v1/investigations/{id}", "GET PATCH DELETE"),
        ("/api/v1/investigations/{id}/steps", "POST"),
        ("/api/v1/investigations/{id}/members", "GET PUT"),
        ("/api/v1/investigations/{id}/comments", "POST"),
        ("/api/v1/investigations/{id}/shares", "GET POST"),
        ("/api/v1/investigations/{id}/measurements", "GET POST"),
        ("/api/v1/investigations/{id}/overview", "GET"),
        ("/api/v1/investigations/{id}/chart.svg", "GET"),
        ("/api/v1/investigations/{id}/extractors", "GET POST"),
        ("/api/v1/investigations/{id}/extractors/{x}", "DELETE"),
        ("/api/v1/investigations/{id}/hypotheses", "GET POST"),
        ("/api/v1/investigations/{id}/replay", "POST"),
        ("/api/v1/replays/{n}", "GET"),
        ("/api/v1/replays", "POST"),
        ("/api/v1/investigations/{id}/provenance", "GET"),
        ("/api/v1/comments/{n}", "PATCH"),
        ("/api/v1/mentions", "GET"),
        ("/api/v1/mentions/read", "POST"),
        ("/api/v1/shares/{n}", "DELETE"),
        ("/api/v1/shared/{x}", "GET"),
        ("/api/v1/measurements/{n}", "DELETE"),
        ("/api/v1/hypotheses/{n}", "GET PATCH DELETE"),
        ("/api/v1/steps/{step}", "GET PATCH DELETE"),
        ("/api/v1/steps/{step}/runs", "GET POST"),
        ("/api/v1/steps/{step}/refresh", "POST"),
        ("/api/v1/steps/{step}/duplicate", "POST"),
        ("/api/v1/steps/{step}/frontier", "GET"),
        ("/api/v1/steps/{step}/history", "GET"),
        ("/api/v1/steps/{step}/watch", "POST"),
        ("/api/v1/watches", "GET"),
        ("/api/v1/watches/{n}", "GET DELETE"),
        ("/api/v1/steps/{step}/annotations", "POST"),
        ("/api/v1/annotations/{n}", "GET PATCH DELETE"),
        ("/api/v1/runs/{n}", "GET"),
        ("/api/v1/runs/{n}/cancel", "POST"),
        ("/api/v1/runs/{n}/output", "GET"),
        ("/api/v1/runs/{n}/engine", "GET"),
        ("/api/v1/runs/{n}/source", "POST"),
        ("/api/v1/extract", "POST"),
        ("/api/v1/audit", "GET"),
        ("/api/v1/hosts", "GET POST"),
        ("/api/v1/hosts/import", "POST"),
        ("/api/v1/hosts/{x}", "GET PUT DELETE"),
        ("/api/v1/hosts/{x}/trust", "POST"),
        ("/api/v1/hosts/{x}/passphrase", "POST"),
        ("/api/v1/hosts/{x}/facts", "GET POST"),
        ("/api/v1/hosts/{x}/access", "GET PUT"),
        ("/api/v1/facts/{n}", "GET"),
        ("/api/v1/{x}", "GET POST"),
        ("/", "GET"),
        ("/hosts", "GET"),
        ("/login", "GET"),
        ("/setup", "GET"),
        ("/tokens", "GET"),
        ("/audit", "GET"),
        ("/mentions", "GET"),
        ("/i/{id}", "GET"),
        ("/i/{x}", "GET"),
        ("/s/{x}", "GET"),
        ("/runs/{n}/source", "GET"),
        ("/replays/{n}", "GET"),
        ("/pkg/{x}", "GET"),
        ("/{x}", "GET"),
        ("/highlight.css", "GET"),
        ("/healthz", "GET"),
        ("/auth/login", "POST"),
        ("/auth/logout", "POST"),
        ("/auth/setup", "POST"),
    ]
    .into_iter()
    .map(|(path, methods)| (path, methods.split(' ').map(|m| Method::from_bytes(m.as_bytes()).unwrap()).collect()))
    .collect();
    let server_fns: Vec<(String, Method)> = leptos::server_fn::axum::server_fn_paths()
        .map(|(path, method)| (path.to_string(), Method::from_bytes(method.as_str().as_bytes()).unwrap()))
        .collect();
    assert!(server_fns.len() > 20, "the pages' server functions: {server_fns:?}");
    let long = "x".repeat(3000);
    let segments = [
        "1",
        "0",
        "-1",
        "999999999999999999999999",
        "abc",
        "%00",
        "..%2F..%2Fetc%2Fpasswd",
        "%2e%2e",
        "🙂",
        "%ZZ",
        "a%0d%0aSet-Cookie:x=1",
        "<script>",
        long.as_str(),
        "1.5",
        "true",
        "null",
        "%FF%FE",
    ];
    let deep = format!("{}1{}", "[".repeat(5000), "]".repeat(5000));
    let big = format!("{{\"title\":\"{}\"}}", "x".repeat(3 * 1024 * 1024));
    let bodies: Vec<(Option<&str>, Vec<u8>)> = vec![
        (None, vec![]),
        (Some("application/json"), b"{".to_vec()),
        (Some("application/json"), b"[]".to_vec()),
        (Some("application/json"), b"null".to_vec()),
        (Some("application/json"), br#"{"title": 5, "body": [], "kind": {"a": 1}}"#.to_vec()),
        (Some("application/json"), br#"{"kind":"command","host":"nowhere","command":"true","env":{"A":1}}"#.to_vec()),
        (Some("application/json"), br#"{"kind":"note","body":"\u0000<script>"}"#.to_vec()),
        (Some("application/json"), br#"{"repeat": -1, "warmup": 1e309, "version": "x"}"#.to_vec()),
        (Some("application/json"), br#"{"file": "x.py", "line": 18446744073709551616}"#.to_vec()),
        (Some("application/json"), deep.clone().into_bytes()),
        (Some("application/json"), big.clone().into_bytes()),
        (Some("application/json"), vec![0xff, 0xfe, 0x00, 0x80]),
        (Some("application/x-www-form-urlencoded"), b"a=1&a=2&%ZZ=&=&&".to_vec()),
        (Some("application/x-www-form-urlencoded"), b"investigation=x&body=%00&step_id=abc&version=-".to_vec()),
        (Some("text/plain"), b"tok 12\n".to_vec()),
        (Some("multipart/form-data; boundary=x"), b"--x\r\nbroken".to_vec()),
        (Some("application/cbor"), vec![0xa1, 0x61]),
    ];
    let queries =
        ["", "?", "?offset=-1&limit=x", "?metric=%00", "?wait=1e999", "?file=%3Cx%3E&line=abc", "?known=-5", "?a[b]=1"];
    let methods =
        [Method::GET, Method::POST, Method::PUT, Method::PATCH, Method::DELETE, Method::HEAD, Method::OPTIONS];
    let mut rng = Rng(0x5eed_cafe_f00d_d00d);
    let mut seen = std::collections::BTreeMap::<u16, usize>::new();
    const CASES: usize = 3000;
    for case in 0..CASES {
        let (path, mut method) = if rng.below(5) == 0 {
            rng.pick(&server_fns).clone()
        } else {
            let (route, methods) = rng.pick(&routes);
            let method = rng.pick(methods).clone();
            let (a, b, c, d) = (*rng.pick(&segments), *rng.pick(&segments), *rng.pick(&segments), *rng.pick(&segments));
            let (real_id, real_step) = (rng.below(3) != 0, rng.below(3) != 0);
            let path = route
                .replace("{id}", if real_id { &id } else { a })
                .replace("{step}", &if real_step { step.to_string() } else { b.to_string() })
                .replace("{n}", c)
                .replace("{x}", d);
            (path, method)
        };
        if rng.below(8) == 0 {
            method = rng.pick(&methods).clone();
        }
        let uri = format!("{path}{}", rng.pick(&queries));
        let (content_type, body) = rng.pick(&bodies).clone();
        let mut request = Request::builder().method(method.clone()).uri(&uri);
        if let Some(content_type) = content_type {
            request = request.header("content-type", content_type);
        }
        if rng.below(4) == 0 {
            request = request.header("accept", "text/html");
        }
        let Ok(request) = request.body(Body::from(body)) else { continue }; // not a valid URI: no request at all
        let response = app.router.clone().oneshot(request).await.expect("infallible");
        let status = response.status();
        *seen.entry(status.as_u16()).or_default() += 1;
        assert!(!status.is_server_error(), "case {case}: {method} {uri} ({content_type:?}) answered {status}: {}", {
            let bytes = response.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
            String::from_utf8_lossy(&bytes).chars().take(300).collect::<String>()
        });
    }
    println!("statuses over {CASES} malformed requests: {seen:?}");
    assert!(seen.len() >= 5, "the cases reach many kinds of answer: {seen:?}");
    // Still healthy, and still doing its job.
    assert_eq!(app.get("/healthz").await.status, StatusCode::OK);
    let after = app.investigation("after the fuzz").await;
    assert_eq!(app.get(&format!("/api/v1/investigations/{after}")).await.status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn source_searches_and_exports_follow_the_roles() {
    let sshd = crate::sshd::Sshd::start();
    let team = team(&sshd).await;
    let (_, command, _) = team.shared_investigation(&sshd).await;
    let runs = team.ok("own", Method::POST, &format!("/api/v1/steps/{command}/runs"), json!({})).await;
    let run = runs[0]["id"].as_i64().unwrap();
    for _ in 0..200 {
        let now = team.ok("own", Method::GET, &format!("/api/v1/runs/{run}"), Value::Null).await;
        if now["status"] == "succeeded" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Searching the run's host for a file runs a script there: runners only.
    let search = format!("/api/v1/runs/{run}/source");
    let file = json!({ "file": "model.py", "line": 3 });
    for (who, expected) in [("view", 403), ("edit", 403), ("stranger", 404), ("run", 200), ("admin", 200)] {
        let found = team.call(who, Method::POST, &search, file.clone()).await;
        assert_eq!(found.status.as_u16(), expected, "{who}: {}", found.text());
    }
    // A run's output, whole or as a download: whoever may read the investigation.
    let download = format!("/api/v1/runs/{run}/output?download=1");
    for (who, expected) in [("view", 200), ("stranger", 404)] {
        let got = team.call(who, Method::GET, &download, Value::Null).await;
        assert_eq!(got.status.as_u16(), expected, "{who}");
    }
    assert_eq!(team.call("view", Method::GET, &download, Value::Null).await.text(), "hi\n");
    // The audit log and its CSV export: admins only, and the search is in it.
    for who in ["own", "run", "view"] {
        let refused = team.call(who, Method::GET, "/api/v1/audit?format=csv", Value::Null).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{who}");
    }
    let csv = team.call("admin", Method::GET, "/api/v1/audit?format=csv", Value::Null).await;
    assert_eq!(csv.status, StatusCode::OK);
    assert!(csv.text().lines().any(|l| l.contains("source.search") && l.contains("\"run\"")), "{}", csv.text());
}
