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
    // The Markdown travels to the browser for hydration, but only as an escaped string.
    assert!(!page.contains("<script>alert('owned')"), "{page}");
    assert!(page.contains(r"\u003cscript>alert('owned')"), "{page}");
    assert!(page.contains("<title>Rendered · Sleuth</title>"), "{page}");
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
}
