//! The whole matrix of roles × actions, through the JSON API and through the
//! pages' server functions, plus host allow-lists.

use crate::helpers::{Response, TestApp, spawn_app_with_accounts};
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

const PASSWORD: &str = "correct horse battery";

pub struct Team {
    pub app: TestApp,
    tokens: std::collections::HashMap<&'static str, String>,
}

impl Team {
    pub fn token(&self, who: &str) -> String {
        self.tokens[who].clone()
    }

    pub async fn call(&self, who: &str, method: Method, uri: &str, body: Value) -> Response {
        let bearer = format!("Bearer {}", self.tokens[who]);
        let headers = [("authorization", bearer.as_str()), ("content-type", "application/json")];
        let body = if body.is_null() { Vec::new() } else { body.to_string().into_bytes() };
        self.app.send_with(method, uri, &headers, body).await
    }

    /// A signed-in browser's cookie for `who` (pages take sessions, not tokens).
    pub async fn session(&self, who: &str) -> String {
        let form = format!("name={who}&password={}&next=/", PASSWORD.replace(' ', "+"));
        let headers = [("content-type", "application/x-www-form-urlencoded")];
        let signed = self.app.send_with(Method::POST, "/auth/login", &headers, form.into()).await;
        signed.headers["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_string()
    }

    /// A page as `who` sees it.
    pub async fn page(&self, who: &str, uri: &str) -> String {
        let cookie = self.session(who).await;
        self.app.send_with(Method::GET, uri, &[("cookie", &cookie)], vec![]).await.text()
    }

    pub async fn ok(&self, who: &str, method: Method, uri: &str, body: Value) -> Value {
        let response = self.call(who, method.clone(), uri, body).await;
        assert!(response.status.is_success(), "{who} {method} {uri}: {} {}", response.status, response.text());
        if response.body.is_empty() { Value::Null } else { response.json() }
    }

    /// An investigation of `own` shared with runner/editor/viewer, with a
    /// command step and a snippet step; returns (id, command step, snippet step).
    pub async fn shared_investigation(&self, sshd: &crate::sshd::Sshd) -> (String, i64, i64) {
        let inv = self.ok("own", Method::POST, "/api/v1/investigations", json!({ "title": "shared" })).await;
        let id = inv["id"].as_str().unwrap().to_string();
        for (user, role) in [("run", "runner"), ("edit", "editor"), ("view", "viewer")] {
            let members = format!("/api/v1/investigations/{id}/members");
            self.ok("own", Method::PUT, &members, json!({ "user": user, "role": role })).await;
        }
        let steps = format!("/api/v1/investigations/{id}/steps");
        let command = self
            .ok("own", Method::POST, &steps, json!({ "kind": "command", "host": "gpu", "command": "echo hi" }))
            .await;
        let file = sshd.dir.path().join("model.py");
        std::fs::write(&file, (1..=20).map(|i| format!("line {i}\n")).collect::<String>()).unwrap();
        let snippet = self
            .ok(
                "own",
                Method::POST,
                &steps,
                json!({ "kind": "snippet", "host": "gpu", "path": file.display().to_string(), "start": 1, "end": 10 }),
            )
            .await;
        (id, command["id"].as_i64().unwrap(), snippet["id"].as_i64().unwrap())
    }
}

pub async fn team(sshd: &crate::sshd::Sshd) -> Team {
    let app = spawn_app_with_accounts().await;
    let auth = app.auth.clone().unwrap();
    let mut tokens = std::collections::HashMap::new();
    for (name, admin) in [
        ("admin", true),
        ("own", false),
        ("run", false),
        ("edit", false),
        ("view", false),
        ("stranger", false),
        ("extra", false),
    ] {
        auth.add_user(name, PASSWORD, admin).await.unwrap();
        tokens.insert(name, auth.create_token(name, "test").await.unwrap().token);
    }
    let team = Team { app, tokens };
    let host = json!({ "name": "gpu", "hostname": "127.0.0.1", "port": sshd.port, "user": crate::sshd::whoami(),
                       "identity_file": sshd.client_key.display().to_string() });
    team.ok("admin", Method::POST, "/api/v1/hosts", host).await;
    team.ok("admin", Method::POST, "/api/v1/hosts/gpu/trust", json!({ "fingerprint": sshd.host_key_fingerprint() }))
        .await;
    team
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_role_may_do_what_it_should_and_nothing_more() {
    let sshd = crate::sshd::Sshd::start();
    let team = team(&sshd).await;
    let (id, command, snippet) = team.shared_investigation(&sshd).await;

    // (user, [read, edit, annotate, run, share, delete]) → the status each gets.
    use StatusCode as S;
    let (ok, made, gone, no, hidden) = (S::OK, S::CREATED, S::NO_CONTENT, S::FORBIDDEN, S::NOT_FOUND);
    let matrix = [
        ("own", [ok, made, made, made, ok, gone]),
        ("admin", [ok, made, made, made, ok, gone]),
        ("run", [ok, made, made, made, no, no]),
        ("edit", [ok, made, made, no, no, no]),
        ("view", [ok, no, no, no, no, no]),
        ("stranger", [hidden, hidden, hidden, hidden, hidden, hidden]),
    ];
    for (user, expected) in matrix {
        // Deleting is tried on an investigation of its own, shared the same way.
        let (doomed, _, _) = team.shared_investigation(&sshd).await;
        let got = [
            team.call(user, Method::GET, &format!("/api/v1/investigations/{id}"), Value::Null).await,
            team.call(
                user,
                Method::POST,
                &format!("/api/v1/investigations/{id}/steps"),
                json!({ "kind": "note", "body": "hi" }),
            )
            .await,
            team.call(
                user,
                Method::POST,
                &format!("/api/v1/steps/{snippet}/annotations"),
                json!({ "start": 2, "end": 3, "body": "why" }),
            )
            .await,
            team.call(user, Method::POST, &format!("/api/v1/steps/{command}/runs"), json!({})).await,
            team.call(
                user,
                Method::PUT,
                &format!("/api/v1/investigations/{id}/members"),
                json!({ "user": "extra", "role": "viewer" }),
            )
            .await,
            team.call(user, Method::DELETE, &format!("/api/v1/investigations/{doomed}"), Value::Null).await,
        ];
        let statuses: Vec<StatusCode> = got.iter().map(|r| r.status).collect();
        assert_eq!(statuses, expected, "{user}: {:?}", got.iter().map(Response::text).collect::<Vec<_>>());
        if user == "edit" {
            assert!(got[3].text().contains("needs the runner role; you are its editor"), "{}", got[3].text());
        }
    }

    // Lists show only what one may read; output and charts follow the investigation.
    let team = &team;
    let listed = |user| async move { team.call(user, Method::GET, "/api/v1/investigations", Value::Null).await.json() };
    assert!(!listed("stranger").await.to_string().contains(&id));
    assert!(listed("view").await.to_string().contains(&id));
    let runs = team.ok("own", Method::GET, &format!("/api/v1/steps/{command}/runs"), Value::Null).await;
    let run = runs[0]["id"].as_i64().unwrap();
    assert_eq!(
        team.call("stranger", Method::GET, &format!("/api/v1/runs/{run}/output"), Value::Null).await.status,
        hidden
    );
    assert_eq!(team.call("view", Method::GET, &format!("/api/v1/runs/{run}/output"), Value::Null).await.status, ok);
    assert_eq!(
        team.call("stranger", Method::GET, &format!("/api/v1/investigations/{id}/events"), Value::Null).await.status,
        hidden
    );
    assert_eq!(team.call("view", Method::POST, &format!("/api/v1/runs/{run}/cancel"), Value::Null).await.status, no);
    let members = team.ok("view", Method::GET, &format!("/api/v1/investigations/{id}/members"), Value::Null).await;
    assert_eq!(members[0], json!({ "user": "own", "role": "owner" }), "{members}");
    let orphan = team
        .call(
            "own",
            Method::PUT,
            &format!("/api/v1/investigations/{id}/members"),
            json!({ "user": "own", "role": "viewer" }),
        )
        .await;
    assert_eq!(orphan.status, StatusCode::UNPROCESSABLE_ENTITY, "the last owner stays");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_functions_check_the_same_roles() {
    let sshd = crate::sshd::Sshd::start();
    let team = team(&sshd).await;
    let (id, command, snippet) = team.shared_investigation(&sshd).await;
    let (viewer, editor, owner) = (team.session("view").await, team.session("edit").await, team.session("own").await);
    let page_of = |cookie: String| {
        let (app, id) = (&team.app, id.clone());
        async move { app.send_with(Method::GET, &format!("/i/{id}"), &[("cookie", &cookie)], vec![]).await.text() }
    };
    // The viewer's page offers no form that changes anything; the editor's none that runs.
    let viewers = page_of(viewer.clone()).await;
    for name in ["add_note", "add_command", "start_runs", "set_member", "delete_investigation"] {
        assert!(!viewers.contains(&format!("action=\"/api/{name}")), "a viewer is offered {name}");
    }
    let editors = page_of(editor.clone()).await;
    assert!(editors.contains("action=\"/api/add_note") && !editors.contains("action=\"/api/start_runs"));
    // Viewers take part by commenting (not by resolving threads).
    assert!(viewers.contains("action=\"/api/add_comment"), "a viewer may comment");
    let said = team
        .call(
            "view",
            Method::POST,
            &format!("/api/v1/investigations/{id}/comments"),
            json!({ "step_id": command, "body": "why LL?" }),
        )
        .await;
    assert_eq!(said.status, StatusCode::CREATED, "{}", said.text());
    let comment = said.json()["id"].as_i64().unwrap();
    let resolved =
        team.call("view", Method::PATCH, &format!("/api/v1/comments/{comment}"), json!({ "resolved": true })).await;
    assert_eq!(resolved.status, StatusCode::FORBIDDEN, "{}", resolved.text());
    assert!(!page_of(viewer.clone()).await.contains("action=\"/api/resolve_comment"));
    // Hosts: a non-admin is offered no form he may not submit, and sees no path on the server.
    let hosts = team.app.send_with(Method::GET, "/hosts", &[("cookie", &viewer)], vec![]).await.text();
    assert!(hosts.contains("data-host=\"gpu\""), "the host is listed");
    for name in [
        "add_host",
        "update_host",
        "set_host_price",
        "remove_host",
        "import_hosts",
        "trust_host",
        "test_host",
        "capture_host_facts",
    ] {
        assert!(!hosts.contains(&format!("action=\"/api/{name}")), "a viewer is offered {name}");
    }
    let key = sshd.client_key.display().to_string();
    assert!(!hosts.contains(&key), "no key path for a viewer");
    let priced = team.call("view", Method::PATCH, "/api/v1/hosts/gpu", json!({ "price_per_hour": 1.0 })).await;
    assert_eq!(priced.status, StatusCode::FORBIDDEN, "only admins price hosts: {}", priced.text());
    let listed = team.call("view", Method::GET, "/api/v1/hosts", Value::Null).await.text();
    assert!(!listed.contains(&key) && listed.contains("\"can_manage\":false"), "{listed}");
    let admins = team.call("admin", Method::GET, "/api/v1/hosts", Value::Null).await.text();
    assert!(admins.contains(&key) && admins.contains("\"can_manage\":true"), "{admins}");
    let runners = team.session("run").await;
    let runner_hosts = team.app.send_with(Method::GET, "/hosts", &[("cookie", &runners)], vec![]).await.text();
    assert!(runner_hosts.contains("action=\"/api/test_host") && !runner_hosts.contains("action=\"/api/add_host"));
    // The owner's page names the server functions' addresses; others post to them by hand.
    let page = page_of(owner).await;
    let action = |name: &str| {
        let at = page.find(&format!("action=\"/api/{name}")).unwrap_or_else(|| panic!("a form for {name}"));
        page[at + 8..].split('"').next().unwrap().to_string()
    };
    let post = |cookie: &str, url: String, form: String| {
        let app = &team.app;
        let cookie = cookie.to_string();
        async move {
            let headers = [
                ("cookie", cookie.as_str()),
                ("content-type", "application/x-www-form-urlencoded"),
                ("accept", "application/json"),
            ];
            app.send_with(Method::POST, &url, &headers, form.into()).await
        }
    };
    let note = format!("investigation={id}&body=from+a+form");
    let refused = post(&viewer, action("add_note"), note.clone()).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.text());
    assert!(refused.text().contains("you are its viewer"), "{}", refused.text());
    assert!(post(&editor, action("add_note"), note).await.status.is_success());
    let run = format!("step_id={command}&repeat=1&warmup=0");
    assert_eq!(post(&editor, action("start_runs"), run.clone()).await.status, StatusCode::FORBIDDEN);
    let stranger = team.session("stranger").await;
    let hidden = team.app.send_with(Method::GET, &format!("/i/{id}"), &[("cookie", &stranger)], vec![]).await;
    assert_eq!(hidden.status, StatusCode::NOT_FOUND, "a page one may not read does not exist for them");

    // The whole matrix, as through the API: read (the page), edit (a note),
    // annotate, run, share (a role for someone) and delete (an investigation of
    // its own, shared the same way), each through the form's server function.
    use StatusCode as S;
    let (ok, no, gone) = (S::OK, S::FORBIDDEN, S::NOT_FOUND);
    let matrix = [
        ("own", [ok, ok, ok, ok, ok, ok]),
        ("admin", [ok, ok, ok, ok, ok, ok]),
        ("run", [ok, ok, ok, ok, no, no]),
        ("edit", [ok, ok, ok, no, no, no]),
        ("view", [ok, no, no, no, no, no]),
        ("stranger", [gone, gone, gone, gone, gone, gone]),
    ];
    for (user, expected) in matrix {
        let cookie = team.session(user).await;
        let (doomed, _, _) = team.shared_investigation(&sshd).await;
        let read = team.app.send_with(Method::GET, &format!("/i/{id}"), &[("cookie", &cookie)], vec![]).await;
        let got = [
            read,
            post(&cookie, action("add_note"), format!("investigation={id}&body=from+{user}")).await,
            post(&cookie, action("add_annotation"), format!("step_id={snippet}&start=2&end=3&body=why&author=")).await,
            post(&cookie, action("start_runs"), format!("step_id={command}&repeat=1&warmup=0")).await,
            post(&cookie, action("set_member"), format!("investigation={id}&user=extra&role=viewer")).await,
            post(&cookie, action("delete_investigation"), format!("id={doomed}")).await,
        ];
        let statuses: Vec<StatusCode> = got.iter().map(|r| r.status).collect();
        let texts: Vec<String> = got.iter().skip(1).map(Response::text).collect();
        assert_eq!(statuses, expected, "{user}: {texts:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosts_can_be_kept_to_some_users() {
    let sshd = crate::sshd::Sshd::start();
    let team = team(&sshd).await;
    let (_, command, _) = team.shared_investigation(&sshd).await;
    let access = json!({ "whole_team": false, "users": ["own"] });
    assert_eq!(
        team.call("own", Method::PUT, "/api/v1/hosts/gpu/access", access.clone()).await.status,
        StatusCode::FORBIDDEN
    );
    team.ok("admin", Method::PUT, "/api/v1/hosts/gpu/access", access).await;
    let refused = team.call("run", Method::POST, &format!("/api/v1/steps/{command}/runs"), json!({})).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert!(refused.text().contains("may not run on \\\"gpu\\\""), "{}", refused.text());
    assert_eq!(
        team.call("own", Method::POST, &format!("/api/v1/steps/{command}/runs"), json!({})).await.status,
        StatusCode::CREATED
    );
    let unknown = team
        .call("admin", Method::PUT, "/api/v1/hosts/gpu/access", json!({ "whole_team": false, "users": ["nobody"] }))
        .await;
    assert_eq!(unknown.status, StatusCode::UNPROCESSABLE_ENTITY);
}

/// An investigation's guard bounds: read by a viewer, set by an editor, not by a viewer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guard_bounds_are_read_by_readers_and_set_by_editors() {
    let sshd = crate::sshd::Sshd::start();
    let team = team(&sshd).await;
    let (id, _, _) = team.shared_investigation(&sshd).await;
    let path = format!("/api/v1/investigations/{id}/guards");
    let read = team.ok("view", Method::GET, &path, Value::Null).await;
    assert_eq!(read["bounds"]["prefix_hit_warn_pct"], 5.0, "{read}");
    let refused = team.call("view", Method::PUT, &path, json!({ "spec_drift_pct": 2 })).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.text());
    let set = team.ok("edit", Method::PUT, &path, json!({ "spec_drift_pct": 2 })).await;
    assert_eq!(set["bounds"]["spec_drift_pct"], 2.0, "{set}");
    assert_eq!(team.call("stranger", Method::GET, &path, Value::Null).await.status, StatusCode::NOT_FOUND);
}
