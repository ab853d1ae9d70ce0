//! `GET /api/v1/openapi.json`: public, and it names every route the router serves.

use crate::helpers::*;
use serde_json::Value;
use std::collections::BTreeSet;

/// `(METHOD, /api/v1/path)` for every route in `router.rs`'s API router, read
/// from its source: each `.api_route(` call (over one line or several), its
/// methods as `get(`, `get_with(`, …. A plain `.route(` there would escape
/// the document (aide documents only `api_route`), so it fails the test.
fn routes_in_router() -> BTreeSet<(String, String)> {
    let source = include_str!("../../src/router.rs");
    let start = source.find("let api = ApiRouter::new()").expect("the API router is built in router.rs");
    let end = start + source[start..].find("finish_api").expect("and finished there");
    let block = &source[start..end];
    let plain: Vec<&str> = block.lines().filter(|l| l.trim_start().starts_with(".route(")).collect();
    assert!(plain.is_empty(), "plain .route( in the API router, undocumented: {plain:?}");
    let method = regex::Regex::new(r"\b(get|post|put|patch|delete)(?:_with)?\(").unwrap();
    let mut routes = BTreeSet::new();
    // Each call runs from `.api_route(` to the next one (or the block's end).
    for call in block.split(".api_route(").skip(1) {
        let path = call.split('"').nth(1).unwrap_or_default();
        for found in method.captures_iter(call) {
            routes.insert((found[1].to_string(), format!("/api/v1{path}")));
        }
    }
    routes
}

fn documented(document: &Value) -> BTreeSet<(String, String)> {
    let mut operations = BTreeSet::new();
    for (path, item) in document["paths"].as_object().expect("paths") {
        for method in ["get", "post", "put", "patch", "delete"] {
            if item.get(method).is_some() {
                operations.insert((method.to_string(), path.clone()));
            }
        }
    }
    operations
}

#[tokio::test]
async fn the_document_is_public_and_names_every_route() {
    let app = spawn_app_with_accounts().await;
    let answer = app.get("/api/v1/openapi.json").await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    let document = answer.json();
    if let Ok(path) = std::env::var("SLEUTH_OPENAPI_OUT") {
        std::fs::write(path, answer.text()).expect("write the document");
    }
    assert_eq!(document["openapi"], "3.1.0");

    let routes = routes_in_router();
    assert!(routes.len() > 90, "the router's routes were read: {}", routes.len());
    let operations = documented(&document);
    let missing: Vec<_> = routes.difference(&operations).collect();
    assert!(missing.is_empty(), "routes missing from the OpenAPI document: {missing:?}");
    for method in ["get", "patch", "delete"] {
        let investigation = (method.to_string(), "/api/v1/investigations/{id}".to_string());
        assert!(
            routes.contains(&investigation) && operations.contains(&investigation),
            "{method} /investigations/{{id}}"
        );
    }

    // What a client needs from an operation: its parameters named from the
    // route and typed from the handler, the body, the answer, the errors.
    let start = &document["paths"]["/api/v1/steps/{step_id}/runs"]["post"];
    assert_eq!(start["operationId"], "post_steps_step_id_runs");
    assert_eq!(start["tags"][0], "steps");
    let parameter = &start["parameters"][0];
    assert_eq!((parameter["name"].as_str(), parameter["in"].as_str()), (Some("step_id"), Some("path")));
    assert_eq!(parameter["schema"]["type"], "integer");
    assert!(start["requestBody"].get("required").is_none_or(|r| r == false), "a run's body may be left out");
    assert!(start["responses"]["201"]["content"]["application/json"]["schema"].is_object());
    let error = &start["responses"]["default"]["content"]["application/json"]["schema"]["$ref"];
    assert_eq!(error, "#/components/schemas/ErrorBody");
    assert!(start["security"].as_array().is_some_and(|s| !s.is_empty()), "runs need a token or a session");
    let shared = &document["paths"]["/api/v1/shared/{token}"]["get"];
    assert!(shared.get("security").is_none_or(|s| s.as_array().is_some_and(|s| s.is_empty())));
    let mut ids = BTreeSet::new();
    for item in document["paths"].as_object().expect("paths").values() {
        for operation in item.as_object().expect("a path item").values() {
            let id = operation["operationId"].as_str().expect("every operation has an id");
            assert!(ids.insert(id.to_string()), "operation id {id} is given twice");
        }
    }
    let schemes = &document["components"]["securitySchemes"];
    assert_eq!(schemes["bearer"]["scheme"], "bearer");
    let investigation = &document["components"]["schemas"]["NewInvestigation"];
    assert!(investigation["properties"]["title"].is_object(), "{investigation}");
}
