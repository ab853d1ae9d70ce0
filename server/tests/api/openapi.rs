//! `GET /api/v1/openapi.json`: public, and it names every route the router serves.

use crate::helpers::*;
use serde_json::Value;
use std::collections::BTreeSet;

/// `(METHOD, /api/v1/path)` for every API route, asked of the router itself:
/// each path its resources registered (`server::router::api_routes()`, which
/// only documented routes can join), sent OPTIONS — a method no route takes —
/// on a server of its own; the 405 names in `Allow` the methods it serves.
async fn routes_in_router() -> BTreeSet<(String, String)> {
    let app = spawn_app().await;
    let parameter = regex::Regex::new(r"\{[^}]+\}").unwrap();
    let mut routes = BTreeSet::new();
    for path in server::router::api_routes().paths() {
        let uri = format!("/api/v1{}", parameter.replace_all(path, "1"));
        let answer = app.send_with(axum::http::Method::OPTIONS, &uri, &[], vec![]).await;
        assert_eq!(answer.status, 405, "OPTIONS {uri}: {}", answer.text());
        let allow = answer.headers.get("allow").and_then(|a| a.to_str().ok()).unwrap_or_default().to_string();
        assert!(!allow.is_empty(), "{uri} says which methods it takes");
        for method in allow.split(',').map(|m| m.trim().to_lowercase()).filter(|m| m != "head") {
            routes.insert((method, format!("/api/v1{path}")));
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

    let routes = routes_in_router().await;
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
