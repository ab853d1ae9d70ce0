//! Sign-in, sign-out, first-admin setup and one-time sign-in links: plain form posts answered with a
//! redirect, so they work the same with and without JavaScript. Errors go back
//! to the form's page as `?error=…`, which shows them.

use crate::auth::{Account, SESSION_COOKIE, middleware::url_encode};
use crate::state::AppState;
use axum::Form;
use axum::extract::{ConnectInfo, FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use domain::error::ApiError;
use std::net::SocketAddr;

#[derive(serde::Deserialize)]
pub struct SignIn {
    name: String,
    password: String,
    #[serde(default)]
    next: String,
}

#[derive(serde::Deserialize)]
pub struct Setup {
    token: String,
    name: String,
    password: String,
}

/// Only paths of this site: `//evil.example` or `https://…` would make the
/// sign-in page an open redirect. Browsers drop tabs and newlines inside a URL
/// (`/\t/evil.example` is `//evil.example` to them) and read `\\` as `/`, so
/// a path with any control character, white space or backslash is refused too.
fn safe_next(next: &str) -> &str {
    let plain = !next.chars().any(|c| c.is_control() || c.is_whitespace() || c == '\\');
    if plain && next.starts_with('/') && !next.starts_with("//") { next } else { "/" }
}

/// A `303 See Other` to `to`, or to `/` if `to` cannot be a header value
/// (`Redirect::to` panics on those).
fn redirect(to: &str) -> Response {
    match HeaderValue::try_from(to) {
        Ok(location) => (StatusCode::SEE_OTHER, [(header::LOCATION, location)]).into_response(),
        Err(_) => (StatusCode::SEE_OTHER, [(header::LOCATION, HeaderValue::from_static("/"))]).into_response(),
    }
}

fn with_cookie(cookie: String, to: &str) -> Response {
    ([(header::SET_COOKIE, cookie)], redirect(to)).into_response()
}

/// The client's address, for the sign-in limiter (`local` when served without
/// connection info, as in tests).
pub struct Client(String);

impl<S: Send + Sync> FromRequestParts<S> for Client {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let addr = parts.extensions.get::<ConnectInfo<SocketAddr>>().map(|ConnectInfo(a)| a.ip().to_string());
        Ok(Client(addr.unwrap_or_else(|| "local".into())))
    }
}

pub async fn sign_in(State(state): State<AppState>, Client(client): Client, Form(form): Form<SignIn>) -> Response {
    let next = safe_next(&form.next);
    match state.auth.sign_in(form.name.trim(), &form.password, &client).await.map_err(ApiError::from) {
        Ok((_, session)) => with_cookie(state.auth.session_cookie(Some(&session)), next),
        Err(e) => redirect(&format!(
            "/login?error={}&name={}&next={}",
            url_encode(&e.message),
            url_encode(form.name.trim()),
            url_encode(next)
        )),
    }
}

pub async fn sign_out(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(session) = crate::auth::middleware::cookie(&headers, SESSION_COOKIE)
        && let Err(e) = state.auth.sign_out(session).await
    {
        tracing::error!("sign-out: {e}");
    }
    with_cookie(state.auth.session_cookie(None), "/login")
}

pub async fn setup(State(state): State<AppState>, Client(client): Client, Form(form): Form<Setup>) -> Response {
    let created: Result<Account, _> =
        state.auth.create_first_admin(&form.token, form.name.trim(), &form.password).await;
    let signed_in = match created {
        Ok(_) => state.auth.sign_in(form.name.trim(), &form.password, &client).await.map(|(_, s)| s),
        Err(e) => Err(e),
    };
    match signed_in.map_err(ApiError::from) {
        Ok(session) => with_cookie(state.auth.session_cookie(Some(&session)), "/"),
        Err(e) => redirect(&format!(
            "/setup?token={}&error={}&name={}",
            url_encode(&form.token),
            url_encode(&e.message),
            url_encode(form.name.trim())
        )),
    }
}

#[derive(serde::Deserialize)]
pub struct Welcome {
    token: String,
    password: String,
}

/// A one-time sign-in link used: the password chosen, signed in.
pub async fn welcome(State(state): State<AppState>, Form(form): Form<Welcome>) -> Response {
    match state.auth.redeem(&form.token, &form.password).await.map_err(ApiError::from) {
        Ok((_, session)) => with_cookie(state.auth.session_cookie(Some(&session)), "/"),
        Err(e) => redirect(&format!("/welcome?token={}&error={}", url_encode(&form.token), url_encode(&e.message))),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn next_stays_on_this_site() {
        assert_eq!(super::safe_next("/i/abc#step-3"), "/i/abc#step-3");
        for bad in [
            "//evil.example",
            "https://evil.example",
            "/\\evil.example",
            "",
            "/\t/evil.example",
            "/\n/evil.example",
            "/\r\nSet-Cookie: x=1",
            " /i/abc",
            "/i/a b",
        ] {
            assert_eq!(super::safe_next(bad), "/", "{bad:?}");
        }
    }

    #[test]
    fn redirects_never_panic() {
        let r = super::redirect("/i/abc\r\nSet-Cookie: x=1");
        assert_eq!(r.status(), axum::http::StatusCode::SEE_OTHER);
        assert_eq!(r.headers()[axum::http::header::LOCATION], "/");
    }
}
