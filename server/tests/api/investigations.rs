use crate::helpers::spawn_app;
use axum::http::{Method, StatusCode, header};
use serde_json::json;

#[tokio::test]
async fn healthz_answers() {
    let app = spawn_app().await;
    let response = app.get("/healthz").await;
    assert_eq!(response.status, StatusCode::OK);
    assert_eq!(response.json()["status"], "ok");
}

#[tokio::test]
async fn create_then_list_newest_first_with_step_counts() {
    let app = spawn_app().await;
    let response = app
        .post_json(
            "/api/v1/investigations",
            json!({ "title": "  TP=8 decode at 57.5 tok/s ", "question": "Why is decode slow?" }),
        )
        .await;
    assert_eq!(response.status, StatusCode::CREATED);
    let created = response.json();
    let id = created["id"].as_str().unwrap().to_string();
    assert_eq!(created["title"], "TP=8 decode at 57.5 tok/s", "title is trimmed");
    assert_eq!(created["question"], "Why is decode slow?");
    assert_eq!(created["status"], "open");
    assert_eq!(created["url"], format!("/i/{id}"));
    assert_eq!(response.headers[header::LOCATION], format!("/i/{id}").as_str());
    assert_eq!(created["steps"], json!([]));

    let second = app.investigation("NCCL_PROTO sweep").await;
    app.note(&id, "first").await;
    app.note(&id, "second").await;

    let list = app.get("/api/v1/investigations").await.json();
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["id"], second.as_str(), "newest first");
    assert_eq!(list[0]["step_count"], 0);
    assert_eq!(list[1]["id"], id.as_str());
    assert_eq!(list[1]["step_count"], 2);
}

#[tokio::test]
async fn bad_bodies_get_clear_4xx_errors() {
    let app = spawn_app().await;
    let uri = "/api/v1/investigations";

    let missing = app.post_json(uri, json!({ "question": "no title" })).await;
    assert_eq!(missing.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(missing.error_code(), "invalid");
    assert!(missing.text().contains("title"), "{}", missing.text());

    let blank = app.post_json(uri, json!({ "title": "   " })).await;
    assert_eq!(blank.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(blank.text().contains("cannot be empty"));

    let long = app.post_json(uri, json!({ "title": "x".repeat(201) })).await;
    assert_eq!(long.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(long.text().contains("201 characters"), "{}", long.text());

    let long_question = app.post_json(uri, json!({ "title": "t", "question": "q".repeat(4001) })).await;
    assert_eq!(long_question.status, StatusCode::UNPROCESSABLE_ENTITY);

    let wrong_type = app.post_json(uri, json!({ "title": 42 })).await;
    assert_eq!(wrong_type.status, StatusCode::UNPROCESSABLE_ENTITY);

    let malformed = app.send(Method::POST, uri, Some("application/json"), b"{\"title\": ".to_vec()).await;
    assert_eq!(malformed.status, StatusCode::BAD_REQUEST);
    assert_eq!(malformed.error_code(), "bad_request");

    let not_json = app.send(Method::POST, uri, Some("text/plain"), b"title=x".to_vec()).await;
    assert_eq!(not_json.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(not_json.error_code(), "unsupported_media_type");

    let huge = format!("{{\"title\":\"{}\"}}", "x".repeat(2 * 1024 * 1024));
    let too_large = app.send(Method::POST, uri, Some("application/json"), huge.into_bytes()).await;
    assert_eq!(too_large.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(too_large.error_code(), "payload_too_large");

    // Nothing was created by any of the above.
    assert_eq!(app.get(uri).await.json(), json!([]));
}

#[tokio::test]
async fn unknown_ids_routes_and_methods_are_json_errors() {
    let app = spawn_app().await;
    for uri in ["/api/v1/investigations/zzzzzzzzzz", "/api/v1/investigations/..%2F..%2Fetc", "/api/v1/nope"] {
        let response = app.get(uri).await;
        assert_eq!(response.status, StatusCode::NOT_FOUND, "{uri}");
        assert_eq!(response.error_code(), "not_found", "{uri}");
    }
    let response = app.send(Method::PUT, "/api/v1/investigations", None, Vec::new()).await;
    assert_eq!(response.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(response.error_code(), "method_not_allowed");
}

#[tokio::test]
async fn rename_close_reopen() {
    let app = spawn_app().await;
    let id = app.investigation("old").await;
    let uri = format!("/api/v1/investigations/{id}");

    let renamed = app.patch_json(&uri, json!({ "title": "new", "question": "q?" })).await;
    assert_eq!(renamed.status, StatusCode::OK);
    assert_eq!(renamed.json()["title"], "new");
    assert_eq!(renamed.json()["question"], "q?");

    let closed = app.patch_json(&uri, json!({ "status": "closed" })).await.json();
    assert_eq!(closed["status"], "closed");
    assert_eq!(closed["title"], "new", "untouched fields stay");
    assert_eq!(app.patch_json(&uri, json!({ "status": "open" })).await.json()["status"], "open");

    let bad_status = app.patch_json(&uri, json!({ "status": "archived" })).await;
    assert_eq!(bad_status.status, StatusCode::UNPROCESSABLE_ENTITY);
    let unknown_field = app.patch_json(&uri, json!({ "owner": "me" })).await;
    assert_eq!(unknown_field.status, StatusCode::UNPROCESSABLE_ENTITY);
    let empty_title = app.patch_json(&uri, json!({ "title": "" })).await;
    assert_eq!(empty_title.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(app.get(&uri).await.json()["title"], "new", "a refused patch changes nothing");

    let missing = app.patch_json("/api/v1/investigations/zzzzzzzzzz", json!({ "title": "x" })).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn delete_removes_the_investigation_and_its_steps() {
    let app = spawn_app().await;
    let id = app.investigation("doomed").await;
    let step = app.note(&id, "bye").await;
    let response = app.delete(&format!("/api/v1/investigations/{id}")).await;
    assert_eq!(response.status, StatusCode::NO_CONTENT);
    assert_eq!(app.get(&format!("/api/v1/investigations/{id}")).await.status, StatusCode::NOT_FOUND);
    assert_eq!(app.get(&format!("/api/v1/steps/{}", step["id"])).await.status, StatusCode::NOT_FOUND);
    assert_eq!(app.delete(&format!("/api/v1/investigations/{id}")).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn data_survives_a_restart() {
    let app = spawn_app().await;
    let id = app.investigation("persistent").await;
    app.note(&id, "| a | b |\n|---|---|\n| 1 | 2 |").await;
    let before = app.get(&format!("/api/v1/investigations/{id}")).await.json();

    let app = app.restart().await;
    let after = app.get(&format!("/api/v1/investigations/{id}")).await.json();
    assert_eq!(before, after);
    assert_eq!(app.data.path().join("db").join("sleuth.db").exists(), !crate::helpers::on_postgres());
}
