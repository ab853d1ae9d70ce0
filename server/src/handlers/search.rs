//! Search (`GET /api/v1/search`) and exports (`…/export?format=html|md|zip`),
//! for members and through share links.

use crate::auth::Caller;
use crate::error::AppError;
use crate::extract::{ApiPath, ApiQuery};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use domain::error::ApiError;
use domain::search::{Export, ExportFormat, SearchRequest, SearchResults};
use serde::Deserialize;

pub async fn search(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiQuery(request): ApiQuery<SearchRequest>,
) -> Result<Json<SearchResults>, AppError> {
    Ok(Json(state.notebook.search(&actor, request).await?))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct ExportQuery {
    #[serde(default)]
    format: Option<String>,
    #[serde(default)]
    comments: Option<bool>,
}

fn format_of(query: &ExportQuery) -> Result<ExportFormat, ApiError> {
    let text = query.format.as_deref().unwrap_or("html");
    ExportFormat::parse(text).ok_or_else(|| ApiError::invalid(format!("format is html, md or zip, not {text:?}.")))
}

pub async fn export(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(query): ApiQuery<ExportQuery>,
) -> Result<Response, AppError> {
    let format = format_of(&query)?;
    Ok(download(state.notebook.export(&actor, &id, format, query.comments.unwrap_or(false)).await?))
}

pub async fn export_shared(
    State(state): State<AppState>,
    ApiPath(token): ApiPath<String>,
    ApiQuery(query): ApiQuery<ExportQuery>,
) -> Result<Response, AppError> {
    let format = format_of(&query)?;
    Ok(download(state.notebook.export_shared(&token, format).await?))
}

/// The file as a download; an HTML report gets the policy it declares itself
/// (nothing runs, nothing loads), should a browser open it from here.
fn download(export: Export) -> Response {
    let disposition = format!("attachment; filename=\"{}\"", export.filename);
    let mut response = export.bytes.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(export.format.content_type()));
    if let Ok(value) = HeaderValue::from_str(&disposition) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox"),
    );
    response
}

/// The routes of search and exports (under `/api/v1`).
pub fn routes() -> crate::openapi::Routes {
    use aide::axum::routing;
    crate::openapi::Routes::default()
        .at("/shared/{token}/export", routing::get_with(export_shared, crate::openapi::export))
        .at("/search", routing::get(search))
        .at("/investigations/{id}/export", routing::get_with(export, crate::openapi::export))
}
