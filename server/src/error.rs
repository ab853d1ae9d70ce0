//! How errors leave the JSON API: `{"error":{"code","message"}}` with the status
//! that fits the code. Causes were logged where they happened (see `notebook`);
//! here only the user-facing part exists.

use app::error::{ApiError, ErrorCode};
use axum::Json;
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

#[derive(Debug)]
pub struct AppError(pub ApiError);

impl From<ApiError> for AppError {
    fn from(e: ApiError) -> Self {
        Self(e)
    }
}

impl From<crate::db::StoreError> for AppError {
    fn from(e: crate::db::StoreError) -> Self {
        Self(e.into())
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.0.code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (status, Json(serde_json::json!({ "error": self.0 }))).into_response()
    }
}

fn code_for(status: StatusCode) -> ErrorCode {
    match status {
        StatusCode::PAYLOAD_TOO_LARGE => ErrorCode::PayloadTooLarge,
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ErrorCode::UnsupportedMediaType,
        StatusCode::UNPROCESSABLE_ENTITY => ErrorCode::Invalid,
        StatusCode::NOT_FOUND => ErrorCode::NotFound,
        s if s.is_server_error() => ErrorCode::Internal,
        _ => ErrorCode::BadRequest,
    }
}

impl From<JsonRejection> for AppError {
    fn from(rejection: JsonRejection) -> Self {
        let status = rejection.status();
        let message = match &rejection {
            JsonRejection::MissingJsonContentType(_) => {
                "Send the body as JSON with `Content-Type: application/json`.".to_string()
            }
            JsonRejection::BytesRejection(_) if status == StatusCode::PAYLOAD_TOO_LARGE => {
                format!("The request body is larger than {} bytes.", app::model::limits::REQUEST_BYTES)
            }
            _ => rejection.body_text(),
        };
        Self(ApiError::new(code_for(status), message))
    }
}

impl From<PathRejection> for AppError {
    fn from(rejection: PathRejection) -> Self {
        // A path that does not parse (e.g. a step id that is not a number) names nothing.
        Self(ApiError::not_found(rejection.body_text()))
    }
}

impl From<QueryRejection> for AppError {
    fn from(rejection: QueryRejection) -> Self {
        Self(ApiError::bad_request(rejection.body_text()))
    }
}

/// Server functions (`/api/{name}`) answer every error leptos raises before
/// their body runs (arguments that do not parse, a missing field) with 500,
/// although the error inside says `bad_request`. This puts the status the
/// error's code names on such answers, so a malformed request is a 4xx there
/// too; real internal errors stay 500.
pub async fn server_fn_status(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let server_fn = request.uri().path().starts_with("/api/") && !request.uri().path().starts_with("/api/v1/");
    let response = next.run(request).await;
    if !server_fn || response.status() != StatusCode::INTERNAL_SERVER_ERROR {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    // Error bodies are a sentence of JSON; anything larger is passed on as it was read.
    let bytes = match axum::body::to_bytes(body, 64 * 1024).await {
        Ok(bytes) => bytes,
        Err(_) => {
            return (StatusCode::INTERNAL_SERVER_ERROR, Json(serde_json::json!({ "error": ApiError::internal() })))
                .into_response();
        }
    };
    if let Ok(error) = serde_json::from_slice::<ApiError>(&bytes)
        && let Ok(status) = StatusCode::from_u16(error.code.http_status())
    {
        parts.status = status;
    }
    Response::from_parts(parts, axum::body::Body::from(bytes))
}
