//! HTTP/1.1 for the terminal client and the webhook, through reqwest (on
//! the hyper and rustls the server already builds; the system's roots for
//! https): one client per request, no proxy, no redirects. Errors say which
//! origin and why, as sentences, and never hold a path or a token.

use bytes::Bytes;
use reqwest::{Method, StatusCode, header};
use serde::de::DeserializeOwned;

/// How long a server may take to accept a connection and answer a request's
/// head, and to send the next piece of an answer (`SLEUTH_CLIENT_TIMEOUT`
/// seconds to change it): a server that never answers is an error, not a hang.
pub fn timeout() -> std::time::Duration {
    let seconds = std::env::var("SLEUTH_CLIENT_TIMEOUT").ok().and_then(|s| s.trim().parse::<u64>().ok());
    std::time::Duration::from_secs(seconds.unwrap_or(30).max(1))
}

/// The most of one answer read into memory (output is fetched in 8 MiB pieces).
pub const ANSWER_AT_MOST: usize = 64 << 20;

#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("{0:?} is not an http:// or https:// URL")]
    NotAUrl(String),
    /// No connection, or TLS refused it; `reason` is the whole chain of causes.
    #[error("cannot reach {place}: {reason}")]
    Connect { place: String, reason: String },
    #[error("the connection to {place} broke: {reason}")]
    Broken { place: String, reason: String },
    #[error("{place} did not answer within {} s", .within.as_secs())]
    Slow { place: String, within: std::time::Duration },
    #[error("{place} answered with more than {} MiB; stopped reading", .limit >> 20)]
    TooLarge { place: String, limit: usize },
    /// Sleuth's own error answer: its sentence, as the server wrote it.
    #[error("{message}")]
    Api { status: u16, code: String, message: String },
    #[error("{place} answered {status}, not as Sleuth does: {start}")]
    NotSleuth { place: String, status: u16, start: String },
}

impl HttpError {
    /// A client's error as one of ours, its URL left out (a webhook's path is
    /// its secret; a token is never in one).
    pub fn of(place: &str, e: reqwest::Error) -> Self {
        let within = timeout();
        let (slow, connect) = (e.is_timeout(), e.is_connect());
        let reason = crate::error::chain(&e.without_url());
        let place = place.to_string();
        if slow {
            Self::Slow { place, within }
        } else if connect {
            Self::Connect { place, reason }
        } else {
            Self::Broken { place, reason }
        }
    }
}

/// Where requests go: `http(s)://host[:port][/prefix]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    /// Scheme, host and port; no credentials, path, query or fragment.
    base: reqwest::Url,
    /// A path the server is mounted under (`https://x.org/sleuth`), no trailing `/`.
    prefix: String,
}

impl Origin {
    pub fn parse(url: &str) -> Result<Self, HttpError> {
        let (base, path) = Self::split(url)?;
        Ok(Self { base, prefix: path.trim_end_matches('/').to_string() })
    }

    /// The URL's origin, and its path (without query and fragment).
    fn split(url: &str) -> Result<(reqwest::Url, String), HttpError> {
        let not = || HttpError::NotAUrl(url.to_string());
        let mut parsed = reqwest::Url::parse(url).map_err(|_| not())?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none_or(str::is_empty) {
            return Err(not());
        }
        let path = parsed.path().to_string();
        // Credentials in a URL (`user:pass@`) are not sent on, and not kept.
        let _ = parsed.set_username("");
        let _ = parsed.set_password(None);
        parsed.set_path("");
        parsed.set_query(None);
        parsed.set_fragment(None);
        Ok((parsed, path))
    }

    /// A URL to send to as it is: the origin, and its path with the query.
    pub fn endpoint(url: &str) -> Result<(Self, String), HttpError> {
        let (base, path) = Self::split(url)?;
        let query = reqwest::Url::parse(url).ok().and_then(|u| u.query().map(|q| format!("?{q}"))).unwrap_or_default();
        let path = if path.is_empty() { "/".to_string() } else { path };
        Ok((Self { base, prefix: String::new() }, format!("{path}{query}")))
    }

    /// `https://host:port/prefix` — what a person opens.
    pub fn url(&self) -> String {
        format!("{}{}", self.place(), self.prefix)
    }

    /// Where a failure happened, without the path (a webhook's path is its secret).
    pub fn place(&self) -> String {
        self.base.as_str().trim_end_matches('/').to_string()
    }

    fn host(&self) -> &str {
        self.base.host_str().unwrap_or_default()
    }

