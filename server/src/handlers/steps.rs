use crate::auth::Caller;
use crate::error::AppError;
use crate::extract::{ApiJson, ApiPath, OptionalJson};
use crate::handlers::Created;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::response::NoContent;
use domain::error::ApiError;
use domain::model::Step;
use domain::steps::StepBody;
use serde_json::{Map, Value};

pub async fn create(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(investigation): ApiPath<String>,
    ApiJson(body): ApiJson<StepBody>,
) -> Result<Created<Step>, AppError> {
    let step = state.notebook.add_step(&actor, &investigation, body).await?;
    Ok(Created::at(step.url.clone(), step))
}

/// `POST /steps/{id}/duplicate`: a copy of the step right after it (201, where it is).
pub async fn duplicate(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> Result<Created<Step>, AppError> {
    let step = state.notebook.duplicate_step(&actor, id).await?;
    Ok(Created::at(step.url.clone(), step))
}

pub async fn show(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> Result<Json<Step>, AppError> {
    Ok(Json(state.notebook.step(&actor, id).await?))
}

/// A JSON merge patch of the step's fields (e.g. `{"body":"…"}` for a note), plus
/// an optional `"position"` (1-based) to move it in the timeline.
pub async fn update(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
    ApiJson(mut patch): ApiJson<Map<String, Value>>,
) -> Result<Json<Step>, AppError> {
    // The version the client edited, if it says: a newer one refuses the save (409).
    let version = match patch.remove("version") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_i64().ok_or_else(|| ApiError::invalid("`version` must be a whole number."))?),
    };
    let position = match patch.remove("position") {
        None => None,
        Some(v) => Some(
            v.as_u64()
                .and_then(|p| u32::try_from(p).ok())
                .filter(|p| *p >= 1)
                .ok_or_else(|| ApiError::invalid("`position` must be a whole number from 1."))?,
        ),
    };
    let mut step = state.notebook.step(&actor, id).await?;
    if !patch.is_empty() {
        let mut fields = serde_json::to_value(&step.body).map_err(|_| ApiError::internal())?;
        if let Some(fields) = fields.as_object_mut() {
            fields.extend(patch);
        }
        let body: StepBody = serde_json::from_value(fields)
            .map_err(|e| ApiError::invalid(format!("The patch does not fit a {} step: {e}", step.body.kind())))?;
        step = state.notebook.update_step(&actor, id, body, version).await?;
    }
    if let Some(position) = position {
        step = state.notebook.move_step(&actor, id, position).await?;
    }
    Ok(Json(step))
}

pub async fn delete(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> Result<NoContent, AppError> {
    state.notebook.delete_step(&actor, id).await?;
    Ok(NoContent)
}

#[derive(serde::Deserialize, Default, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Refresh {
    #[serde(default)]
    start: Option<u64>,
    #[serde(default)]
    end: Option<u64>,
}

/// Fetches a snippet step's file again as a new snapshot (optionally another range).
pub async fn refresh(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
    // No body: the same range.
    OptionalJson(refresh): OptionalJson<Refresh>,
) -> Result<Json<Step>, AppError> {
    Ok(Json(state.notebook.refresh_snippet(&actor, id, refresh.start, refresh.end).await?))
}

/// A snippet's shown lines, edited: the text that replaces them.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditedLines {
    text: String,
}

/// "Edit these lines": a patch step right after the snippet, made against
/// its newest snapshot (whose sha256 is the base).
pub async fn patch_lines(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
    ApiJson(edited): ApiJson<EditedLines>,
) -> Result<Created<Step>, AppError> {
    let step = state.notebook.patch_snippet(&actor, id, &edited.text).await?;
    Ok(Created::at(step.url.clone(), step))
}

/// A dry run of a patch step: does each of its files still have its base on the host?
pub async fn check(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> Result<Json<domain::steps::patch::PatchCheck>, AppError> {
    Ok(Json(state.notebook.check_patch(&actor, id).await?))
}

/// The routes of steps (under `/api/v1`).
pub fn routes() -> crate::openapi::Routes {
    use aide::axum::routing;
    crate::openapi::Routes::default()
        .at("/investigations/{id}/steps", routing::post(create))
        .at("/steps/{step_id}", routing::get(show).patch(update).delete(delete))
        .at("/steps/{step_id}/refresh", routing::post(refresh))
        .at("/steps/{step_id}/check", routing::post(check))
        .at("/steps/{step_id}/patch", routing::post(patch_lines))
        .at("/steps/{step_id}/duplicate", routing::post(duplicate))
}
