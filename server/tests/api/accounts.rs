//! Accounts: signing in, sessions, API tokens, the first admin's setup link, the
//! sign-in limiter, cross-site refusal, and `--no-auth` on loopback only.

use crate::helpers::{Response, TestApp, spawn_app, spawn_app_with_accounts};
use axum::http::{Method, StatusCode};
use serde_json::json;
use std::io::Write;
use std::process::{Command, Stdio};

const PASSWORD: &str = "correct horse battery";

/// `sleuth ARGS…` on the test app's data dir, with `stdin`.
fn sleuth(app: &TestApp, args: &[&str], stdin: &str) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sleuth"))
        .args(args)
        .envs(app.store_env())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sleuth runs");
    child.stdin.take().expect("stdin").write_all(stdin.as_bytes()).expect("write stdin");
    child.wait_with_output().expect("sleuth exits")
}

async fn sign_in(app: &TestApp, name: &str, password: &str, next: &str) -> Response {
    let form = format!("name={name}&password={}&next={next}", password.replace(' ', "+"));
    app.send_with(Method::POST, "/auth/login", &[("content-type", "application/x-www-form-urlencoded")], form.into())
        .await
}

fn location(response: &Response) -> String {
    response.headers.get("location").map(|l| l.to_str().unwrap().to_string()).unwrap_or_default()
}

