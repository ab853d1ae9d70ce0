use crate::error::AppError;
use crate::extract::{ApiJson, ApiPath};
use crate::state::AppState;
use app::hypotheses::{Hypothesis, HypothesisInput};
use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;

pub async fn list(
    State(state): State<AppState>,
    ApiPath(investigation): ApiPath<String>,
) -> Result<Json<Vec<Hypothesis>>, AppError> {
    Ok(Json(state.notebook.hypotheses(&investigation).await?))
}

pub async fn create(
    State(state): State<AppState>,
    ApiPath(investigation): ApiPath<String>,
    ApiJson(input): ApiJson<HypothesisInput>,
) -> Result<impl IntoResponse, AppError> {
    let hypothesis = state.notebook.add_hypothesis(&investigation, input).await?;
    let location = [(header::LOCATION, format!("/api/v1/hypotheses/{}", hypothesis.id))];
    Ok((StatusCode::CREATED, location, Json(hypothesis)))
}

pub async fn show(State(state): State<AppState>, ApiPath(id): ApiPath<i64>) -> Result<Json<Hypothesis>, AppError> {
    Ok(Json(state.notebook.hypothesis(id).await?))
}

pub async fn update(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
    ApiJson(input): ApiJson<HypothesisInput>,
) -> Result<Json<Hypothesis>, AppError> {
    Ok(Json(state.notebook.update_hypothesis(id, input).await?))
}

pub async fn delete(State(state): State<AppState>, ApiPath(id): ApiPath<i64>) -> Result<StatusCode, AppError> {
    state.notebook.delete_hypothesis(id).await?;
    Ok(StatusCode::NO_CONTENT)
}
