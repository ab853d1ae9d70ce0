use crate::auth::Caller;
use crate::error::AppError;
use crate::extract::{ApiJson, ApiPath};
use crate::handlers::Created;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::response::NoContent;
use domain::hypotheses::{Hypothesis, HypothesisInput};

pub async fn list(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(investigation): ApiPath<String>,
) -> Result<Json<Vec<Hypothesis>>, AppError> {
    Ok(Json(state.notebook.hypotheses(&actor, &investigation).await?))
}

pub async fn create(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(investigation): ApiPath<String>,
    ApiJson(input): ApiJson<HypothesisInput>,
) -> Result<Created<Hypothesis>, AppError> {
    let hypothesis = state.notebook.add_hypothesis(&actor, &investigation, input).await?;
    Ok(Created::at(format!("/api/v1/hypotheses/{}", hypothesis.id), hypothesis))
}

pub async fn show(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> Result<Json<Hypothesis>, AppError> {
    Ok(Json(state.notebook.hypothesis(&actor, id).await?))
}

pub async fn update(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
    ApiJson(input): ApiJson<HypothesisInput>,
) -> Result<Json<Hypothesis>, AppError> {
    Ok(Json(state.notebook.update_hypothesis(&actor, id, input).await?))
}

pub async fn delete(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> Result<NoContent, AppError> {
    state.notebook.delete_hypothesis(&actor, id).await?;
    Ok(NoContent)
}

/// The routes of hypotheses (under `/api/v1`).
pub fn routes() -> crate::openapi::Routes {
    use aide::axum::routing;
    crate::openapi::Routes::default()
        .at("/investigations/{id}/hypotheses", routing::get(list).post(create))
        .at("/hypotheses/{id}", routing::get(show).patch(update).delete(delete))
}