fn session_of(response: &Response) -> String {
    let cookie = response.headers.get("set-cookie").expect("a session cookie").to_str().unwrap();
    cookie.split(';').next().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_needs_a_sign_in_and_tokens_open_the_api() {
    let app = spawn_app_with_accounts().await;
    let api = app.get("/api/v1/investigations").await;
    assert_eq!(api.status, StatusCode::UNAUTHORIZED);
    assert_eq!(api.error_code(), "unauthenticated");
    let page = app.get("/i/abc?x=1").await;
    assert_eq!(page.status, StatusCode::SEE_OTHER);
    assert_eq!(location(&page), "/login?next=/i/abc%3Fx%3D1");
    assert_eq!(app.get("/login").await.status, StatusCode::OK);
    assert_eq!(app.get("/healthz").await.status, StatusCode::OK);

    // Users and tokens from a shell, on the data dir the server is using.
    let added = sleuth(&app, &["user", "add", "ada", "--admin", "--password-stdin"], &format!("{PASSWORD}\n"));
    assert!(added.status.success(), "{}", String::from_utf8_lossy(&added.stderr));
    let again = sleuth(&app, &["user", "add", "ADA", "--password-stdin"], &format!("{PASSWORD}\n"));
    assert!(!again.status.success() && String::from_utf8_lossy(&again.stderr).contains("already"));
    let short = sleuth(&app, &["user", "add", "bob", "--password-stdin"], "short\n");
    assert!(String::from_utf8_lossy(&short.stderr).contains("at least 10"), "{short:?}");
    let created = sleuth(&app, &["token", "create", "--user", "ada", "--label", "ci"], "");
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let token = String::from_utf8(created.stdout).unwrap().trim().to_string();
    assert_eq!(token.len(), 43, "{token}");

    let bearer = format!("Bearer {token}");
    let with_token = |method, uri: &str, body: serde_json::Value| {
        let headers = [("authorization", bearer.as_str()), ("content-type", "application/json")];
        let uri = uri.to_string();
        let app = &app;
        async move { app.send_with(method, &uri, &headers, body.to_string().into()).await }
    };
    let made = with_token(Method::POST, "/api/v1/investigations", json!({ "title": "by token" })).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
    let listed = with_token(Method::GET, "/api/v1/investigations", json!(null)).await;
    assert_eq!(listed.status, StatusCode::OK);
    assert!(!listed.text().contains(&token), "the token never comes back");
    let wrong = app.send_with(Method::GET, "/api/v1/investigations", &[("authorization", "Bearer nope")], vec![]).await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    assert!(wrong.text().contains("not valid"), "{}", wrong.text());

    // Signing in: a wrong password goes back to the form with the reason.
    let failed = sign_in(&app, "ada", "wrong password", "/").await;
    assert_eq!(failed.status, StatusCode::SEE_OTHER);
    assert!(location(&failed).starts_with("/login?error=Wrong%20name%20or%20password"), "{}", location(&failed));
    assert!(failed.headers.get("set-cookie").is_none());
    let ok = sign_in(&app, "ada", PASSWORD, "/i/abc").await;
    assert_eq!(location(&ok), "/i/abc");
    let cookie_line = ok.headers["set-cookie"].to_str().unwrap();
    assert!(cookie_line.contains("HttpOnly") && cookie_line.contains("SameSite=Lax"), "{cookie_line}");
    assert!(!cookie_line.contains("Secure"), "plain http here: {cookie_line}");
    let session = session_of(&ok);
    let home = app.send_with(Method::GET, "/", &[("cookie", &session)], vec![]).await;
    assert_eq!(home.status, StatusCode::OK);
    assert!(home.text().contains("class=\"me\"") && home.text().contains(">ada<"), "the name in the top bar");
    assert!(home.text().contains("by token"));
    for secret in ["$argon2id$", token.as_str(), session.split('=').nth(1).unwrap()] {
        assert!(!home.text().contains(secret), "no secret in pages");
    }
    // An open redirect is not possible through `next`.
    assert_eq!(location(&sign_in(&app, "ada", PASSWORD, "//evil.example").await), "/");

    let out = app.send_with(Method::POST, "/auth/logout", &[("cookie", &session)], vec![]).await;
    assert_eq!(location(&out), "/login");
    assert!(out.headers["set-cookie"].to_str().unwrap().contains("Max-Age=0"));
    let after = app.send_with(Method::GET, "/api/v1/investigations", &[("cookie", &session)], vec![]).await;
    assert_eq!(after.status, StatusCode::UNAUTHORIZED, "the session ended on the server too");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guessing_passwords_is_slowed_down() {
    let app = spawn_app_with_accounts().await;
    app.auth.as_ref().unwrap().add_user("ada", PASSWORD, false).await.unwrap();
    for _ in 0..5 {
        let failed = sign_in(&app, "ada", "guess guess guess", "/").await;
        assert!(location(&failed).contains("Wrong"), "{}", location(&failed));
    }
    let locked = sign_in(&app, "ada", PASSWORD, "/").await;
    assert!(location(&locked).contains("Too%20many%20wrong%20passwords"), "{}", location(&locked));
    assert!(locked.headers.get("set-cookie").is_none(), "even the right password waits");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_setup_link_creates_the_first_admin_once() {
    let app = spawn_app_with_accounts().await;
    let auth = app.auth.clone().unwrap();
    let token = auth.setup_token_if_empty().await.unwrap().expect("no users: a setup token");
    let setup = |token: String, name: &'static str| {
        let app = &app;
        async move {
            let form = format!("token={token}&name={name}&password={}", PASSWORD.replace(' ', "+"));
            app.send_with(
                Method::POST,
                "/auth/setup",
                &[("content-type", "application/x-www-form-urlencoded")],
                form.into(),
            )
            .await
        }
    };
    let page = app.get(&format!("/setup?token={token}")).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.text().contains("Create the first admin"));
    let forged = setup("x".repeat(43), "mallory").await;
    assert!(location(&forged).contains("not%20valid"), "{}", location(&forged));
    let made = setup(token.clone(), "ada").await;
    assert_eq!(location(&made), "/");
    let session = session_of(&made);
    let me = app.send_with(Method::GET, "/", &[("cookie", &session)], vec![]).await;
    assert!(me.text().contains(">ada<"));
    let again = setup(token.clone(), "eve").await;
    assert!(location(&again).contains("not%20valid"), "used up: {}", location(&again));
    let used = app.get(&format!("/setup?token={token}")).await.text();
    assert!(used.contains("This setup link was used") && !used.contains("id=\"setup\""), "no form for a used link");
    assert!(auth.setup_token_if_empty().await.unwrap().is_none(), "users exist now");
}

#[tokio::test]
async fn changes_from_other_sites_are_refused() {
    let app = spawn_app().await; // even without accounts: 127.0.0.1 is reachable from any page
    let body = json!({ "title": "csrf" }).to_string();
    let post = |origin: &'static str| {
        let body = body.clone();
        let app = &app;
        async move {
            let headers = [("content-type", "application/json"), ("host", "127.0.0.1:3000"), ("origin", origin)];
            app.send_with(Method::POST, "/api/v1/investigations", &headers, body.into()).await
        }
    };
    let evil = post("https://evil.example").await;
    assert_eq!(evil.status, StatusCode::FORBIDDEN, "{}", evil.text());
    assert_eq!(evil.error_code(), "forbidden");
    assert_eq!(post("http://127.0.0.1:3000").await.status, StatusCode::CREATED);
    let form = app
        .send_with(
            Method::POST,
            "/api/create_investigation",
            &[("content-type", "application/x-www-form-urlencoded"), ("sec-fetch-site", "cross-site")],
            b"title=x".to_vec(),
        )
        .await;
    assert_eq!(form.status, StatusCode::FORBIDDEN, "server functions too");
    let listed = app.get("/api/v1/investigations").await.json();
    assert_eq!(listed.as_array().unwrap().len(), 1, "only the same-origin one was made");
}

