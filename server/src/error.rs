//! Errors inside Sleuth, and the one place they become what a user reads.
//!
//! Services answer [`Error`]: either [`Error::User`] — the [`ApiError`] a person
//! reads, a code and a sentence that says what to do — or [`Error::Internal`]: a
//! failure of ours, with the operation that failed (named by the code, or the
//! place of the `?` that met it) and its cause, kept whole as the error chain.
//!
//! An internal error becomes the wire error in one place, `From<Error> for
//! ApiError`, which logs it there — once, inside the request's span (the router
//! gives every request one: method, path and a number) — and answers with the
//! generic sentence. Handlers return [`AppError`], which is how an `ApiError`
//! leaves the JSON API: `{"error":{"code","message"}}` with the status that fits
//! the code. (The crates.io design: `src/util/errors.rs`.)

use axum::Json;
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use domain::error::{ApiError, ErrorCode};
use std::borrow::Cow;
use std::panic::Location;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A cause of any kind, kept for the log.
pub type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

#[derive(Debug)]
pub enum Error {
    /// For the user: what went wrong in their terms, and what to do.
    User(ApiError),
    /// Ours: logged with its operation and cause, shown as a generic sentence.
    Internal(Internal),
}

pub struct Internal {
    /// What was being done ("recording the end of run 12"); `""` when only
    /// the place is known.
    operation: Cow<'static, str>,
    /// Where the error was met: the `?` or the call that named the operation.
    at: &'static Location<'static>,
    cause: Cause,
    /// The sentence the answer says instead of the generic one, where it
    /// helps and gives nothing away (stored data that is unreadable).
    told: Option<String>,
}

impl std::fmt::Debug for Internal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self}")
    }
}

impl std::fmt::Display for Internal {
    /// `operation (at file:line): cause: its cause: …`
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.operation.is_empty() {
            write!(f, "at {}:{}", self.at.file(), self.at.line())?;
        } else {
            write!(f, "{} (at {}:{})", self.operation, self.at.file(), self.at.line())?;
        }
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(self.cause.as_ref());
        while let Some(e) = cause {
            write!(f, ": {e}")?;
            cause = e.source();
        }
        Ok(())
    }
}

impl Error {
    /// An internal failure of `operation`, caused by `cause`.
    #[track_caller]
    pub fn internal(operation: impl Into<Cow<'static, str>>, cause: impl Into<Cause>) -> Self {
        Self::Internal(Internal {
            operation: operation.into(),
            at: Location::caller(),
            cause: cause.into(),
            told: None,
        })
    }

    /// Stored data that does not parse: `what` names it ("run 12's env"). The
    /// answer says it is unreadable — never shown as empty — and the log has
    /// the cause.
    #[track_caller]
    pub fn unreadable(what: impl Into<String>, cause: impl Into<Cause>) -> Self {
        let what: String = what.into();
        let told = format!(
            "{what} is stored in a form that cannot be read (unreadable); the details are in the server's log."
        );
        Self::Internal(Internal {
            operation: format!("reading {what}").into(),
            at: Location::caller(),
            cause: cause.into(),
            told: Some(told),
        })
    }

    /// An internal failure known by its description alone (no error value caused it).
    #[track_caller]
    pub fn bug(what: impl Into<String>) -> Self {
        let what: String = what.into();
        Self::internal("", what)
    }

    /// A command used wrongly: what to do instead (the CLI prints it as is).
    pub fn usage(message: impl Into<String>) -> Self {
        Self::User(ApiError::invalid(message))
    }

