//! Threaded comments on steps and annotations, resolving, and @mentions that
//! land in the mentioned user's unread list (and nowhere they may not read).

use crate::permissions::team;
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threads_on_steps_and_annotations_with_mentions() {
    let sshd = crate::sshd::Sshd::start();
    let team = team(&sshd).await;
    let (id, command, snippet) = team.shared_investigation(&sshd).await;
    let comments = format!("/api/v1/investigations/{id}/comments");

    // Every member comments, viewers too; strangers see nothing (404).
    let on_step = json!({ "step_id": command, "body": "@view why **echo**? cc @nobody, mail me at own@example.com" });
    assert_eq!(team.call("stranger", Method::POST, &comments, on_step.clone()).await.status, StatusCode::NOT_FOUND);
    let root = team.ok("edit", Method::POST, &comments, on_step).await;
    assert_eq!(root["author"], "edit", "the author is the signed-in user");
    assert!(root["html"].as_str().unwrap().contains("<strong>echo</strong>"));
    assert_eq!(root["url"], format!("/i/{id}#comment-{}", root["id"]));

    // A reply to the reply joins the same thread.
    let reply = team.ok("run", Method::POST, &comments, json!({ "parent_id": root["id"], "body": "a stand-in" })).await;
    let nested = team.ok("own", Method::POST, &comments, json!({ "parent_id": reply["id"], "body": "ok" })).await;
    assert_eq!(reply["parent_id"], root["id"]);
    assert_eq!(nested["parent_id"], root["id"]);
    assert_eq!(nested["step_id"], command);

    // On an annotation: the thread sits on its step, tied to the annotation.
    let annotation = team
        .ok(
            "edit",
            Method::POST,
            &format!("/api/v1/steps/{snippet}/annotations"),
            json!({ "start": 2, "end": 3, "body": "why" }),
        )
        .await;
    assert_eq!(annotation["author"], "edit", "annotations are signed by the account too");
    let on_annotation = team
        .ok(
            "own",
            Method::POST,
            &comments,
            json!({ "annotation_id": annotation["id"], "body": "<script>alert(1)</script> @edit" }),
        )
        .await;
    assert_eq!(
        (on_annotation["step_id"].as_i64(), on_annotation["annotation_id"].clone()),
        (Some(snippet), annotation["id"].clone())
    );
    assert!(!on_annotation["html"].as_str().unwrap().contains("<script"), "{}", on_annotation["html"]);

    // Bad input: a reason each, nothing stored.
    for (body, reason) in [
        (json!({ "step_id": command, "body": "  " }), "empty"),
        (json!({ "body": "where?" }), "step_id, annotation_id or parent_id"),
        (json!({ "step_id": 999_999, "body": "x" }), "no step"),
    ] {
        let refused = team.call("own", Method::POST, &comments, body).await;
        assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(refused.text().contains(reason), "{}", refused.text());
    }
    let (other, _, _) = team.shared_investigation(&sshd).await;
    let foreign = team
        .call(
            "own",
            Method::POST,
            &format!("/api/v1/investigations/{other}/comments"),
            json!({ "step_id": command, "body": "x" }),
        )
        .await;
    assert_eq!(foreign.status, StatusCode::UNPROCESSABLE_ENTITY, "a step of another investigation");

    // Resolving any comment resolves the thread; viewers may not.
    let resolve = format!("/api/v1/comments/{}", nested["id"]);
    assert_eq!(
        team.call("view", Method::PATCH, &resolve, json!({ "resolved": true })).await.status,
        StatusCode::FORBIDDEN
    );
    let resolved = team.ok("edit", Method::PATCH, &resolve, json!({ "resolved": true })).await;
    assert_eq!((resolved["id"].clone(), resolved["resolved_by"].clone()), (root["id"].clone(), json!("edit")));
    let inv = team.ok("view", Method::GET, &format!("/api/v1/investigations/{id}"), Value::Null).await;
    assert_eq!(inv["comments"].as_array().unwrap().len(), 4);
    assert!(inv["comments"][0]["resolved_at"].is_string());

    // Mentions: only real users other than the author, unread until read.
    let unread = team.ok("view", Method::GET, "/api/v1/mentions", Value::Null).await;
    assert_eq!(unread.as_array().unwrap().len(), 1, "{unread}");
    assert_eq!((unread[0]["author"].clone(), unread[0]["url"].clone()), (json!("edit"), root["url"].clone()));
    assert_eq!(unread[0]["investigation_title"], "shared");
    assert_eq!(team.ok("edit", Method::GET, "/api/v1/mentions", Value::Null).await.as_array().unwrap().len(), 1);
    assert_eq!(
        team.ok("own", Method::GET, "/api/v1/mentions", Value::Null).await,
        json!([]),
        "an e-mail address is not a mention"
    );
    team.ok("view", Method::POST, "/api/v1/mentions/read", json!({ "comment_id": root["id"] })).await;
    assert_eq!(team.ok("view", Method::GET, "/api/v1/mentions", Value::Null).await, json!([]));
    let all = team.ok("view", Method::GET, "/api/v1/mentions?all=true", Value::Null).await;
    assert_eq!(all[0]["read"], true);

    // Removed from the investigation: the mention is no longer listed.
    team.ok(
        "own",
        Method::PUT,
        &format!("/api/v1/investigations/{id}/members"),
        json!({ "user": "edit", "role": "none" }),
    )
    .await;
    assert_eq!(team.ok("edit", Method::GET, "/api/v1/mentions?all=true", Value::Null).await, json!([]));

    // The page threads them under their step and annotation.
    let page = team.call("own", Method::GET, &format!("/i/{id}"), Value::Null).await.text();
    assert!(page.contains(&format!("id=\"comment-{}\"", on_annotation["id"])) && page.contains("Resolved by edit"));
    assert!(!page.contains("<script>alert(1)</script>"));
}

