//! Comments on steps and annotations, and the signed-in user's mentions.

use crate::auth::Caller;
use crate::error::AppError;
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::handlers::Created;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::response::NoContent;
use domain::comments::{Comment, Mention, MentionIn, NewComment};
use domain::error::ApiError;
use serde::Deserialize;

pub async fn create(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(new): ApiJson<NewComment>,
) -> Result<Created<Comment>, AppError> {
    Ok(Created::new(state.notebook.add_comment(&actor, &id, new).await?))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct Resolve {
    resolved: bool,
}

/// `{"resolved": true}` resolves the comment's thread; `false` reopens it.
pub async fn resolve(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<Resolve>,
) -> Result<Json<Comment>, AppError> {
    Ok(Json(state.notebook.resolve_comment(&actor, id, body.resolved).await?))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct MentionsQuery {
    #[serde(default)]
    all: bool,
}

pub async fn mentions(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<MentionsQuery>,
) -> Result<Json<Vec<Mention>>, AppError> {
    Ok(Json(state.notebook.mentions(&actor, query.all).await?))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct Read {
    #[serde(default)]
    comment_id: Option<i64>,
    #[serde(default)]
    annotation_id: Option<i64>,
}

/// Marks one mention read (`{"comment_id": 12}` or `{"annotation_id": 3}`),
/// or all (`{}`).
pub async fn read(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiJson(body): ApiJson<Read>,
) -> Result<NoContent, AppError> {
    if body.comment_id.is_some() && body.annotation_id.is_some() {
        return Err(ApiError::invalid("Give comment_id or annotation_id, not both.").into());
    }
    state.notebook.read_mentions(&actor, MentionIn::of(body.comment_id, body.annotation_id)).await?;
    Ok(NoContent)
}

/// The routes of comments and mentions (under `/api/v1`).
pub fn routes() -> crate::openapi::Routes {
    use aide::axum::routing;
    crate::openapi::Routes::default()
        .at("/investigations/{id}/comments", routing::post(create))
        .at("/comments/{id}", routing::patch(resolve))
        .at("/mentions", routing::get(mentions))
        .at("/mentions/read", routing::post(read))
}
