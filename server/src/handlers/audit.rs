use crate::auth::Caller;
use crate::error::AppError;
use crate::extract::ApiQuery;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct AuditQuery {
    /// `json` (default) or `csv`.
    #[serde(default)]
    format: Option<String>,
    #[serde(default)]
    limit: Option<i64>,
}

/// The audit log, newest first; admins only.
pub async fn list(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<AuditQuery>,
) -> Result<Response, AppError> {
    let entries = state.notebook.audit_log(&actor, query.limit.unwrap_or(1000)).await?;
    Ok(match query.format.as_deref() {
        Some("csv") => (
            [
                (header::CONTENT_TYPE, "text/csv; charset=utf-8"),
                (header::CONTENT_DISPOSITION, "attachment; filename=\"sleuth-audit.csv\""),
            ],
            crate::auth::audit_view::to_csv(&entries),
        )
            .into_response(),
        None | Some("json") => Json(entries).into_response(),
        Some(other) => {
            return Err(domain::error::ApiError::invalid(format!("The format is json or csv, not {other:?}.")).into());
        }
    })
}

/// The routes of the audit log (under `/api/v1`).
pub fn routes() -> crate::openapi::Routes {
    use aide::axum::routing;
    crate::openapi::Routes::default()
        .at("/audit", routing::get_with(list, crate::openapi::json_or_csv::<Vec<domain::accounts::AuditEntry>>))
}