    /// Sends one request; the answer's body is read by the caller, as it comes.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        json: Option<&serde_json::Value>,
    ) -> Result<reqwest::Response, HttpError> {
        self.send_to(None, method, path, token, json).await
    }

    /// [`Origin::send`], connecting to `at` when given (an address already
    /// resolved and checked: the webhook's), the host still named for TLS.
    /// Redirects are not followed and no proxy is asked: a request goes where
    /// it was checked to go.
    pub async fn send_to(
        &self,
        at: Option<std::net::SocketAddr>,
        method: Method,
        path: &str,
        token: Option<&str>,
        json: Option<&serde_json::Value>,
    ) -> Result<reqwest::Response, HttpError> {
        let place = self.place();
        let within = timeout();
        let mut client = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(within)
            .read_timeout(within)
            .user_agent(concat!("sleuth/", env!("CARGO_PKG_VERSION")));
        if let Some(addr) = at {
            client = client.resolve(self.host(), addr);
        }
        let client = client.build().map_err(|e| HttpError::of(&place, e))?;
        let url = format!("{}{}{path}", self.place(), self.prefix);
        let mut request = client.request(method, url);
        if let Some(json) = json {
            request = request.header(header::CONTENT_TYPE, "application/json").body(json.to_string());
        }
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        // The answer's head within the limit too (a server that accepts and never answers).
        match tokio::time::timeout(within, request.send()).await {
            Err(_) => Err(HttpError::Slow { place, within }),
            Ok(sent) => sent.map_err(|e| HttpError::of(&place, e)),
        }
    }
}

/// The whole body of an answer: at most [`ANSWER_AT_MOST`], each piece within [`timeout`].
pub async fn body(place: &str, mut response: reqwest::Response) -> Result<(StatusCode, Bytes), HttpError> {
    let status = response.status();
    let mut bytes = bytes::BytesMut::new();
    let within = timeout();
    loop {
        let piece = tokio::time::timeout(within, response.chunk())
            .await
            .map_err(|_| HttpError::Slow { place: place.to_string(), within })?;
        let Some(data) = piece.map_err(|e| HttpError::of(place, e))? else { break };
        if bytes.len() + data.len() > ANSWER_AT_MOST {
            return Err(HttpError::TooLarge { place: place.to_string(), limit: ANSWER_AT_MOST });
        }
        bytes.extend_from_slice(&data);
    }
    Ok((status, bytes.freeze()))
}

/// A 2xx answer's JSON, or Sleuth's error in its own words.
pub fn json<T: DeserializeOwned>(place: &str, status: StatusCode, bytes: &[u8]) -> Result<T, HttpError> {
    if !status.is_success() {
        return Err(refusal(place, status, bytes));
    }
    // 204: nothing, which reads as `null`.
    let bytes = if bytes.is_empty() { b"null".as_slice() } else { bytes };
    serde_json::from_slice(bytes).map_err(|_| not_sleuth(place, status, bytes))
}

/// What a non-2xx answer means: `{"error":{"code","message"}}` from Sleuth.
pub fn refusal(place: &str, status: StatusCode, bytes: &[u8]) -> HttpError {
    #[derive(serde::Deserialize)]
    struct Body {
        error: domain::error::ApiError,
    }
    match serde_json::from_slice::<Body>(bytes) {
        Ok(Body { error }) => HttpError::Api {
            status: status.as_u16(),
            code: serde_json::to_value(error.code)
                .ok()
                .and_then(|c| c.as_str().map(str::to_string))
                .unwrap_or_default(),
            message: error.message,
        },
        Err(_) => not_sleuth(place, status, bytes),
    }
}

fn not_sleuth(place: &str, status: StatusCode, bytes: &[u8]) -> HttpError {
    let text = String::from_utf8_lossy(bytes);
    let start: String = text.chars().take(120).filter(|c| !c.is_control()).collect();
    HttpError::NotSleuth { place: place.to_string(), status: status.as_u16(), start }
}

#[cfg(test)]
mod tests {
    use super::Origin;

    #[test]
    fn origins_keep_their_prefix_and_drop_credentials() {
        let o = Origin::parse("https://me:secret@sleuth.example.com/team/").unwrap();
        assert_eq!((o.host(), o.prefix.as_str()), ("sleuth.example.com", "/team"));
        assert_eq!(o.url(), "https://sleuth.example.com/team");
        let o = Origin::parse("http://127.0.0.1:3000").unwrap();
        assert_eq!((o.prefix.as_str(), o.place()), ("", "http://127.0.0.1:3000".to_string()));
        let o = Origin::parse("http://[::1]:8080/x?y#z").unwrap();
        assert_eq!((o.place().as_str(), o.prefix.as_str()), ("http://[::1]:8080", "/x"));
        let (o, path) = Origin::endpoint("https://hooks.example.com/services/T0/B0/secret?x=1#f").unwrap();
        assert_eq!((o.url(), path.as_str()), ("https://hooks.example.com".to_string(), "/services/T0/B0/secret?x=1"));
        assert_eq!(Origin::endpoint("http://h:8080").unwrap().1, "/");
        for bad in ["ftp://x", "127.0.0.1:3000", "http://", "http://a b", "http://h:port"] {
            assert!(Origin::parse(bad).is_err(), "{bad}");
        }
    }
}
