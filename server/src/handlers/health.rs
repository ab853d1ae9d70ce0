use axum::Json;
use serde_json::{Value, json};

pub async fn check() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}
