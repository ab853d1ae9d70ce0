//! HTTP/1.1 for the terminal client and the webhook: one connection per
//! request (hyper's client half, over the tokio-rustls that sqlx already
//! builds; the system's roots for https). Errors say which URL and why, as
//! sentences, and never hold a token.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode, header};
use hyper_util::rt::TokioIo;
use serde::de::DeserializeOwned;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};

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
    #[error("cannot reach {place}: {source}")]
    Connect { place: String, source: std::io::Error },
    #[error("TLS with {place}: {reason}")]
    Tls { place: String, reason: String },
    #[error("the connection to {place} broke: {source}")]
    Broken { place: String, source: hyper::Error },
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

/// Where requests go: `http(s)://host[:port][/prefix]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    tls: bool,
    host: String,
    port: u16,
    /// `host:port` as the `Host` header carries it.
    authority: String,
    /// A path the server is mounted under (`https://x.org/sleuth`), no trailing `/`.
    prefix: String,
}

impl Origin {
    pub fn parse(url: &str) -> Result<Self, HttpError> {
        let not = || HttpError::NotAUrl(url.to_string());
        let (tls, rest) = match url.split_once("://") {
            Some(("https", rest)) => (true, rest),
            Some(("http", rest)) => (false, rest),
            _ => return Err(not()),
        };
        let (authority, path) = rest.find(['/', '?', '#']).map_or((rest, ""), |at| rest.split_at(at));
        let path = path.split(['?', '#']).next().unwrap_or_default();
        // Credentials in a URL (`user:pass@`) are not sent on, and not kept.
        let authority = authority.rsplit('@').next().unwrap_or(authority);
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) if !port.contains(']') => (host, port.parse::<u16>().map_err(|_| not())?),
            _ => (authority, if tls { 443 } else { 80 }),
        };
        if host.is_empty() || host.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(not());
        }
        Ok(Self {
            tls,
            host: host.trim_start_matches('[').trim_end_matches(']').to_string(),
            port,
            authority: authority.to_string(),
            prefix: path.trim_end_matches('/').to_string(),
        })
    }

    /// A URL to send to as it is: the origin, and its path with the query.
    pub fn endpoint(url: &str) -> Result<(Self, String), HttpError> {
        let origin = Self::parse(url)?;
        let after = url.split_once("://").map_or("", |(_, rest)| rest);
        let path = after.find(['/', '?']).map_or("/", |at| &after[at..]);
        let path = path.split('#').next().unwrap_or_default();
        let path = if path.starts_with('/') { path.to_string() } else { format!("/{path}") };
        Ok((Self { prefix: String::new(), ..origin }, path))
    }

    /// `https://host:port/prefix` — what a person opens.
    pub fn url(&self) -> String {
        format!("{}://{}{}", if self.tls { "https" } else { "http" }, self.authority, self.prefix)
    }

    /// Where a failure happened, without the path (a webhook's path is its secret).
    pub fn place(&self) -> String {
        format!("{}://{}", if self.tls { "https" } else { "http" }, self.authority)
    }

    /// A connection to the host, or to `at` (an address already resolved and
    /// checked: the webhook's) with the host still named for TLS.
    async fn connect(&self, at: Option<std::net::SocketAddr>) -> Result<Box<dyn Io>, HttpError> {
        let place = self.place();
        let tcp = match at {
            Some(addr) => tokio::net::TcpStream::connect(addr).await,
            None => tokio::net::TcpStream::connect((self.host.as_str(), self.port)).await,
        }
        .map_err(|source| HttpError::Connect { place: place.clone(), source })?;
        let _ = tcp.set_nodelay(true);
        if !self.tls {
            return Ok(Box::new(tcp));
        }
        let tls = |reason: String| HttpError::Tls { place: place.clone(), reason };
        let mut roots = tokio_rustls::rustls::RootCertStore::empty();
        for cert in rustls_native_certs::load_native_certs().certs {
            let _ = roots.add(cert);
        }
        let config = tokio_rustls::rustls::ClientConfig::builder_with_provider(Arc::new(
            tokio_rustls::rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| tls(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
        let name = tokio_rustls::rustls::pki_types::ServerName::try_from(self.host.clone())
            .map_err(|_| tls(format!("{:?} is not a name TLS can check", self.host)))?;
        let stream = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(name, tcp)
            .await
            .map_err(|e| tls(e.to_string()))?;
        Ok(Box::new(stream))
    }

    /// Sends one request; the answer's body is read by the caller, as it comes.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        json: Option<&serde_json::Value>,
    ) -> Result<Response<Incoming>, HttpError> {
        self.send_to(None, method, path, token, json).await
    }

    /// [`Origin::send`], connecting to `at` when given.
    pub async fn send_to(
        &self,
        at: Option<std::net::SocketAddr>,
        method: Method,
        path: &str,
        token: Option<&str>,
        json: Option<&serde_json::Value>,
    ) -> Result<Response<Incoming>, HttpError> {
        let place = self.place();
        let within = timeout();
        let slow = || HttpError::Slow { place: place.clone(), within };
        let io = tokio::time::timeout(within, self.connect(at)).await.map_err(|_| slow())??;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(io))
            .await
            .map_err(|source| HttpError::Broken { place: place.clone(), source })?;
        tokio::spawn(async move {
            // Its errors reach the request or the body being read.
            let _ = connection.await;
        });
        let body = json.map(|j| Bytes::from(j.to_string())).unwrap_or_default();
        let mut request = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.prefix))
            .header(header::HOST, &self.authority)
            .header(header::USER_AGENT, concat!("sleuth/", env!("CARGO_PKG_VERSION")));
        if json.is_some() {
            request = request.header(header::CONTENT_TYPE, "application/json");
        }
        if let Some(token) = token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let request =
            request.body(Full::new(body)).map_err(|e| HttpError::NotAUrl(format!("{}{path} ({e})", self.url())))?;
        tokio::time::timeout(within, sender.send_request(request))
            .await
            .map_err(|_| slow())?
            .map_err(|source| HttpError::Broken { place, source })
    }
}

trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// The whole body of an answer: at most [`ANSWER_AT_MOST`], each piece within [`timeout`].
pub async fn body(place: &str, response: Response<Incoming>) -> Result<(StatusCode, Bytes), HttpError> {
    let status = response.status();
    let mut body = response.into_body();
    let mut bytes = bytes::BytesMut::new();
    let within = timeout();
    loop {
        let frame = tokio::time::timeout(within, body.frame())
            .await
            .map_err(|_| HttpError::Slow { place: place.to_string(), within })?;
        let Some(frame) = frame else { break };
        let frame = frame.map_err(|source| HttpError::Broken { place: place.to_string(), source })?;
        if let Ok(data) = frame.into_data() {
            if bytes.len() + data.len() > ANSWER_AT_MOST {
                return Err(HttpError::TooLarge { place: place.to_string(), limit: ANSWER_AT_MOST });
            }
            bytes.extend_from_slice(&data);
        }
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
        assert_eq!((o.tls, o.host.as_str(), o.port, o.prefix.as_str()), (true, "sleuth.example.com", 443, "/team"));
        assert_eq!(o.url(), "https://sleuth.example.com/team");
        let o = Origin::parse("http://127.0.0.1:3000").unwrap();
        assert_eq!((o.port, o.prefix.as_str(), o.place()), (3000, "", "http://127.0.0.1:3000".to_string()));
        let o = Origin::parse("http://[::1]:8080/x?y#z").unwrap();
        assert_eq!((o.host.as_str(), o.port, o.prefix.as_str()), ("::1", 8080, "/x"));
        let (o, path) = Origin::endpoint("https://hooks.example.com/services/T0/B0/secret?x=1#f").unwrap();
        assert_eq!((o.url(), path.as_str()), ("https://hooks.example.com".to_string(), "/services/T0/B0/secret?x=1"));
        assert_eq!(Origin::endpoint("http://h:8080").unwrap().1, "/");
        for bad in ["ftp://x", "127.0.0.1:3000", "http://", "http://a b", "http://h:port"] {
            assert!(Origin::parse(bad).is_err(), "{bad}");
        }
    }
}
