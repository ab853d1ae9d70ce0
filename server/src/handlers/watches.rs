//! Watches: a step run on a schedule, its changes told.

use crate::auth::Caller;
use crate::error::AppError;
use crate::extract::{ApiJson, ApiPath};
use crate::handlers::Created;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::response::NoContent;
use domain::watches::{Watch, WatchRequest};

/// `POST /api/v1/steps/{id}/watch`: 201; its first run is queued within a second.
pub async fn create(
    Caller(actor): Caller,
    State(state): State<AppState>,
    headers: axum::http::HeaderMap,
    ApiPath(step): ApiPath<i64>,
    ApiJson(request): ApiJson<WatchRequest>,
) -> Result<Created<Watch>, AppError> {
    let through = crate::headers::asked_origin(&headers);
    let watch = state.notebook.watch_step(&actor, step, request, through).await?;
    Ok(Created::at(format!("/api/v1/watches/{}", watch.id), watch))
}

pub async fn list(Caller(actor): Caller, State(state): State<AppState>) -> Result<Json<Vec<Watch>>, AppError> {
    Ok(Json(state.notebook.watches(&actor).await?))
}

pub async fn get(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> Result<Json<Watch>, AppError> {
    Ok(Json(state.notebook.watch(&actor, id).await?))
}

/// Stops it at once: no run is queued for it after this answers.
pub async fn delete(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> Result<NoContent, AppError> {
    state.notebook.delete_watch(&actor, id).await?;
    Ok(NoContent)
}

/// The routes of watches (under `/api/v1`).
pub fn routes() -> crate::openapi::Routes {
    use aide::axum::routing;
    crate::openapi::Routes::default()
        .at("/steps/{step_id}/watch", routing::post(create))
        .at("/watches", routing::get(list))
        .at("/watches/{watch_id}", routing::get(get).delete(delete))
}
