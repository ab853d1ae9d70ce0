//! `POST /api/v1/extract`: the measurements in a piece of benchmark output,
//! without storing anything. Text as `text/plain`, or JSON with user extractors.

use crate::error::AppError;
use crate::metrics::{self, custom::Extractor};
use axum::Json;
use axum::body::Bytes;
use axum::http::{HeaderMap, header};
use domain::error::ApiError;
use domain::metrics::Measurement;
use serde::Deserialize;

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExtractRequest {
    text: String,
    #[serde(default)]
    extractors: Vec<ExtractorSpec>,
}

/// Each extractor is a compiled regex run over the whole text.
const MAX_EXTRACTORS: usize = 20;

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExtractorSpec {
    name: String,
    pattern: String,
    unit: String,
}

pub async fn extract(headers: HeaderMap, body: Bytes) -> Result<Json<Vec<Measurement>>, AppError> {
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let request = if content_type.starts_with("application/json") {
        serde_json::from_slice::<ExtractRequest>(&body)
            .map_err(|e| ApiError::invalid(format!("Send {{\"text\": \"…\", \"extractors\": [...]}}: {e}")))?
    } else {
        ExtractRequest { text: String::from_utf8_lossy(&body).into_owned(), extractors: Vec::new() }
    };
    if request.extractors.len() > MAX_EXTRACTORS {
        return Err(ApiError::invalid(format!("At most {MAX_EXTRACTORS} extractors in one request.")).into());
    }
    let extractors = request
        .extractors
        .iter()
        .map(|e| Extractor::new(&e.name, &e.pattern, &e.unit))
        .collect::<Result<Vec<_>, _>>()?;
    let mut found = metrics::extract(&request.text);
    for extractor in &extractors {
        found.extend(extractor.extract(&request.text));
    }
    Ok(Json(found))
}

/// The routes of extraction of pasted output (under `/api/v1`).
pub fn routes() -> crate::openapi::Routes {
    use aide::axum::routing;
    crate::openapi::Routes::default()
        .at("/extract", routing::post_with(extract, crate::openapi::text_or_json::<ExtractRequest>))
}
