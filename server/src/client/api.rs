//! A Sleuth server and the token to show it: JSON calls, bytes, event
//! streams, and Sleuth's errors in its own words (a 401 says what to do).

use super::http::{self, HttpError, Origin};
use hyper::Method;
use serde::de::DeserializeOwned;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Http(#[from] HttpError),
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
}

/// A server and the token to show it.
pub struct Api {
    origin: Origin,
    token: Option<String>,
}

impl Api {
    pub fn with(origin: Origin, token: Option<String>) -> Self {
        Self { origin, token }
    }

    /// The server's URL, as a person opens it.
    pub fn url(&self) -> String {
        self.origin.url()
    }

    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// Where failures happened, for messages.
    pub fn place(&self) -> String {
        self.origin.place()
    }

    pub async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<serde_json::Value>,
    ) -> Result<T, ClientError> {
        let place = self.origin.place();
        let response = self.origin.send(method, path, self.token.as_deref(), body.as_ref()).await?;
        let (status, bytes) = http::body(&place, response).await?;
        Ok(http::json(&place, status, &bytes).map_err(|e| self.explain(e))?)
    }

    /// A 2xx answer's bytes (a run's output).
    pub async fn bytes(&self, path: &str) -> Result<bytes::Bytes, ClientError> {
        let place = self.origin.place();
        let response = self.origin.send(Method::GET, path, self.token.as_deref(), None).await?;
        let (status, bytes) = http::body(&place, response).await?;
        if !status.is_success() {
            return Err(self.explain(http::refusal(&place, status, &bytes)).into());
        }
        Ok(bytes)
    }

    /// A 2xx answer whose body is read as it comes (an event stream).
    pub async fn open(&self, path: &str) -> Result<reqwest::Response, ClientError> {
        let place = self.origin.place();
        let response = self.origin.send(Method::GET, path, self.token.as_deref(), None).await?;
        if !response.status().is_success() {
            let (status, bytes) = http::body(&place, response).await?;
            return Err(self.explain(http::refusal(&place, status, &bytes)).into());
        }
        Ok(response)
    }

    /// A 401 says what to do from a terminal.
    pub fn explain(&self, error: HttpError) -> HttpError {
        match error {
            HttpError::Api { status: 401, code, .. } => HttpError::Api {
                status: 401,
                code,
                message: format!(
                    "{} did not accept {}: run `sleuth login {}` (or set SLEUTH_TOKEN).",
                    self.origin.url(),
                    if self.token.is_some() { "the token" } else { "a request without a token" },
                    self.origin.url()
                ),
            },
            other => other,
        }
    }

    pub fn page(&self, path: &str) -> String {
        format!("{}{path}", self.origin.url())
    }
}
