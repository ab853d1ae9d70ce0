use crate::error::AppError;
use crate::extract::{ApiJson, ApiPath};
use crate::state::AppState;
use app::model::{Investigation, InvestigationPatch, InvestigationSummary, NewInvestigation};
use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;

pub async fn list(State(state): State<AppState>) -> Result<Json<Vec<InvestigationSummary>>, AppError> {
    Ok(Json(state.notebook.list_investigations().await?))
}

pub async fn create(
    State(state): State<AppState>,
    ApiJson(new): ApiJson<NewInvestigation>,
) -> Result<impl IntoResponse, AppError> {
    let investigation = state.notebook.create_investigation(new).await?;
    let location = [(header::LOCATION, investigation.url.clone())];
    Ok((StatusCode::CREATED, location, Json(investigation)))
}

pub async fn show(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Investigation>, AppError> {
    Ok(Json(state.notebook.investigation(&id).await?))
}

pub async fn update(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(patch): ApiJson<InvestigationPatch>,
) -> Result<Json<Investigation>, AppError> {
    Ok(Json(state.notebook.update_investigation(&id, patch).await?))
}

pub async fn delete(State(state): State<AppState>, ApiPath(id): ApiPath<String>) -> Result<StatusCode, AppError> {
    state.notebook.delete_investigation(&id).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub async fn members(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Vec<app::accounts::Member>>, AppError> {
    Ok(Json(state.notebook.members(&id).await?))
}

/// Gives a user a role (`"role":"none"` removes it); owners only.
pub async fn set_member(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(member): ApiJson<app::accounts::Member>,
) -> Result<Json<Vec<app::accounts::Member>>, AppError> {
    Ok(Json(state.notebook.set_member(&id, member).await?))
}
