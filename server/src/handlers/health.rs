use crate::auth::Caller;
use crate::error::AppError;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use serde_json::{Value, json};

pub async fn check() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

/// Whether writes or new runs are refused (the pages' banner), and for admins
/// the disk, store errors and SSH connections behind it.
pub async fn status(
    Caller(actor): Caller,
    State(state): State<AppState>,
) -> Result<Json<app::hosts::ServerStatus>, AppError> {
    use app::backend::HostOps;
    Ok(Json(state.notebook.server_status(&actor).await?))
}

/// Prometheus text format, for admins (a scraper sends an admin's API token
/// as a bearer token): runs by status, the queue, the SSH pool, store errors
/// and free space on the data disk.
pub async fn metrics(Caller(actor): Caller, State(state): State<AppState>) -> Result<impl IntoResponse, AppError> {
    let text = state.notebook.operations(&actor).await?;
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], text))
}
