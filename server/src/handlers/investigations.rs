use crate::auth::Caller;
use crate::error::AppError;
use crate::extract::{ApiJson, ApiPath};
use crate::handlers::Created;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::response::NoContent;
use domain::model::{Investigation, InvestigationPatch, InvestigationSummary, NewInvestigation};

pub async fn list(
    Caller(actor): Caller,
    State(state): State<AppState>,
) -> Result<Json<Vec<InvestigationSummary>>, AppError> {
    Ok(Json(state.notebook.list_investigations(&actor).await?))
}

pub async fn create(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiJson(new): ApiJson<NewInvestigation>,
) -> Result<Created<Investigation>, AppError> {
    let investigation = state.notebook.create_investigation(&actor, new).await?;
    Ok(Created::at(investigation.url.clone(), investigation))
}

pub async fn show(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Investigation>, AppError> {
    Ok(Json(state.notebook.investigation(&actor, &id, None).await?))
}

pub async fn update(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(patch): ApiJson<InvestigationPatch>,
) -> Result<Json<Investigation>, AppError> {
    Ok(Json(state.notebook.update_investigation(&actor, &id, patch).await?))
}

pub async fn delete(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<NoContent, AppError> {
    state.notebook.delete_investigation(&actor, &id).await?;
    Ok(NoContent)
}

pub async fn members(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Vec<domain::accounts::Member>>, AppError> {
    Ok(Json(state.notebook.members(&actor, &id).await?))
}

/// Gives a user a role (`"role":"none"` removes it); owners only.
pub async fn set_member(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(change): ApiJson<domain::accounts::MemberChange>,
) -> Result<Json<Vec<domain::accounts::Member>>, AppError> {
    Ok(Json(state.notebook.set_member(&actor, &id, change).await?))
}

/// The routes of investigations and their members (under `/api/v1`).
pub fn routes() -> crate::openapi::Routes {
    use aide::axum::routing;
    crate::openapi::Routes::default()
        .at("/investigations", routing::get(list).post(create))
        .at("/investigations/{id}", routing::get(show).patch(update).delete(delete))
        .at("/investigations/{id}/members", routing::get(members).put(set_member))
}