/// An annotation's `@name`s reach Mentions as a comment's do: the named member
/// (not the author) sees it unread with a link to the annotation; an edit that
/// names someone new tells them; marking it read needs the annotation's id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mentions_in_annotations_reach_mentions() {
    let sshd = crate::sshd::Sshd::start();
    let team = team(&sshd).await;
    let (id, _, snippet) = team.shared_investigation(&sshd).await;
    let annotations = format!("/api/v1/steps/{snippet}/annotations");
    let note = json!({ "start": 2, "end": 3, "body": "@view is this the gate? @edit <b>x</b>" });
    let annotation = team.ok("edit", Method::POST, &annotations, note).await;

    let unread = team.ok("view", Method::GET, "/api/v1/mentions", Value::Null).await;
    assert_eq!(unread.as_array().unwrap().len(), 1, "{unread}");
    assert_eq!(unread[0]["annotation_id"], annotation["id"]);
    assert_eq!(unread[0]["comment_id"], Value::Null);
    assert_eq!(unread[0]["url"], format!("/i/{id}#annotation-{}", annotation["id"]));
    assert_eq!(unread[0]["author"], "edit");
    assert!(unread[0]["excerpt"].as_str().unwrap().contains("is this the gate?"));
    assert_eq!(team.ok("edit", Method::GET, "/api/v1/mentions", Value::Null).await, json!([]), "not the author");
    assert_eq!(team.ok("run", Method::GET, "/api/v1/mentions", Value::Null).await, json!([]));

    // An edit naming someone new tells them; the first one stays told once.
    let path = format!("/api/v1/annotations/{}", annotation["id"]);
    team.ok("edit", Method::PATCH, &path, json!({ "body": "@view @run: the gate, see line 2" })).await;
    assert_eq!(team.ok("run", Method::GET, "/api/v1/mentions", Value::Null).await.as_array().unwrap().len(), 1);
    assert_eq!(team.ok("view", Method::GET, "/api/v1/mentions", Value::Null).await.as_array().unwrap().len(), 1);

    // Read by its annotation: a comment id of the same number is another thing.
    let read = "/api/v1/mentions/read";
    team.ok("view", Method::POST, read, json!({ "comment_id": annotation["id"] })).await;
    assert_eq!(team.ok("view", Method::GET, "/api/v1/mentions", Value::Null).await.as_array().unwrap().len(), 1);
    team.ok("view", Method::POST, read, json!({ "annotation_id": annotation["id"] })).await;
    assert_eq!(team.ok("view", Method::GET, "/api/v1/mentions", Value::Null).await, json!([]));
    let both = team.call("view", Method::POST, read, json!({ "annotation_id": 1, "comment_id": 1 })).await;
    assert_eq!(both.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", both.text());
    // "Mark all read" reaches annotations too.
    team.ok("run", Method::POST, read, json!({})).await;
    assert_eq!(team.ok("run", Method::GET, "/api/v1/mentions", Value::Null).await, json!([]));

    // Deleting the annotation takes its mentions with it.
    assert_eq!(team.call("edit", Method::DELETE, &path, Value::Null).await.status, StatusCode::NO_CONTENT);
    assert_eq!(team.ok("view", Method::GET, "/api/v1/mentions?all=true", Value::Null).await, json!([]));
}

