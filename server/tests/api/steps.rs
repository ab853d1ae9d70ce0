use crate::helpers::spawn_app;
use axum::http::StatusCode;
use serde_json::json;

#[tokio::test]
async fn notes_are_rendered_and_sanitized() {
    let app = spawn_app().await;
    let id = app.investigation("xss").await;
    let markdown = "| GPU | tok/s |\n|---|---|\n| H200 | 57.5 |\n\n<script>alert('x')</script>\n\n<img src=x onerror=alert(1)>\n\n- [x] sweep NCCL_PROTO";
    let step = app.note(&id, markdown).await;
    assert_eq!(step["kind"], "note");
    assert_eq!(step["body"], markdown, "the Markdown is kept as written");
    assert_eq!(step["position"], 1);
    assert_eq!(step["url"], format!("/i/{id}#step-{}", step["id"]));
    let html = step["html"].as_str().unwrap();
    assert!(html.contains("<td>57.5</td>"), "{html}");
    assert!(!html.contains("<script") && !html.contains("onerror"), "{html}");

    let fetched = app.get(&format!("/api/v1/steps/{}", step["id"])).await.json();
    assert_eq!(fetched, step);
}

#[tokio::test]
async fn bad_steps_are_refused_with_reasons() {
    let app = spawn_app().await;
    let id = app.investigation("bad steps").await;
    let uri = format!("/api/v1/investigations/{id}/steps");

    let unknown_kind = app.post_json(&uri, json!({ "kind": "teleport", "body": "x" })).await;
    assert_eq!(unknown_kind.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(unknown_kind.text().contains("teleport"), "{}", unknown_kind.text());

    let no_kind = app.post_json(&uri, json!({ "body": "x" })).await;
    assert_eq!(no_kind.status, StatusCode::UNPROCESSABLE_ENTITY);

    let empty = app.post_json(&uri, json!({ "kind": "note", "body": "  \n " })).await;
    assert_eq!(empty.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(empty.error_code(), "invalid");

    let huge = app.post_json(&uri, json!({ "kind": "note", "body": "x".repeat(100_001) })).await;
    assert_eq!(huge.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(huge.text().contains("100001 bytes"), "{}", huge.text());

    let extra = app.post_json(&uri, json!({ "kind": "note", "body": "x", "colour": "red" })).await;
    assert_eq!(extra.status, StatusCode::UNPROCESSABLE_ENTITY);

    let nowhere =
        app.post_json("/api/v1/investigations/zzzzzzzzzz/steps", json!({ "kind": "note", "body": "x" })).await;
    assert_eq!(nowhere.status, StatusCode::NOT_FOUND);
    assert_eq!(nowhere.error_code(), "not_found");

    assert_eq!(app.step_ids(&id).await, Vec::<i64>::new(), "nothing was added");

    for uri in ["/api/v1/steps/999999", "/api/v1/steps/not-a-number", "/api/v1/steps/99999999999999999999999"] {
        let response = app.get(uri).await;
        assert_eq!(response.status, StatusCode::NOT_FOUND, "{uri}");
        assert_eq!(response.error_code(), "not_found");
    }
}

#[tokio::test]
async fn edit_move_and_delete_keep_positions_contiguous() {
    let app = spawn_app().await;
    let id = app.investigation("ordering").await;
    let mut ids = Vec::new();
    for text in ["a", "b", "c", "d"] {
        ids.push(app.note(&id, text).await["id"].as_i64().unwrap());
    }
    let (a, b, c, d) = (ids[0], ids[1], ids[2], ids[3]);

    let edited = app.patch_json(&format!("/api/v1/steps/{b}"), json!({ "body": "**b2**" })).await;
    assert_eq!(edited.status, StatusCode::OK);
    assert_eq!(edited.json()["body"], "**b2**");
    assert!(edited.json()["html"].as_str().unwrap().contains("<strong>b2</strong>"));

    // d to the top, then a to the bottom, then c one down.
    let moved = app.patch_json(&format!("/api/v1/steps/{d}"), json!({ "position": 1 })).await;
    assert_eq!(moved.json()["position"], 1);
    assert_eq!(app.step_ids(&id).await, vec![d, a, b, c]);
    app.patch_json(&format!("/api/v1/steps/{a}"), json!({ "position": 99 })).await;
    assert_eq!(app.step_ids(&id).await, vec![d, b, c, a], "positions past the end clamp");
    app.patch_json(&format!("/api/v1/steps/{c}"), json!({ "position": 3 })).await;
    assert_eq!(app.step_ids(&id).await, vec![d, b, c, a], "moving to the same place is a no-op");

    let bad_position = app.patch_json(&format!("/api/v1/steps/{c}"), json!({ "position": 0 })).await;
    assert_eq!(bad_position.status, StatusCode::UNPROCESSABLE_ENTITY);
    let kind_change = app.patch_json(&format!("/api/v1/steps/{c}"), json!({ "kind": "command" })).await;
    assert_eq!(kind_change.status, StatusCode::UNPROCESSABLE_ENTITY);
    let empty = app.patch_json(&format!("/api/v1/steps/{c}"), json!({ "body": "" })).await;
    assert_eq!(empty.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(app.get(&format!("/api/v1/steps/{c}")).await.json()["body"], "c", "refused edits change nothing");

    assert_eq!(app.delete(&format!("/api/v1/steps/{b}")).await.status, StatusCode::NO_CONTENT);
    assert_eq!(app.step_ids(&id).await, vec![d, c, a]);
    assert_eq!(app.delete(&format!("/api/v1/steps/{b}")).await.status, StatusCode::NOT_FOUND);

    // A deleted step's id is never reused.
    let e = app.note(&id, "e").await["id"].as_i64().unwrap();
    assert!(e > d, "new id {e} after {d}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_adds_get_distinct_positions() {
    let app = std::sync::Arc::new(spawn_app().await);
    let id = app.investigation("race").await;
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let app = app.clone();
            let id = id.clone();
            tokio::spawn(async move { app.note(&id, &format!("note {i}")).await })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(app.step_ids(&id).await.len(), 16);
}

#[tokio::test]
async fn calculator_steps_check_the_story_and_refuse_nonsense() {
    let app = crate::helpers::spawn_app().await;
    let id = app.investigation("roofline").await;
    let steps = format!("/api/v1/investigations/{id}/steps");
    let roofline = app
        .post_json(
            &steps,
            serde_json::json!({ "kind": "calculator", "calculator": "bandwidth", "gpu": "custom", "peak_tb_s": 1.5,
                                "gpus": 8, "weights_gb": 27.83, "tok_s": 57.5 }),
        )
        .await;
    assert_eq!(roofline.status, axum::http::StatusCode::CREATED, "{}", roofline.text());
    assert_eq!(roofline.json()["calculator"], "bandwidth");
    // The results as the page shows them, for scripts.
    let results = &roofline.json()["results"];
    let near = |v: &serde_json::Value, x: f64| (v.as_f64().unwrap_or(f64::NAN) - x).abs() < 0.05;
    assert!(near(&results["ms_per_token"], 17.39) && near(&results["pct_of_peak"], 13.34), "{results}");
    assert!(near(&results["achieved_gb_s"], 200.03) && near(&results["ceiling_tok_s"], 431.2), "{results}");
    let budget = app
        .post_json(
            &steps,
            serde_json::json!({ "kind": "calculator", "calculator": "collective", "layers": 78, "per_layer": 2,
                                "latency_us": 40, "tok_s": 57.5 }),
        )
        .await;
    assert_eq!(budget.status, axum::http::StatusCode::CREATED, "{}", budget.text());
    let results = &budget.json()["results"];
    assert_eq!(results["calls_per_token"], 156, "{results}");
    assert!(near(&results["ms_per_token"], 6.24) && near(&results["share_pct"], 35.88), "{results}");
    let again = app.get(&format!("/api/v1/steps/{}", budget.json()["id"])).await.json();
    assert_eq!(&again["results"], results, "GET gives them too");
    let page = app.get(&format!("/i/{id}")).await.text();
    for needle in ["17.4 ms", "200 of 1500 GB/s", "13 %", "431 tok/s", "<td>156<", "6.24 ms", "36 % of 17.4 ms"] {
        assert!(page.contains(needle), "{needle} in the page");
    }
    for bad in [
        serde_json::json!({ "kind": "calculator", "calculator": "bandwidth", "gpu": "custom", "gpus": 8, "weights_gb": 1, "tok_s": 5 }),
        serde_json::json!({ "kind": "calculator", "calculator": "bandwidth", "gpu": "H200", "gpus": 0, "weights_gb": 1, "tok_s": 5 }),
        serde_json::json!({ "kind": "calculator", "calculator": "bandwidth", "gpu": "H200", "gpus": 8, "tok_s": 5 }),
        serde_json::json!({ "kind": "calculator", "calculator": "collective", "layers": 78, "per_layer": 2, "latency_us": -1 }),
        serde_json::json!({ "kind": "calculator", "calculator": "abacus" }),
    ] {
        let response = app.post_json(&steps, bad.clone()).await;
        assert_eq!(response.status, axum::http::StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {}", response.text());
    }
}

/// Two people edit the same note: the save that started from an older version is
/// refused with who changed it, when, and their text; nothing is overwritten.
#[tokio::test]
async fn a_stale_save_is_refused_with_who_changed_it_and_their_text() {
    let app = spawn_app().await;
    let investigation = app.investigation("two editors").await;
    let note = app.note(&investigation, "first draft").await;
    let (id, opened) = (note["id"].as_i64().unwrap(), note["version"].as_i64().unwrap());
    assert_eq!(opened, 1);
    let uri = format!("/api/v1/steps/{id}");
    let first = app.patch_json(&uri, serde_json::json!({ "body": "ada's text", "version": opened })).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.text());
    assert_eq!((first.json()["version"].as_i64(), first.json()["updated_by"].as_str()), (Some(2), Some("local")));
    let second = app.patch_json(&uri, serde_json::json!({ "body": "bob's text", "version": opened })).await;
    assert_eq!(second.status, StatusCode::CONFLICT, "{}", second.text());
    assert_eq!(second.error_code(), "conflict");
    let message = second.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("changed by local at") && message.contains("(version 2)"), "{message}");
    assert!(message.contains("Their text:\n\nada's text\n"), "their text comes with it: {message}");
    assert!(message.ends_with("Theirs (-) against yours (+):\n- ada's text\n+ bob's text"), "and a diff: {message}");
    assert_eq!(app.get(&uri).await.json()["body"], "ada's text", "not overwritten");
    // Saving from the version one has now works; scripts that send no version just write.
    let merged = app.patch_json(&uri, serde_json::json!({ "body": "merged", "version": 2 })).await;
    assert_eq!(merged.json()["version"], 3);
    assert_eq!(app.patch_json(&uri, serde_json::json!({ "body": "blind" })).await.json()["version"], 4);
    let bad = app.patch_json(&uri, serde_json::json!({ "body": "x", "version": "two" })).await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
}
