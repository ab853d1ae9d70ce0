use crate::auth::Caller;
use crate::error::AppError;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::response::Response;
use serde_json::{Value, json};

pub async fn check() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

/// Whether writes or new runs are refused (the pages' banner), and for admins
/// the disk, store errors and SSH connections behind it.
pub async fn status(
    Caller(actor): Caller,
    State(state): State<AppState>,
) -> Result<Json<domain::hosts::ServerStatus>, AppError> {
    Ok(Json(state.notebook.server_status(&actor).await?))
}

/// Prometheus text format, for admins (a scraper sends an admin's API token
/// as a bearer token): runs by status, the queue, the SSH pool, store errors
/// and free space on the data disk.
pub async fn metrics(Caller(actor): Caller, State(state): State<AppState>) -> Result<Response, AppError> {
    let text = state.notebook.operations(&actor).await?;
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], text).into_response())
}

/// While the database is known to be away, a request is answered `503` at
/// once, and the database is asked in the background, once a second, whether
/// it is back ([`crate::db::Store::reachable_now`]). Without this,
/// every request during an outage waits the pool's 10 s acquire timeout for
/// its `503`. A request that waited that long marks the database away (the
/// [`crate::error::StoreAway`] its answer carries), as do a run's output and
/// the lease. Static files and `/healthz` never wait.
pub async fn refuse_while_unreachable(
    State(state): State<AppState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let path = request.uri().path();
    // `/healthz` says the process lives (a balancer keeps the replica while
    // the database is away; pages say why they cannot answer).
    let needs_store =
        !(path.starts_with("/pkg/") || path.starts_with("/favicon") || path == "/robots.txt" || path == "/healthz");
    if needs_store && !state.notebook.store_reachable_now() {
        return crate::error::AppError::from(crate::error::store_unavailable()).into_response();
    }
    let response = next.run(request).await;
    if response.extensions().get::<crate::error::StoreAway>().is_some() {
        state.notebook.note_store_unreachable();
    }
    response
}

/// The routes of the server's status (under `/api/v1`).
pub fn routes() -> crate::openapi::Routes {
    use aide::axum::routing;
    crate::openapi::Routes::default().at("/status", routing::get(status))
}
