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