    /// The user's error, if it is one (tests and callers that pass it on as is).
    pub fn user(&self) -> Option<&ApiError> {
        match self {
            Self::User(e) => Some(e),
            Self::Internal(_) => None,
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::User(e) => write!(f, "{}", e.message),
            Self::Internal(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Error {}

/// An error and its causes, for a log line of its own: `outer: inner: innermost`.
pub fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(inner) = cause {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        cause = inner.source();
    }
    text
}

/// Stored JSON read back as `T`: text that does not parse is
/// [`Error::unreadable`] naming `what` it holds, never a default.
#[track_caller]
pub fn stored<T: serde::de::DeserializeOwned>(text: &str, what: impl FnOnce() -> String) -> Result<T> {
    serde_json::from_str(text).map_err(|cause| Error::unreadable(what(), cause))
}

/// The same for a column that may be NULL: NULL is `None`, text that does not parse an error.
#[track_caller]
pub fn stored_opt<T: serde::de::DeserializeOwned>(
    text: Option<&str>,
    what: impl FnOnce() -> String,
) -> Result<Option<T>> {
    match text {
        Some(text) => stored(text, what).map(Some),
        None => Ok(None),
    }
}

/// Names the operation of a failing `Result`: `.context("reading run 12's output")?`.
pub trait Context<T> {
    #[track_caller]
    fn context(self, operation: impl Into<Cow<'static, str>>) -> Result<T>;
}

impl<T, E: Into<Cause>> Context<T> for std::result::Result<T, E> {
    #[track_caller]
    fn context(self, operation: impl Into<Cow<'static, str>>) -> Result<T> {
        let at = Location::caller();
        self.map_err(|cause| {
            Error::Internal(Internal { operation: operation.into(), at, cause: cause.into(), told: None })
        })
    }
}

impl From<ApiError> for Error {
    fn from(e: ApiError) -> Self {
        Self::User(e)
    }
}

impl From<crate::charts::ChartError> for Error {
    #[track_caller]
    fn from(e: crate::charts::ChartError) -> Self {
        Self::Internal(Internal { operation: "".into(), at: Location::caller(), cause: Box::new(e), told: None })
    }
}

impl From<crate::db::StoreError> for Error {
    /// The place of the `?` names the operation: a store error is always ours,
    /// unless it says the user sent text the database cannot hold.
    #[track_caller]
    fn from(e: crate::db::StoreError) -> Self {
        use crate::db::Trouble;
        let trouble = e.trouble();
        crate::operations::count_store_error(trouble);
        match trouble {
            // Logged here, once, with the cause: the answer is a sentence the
            // user can act on, not the generic one.
            Trouble::Full => {
                tracing::warn!("a write was refused: {e}");
                return Self::User(ApiError::new(ErrorCode::StoreFull, crate::operations::full_disk_message()));
            }
            Trouble::Unavailable => {
                tracing::warn!("the database cannot be reached: {e}");
                return Self::User(store_unavailable());
            }
            Trouble::Other => {}
        }
        if e.is_unstorable_text() {
            return Self::User(ApiError::invalid(
                "Text with a NUL character (\\0) cannot be stored; remove it and try again.",
            ));
        }
        Self::Internal(Internal {
            operation: "the store".into(),
            at: Location::caller(),
            cause: Box::new(e),
            told: None,
        })
    }
}

impl From<crate::ssh::SshError> for Error {
    /// A host that cannot be reached, or a key to confirm: the user's to act on.
    fn from(e: crate::ssh::SshError) -> Self {
        use crate::ssh::SshError;
        let code = match &e {
            SshError::UnknownHostKey { .. } => ErrorCode::HostKeyUnknown,
            SshError::HostKeyChanged { .. } => ErrorCode::HostKeyChanged,
            SshError::NeedsPassphrase { .. } => ErrorCode::NeedsPassphrase,
            SshError::KeyFile { .. } => ErrorCode::Invalid,
            SshError::Connect { .. } | SshError::Auth { .. } | SshError::Lost { .. } => ErrorCode::HostUnreachable,
        };
        Self::User(ApiError::new(code, e.to_string()))
    }
}

impl From<Error> for ApiError {
    /// The one place an internal error is logged, and becomes the generic sentence.
    fn from(e: Error) -> Self {
        match e {
            Error::User(e) => e,
            Error::Internal(e) => {
                tracing::error!("{e}");
                match e.told {
                    Some(told) => ApiError::new(ErrorCode::Internal, told),
                    None => ApiError::internal(),
                }
            }
        }
    }
}

/// A save that started from an older version of `what` (a step, a hypothesis):
/// who changed it since, when (RFC 3339), its version now, and `then` — what it
/// says now and what to do — so nothing is lost on either side.
pub fn stale_save(what: &str, who: Option<&str>, at: &str, version: i64, then: &str) -> ApiError {
    ApiError::new(
        ErrorCode::Conflict,
        format!(
            "Not saved: this {what} was changed by {} at {} (version {version}) after you opened it. {then}",
            who.unwrap_or("someone"),
            domain::model::short_time(at),
        ),
    )
}

/// An [`ApiError`] on its way out of a JSON handler.
#[derive(Debug)]
pub struct AppError(pub ApiError);

impl From<ApiError> for AppError {
    fn from(e: ApiError) -> Self {
        Self(e)
    }
}

impl From<crate::db::StoreError> for AppError {
    #[track_caller]
    fn from(e: crate::db::StoreError) -> Self {
        Self(Error::from(e).into())
    }
}

impl From<Error> for AppError {
    fn from(e: Error) -> Self {
        Self(e.into())
    }
}

/// On an answer that found the database away (see
/// `operations::refuse_while_unreachable`).
#[derive(Clone, Copy, Debug)]
pub struct StoreAway;

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.0.code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let away = self.0.code == ErrorCode::StoreUnavailable;
        let busy = self.0.code == ErrorCode::TooManyRequests;
        let mut response = (status, Json(serde_json::json!({ "error": self.0 }))).into_response();
        if away {
            response.extensions_mut().insert(StoreAway);
        }
        if busy {
            // Every 429 says when to try again (a sign-in pause says how long in its sentence).
            response.headers_mut().insert(axum::http::header::RETRY_AFTER, axum::http::HeaderValue::from_static("5"));
        }
        response
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
                format!("The request body is larger than {} bytes.", domain::model::limits::REQUEST_BYTES)
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
        if error.code == ErrorCode::StoreUnavailable {
            parts.extensions.insert(StoreAway);
        }
    }
    Response::from_parts(parts, axum::body::Body::from(bytes))
}

/// What a request answers while the database cannot be reached.
pub fn store_unavailable() -> ApiError {
    ApiError::new(
        ErrorCode::StoreUnavailable,
        "The database cannot be reached right now (restarting?); nothing was changed. Try again in a few seconds.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn an_internal_error_names_its_operation_place_and_whole_cause() {
        let failed: std::result::Result<(), Outer> = Err(Outer(std::io::Error::other("disk on fire")));
        let e = failed.context("writing run 12's output").unwrap_err();
        let text = e.to_string();
        assert!(text.starts_with("writing run 12's output (at server/src/error.rs:"), "{text}");
        assert!(text.ends_with(": outer: disk on fire"), "{text}");
        assert!(e.user().is_none());
        let wire: ApiError = e.into();
        assert_eq!(wire.code, ErrorCode::Internal);
        assert!(!wire.message.contains("disk"), "causes never reach users: {}", wire.message);
    }

    #[test]
    fn user_errors_pass_through_unchanged() {
        let e: Error = ApiError::invalid("The title cannot be empty.").into();
        assert_eq!(ApiError::from(e).message, "The title cannot be empty.");
    }
}
