//! The team's users (admins only): listed, added and reset with a one-time
//! sign-in link in the answer, made admins, removed. Each change is audited.

use crate::auth::Caller;
use crate::error::AppError;
use crate::extract::{ApiJson, ApiPath};
use crate::handlers::Created;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::response::NoContent;
use domain::accounts::{NewUser, SignInLink, TeamUser, UserChange};

pub async fn list(Caller(actor): Caller, State(state): State<AppState>) -> Result<Json<Vec<TeamUser>>, AppError> {
    Ok(Json(state.notebook.team_users(&actor).await?))
}

/// The answer is the only time the link's URL is seen: only its hash is kept.
pub async fn create(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiJson(new): ApiJson<NewUser>,
) -> Result<Created<SignInLink>, AppError> {
    Ok(Created::new(state.notebook.add_team_user(&actor, new).await?))
}

pub async fn update(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    ApiJson(change): ApiJson<UserChange>,
) -> Result<Json<TeamUser>, AppError> {
    Ok(Json(state.notebook.set_team_admin(&actor, &name, change.admin).await?))
}

/// A new one-time link; the user's password and sessions stop working now.
pub async fn reset(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<SignInLink>, AppError> {
    Ok(Json(state.notebook.reset_team_user(&actor, &name).await?))
}

pub async fn delete(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> Result<NoContent, AppError> {
    state.notebook.remove_team_user(&actor, &name).await?;
    Ok(NoContent)
}

/// The routes of users (under `/api/v1`).
pub fn routes() -> crate::openapi::Routes {
    use aide::axum::routing;
    crate::openapi::Routes::default()
        .at("/users", routing::get(list).post(create))
        .at("/users/{name}", routing::patch(update).delete(delete))
        .at("/users/{name}/reset", routing::post(reset))
}
