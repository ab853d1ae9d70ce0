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
