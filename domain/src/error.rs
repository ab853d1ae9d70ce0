//! The one error type that crosses the wire, from the JSON API and from server functions.
//!
//! Internal causes are logged on the server and never sent: users see `message`, which is
//! written for them. The HTTP status is derived from `code` by the server.

use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The request could not be understood (malformed JSON, wrong types, bad path).
    BadRequest,
    /// Well-formed but invalid: empty title, field too long, unknown step kind …
    Invalid,
    NotFound,
    /// The thing exists already, or is in use.
    Conflict,
    PayloadTooLarge,
    UnsupportedMediaType,
    MethodNotAllowed,
    /// The browser could not reach the server.
    Network,
    /// The host offered a key nobody has confirmed yet.
    HostKeyUnknown,
    /// The host offered a different key than the trusted one; nothing ran.
    HostKeyChanged,
    /// The host's key file needs its passphrase.
    NeedsPassphrase,
    /// Could not connect or log in to the host.
    HostUnreachable,
    /// Not signed in (no session, no valid API token).
    Unauthenticated,
    /// Signed in, but not allowed; or a cross-site request.
    Forbidden,
    /// Too many attempts (sign-in); try again later.
    TooManyRequests,
    /// It existed, and no longer works (a revoked or expired share link).
    Gone,
    /// Something broke on our side; the details are in the server log.
    Internal,
    /// The store refuses writes: its disk is full. Reads still work.
    StoreFull,
    /// The database cannot be reached (restarting, failing over); try again.
    StoreUnavailable,
    /// This server is stopping (a deploy): it starts nothing new.
    ShuttingDown,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl ErrorCode {
    /// The HTTP status that carries this error; one mapping for the API and the pages.
    pub fn http_status(self) -> u16 {
        match self {
            Self::BadRequest => 400,
            Self::NotFound => 404,
            Self::Conflict => 409,
            Self::MethodNotAllowed => 405,
            Self::PayloadTooLarge => 413,
            Self::UnsupportedMediaType => 415,
            Self::Invalid => 422,
            Self::HostKeyUnknown | Self::HostKeyChanged | Self::NeedsPassphrase => 409,
            Self::Unauthenticated => 401,
            Self::Forbidden => 403,
            Self::TooManyRequests => 429,
            Self::Gone => 410,
            Self::Internal => 500,
            Self::StoreFull => 507,
            Self::StoreUnavailable | Self::ShuttingDown => 503,
            Self::Network | Self::HostUnreachable => 502,
        }
    }
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self { code, message: message.into() }
    }
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::BadRequest, message)
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Invalid, message)
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::NotFound, message)
    }
    /// The cause is for the log; the user gets a generic sentence.
    pub fn internal() -> Self {
        Self::new(ErrorCode::Internal, "Something went wrong on the server; the details are in its log.")
    }
}

impl server_fn::error::FromServerFnError for ApiError {
    type Encoder = server_fn::codec::JsonEncoding;

    fn from_server_fn_error(value: server_fn::error::ServerFnErrorErr) -> Self {
        use server_fn::error::ServerFnErrorErr as E;
        match value {
            E::Request(e) => Self::new(ErrorCode::Network, format!("Could not reach the Sleuth server: {e}")),
            E::Args(e) | E::MissingArg(e) | E::Deserialization(e) => {
                Self::bad_request(format!("The request was not understood: {e}"))
            }
            _ => Self::internal(),
        }
    }
}
