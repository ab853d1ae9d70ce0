//! View-only share links: who may create them, what they show to someone
//! without an account (read-only; hosts hidden on request; no credentials),
//! and the clear refusal once revoked or expired.

use crate::permissions::team;
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn share_links_show_one_investigation_read_only_until_revoked_or_expired() {
    let sshd = crate::sshd::Sshd::start();
    let team = team(&sshd).await;
    let (id, _, _) = team.shared_investigation(&sshd).await;
    // Output that names the host's address, to see it hidden.
    let steps = format!("/api/v1/investigations/{id}/steps");
    let step = team
        .ok("own", Method::POST, &steps, json!({ "kind": "command", "host": "gpu", "command": "echo via 127.0.0.1" }))
        .await;
    let runs = team.ok("own", Method::POST, &format!("/api/v1/steps/{}/runs", step["id"]), json!({})).await;
    let run = runs[0]["id"].as_i64().unwrap();
    for _ in 0..300 {
        let now = team.ok("own", Method::GET, &format!("/api/v1/runs/{run}"), Value::Null).await;
        if now["status"] == "succeeded" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }

    // Only owners (and admins) share.
    let shares = format!("/api/v1/investigations/{id}/shares");
    for (user, status) in [
        ("run", StatusCode::FORBIDDEN),
        ("edit", StatusCode::FORBIDDEN),
        ("view", StatusCode::FORBIDDEN),
        ("stranger", StatusCode::NOT_FOUND),
    ] {
        assert_eq!(team.call(user, Method::POST, &shares, json!({})).await.status, status, "{user}");
    }
    let bad = team.call("own", Method::POST, &shares, json!({ "expires_in_days": 0 })).await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", bad.text());
    let open = team.ok("own", Method::POST, &shares, json!({ "label": "for vLLM folks", "expires_in_days": 7 })).await;
    let hidden = team.ok("own", Method::POST, &shares, json!({ "hide_hosts": true })).await;
    let url = |link: &Value| link["url"].as_str().unwrap().to_string();
    let token = |link: &Value| url(link).trim_start_matches("/s/").to_string();
    assert_eq!(open["link"]["state"], "active");
    assert!(open["link"]["expires_at"].is_string());

    // Anyone with the link reads it, without an account; nothing else opens.
    let anonymous = |uri: String| {
        let app = &team.app;
        async move { app.send_with(Method::GET, &uri, &[], vec![]).await }
    };
    let json = anonymous(format!("/api/v1/shared/{}", token(&open))).await;
    assert_eq!(json.status, StatusCode::OK, "{}", json.text());
    let view = json.json();
    assert_eq!(view["investigation"]["title"], "shared");
    assert_eq!(view["shared_by"], "own");
    assert_eq!(
        view["investigation"]["abilities"],
        json!({ "comment": false, "edit": false, "run": false, "own": false, "named": false })
    );
    assert!(view["investigation"].get("members").is_none(), "the team's names stay inside");
    let key = sshd.client_key.display().to_string();
    assert!(!json.text().contains(&key), "no key path");
    let page = anonymous(url(&open)).await;
    assert_eq!(page.status, StatusCode::OK);
    let html = page.text();
    // The command (highlighted, so in pieces) and its output, "via 127.0.0.1".
    assert!(
        html.contains("shared") && html.contains("class=\"command-line\"") && html.contains("via 127.0.0.1"),
        "the investigation and its steps"
    );
    assert!(html.contains("A view-only link shared by own"), "its terms");
    assert!(!html.contains("action=\"/api/"), "no forms");
    assert!(!html.contains(&key));
    let signed_out = anonymous(format!("/i/{id}")).await;
    assert_eq!(signed_out.status, StatusCode::SEE_OTHER, "the investigation itself still needs an account");

    // Hidden hosts: renamed in host fields, the address gone from commands and output.
    let view = anonymous(format!("/api/v1/shared/{}", token(&hidden))).await.text();
    assert!(!view.contains("127.0.0.1") && view.contains("(address hidden)"), "{view}");
    assert!(view.contains(r#""host":"host 1""#) && !view.contains(r#""host":"gpu""#), "{view}");
    let html = anonymous(url(&hidden)).await.text();
    assert!(!html.contains("127.0.0.1") && html.contains("host names and addresses are hidden"));

    // Revoked: a clear page, never the content. Only owners revoke.
    let revoke = format!("/api/v1/shares/{}", open["link"]["id"]);
    assert_eq!(team.call("view", Method::DELETE, &revoke, Value::Null).await.status, StatusCode::FORBIDDEN);
    assert_eq!(team.ok("own", Method::DELETE, &revoke, Value::Null).await["state"], "revoked");
    let gone = anonymous(format!("/api/v1/shared/{}", token(&open))).await;
    assert_eq!(gone.status, StatusCode::GONE);
    assert!(gone.text().contains("was revoked on"), "{}", gone.text());
    let page = anonymous(url(&open)).await;
    assert_eq!(page.status, StatusCode::GONE);
    assert!(page.text().contains("This link no longer works") && !page.text().contains("via 127.0.0.1"));

    // Expired: as if a week had passed.
    let soon = team.ok("own", Method::POST, &shares, json!({ "expires_in_days": 1 })).await;
    let db = team.app.sql().await;
    sqlx::query("UPDATE share_links SET expires_at = 1 WHERE id = $1")
        .bind(soon["link"]["id"].as_i64())
        .execute(&db)
        .await
        .unwrap();
    let expired = anonymous(format!("/api/v1/shared/{}", token(&soon))).await;
    assert_eq!(expired.status, StatusCode::GONE);
    assert!(expired.text().contains("expired on 1970-01-01"), "{}", expired.text());
    assert_eq!(anonymous("/api/v1/shared/not-a-token".into()).await.status, StatusCode::NOT_FOUND);

    // Owners see every link and its state; no token is ever listed again.
    let list = team.ok("own", Method::GET, &shares, Value::Null).await;
    let states: Vec<&str> = list.as_array().unwrap().iter().map(|l| l["state"].as_str().unwrap()).collect();
    assert_eq!(states, ["revoked", "active", "expired"]);
    for link in [&open, &hidden, &soon] {
        assert!(!list.to_string().contains(&token(link)));
    }
}

/// A link shows no watch (its creator, its webhook, the team's history page)
/// and no replay: nobody on the team is named, no team-only page is linked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_share_link_shows_no_watch_and_no_replay() {
    let sshd = crate::sshd::Sshd::start();
    let team = team(&sshd).await;
    let (id, command, _) = team.shared_investigation(&sshd).await;
    let watch = json!({ "cron": "0 3 * * *", "webhook": "https://hooks.example.com/services/T0/B0/x" });
    team.ok("run", Method::POST, &format!("/api/v1/steps/{command}/watch"), watch).await;
    let inside = team.ok("view", Method::GET, &format!("/api/v1/investigations/{id}"), Value::Null).await;
    assert_eq!(inside["watches"].as_array().map(Vec::len), Some(1), "the team sees it");
    let link = team.ok("own", Method::POST, &format!("/api/v1/investigations/{id}/shares"), json!({})).await;
    let url = link["url"].as_str().unwrap().to_string();
    let token = url.trim_start_matches("/s/");
    let json = team.app.send_with(Method::GET, &format!("/api/v1/shared/{token}"), &[], vec![]).await.text();
    assert!(
        !json.contains("\"watches\"")
            && !json.contains("hooks.example.com")
            && !json.contains("\"created_by\":\"run\""),
        "{json}"
    );
    let page = team.app.send_with(Method::GET, &url, &[], vec![]).await.text();
    assert!(!page.contains("watch-banner") && !page.contains("/history?step="), "no team page is linked");
    assert!(!page.contains("Replay on"), "no replay form for a link's reader");
}
