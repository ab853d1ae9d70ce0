//! Replays: an investigation run again on another host or with other versions.

use crate::auth::Caller;
use crate::error::AppError;
use crate::extract::{ApiJson, ApiPath};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use domain::replays::{Replay, ReplayRequest};

/// `POST /api/v1/investigations/{id}/replay`: 201 with the replay, its runs queued.
pub async fn create(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(investigation): ApiPath<String>,
    ApiJson(request): ApiJson<ReplayRequest>,
) -> Result<impl IntoResponse, AppError> {
    let replay = state.notebook.replay_investigation(&actor, &investigation, request).await?;
    let location = [(header::LOCATION, format!("/api/v1/replays/{}", replay.id))];
    Ok((StatusCode::CREATED, location, Json(replay)))
}

/// `POST /api/v1/replays`: a provenance manifest (another Sleuth's export) replayed here.
pub async fn create_from_manifest(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiJson(asked): ApiJson<domain::replays::ManifestReplay>,
) -> Result<impl IntoResponse, AppError> {
    let replay = state.notebook.replay_manifest(&actor, asked).await?;
    let location = [(header::LOCATION, format!("/api/v1/replays/{}", replay.id))];
    Ok((StatusCode::CREATED, location, Json(replay)))
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
