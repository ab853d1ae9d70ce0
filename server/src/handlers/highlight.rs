//! `/highlight.css`: the syntax-highlighting themes, generated from syntect's at
//! first use, revalidated by ETag so a new Sleuth with other colours shows at once.

use crate::snippets::highlight::stylesheet;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::hash::{Hash, Hasher};

pub async fn stylesheet_css(headers: HeaderMap) -> Response {
    let css = stylesheet();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    css.hash(&mut hasher);
    let etag = format!("\"{:016x}\"", hasher.finish());
    let cache = (header::CACHE_CONTROL, "no-cache");
    if headers.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()) == Some(etag.as_str()) {
        return (StatusCode::NOT_MODIFIED, [(header::ETAG, etag)], [cache]).into_response();
    }
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8"), (header::ETAG, etag.as_str()), cache], css).into_response()
}
