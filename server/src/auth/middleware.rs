//! The checks every request passes before any handler, page or server function:
//!
//! 1. Cross-site: a state-changing request (not GET/HEAD/OPTIONS) whose
//!    `Origin` is another site, or that the browser marks `Sec-Fetch-Site:
//!    cross-site`, is refused (403) — with or without accounts, since a page
//!    elsewhere could otherwise make a signed-in browser (or a `--no-auth`
//!    server on 127.0.0.1) run commands on GPU hosts.
//! 2. `--no-auth` answers only to a loopback `Host` (`127.0.0.1`, `localhost`,
//!    `[::1]`): a page on another domain that rebinds its name to 127.0.0.1
//!    reaches the port, but its requests carry its own name as `Host` (and as
//!    `Origin`, which then looks same-site), and would otherwise be the admin.
//! 3. Who: a `Bearer` API token, else the session cookie. The request keeps
//!    its [`Actor`] in its extensions, where handlers (`auth::Caller`) and
//!    server functions (`domain::ports::actor`) take it and pass it on
//!    explicitly. Without one, `/api/…` answers 401 and pages redirect to the
//!    sign-in page.

use super::{Auth, SESSION_COOKIE};
use crate::error::AppError;
use crate::state::AppState;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use domain::error::{ApiError, ErrorCode};
use domain::ports::Actor;

/// Reachable without signing in: the sign-in, setup and welcome pages (and
/// the server functions that tell them whether their link works), their form
/// targets, the bundle and static files, the health check, and share links
/// (the page, its server function and the JSON; the token in the URL is the right).
/// `server_fns`: the public server functions' paths, named by the wiring
/// (`AppState::public_server_fns`), so this check need not know the pages.
fn is_public(path: &str, server_fns: &[&str]) -> bool {
    matches!(
        path,
        "/login"
            | "/setup"
            | "/welcome"
            | "/auth/login"
            | "/auth/setup"
            | "/auth/welcome"
            | "/healthz"
            | "/favicon.ico"
            | "/favicon.svg"
            | "/robots.txt"
    ) || path.starts_with("/pkg/")
        || path == "/highlight.css"
        || path.starts_with("/s/")
        || path.starts_with("/api/v1/shared/")
        || path == "/api/v1/openapi.json"
        || path == "/api/v1/openapi.html"
        || server_fns.contains(&path)
}

/// The host part of an `Origin` (`http://host:port`).
fn origin_host(origin: &str) -> Option<&str> {
    origin.split_once("://").map(|(_, rest)| rest.trim_end_matches('/'))
}

/// Whether a `Host` header names this machine's loopback (any port).
fn loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split_once(']').map_or("", |(addr, _)| addr),
        None => host
            .rsplit_once(':')
            .map_or(host, |(name, port)| if port.bytes().all(|b| b.is_ascii_digit()) { name } else { host }),
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// `--no-auth`: a request for another name is refused (none at all is a
/// script on this machine, and passes).
fn foreign_host(request: &Request) -> Option<String> {
    let host = request.headers().get(header::HOST)?;
    match host.to_str() {
        Ok(h) if loopback_host(h) => None,
        Ok(h) => Some(h.to_string()),
        Err(_) => Some(String::from_utf8_lossy(host.as_bytes()).into_owned()),
    }
}

fn cross_site(request: &Request) -> bool {
    if matches!(*request.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return false;
    }
    let headers = request.headers();
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    match headers.get(header::ORIGIN).and_then(|o| o.to_str().ok()) {
        // `null` (sandboxed frames, some redirects) is never our own page.
        Some(origin) => origin_host(origin).is_none_or(|o| Some(o) != host),
        None => headers.get("sec-fetch-site").is_some_and(|s| s == "cross-site"),
    }
}

pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

pub(crate) async fn actor(auth: &Auth, headers: &HeaderMap) -> crate::error::Result<Option<Actor>> {
    if auth.disabled() {
        return Ok(Some(Actor::local()));
    }
    let bearer =
        headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    if let Some(token) = bearer {
        // A wrong token is an error even if a cookie would do: scripts should hear about it.
        return match auth.token_account(token.trim()).await? {
            Some(account) => Ok(Some(account.actor())),
            None => {
                Err(ApiError::new(ErrorCode::Unauthenticated, "That API token is not valid (revoked, or mistyped).")
                    .into())
            }
        };
    }
    match cookie(headers, SESSION_COOKIE) {
        Some(session) => Ok(auth.session_account(session).await?.map(|account| account.actor())),
        None => Ok(None),
    }
}

