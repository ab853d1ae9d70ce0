use crate::auth::Caller;
use crate::error::AppError;
use crate::extract::{ApiJson, ApiPath};
use crate::handlers::Created;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::response::NoContent;
use domain::steps::snippet::{Annotation, AnnotationPatch, NewAnnotation};

pub async fn create(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(step_id): ApiPath<i64>,
    ApiJson(new): ApiJson<NewAnnotation>,
) -> Result<Created<Annotation>, AppError> {
    let annotation = state.notebook.add_annotation(&actor, step_id, new).await?;
    Ok(Created::at(format!("/api/v1/annotations/{}", annotation.id), annotation))
}

pub async fn show(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> Result<Json<Annotation>, AppError> {
    Ok(Json(state.notebook.annotation(&actor, id).await?))
}

pub async fn update(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
    ApiJson(patch): ApiJson<AnnotationPatch>,
) -> Result<Json<Annotation>, AppError> {
    Ok(Json(state.notebook.update_annotation(&actor, id, patch).await?))
}

pub async fn delete(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> Result<NoContent, AppError> {
    state.notebook.delete_annotation(&actor, id).await?;
    Ok(NoContent)
}

/// The routes of annotations (under `/api/v1`).
pub fn routes() -> crate::openapi::Routes {
    use aide::axum::routing;
    crate::openapi::Routes::default()
        .at("/steps/{step_id}/annotations", routing::post(create))
        .at("/annotations/{id}", routing::get(show).patch(update).delete(delete))
}
