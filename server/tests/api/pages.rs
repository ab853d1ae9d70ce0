//! Server-rendered pages, read as a browser without JavaScript would.

use crate::helpers::spawn_app;
use axum::http::StatusCode;

#[tokio::test]
async fn home_lists_investigations() {
    let app = spawn_app().await;
    let empty = app.get("/").await;
    assert_eq!(empty.status, StatusCode::OK);
    assert!(empty.text().contains("No investigations yet"), "{}", empty.text());

    let id = app.investigation("Allreduce on <PCIe> & friends").await;
    let page = app.get("/").await.text();
    assert!(page.contains(&format!("href=\"/i/{id}\"")), "{page}");
    assert!(page.contains("Allreduce on &lt;PCIe&gt; &amp; friends"), "titles are escaped: {page}");
    assert!(page.contains("/pkg/sleuth.js"), "the hydration script is linked");
}

#[tokio::test]
async fn investigation_page_renders_steps_with_anchors() {
    let app = spawn_app().await;
    let id = app.investigation("Rendered").await;
    let step = app.note(&id, "| a | b |\n|---|---|\n| 1 | 2 |\n\n<script>alert('owned')</script>").await;
    let response = app.get(&format!("/i/{id}")).await;
    assert_eq!(response.status, StatusCode::OK);
    let page = response.text();
    assert!(page.contains(&format!("id=\"step-{}\"", step["id"])), "{page}");
    assert!(page.contains("<td>2</td>"), "{page}");
    // Sanitized away in the HTML, and the Markdown is not in the hydration data:
    // the note is in the page once, as HTML.
    assert!(!page.contains("alert('owned')"), "{page}");
    assert!(!page.contains("|---|"), "the Markdown source is not sent as well: {page}");
    assert!(page.contains("<title>Rendered · Sleuth</title>"), "{page}");
}

/// Occurrences of `needle` in `haystack`.
fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

#[tokio::test]
async fn long_timelines_fold_the_middle_and_open_parts_by_address() {
    let app = spawn_app().await;
    let id = app.investigation("Long").await;
    let mut ids = Vec::new();
    for i in 1..=130 {
        ids.push(
            app.note(&id, &format!("Note number {i}.\n\nIt says *zeta-{i}-omega*.")).await["id"].as_i64().unwrap(),
        );
    }
    let folded_id = ids[69]; // position 70
    let comment = app
        .post_json(
            &format!("/api/v1/investigations/{id}/comments"),
            serde_json::json!({"step_id": folded_id, "body": "about 70"}),
        )
        .await
        .json();
    let page = app.get(&format!("/i/{id}")).await.text();
    // The first 20 and the last 10 in full, the 100 between as one line each.
    assert_eq!(count(&page, "class=\"step folded\""), 100, "{page}");
    assert_eq!(count(&page, "class=\"step-body\""), 30);
    assert!(page.contains("<em>zeta-20-omega</em>") && page.contains("<em>zeta-121-omega</em>"));
    assert!(!page.contains("zeta-21-omega</em>") && !page.contains("zeta-120-omega</em>"));
    // Every text once: the shown notes as HTML, never again as hydration data
    // (only a step's headline, its first line cut to 70 characters, is data too).
    let contexts: Vec<&str> =
        page.match_indices("zeta-20-omega").map(|(i, _)| &page[i.saturating_sub(300)..i + 20]).collect();
    assert_eq!(contexts.len(), 1, "a shown note is in the page once: {contexts:#?}");
    // A folded step keeps its anchor, and its comment's, so permalinks land on it.
    assert!(page.contains(&format!("id=\"step-{folded_id}\"")), "{page}");
    assert!(page.contains(&format!("id=\"comment-{}\"", comment["id"])), "{page}");
    // Its part opens by address: the no-JavaScript link is exactly that.
    assert!(page.contains(&format!("href=\"?steps=61-100#step-{folded_id}\"")), "{page}");
    assert!(page.contains(">Show steps 21–60<"), "{page}");
    let part = app.get(&format!("/i/{id}?steps=61-100")).await.text();
    assert!(part.contains("<em>zeta-70-omega</em>"), "the part is rendered in full");
    assert!(part.contains("about 70"), "with its comments");
    assert_eq!(count(&part, "class=\"step folded\""), 60);
    // A query that is not a range is ignored, not an error.
    let odd = app.get(&format!("/i/{id}?steps=%3Cscript%3E,9-1,abc")).await;
    assert_eq!(odd.status, StatusCode::OK);
    assert_eq!(count(&odd.text(), "class=\"step folded\""), 100);
    // The API still answers the whole investigation.
    let api = app.get(&format!("/api/v1/investigations/{id}")).await.json();
    assert_eq!(api["steps"].as_array().unwrap().len(), 130);
    assert!(api.get("outline").is_none());
}

