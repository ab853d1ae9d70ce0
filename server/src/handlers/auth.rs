//! Sign-in, sign-out and first-admin setup: plain form posts answered with a
//! redirect, so they work the same with and without JavaScript. Errors go back
//! to the form's page as `?error=…`, which shows them.

use crate::auth::{Account, SESSION_COOKIE, middleware::url_encode};
use crate::state::AppState;
use axum::Form;
use axum::extract::{ConnectInfo, FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Redirect, Response};
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
/// sign-in page an open redirect.
fn safe_next(next: &str) -> &str {
    if next.starts_with('/') && !next.starts_with("//") && !next.contains('\\') { next } else { "/" }
}

fn with_cookie(cookie: String, to: &str) -> Response {
    ([(header::SET_COOKIE, cookie)], Redirect::to(to)).into_response()
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
    match state.auth.sign_in(form.name.trim(), &form.password, &client).await {
        Ok((_, session)) => with_cookie(state.auth.session_cookie(Some(&session)), next),
        Err(e) => Redirect::to(&format!(
            "/login?error={}&name={}&next={}",
            url_encode(&e.message),
            url_encode(form.name.trim()),
            url_encode(next)
        ))
        .into_response(),
    }
}

pub async fn sign_out(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(session) = crate::auth::middleware::cookie(&headers, SESSION_COOKIE)
        && let Err(e) = state.auth.sign_out(session).await
    {
        tracing::error!("sign-out: {}", e.message);
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
    match signed_in {
        Ok(session) => with_cookie(state.auth.session_cookie(Some(&session)), "/"),
        Err(e) => Redirect::to(&format!(
            "/setup?token={}&error={}&name={}",
            url_encode(&form.token),
            url_encode(&e.message),
            url_encode(form.name.trim())
        ))
        .into_response(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn next_stays_on_this_site() {
        assert_eq!(super::safe_next("/i/abc#step-3"), "/i/abc#step-3");
        for bad in ["//evil.example", "https://evil.example", "/\\evil.example", ""] {
            assert_eq!(super::safe_next(bad), "/", "{bad}");
        }
    }
}