pub async fn guard(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    if cross_site(&request) {
        tracing::warn!(path = request.uri().path(), "refused a cross-site request");
        return AppError::from(ApiError::new(
            ErrorCode::Forbidden,
            "Cross-site request refused: changes must come from Sleuth's own pages (or a script without an Origin header).",
        ))
        .into_response();
    }
    if state.auth.disabled()
        && let Some(host) = foreign_host(&request)
    {
        tracing::warn!(host, "--no-auth: refused a request for a name that is not loopback");
        return AppError::from(ApiError::new(
            ErrorCode::Forbidden,
            format!(
                "This Sleuth runs without accounts (--no-auth) and answers only to 127.0.0.1, localhost or [::1], \
                 not to {host:?}: open it by one of those names. (A web page that points its own domain at \
                 127.0.0.1 sends requests like this one.)"
            ),
        ))
        .into_response();
    }
    let path = request.uri().path().to_string();
    let headers = request.headers().clone();
    let found = match actor(&state.auth, &headers).await {
        Ok(found) => found,
        Err(e) => return AppError::from(e).into_response(),
    };
    match found {
        Some(actor) => {
            request.extensions_mut().insert(actor);
            next.run(request).await
        }
        None if is_public(&path, &state.public_server_fns) => next.run(request).await,
        // A scraper is not a browser: no sign-in page for `/metrics`.
        None if path.starts_with("/api/") || path == "/metrics" => AppError::from(ApiError::new(
            ErrorCode::Unauthenticated,
            "Sign in first, or send `Authorization: Bearer <token>` (create one with `sleuth token create`).",
        ))
        .into_response(),
        None => {
            let wanted = request.uri().path_and_query().map_or("/", |p| p.as_str());
            let next = url_encode(wanted);
            Redirect::to(&format!("/login?next={next}")).into_response()
        }
    }
}

/// Percent-encodes everything but unreserved characters.
pub fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Who a request's session or token signs in now: asked again while a
/// long-lived response (an event stream) goes, which ends once its reader is
/// signed out, loses the token, or loses the right to read
/// (`crate::guarded::streams`).
#[derive(Clone)]
pub struct Reauth {
    auth: std::sync::Arc<Auth>,
    headers: HeaderMap,
}

impl Reauth {
    pub fn new(auth: std::sync::Arc<Auth>, headers: HeaderMap) -> Self {
        Self { auth, headers }
    }

    /// The actor the request's credentials sign in now, if any.
    pub async fn actor(&self) -> Option<Actor> {
        actor(&self.auth, &self.headers).await.ok().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(origin: Option<&str>, fetch_site: Option<&str>) -> Request {
        let mut builder = Request::builder().method("POST").uri("/api/v1/investigations").header("host", "sleuth:3000");
        if let Some(o) = origin {
            builder = builder.header("origin", o);
        }
        if let Some(s) = fetch_site {
            builder = builder.header("sec-fetch-site", s);
        }
        builder.body(axum::body::Body::empty()).unwrap()
    }

    #[test]
    fn cross_site_requests_are_told_apart() {
        assert!(!cross_site(&post(Some("http://sleuth:3000"), Some("same-origin"))));
        assert!(!cross_site(&post(None, None)), "curl sends neither");
        assert!(cross_site(&post(Some("https://evil.example"), Some("cross-site"))));
        assert!(cross_site(&post(Some("http://sleuth:3001"), None)), "another port is another origin");
        assert!(cross_site(&post(Some("null"), None)));
        assert!(cross_site(&post(None, Some("cross-site"))));
        let get = Request::builder().uri("/").header("origin", "https://evil.example").body(axum::body::Body::empty());
        assert!(!cross_site(&get.unwrap()), "reads are not refused (CORS keeps their answers from other sites)");
    }

    #[test]
    fn only_loopback_names_are_loopback() {
        for ok in ["127.0.0.1:3000", "127.0.0.1", "localhost:3000", "LOCALHOST", "[::1]:3000", "[::1]", "127.1.2.3:80"]
        {
            assert!(loopback_host(ok), "{ok}");
        }
        for bad in [
            "evil.example:3000",
            "evil.example",
            "localhost.evil.example",
            "127.0.0.1.evil.example:3000",
            "[::2]:3000",
            "0.0.0.0:3000",
            "10.0.0.1",
            "",
            "[::1",
        ] {
            assert!(!loopback_host(bad), "{bad}");
        }
    }

    #[test]
    fn next_urls_are_encoded() {
        assert_eq!(url_encode("/i/abc?x=1&y=2#f"), "/i/abc%3Fx%3D1%26y%3D2%23f");
    }
}