/// A mention of someone who is not a member, or of no one, reaches nobody:
/// the comment says so, and offers an owner to add that user; once added,
/// the note is gone and the mention is theirs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mention_that_reaches_no_one_says_so_and_an_owner_can_add_them() {
    let sshd = crate::sshd::Sshd::start();
    let team = team(&sshd).await;
    let (id, command, _) = team.shared_investigation(&sshd).await;
    let comments = format!("/api/v1/investigations/{id}/comments");
    let body = json!({ "step_id": command, "body": "@stranger @nobody @view @admin @edit: is this the allreduce?" });
    let posted = team.ok("edit", Method::POST, &comments, body.clone()).await;
    assert_eq!(
        posted["not_told"],
        json!([{ "name": "stranger", "user": null }, { "name": "nobody", "user": null }]),
        "members, admins and the author are reached; the rest are named, not told apart: {posted}"
    );
    let by_owner = team.ok("own", Method::POST, &comments, body).await;
    assert_eq!(
        by_owner["not_told"],
        json!([{ "name": "stranger", "user": true }, { "name": "nobody", "user": false }]),
        "an owner, who adds members by name, learns which is a user: {by_owner}"
    );

    let owners = team.page("own", &format!("/i/{id}")).await;
    assert!(owners.contains("@stranger was not told: stranger is not a member of this investigation."));
    assert!(owners.contains("@nobody was not told: there is no user nobody."));
    assert!(owners.contains("Add stranger as a viewer"), "an owner is offered to add them");
    assert!(!owners.contains("name=\"author\""), "a signed-in user's annotation is signed by their name: no field");
    assert!(!owners.contains("Add nobody as a viewer"), "no one to add");
    let editors = team.page("edit", &format!("/i/{id}")).await;
    assert!(
        editors.contains("@stranger was not told: stranger is not a member of this investigation (or not a user).")
    );
    assert!(!editors.contains("there is no user") && !editors.contains("Add stranger as a viewer"));

    let members = format!("/api/v1/investigations/{id}/members");
    team.ok("own", Method::PUT, &members, json!({ "user": "stranger", "role": "viewer" })).await;
    let page = team.page("own", &format!("/i/{id}")).await;
    assert!(!page.contains("@stranger was not told") && page.contains("@nobody was not told"), "only the rest");
    let theirs = team.ok("stranger", Method::GET, "/api/v1/mentions", Value::Null).await;
    assert!(theirs.to_string().contains("is this the allreduce?"), "the mention is theirs now: {theirs}");
}

/// A source reference in output opens the file on the host, which is a
/// runner's: a viewer sees it marked, not as a link that would answer "needs
/// the runner role" — on the investigation's page, the run's page and its
/// live stream; a runner gets the link.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_viewer_gets_source_references_as_text_and_a_runner_as_links() {
    let sshd = crate::sshd::Sshd::start();
    let team = team(&sshd).await;
    let (id, _, _) = team.shared_investigation(&sshd).await;
    let steps = format!("/api/v1/investigations/{id}/steps");
    let printing = json!({ "kind": "command", "host": "gpu", "telemetry": false,
                           "command": "echo '[custom_all_reduce.py:137] Custom allreduce is disabled'" });
    let step = team.ok("own", Method::POST, &steps, printing).await["id"].as_i64().unwrap();
    let run =
        team.ok("run", Method::POST, &format!("/api/v1/steps/{step}/runs"), json!({})).await[0]["id"].as_i64().unwrap();
    let ended = team.ok("view", Method::GET, &format!("/api/v1/runs/{run}?wait=30"), Value::Null).await;
    assert_eq!(ended["status"], "succeeded", "{ended}");
    let link = "<a class=\"src-ref\"";
    for page in [format!("/i/{id}"), format!("/runs/{run}")] {
        let (viewers, runners) = (team.page("view", &page).await, team.page("run", &page).await);
        assert!(viewers.contains("<span class=\"src-ref\">custom_all_reduce.py:137</span>"), "{page}: marked");
        assert!(!viewers.contains(link), "{page}: no link for a viewer");
        assert!(runners.contains(link), "{page}: a runner's link");
    }
    let stream = |who: &'static str| {
        let team = &team;
        async move { team.call(who, Method::GET, &format!("/api/v1/runs/{run}/stream?offset=0"), Value::Null).await.text() }
    };
    let (viewers, runners) = (stream("view").await, stream("run").await);
    assert!(viewers.contains("custom_all_reduce.py:137") && !viewers.contains(link), "{viewers}");
    assert!(runners.contains(link), "{runners}");
}
