//! Stored data that does not parse as what it should hold (the schema checks
//! that it is JSON, not its shape: a hand edit, a bug, a half-restored
//! backup): the answer names it and says it is unreadable — never a run with
//! no environment, a hypothesis with no evidence, a host never swept.

use axum::http::StatusCode;
use serde_json::{Value, json};

/// The answer to `uri` is a 500 that names `what` and says "unreadable".
async fn unreadable(app: &crate::helpers::TestApp, uri: &str, what: &str) {
    let answer = app.get(uri).await;
    assert_eq!(answer.status, StatusCode::INTERNAL_SERVER_ERROR, "{uri}: {}", answer.text());
    let message = answer.json()["error"]["message"].as_str().unwrap_or_default().to_string();
    assert!(message.contains(what) && message.contains("unreadable"), "{uri}: {message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreadable_stored_json_is_an_error_that_names_it_never_an_empty_value() {
    let sshd = crate::sshd::Sshd::start();
    let app = crate::runs::app_with_host(&sshd).await;
    let step = crate::runs::command_step(&app, json!({ "command": "echo $A", "env": { "A": "1" } })).await;
    let investigation =
        app.get(&format!("/api/v1/steps/{step}")).await.json()["investigation_id"].as_str().unwrap().to_string();
    let run = crate::runs::start(&app, step, json!({})).await[0];
    assert_eq!(crate::runs::finished(&app, run).await["status"], "succeeded");
    let hypothesis = app
        .post_json(
            &format!("/api/v1/investigations/{investigation}/hypotheses"),
            json!({ "statement": "A=1 is enough", "evidence": [step] }),
        )
        .await;
    assert_eq!(hypothesis.status, StatusCode::CREATED, "{}", hypothesis.text());
    let hypothesis = hypothesis.json()["id"].as_i64().unwrap();
    let sql = app.sql().await;
    let set = |query: &'static str, id: Value| {
        let sql = sql.clone();
        async move {
            let bound = sqlx::query(query);
            let bound = match id {
                Value::String(s) => bound.bind(s),
                other => bound.bind(other.as_i64().unwrap()),
            };
            bound.execute(&sql).await.unwrap();
        }
    };

    let env = app.get(&format!("/api/v1/runs/{run}")).await.json()["env"].clone();
    assert_eq!(env, json!([["A", "1"]]));
    set("UPDATE runs SET env = '{\"A\": 1}' WHERE id = $1", json!(run)).await;
    let what = format!("run {run}'s environment");
    unreadable(&app, &format!("/api/v1/runs/{run}"), &what).await;
    unreadable(&app, &format!("/api/v1/investigations/{investigation}"), &what).await;
    // Nothing was lost on the way: the stored value, mended, reads as before.
    set("UPDATE runs SET env = '[[\"A\", \"1\"]]' WHERE id = $1", json!(run)).await;
    assert_eq!(app.get(&format!("/api/v1/runs/{run}")).await.json()["env"], env);

    set("UPDATE hypotheses SET evidence = '[\"seven\"]' WHERE id = $1", json!(hypothesis)).await;
    unreadable(&app, &format!("/api/v1/hypotheses/{hypothesis}"), &format!("hypothesis {hypothesis}'s evidence")).await;
    set("UPDATE hypotheses SET evidence = '[]' WHERE id = $1", json!(hypothesis)).await;

    set("UPDATE hosts SET run_dirs_swept = '[1, 2]' WHERE name = $1", json!("gpu")).await;
    unreadable(&app, "/api/v1/hosts/gpu", "host gpu's last sweep").await;
    set("UPDATE hosts SET run_dirs_swept = NULL WHERE name = $1", json!("gpu")).await;
    assert_eq!(app.get("/api/v1/hosts/gpu").await.status, StatusCode::OK);
}
