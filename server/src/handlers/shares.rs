//! View-only share links: owners create, list and revoke them; anyone with a
//! link's token reads what it shows (`/api/v1/shared/{token}`, no sign-in).

use crate::auth::Caller;
use crate::error::AppError;
use crate::extract::{ApiJson, ApiPath};
use crate::handlers::Created;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use domain::model::SharedView;
use domain::shares::{CreatedShareLink, NewShareLink, ShareLink};

pub async fn list(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Vec<ShareLink>>, AppError> {
    Ok(Json(state.notebook.share_links(&actor, &id).await?))
}

/// The answer is the only time the link's URL is seen: only its hash is kept.
pub async fn create(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(new): ApiJson<NewShareLink>,
) -> Result<Created<CreatedShareLink>, AppError> {
    Ok(Created::new(state.notebook.create_share_link(&actor, &id, new).await?))
}

pub async fn revoke(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> Result<Json<ShareLink>, AppError> {
    Ok(Json(state.notebook.revoke_share_link(&actor, id).await?))
}

/// 404 for an unknown token, 410 once revoked or expired — never the content.
pub async fn shared(
    State(state): State<AppState>,
    ApiPath(token): ApiPath<String>,
) -> Result<Json<SharedView>, AppError> {
    Ok(Json(state.notebook.shared(&token, None).await?))
}

/// The routes of share links, and what a link shows (under `/api/v1`).
pub fn routes() -> crate::openapi::Routes {
    use aide::axum::routing;
    crate::openapi::Routes::default()
        .at("/investigations/{id}/shares", routing::get(list).post(create))
        .at("/shares/{id}", routing::delete(revoke))
        .at("/shared/{token}", routing::get(shared))
}
