use crate::error::AppError;
use crate::extract::{ApiJson, ApiPath};
use crate::state::AppState;
use app::metrics::{ExtractorDef, NewMeasurement, StoredMeasurement};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;

pub async fn list(
    State(state): State<AppState>,
    ApiPath(investigation): ApiPath<String>,
) -> Result<Json<Vec<StoredMeasurement>>, AppError> {
    Ok(Json(state.notebook.measurements(&investigation).await?))
}

pub async fn create(
    State(state): State<AppState>,
    ApiPath(investigation): ApiPath<String>,
    ApiJson(new): ApiJson<NewMeasurement>,
) -> Result<impl IntoResponse, AppError> {
    Ok((StatusCode::CREATED, Json(state.notebook.add_measurement(&investigation, new).await?)))
}

pub async fn delete(State(state): State<AppState>, ApiPath(id): ApiPath<i64>) -> Result<StatusCode, AppError> {
    state.notebook.delete_measurement(id).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub async fn extractors(
    State(state): State<AppState>,
    ApiPath(investigation): ApiPath<String>,
) -> Result<Json<Vec<ExtractorDef>>, AppError> {
    Ok(Json(state.notebook.extractors(&investigation).await?))
}

pub async fn add_extractor(
    State(state): State<AppState>,
    ApiPath(investigation): ApiPath<String>,
    ApiJson(def): ApiJson<ExtractorDef>,
) -> Result<impl IntoResponse, AppError> {
    Ok((StatusCode::CREATED, Json(state.notebook.add_extractor(&investigation, def).await?)))
}

pub async fn remove_extractor(
    State(state): State<AppState>,
    ApiPath((investigation, name)): ApiPath<(String, String)>,
) -> Result<StatusCode, AppError> {
    state.notebook.remove_extractor(&investigation, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}
