//! JSON API v1 handlers, one module per resource. Each is a thin translation
//! between HTTP and the policy layer, [`Guarded`](crate::guarded::Guarded).

pub mod annotations;
pub mod audit;
pub mod auth;
pub mod comments;
pub mod extract;
pub mod health;
pub mod highlight;
pub mod hosts;
pub mod hypotheses;
pub mod investigations;
pub mod measurements;
pub mod replays;
pub mod runs;
pub mod search;
pub mod shares;
pub mod steps;
pub mod users;
pub mod watches;

use crate::error::AppError;
use domain::error::{ApiError, ErrorCode};

/// Unknown paths under `/api/v1`.
pub async fn not_found() -> AppError {
    AppError(ApiError::not_found("There is no such API route; see docs/api.md."))
}

pub async fn method_not_allowed() -> AppError {
    AppError(ApiError::new(ErrorCode::MethodNotAllowed, "This route does not take that method; see docs/api.md."))
}

/// 201 with the new thing as JSON, and `Location` where it has a URL.
pub struct Created<T> {
    location: Option<String>,
    body: T,
}

impl<T> Created<T> {
    pub fn at(location: String, body: T) -> Self {
        Self { location: Some(location), body }
    }
    pub fn new(body: T) -> Self {
        Self { location: None, body }
    }
}

impl<T: serde::Serialize> axum::response::IntoResponse for Created<T> {
    fn into_response(self) -> axum::response::Response {
        let body = axum::Json(self.body);
        match self.location.and_then(|l| axum::http::HeaderValue::from_str(&l).ok()) {
            Some(location) => {
                (axum::http::StatusCode::CREATED, [(axum::http::header::LOCATION, location)], body).into_response()
            }
            None => (axum::http::StatusCode::CREATED, body).into_response(),
        }
    }
}
