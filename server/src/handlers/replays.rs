//! Replays: an investigation run again on another host or with other versions.

use crate::auth::Caller;
use crate::error::AppError;
use crate::extract::{ApiJson, ApiPath};
use crate::handlers::Created;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use domain::replays::{Replay, ReplayRequest};

/// `POST /api/v1/investigations/{id}/replay`: 201 with the replay, its runs queued.
pub async fn create(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(investigation): ApiPath<String>,
    ApiJson(request): ApiJson<ReplayRequest>,
) -> Result<Created<Replay>, AppError> {
    let replay = state.notebook.replay_investigation(&actor, &investigation, request).await?;
    Ok(Created::at(format!("/api/v1/replays/{}", replay.id), replay))
}

/// `POST /api/v1/replays`: a provenance manifest (another Sleuth's export) replayed here.
pub async fn create_from_manifest(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiJson(asked): ApiJson<domain::replays::ManifestReplay>,
) -> Result<Created<Replay>, AppError> {
    let replay = state.notebook.replay_manifest(&actor, asked).await?;
    Ok(Created::at(format!("/api/v1/replays/{}", replay.id), replay))
}

/// `GET /api/v1/investigations/{id}/provenance`: the manifest alone.
pub async fn manifest(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(investigation): ApiPath<String>,
) -> Result<Json<domain::replays::Manifest>, AppError> {
    Ok(Json(state.notebook.manifest(&actor, &investigation).await?))
}

pub async fn get(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> Result<Json<Replay>, AppError> {
    Ok(Json(state.notebook.replay(&actor, id).await?))
}

/// The routes of replays and provenance (under `/api/v1`).
pub fn routes() -> crate::openapi::Routes {
    use aide::axum::routing;
    crate::openapi::Routes::default()
        .at("/investigations/{id}/replay", routing::post(create))
        .at("/investigations/{id}/provenance", routing::get(manifest))
        .at("/replays", routing::post(create_from_manifest))
        .at("/replays/{replay_id}", routing::get(get))
}