#[tokio::test]
async fn missing_pages_are_404() {
    let app = spawn_app().await;
    let response = app.get("/i/zzzzzzzzzz").await;
    assert_eq!(response.status, StatusCode::NOT_FOUND);
    assert!(response.text().contains("There is no investigation"), "{}", response.text());

    let response = app.get("/no/such/page").await;
    assert_eq!(response.status, StatusCode::NOT_FOUND);
    assert!(response.text().contains("There is no page at this address"), "{}", response.text());

    // What a sentence marks with backticks is shown as code, not as backticks.
    let response = app.get("/compare?runs=3,%3Cb%3E").await;
    assert_eq!(response.status, StatusCode::UNPROCESSABLE_ENTITY);
    let text = response.text();
    assert!(text.contains("write them as runs=3,7"), "{text}");
    let response = app.get("/runs/1/source?file=x.py").await;
    let text = response.text();
    assert!(text.contains("<code>?file=…&amp;line=137"), "{text}");
    assert!(!text.contains("`?file="), "no raw backticks: {text}");
}

#[tokio::test]
async fn static_files_revalidate_instead_of_404() {
    let app = spawn_app().await;
    let pkg = app.data.path().join("site").join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(pkg.join("sleuth.js"), "export default 1;").unwrap();

    let first = app.get("/pkg/sleuth.js").await;
    assert_eq!(first.status, StatusCode::OK);
    assert_eq!(first.text(), "export default 1;");
    let modified = first.headers["last-modified"].to_str().unwrap().to_string();

    // What a browser sends when it revalidates its cached copy.
    let request = axum::http::Request::get("/pkg/sleuth.js")
        .header("if-modified-since", &modified)
        .body(axum::body::Body::empty())
        .unwrap();
    let response = tower::ServiceExt::oneshot(app.router.clone(), request).await.unwrap();
    assert_eq!(response.status(), StatusCode::NOT_MODIFIED);

    assert_eq!(app.get("/pkg/missing.js").await.status, StatusCode::NOT_FOUND);

    // The bundle goes out precompressed (`tools/precompress.mjs` writes the
    // variants) to browsers that accept it, as it is to those that do not.
    std::fs::write(pkg.join("sleuth_bg.wasm"), b"\0asm raw").unwrap();
    std::fs::write(pkg.join("sleuth_bg.wasm.br"), b"brotli bytes").unwrap();
    let get = |encoding: &'static str| {
        let request = axum::http::Request::get("/pkg/sleuth_bg.wasm")
            .header("accept-encoding", encoding)
            .body(axum::body::Body::empty())
            .unwrap();
        tower::ServiceExt::oneshot(app.router.clone(), request)
    };
    let br = get("gzip, deflate, br").await.unwrap();
    assert_eq!(br.headers()["content-encoding"], "br");
    assert_eq!(br.headers()["content-type"], "application/wasm");
    let plain = get("identity").await.unwrap();
    assert!(plain.headers().get("content-encoding").is_none());
    let body = http_body_util::BodyExt::collect(plain.into_body()).await.unwrap().to_bytes();
    assert_eq!(&body[..], b"\0asm raw");
}

/// Pages keep rendering while other routers are built in the same process (a
/// router per test here): leptos works out the routes under a process-global
/// flag that leaves a page's data waiting forever if it starts loading
/// meanwhile (leptos-rs/leptos#4773), so the routes are worked out once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_render_while_other_routers_are_built() {
    let app = crate::helpers::spawn_app().await;
    let id = app.investigation("render under construction").await;
    let building = tokio::spawn(async {
        for _ in 0..20 {
            drop(crate::helpers::spawn_app().await);
        }
    });
    for _ in 0..60 {
        let page = tokio::time::timeout(std::time::Duration::from_secs(20), app.get(&format!("/i/{id}")))
            .await
            .expect("a page render does not wait forever while routers are built");
        assert_eq!(page.status, axum::http::StatusCode::OK);
    }
    building.await.expect("routers built");
}
