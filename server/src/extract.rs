//! axum's extractors with our error format, so a malformed body or path gets a
//! JSON error with a reason instead of axum's plain-text rejection.

use crate::error::AppError;
use axum::extract::FromRequest;
use axum::extract::FromRequestParts;

#[derive(FromRequest)]
#[from_request(via(axum::Json), rejection(AppError))]
pub struct ApiJson<T>(pub T);

#[derive(FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(AppError))]
pub struct ApiPath<T>(pub T);

#[derive(FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(AppError))]
pub struct ApiQuery<T>(pub T);

/// A JSON body that may be left out (empty, or only whitespace): then `T::default()`.
pub struct OptionalJson<T>(pub T);

impl<T: serde::de::DeserializeOwned + Default, S: Send + Sync> FromRequest<S> for OptionalJson<T> {
    type Rejection = AppError;

    async fn from_request(request: axum::extract::Request, state: &S) -> Result<Self, Self::Rejection> {
        let body = axum::body::Bytes::from_request(request, state)
            .await
            .map_err(|e| domain::error::ApiError::bad_request(format!("The body could not be read: {e}")))?;
        if body.iter().all(u8::is_ascii_whitespace) {
            return Ok(Self(T::default()));
        }
        serde_json::from_slice(&body)
            .map(Self)
            .map_err(|e| domain::error::ApiError::invalid(format!("The body is not valid: {e}")).into())
    }
}