#[test]
fn no_auth_is_refused_off_loopback() {
    let out = Command::new(env!("CARGO_BIN_EXE_sleuth"))
        .args(["serve", "--no-auth", "--addr", "0.0.0.0:0", "--data"])
        .arg(tempfile::tempdir().unwrap().path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("127.0.0.1 / ::1 only"), "{out:?}");
}

/// `(method, uri, json)` as the given token's user.
async fn as_user(app: &TestApp, token: &str, method: Method, uri: &str, body: serde_json::Value) -> Response {
    let bearer = format!("Bearer {token}");
    let headers = [("authorization", bearer.as_str()), ("content-type", "application/json")];
    let body = if body.is_null() { Vec::new() } else { body.to_string().into_bytes() };
    app.send_with(method, uri, &headers, body).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_actions_are_audited_and_hosts_are_for_admins() {
    let sshd = crate::sshd::Sshd::start();
    let app = spawn_app_with_accounts().await;
    let auth = app.auth.clone().unwrap();
    auth.add_user("ada", PASSWORD, true).await.unwrap();
    auth.add_user("bob", PASSWORD, false).await.unwrap();
    let ada = auth.create_token("ada", "test").await.unwrap().token;
    let bob = auth.create_token("bob", "test").await.unwrap().token;

    let host = json!({ "name": "gpu", "hostname": "127.0.0.1", "port": sshd.port, "user": crate::sshd::whoami(),
                       "identity_file": sshd.client_key.display().to_string() });
    let refused = as_user(&app, &bob, Method::POST, "/api/v1/hosts", host.clone()).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.text());
    assert!(refused.text().contains("Only admins may add hosts"));
    assert_eq!(as_user(&app, &ada, Method::POST, "/api/v1/hosts", host).await.status, StatusCode::CREATED);
    let fingerprint = json!({ "fingerprint": sshd.host_key_fingerprint() });
    assert_eq!(
        as_user(&app, &bob, Method::POST, "/api/v1/hosts/gpu/trust", fingerprint.clone()).await.status,
        StatusCode::FORBIDDEN
    );
    let trusted = as_user(&app, &ada, Method::POST, "/api/v1/hosts/gpu/trust", fingerprint).await;
    assert_eq!(trusted.status, StatusCode::OK, "{}", trusted.text());

    // bob runs a command; the run says who started it.
    let inv = as_user(&app, &bob, Method::POST, "/api/v1/investigations", json!({ "title": "audit" })).await.json();
    let steps = format!("/api/v1/investigations/{}/steps", inv["id"].as_str().unwrap());
    let step = as_user(
        &app,
        &bob,
        Method::POST,
        &steps,
        json!({ "kind": "command", "host": "gpu", "command": "echo $NCCL_PROTO", "env": { "NCCL_PROTO": "LL" } }),
    )
    .await
    .json();
    let runs = as_user(&app, &bob, Method::POST, &format!("/api/v1/steps/{}/runs", step["id"]), json!({})).await.json();
    let run = runs[0]["id"].as_i64().unwrap();
    assert_eq!(runs[0]["who"], "bob");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while as_user(&app, &bob, Method::GET, &format!("/api/v1/runs/{run}"), json!(null)).await.json()["status"]
        != "succeeded"
    {
        assert!(std::time::Instant::now() < deadline, "the run did not finish");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }

    let denied = as_user(&app, &bob, Method::GET, "/api/v1/audit", json!(null)).await;
    assert_eq!(denied.status, StatusCode::FORBIDDEN);
    let log = as_user(&app, &ada, Method::GET, "/api/v1/audit", json!(null)).await.json();
    let find = |action: &str| {
        log.as_array()
            .unwrap()
            .iter()
            .find(|e| e["action"] == action)
            .unwrap_or_else(|| panic!("{action} in {log}"))
            .clone()
    };
    let trust = find("host.trust");
    assert_eq!((trust["who"].as_str(), trust["host"].as_str()), (Some("ada"), Some("gpu")));
    assert_eq!(trust["target"], sshd.host_key_fingerprint());
    let start = find("run.start");
    assert_eq!(start["who"], "bob");
    assert_eq!(start["target"], "echo $NCCL_PROTO");
    assert_eq!(start["env"], json!([["NCCL_PROTO", "LL"]]));
    assert_eq!(start["run_id"], run);
    assert_eq!(find("run.end")["outcome"], "succeeded (exit 0)");
    assert_eq!(find("facts.capture")["who"], "sleuth", "the day's first run captured facts by itself");
    assert!(
        log.as_array().unwrap().iter().all(|e| e["action"] != "host.trust" || e["who"] != "bob"),
        "refused: not logged as done"
    );

    let csv = as_user(&app, &ada, Method::GET, "/api/v1/audit?format=csv", json!(null)).await;
    assert_eq!(csv.headers["content-type"], "text/csv; charset=utf-8");
    let text = csv.text();
    assert!(text.starts_with("id,at,who,action,host,target,env,outcome,run_id\n"), "{text}");
    assert!(text.contains(r#""bob","run.start","gpu","echo $NCCL_PROTO","NCCL_PROTO=LL""#), "{text}");
    let page = app.send_with(Method::GET, "/audit", &[("authorization", &format!("Bearer {ada}"))], vec![]).await;
    assert!(page.text().contains("data-action=\"run.start\""), "the audit page lists it");
    for secret in [ada.as_str(), bob.as_str(), "$argon2id$"] {
        assert!(!text.contains(secret) && !log.to_string().contains(secret), "no secrets in the audit log");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admins_list_reset_and_remove_users_from_a_shell() {
    let app = spawn_app_with_accounts().await;
    for (name, admin) in [("ada", true), ("bob", false)] {
        let mut args = vec!["user", "add", name, "--password-stdin"];
        if admin {
            args.push("--admin");
        }
        assert!(sleuth(&app, &args, &format!("{PASSWORD}\n")).status.success());
    }
    let listed = sleuth(&app, &["user", "list"], "");
    assert_eq!(String::from_utf8_lossy(&listed.stdout), "ada (admin)\nbob\n");

    // Bob owns an investigation, signed in and with a token.
    let session = session_of(&sign_in(&app, "bob", PASSWORD, "/").await);
    let token =
        String::from_utf8_lossy(&sleuth(&app, &["token", "create", "--user", "bob"], "").stdout).trim().to_string();
    let bearer = format!("Bearer {token}");
    let as_bob = || {
        let (app, bearer) = (&app, bearer.clone());
        async move {
            app.send_with(Method::GET, "/api/v1/investigations", &[("authorization", bearer.as_str())], vec![]).await
        }
    };
    assert_eq!(as_bob().await.status, StatusCode::OK);

    // A new password ends his sessions (not his tokens); the old password no longer works.
    let reset = sleuth(&app, &["user", "password", "bob", "--password-stdin"], "another long password\n");
    assert!(reset.status.success(), "{}", String::from_utf8_lossy(&reset.stderr));
    let old_session = app.send_with(Method::GET, "/api/v1/investigations", &[("cookie", &session)], vec![]).await;
    assert_eq!(old_session.status, StatusCode::UNAUTHORIZED);
    assert!(location(&sign_in(&app, "bob", PASSWORD, "/").await).starts_with("/login?error="), "old password refused");
    assert_eq!(location(&sign_in(&app, "bob", "another long password", "/").await), "/");
    let short = sleuth(&app, &["user", "password", "bob", "--password-stdin"], "short\n");
    assert!(!short.status.success() && String::from_utf8_lossy(&short.stderr).contains("at least 10"));

    // Removing him ends his token and his roles; the last admin stays.
    let ada =
        String::from_utf8_lossy(&sleuth(&app, &["token", "create", "--user", "ada"], "").stdout).trim().to_string();
    let ada_bearer = format!("Bearer {ada}");
    let json_headers = [("authorization", ada_bearer.as_str()), ("content-type", "application/json")];
    let inv = app
        .send_with(Method::POST, "/api/v1/investigations", &json_headers, json!({ "title": "t" }).to_string().into())
        .await
        .json();
    let members = format!("/api/v1/investigations/{}/members", inv["id"].as_str().unwrap());
    let body = json!({ "user": "bob", "role": "editor" }).to_string();
    assert!(app.send_with(Method::PUT, &members, &json_headers, body.into()).await.status.is_success());
    let removed = sleuth(&app, &["user", "remove", "bob"], "");
    assert!(removed.status.success(), "{}", String::from_utf8_lossy(&removed.stderr));
    assert_eq!(as_bob().await.status, StatusCode::UNAUTHORIZED);
    let left = app.send_with(Method::GET, &members, &json_headers, vec![]).await.json();
    assert_eq!(left, json!([{ "user": "ada", "role": "owner" }]));
    let last = sleuth(&app, &["user", "remove", "ada"], "");
    assert!(!last.status.success() && String::from_utf8_lossy(&last.stderr).contains("last admin"));
    assert!(String::from_utf8_lossy(&sleuth(&app, &["user", "remove", "nobody"], "").stderr).contains("no user"));
}

async fn welcome(app: &TestApp, url: &str, password: &str) -> Response {
    let token = url.strip_prefix("/welcome?token=").expect("a welcome link");
    let form = format!("token={token}&password={}", password.replace(' ', "+"));
    app.send_with(Method::POST, "/auth/welcome", &[("content-type", "application/x-www-form-urlencoded")], form.into())
        .await
}

/// Users from the browser's API: added with a one-time sign-in link (not a
/// password sent around), reset, made admins, removed; admins only; audited.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admins_add_reset_and_remove_users_with_one_time_sign_in_links() {
    let app = spawn_app_with_accounts().await;
    let auth = app.auth.clone().unwrap();
    auth.add_user("ada", PASSWORD, true).await.unwrap();
    auth.add_user("bob", PASSWORD, false).await.unwrap();
    let ada = auth.create_token("ada", "test").await.unwrap().token;
    let bob = auth.create_token("bob", "test").await.unwrap().token;

    // Others get 403, for every operation.
    for (method, uri, body) in [
        (Method::GET, "/api/v1/users", json!(null)),
        (Method::POST, "/api/v1/users", json!({ "name": "carol" })),
        (Method::PATCH, "/api/v1/users/ada", json!({ "admin": false })),
        (Method::POST, "/api/v1/users/ada/reset", json!(null)),
        (Method::DELETE, "/api/v1/users/ada", json!(null)),
    ] {
        let refused = as_user(&app, &bob, method.clone(), uri, body).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{method} {uri}: {}", refused.text());
        assert!(refused.text().contains("Only admins may"), "{}", refused.text());
    }

    let added = as_user(&app, &ada, Method::POST, "/api/v1/users", json!({ "name": "carol", "admin": false })).await;
    assert_eq!(added.status, StatusCode::CREATED, "{}", added.text());
    let link = added.json();
    let url = link["url"].as_str().unwrap().to_string();
    assert!(url.starts_with("/welcome?token=") && url.len() > 50, "{url}");
    assert_eq!((link["user"]["name"].as_str(), link["user"]["admin"].as_bool()), (Some("carol"), Some(false)));
    assert!(link["user"]["link_expires_at"].is_string(), "{link}");
    let again = as_user(&app, &ada, Method::POST, "/api/v1/users", json!({ "name": "CAROL" })).await;
    assert_eq!(again.status, StatusCode::CONFLICT, "{}", again.text());
    for bad in [json!({ "name": "<script>" }), json!({ "name": "" }), json!({ "name": "x", "password": "p" })] {
        let refused = as_user(&app, &ada, Method::POST, "/api/v1/users", bad.clone()).await;
        assert!(refused.status.is_client_error(), "{bad}: {}", refused.status);
    }
    let listed = as_user(&app, &ada, Method::GET, "/api/v1/users", json!(null)).await.json();
    let names: Vec<&str> = listed.as_array().unwrap().iter().map(|u| u["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["ada", "bob", "carol"]);
    assert!(!listed.to_string().contains("argon2") && !listed.to_string().contains(&url[15..]), "no secrets listed");

    // Carol cannot sign in before choosing a password; the page names her; the link works once.
    assert!(location(&sign_in(&app, "carol", "!", "/").await).contains("Wrong"));
    let page = app.get(&url).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.text().contains("Welcome, carol") && page.text().contains("id=\"welcome\""), "{}", page.text());
    let short = welcome(&app, &url, "short").await;
    assert!(location(&short).contains("at%20least%2010"), "{}", location(&short));
    let chosen = welcome(&app, &url, "carol's own password").await;
    assert_eq!(location(&chosen), "/", "signed in: {}", location(&chosen));
    let session = session_of(&chosen);
    let home = app.send_with(Method::GET, "/", &[("cookie", &session)], vec![]).await;
    assert!(home.text().contains(">carol<"), "signed in as carol");
    let reused = welcome(&app, &url, "another password!").await;
    assert!(location(&reused).contains("does%20not%20work"), "{}", location(&reused));
    let used_page = app.get(&url).await.text();
    assert!(used_page.contains("does not work any more") && !used_page.contains("id=\"welcome\""));
    assert_eq!(location(&sign_in(&app, "carol", "carol's own password", "/x").await), "/x");

    // A reset: the old password and the session stop working; a new link.
    let reset = as_user(&app, &ada, Method::POST, "/api/v1/users/carol/reset", json!(null)).await;
    assert_eq!(reset.status, StatusCode::OK, "{}", reset.text());
    let new_url = reset.json()["url"].as_str().unwrap().to_string();
    assert_ne!(new_url, url);
    let after = app.send_with(Method::GET, "/api/v1/investigations", &[("cookie", &session)], vec![]).await;
    assert_eq!(after.status, StatusCode::UNAUTHORIZED, "her sessions ended");
    assert!(location(&sign_in(&app, "carol", "carol's own password", "/").await).contains("Wrong"));
    assert_eq!(location(&welcome(&app, &new_url, "a brand new password").await), "/");
    let unknown = as_user(&app, &ada, Method::POST, "/api/v1/users/nobody/reset", json!(null)).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);

    // Admins: made and unmade; never the last one.
    let made = as_user(&app, &ada, Method::PATCH, "/api/v1/users/carol", json!({ "admin": true })).await;
    assert_eq!(made.json()["admin"], true, "{}", made.text());
    let unmade = as_user(&app, &ada, Method::PATCH, "/api/v1/users/carol", json!({ "admin": false })).await;
    assert_eq!(unmade.json()["admin"], false);
    let last = as_user(&app, &ada, Method::PATCH, "/api/v1/users/ada", json!({ "admin": false })).await;
    assert_eq!(last.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", last.text());
    assert!(last.text().contains("last admin"));
    let last = as_user(&app, &ada, Method::DELETE, "/api/v1/users/ada", json!(null)).await;
    assert!(last.text().contains("last admin"), "{}", last.text());

    // Removed: gone from the list, her link and token with her.
    let pending = as_user(&app, &ada, Method::POST, "/api/v1/users/carol/reset", json!(null)).await.json();
    let removed = as_user(&app, &ada, Method::DELETE, "/api/v1/users/carol", json!(null)).await;
    assert_eq!(removed.status, StatusCode::NO_CONTENT, "{}", removed.text());
    let gone = welcome(&app, pending["url"].as_str().unwrap(), "a password for a ghost").await;
    assert!(location(&gone).contains("does%20not%20work"), "{}", location(&gone));
    let listed = as_user(&app, &ada, Method::GET, "/api/v1/users", json!(null)).await.json();
    assert_eq!(listed.as_array().unwrap().len(), 2);

    // Each change in the audit log, by whom and to whom.
    let audit = as_user(&app, &ada, Method::GET, "/api/v1/audit", json!(null)).await.json();
    let said: Vec<String> = audit
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"].as_str().unwrap().starts_with("user."))
        .map(|e| {
            format!(
                "{} {} {} {}",
                e["who"].as_str().unwrap(),
                e["action"].as_str().unwrap(),
                e["target"].as_str().unwrap(),
                e["outcome"].as_str().unwrap_or("")
            )
        })
        .collect();
    for expected in [
        "ada user.add carol ok",
        "ada user.reset carol ok",
        "ada user.make_admin carol ok",
        "ada user.unmake_admin carol ok",
        "ada user.remove carol ok",
    ] {
        assert!(said.iter().any(|s| s == expected), "{expected} in {said:#?}");
    }
    assert!(said.iter().any(|s| s.starts_with("ada user.add CAROL error: There is a user")), "{said:#?}");
    assert!(!audit.to_string().contains("welcome?token"), "no link in the audit log");
}
