//! The server-side boundary the UI's server functions call through. The server crate
//! implements [`Notebook`] (one trait per domain) and provides it as context, so this crate never links the
//! store, SSH or anything else server-only.

pub(crate) use domain::ports::*;

use domain::accounts::User;
use domain::error::ApiError;
use std::sync::Arc;

pub fn accounts() -> Result<Arc<dyn Accounts>, ApiError> {
    leptos::prelude::use_context::<Arc<dyn Accounts>>().ok_or_else(|| {
        leptos::logging::error!("no Accounts in context: the server must provide one");
        ApiError::internal()
    })
}

/// Who is asking: set on every request by the server's sign-in check.
pub fn actor() -> Result<Actor, ApiError> {
    leptos::prelude::use_context::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Actor>().cloned())
        .ok_or_else(|| ApiError::new(domain::error::ErrorCode::Unauthenticated, "Sign in first."))
}

pub fn current_user() -> Result<User, ApiError> {
    actor().map(|actor| actor.user())
}

/// A server function's call into the notebook: with the notebook and who is
/// asking, and the response given the status its error names. Every server
/// function that reaches the notebook goes through here, so none forgets the
/// status (or asks for the actor its own way).
pub async fn call<T, Fut>(op: impl FnOnce(Arc<dyn Notebook>, Actor) -> Fut) -> Result<T, ApiError>
where
    Fut: std::future::Future<Output = Result<T, ApiError>>,
{
    let result = match (notebook(), actor()) {
        (Ok(notebook), Ok(actor)) => op(notebook, actor).await,
        (Err(e), _) | (_, Err(e)) => Err(e),
    };
    with_status(result)
}

/// [`call`] for what needs no one signed in (a share link's page: its token is the right).
pub async fn call_public<T, Fut>(op: impl FnOnce(Arc<dyn Notebook>) -> Fut) -> Result<T, ApiError>
where
    Fut: std::future::Future<Output = Result<T, ApiError>>,
{
    let result = match notebook() {
        Ok(notebook) => op(notebook).await,
        Err(e) => Err(e),
    };
    with_status(result)
}

pub fn with_status<T>(result: Result<T, ApiError>) -> Result<T, ApiError> {
    if let Err(e) = &result {
        set_status(e);
    }
    result
}

/// [`call`] for accounts (tokens, the audit log).
pub async fn call_accounts<T, Fut>(op: impl FnOnce(Arc<dyn Accounts>, Actor) -> Fut) -> Result<T, ApiError>
where
    Fut: std::future::Future<Output = Result<T, ApiError>>,
{
    let result = match (accounts(), actor()) {
        (Ok(accounts), Ok(actor)) => op(accounts, actor).await,
        (Err(e), _) | (_, Err(e)) => Err(e),
    };
    with_status(result)
}

/// The notebook the server provided for this request.
pub fn notebook() -> Result<Arc<dyn Notebook>, ApiError> {
    leptos::prelude::use_context::<Arc<dyn Notebook>>().ok_or_else(|| {
        leptos::logging::error!("no Notebook in context: the server must provide one");
        ApiError::internal()
    })
}

/// Gives the page or server-function response the HTTP status that fits `error`,
/// so a missing investigation is a real 404 even when rendered as a page.
/// Whether this server-function call is a form posted without JavaScript (the
/// answer is then a redirect, not data).
pub fn is_plain_form_post() -> bool {
    leptos::prelude::use_context::<http::request::Parts>().is_some_and(|parts| {
        parts.method == http::Method::POST
            && parts
                .headers
                .get(http::header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.contains("text/html"))
    })
}

/// After an editor's form was saved without JavaScript: back to the page it was
/// posted from, without `?edit=` (the editor stays closed), at the step. The
/// browser's own posts (`browser::forms`) close the editor themselves.
pub fn close_editor(step_id: i64) {
    if !is_plain_form_post() {
        return;
    }
    let referer = leptos::prelude::use_context::<http::request::Parts>()
        .and_then(|parts| parts.headers.get(http::header::REFERER)?.to_str().ok()?.parse::<http::Uri>().ok());
    let Some(referer) = referer else { return };
    leptos_axum::redirect(&without_editor(referer.path(), referer.query(), step_id));
}

/// `path?query` without its `edit=`, at step `step_id`. Only a path of this
/// site (`//host/…` and `/\host/…` would leave it: the Referer is the browser's to say).
fn without_editor(path: &str, query: Option<&str>, step_id: i64) -> String {
    let path = if path.starts_with('/') && !path[1..].starts_with(['/', '\\']) { path } else { "/" };
    let kept: Vec<&str> =
        query.unwrap_or_default().split('&').filter(|p| !p.is_empty() && !p.starts_with("edit=")).collect();
    let query = if kept.is_empty() { String::new() } else { format!("?{}", kept.join("&")) };
    format!("{path}{query}#{}", domain::model::step_anchor(step_id))
}

pub fn set_status(error: &ApiError) {
    // A form posted without JavaScript is answered with a redirect back to its
    // page (which then shows the error); a status here would replace that redirect.
    if is_plain_form_post() {
        return;
    }
    let status =
        http::StatusCode::from_u16(error.code.http_status()).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    if let Some(response) = leptos::prelude::use_context::<leptos_axum::ResponseOptions>() {
        response.set_status(status);
    }
}

/// A number typed into a form field: empty is `None`, anything else must parse as
/// `T`. The error is a 422 with the field's name; its status is set here because
/// these checks run before the notebook is called (which sets it for its own errors).
pub fn form_number<T: std::str::FromStr>(what: &str, text: &str) -> Result<Option<T>, ApiError> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse().map(Some).map_err(|_| {
        let whole = text.parse::<f64>().is_ok();
        let error = ApiError::invalid(if whole {
            format!("{what}: {text:?} must be a whole number in range.")
        } else {
            format!("{what}: {text:?} is not a number.")
        });
        set_status(&error);
        error
    })
}

/// [`form_number`] for a field that must be filled in.
pub fn required_number<T: std::str::FromStr>(what: &str, text: &str) -> Result<T, ApiError> {
    form_number(what, text)?.ok_or_else(|| {
        let error = ApiError::invalid(format!("{what} is required."));
        set_status(&error);
        error
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_saved_editor_goes_back_to_the_page_without_it() {
        use super::without_editor;
        assert_eq!(without_editor("/i/abc", Some("edit=12"), 12), "/i/abc#step-12");
        assert_eq!(without_editor("/i/abc", Some("edit=12&steps=61-100"), 12), "/i/abc?steps=61-100#step-12");
        assert_eq!(without_editor("/i/abc", Some("steps=61-100&edit=12&"), 12), "/i/abc?steps=61-100#step-12");
        assert_eq!(without_editor("/i/abc", None, 3), "/i/abc#step-3");
        // Only the `edit` parameter goes, not one that merely contains it.
        assert_eq!(without_editor("/i/abc", Some("reedit=1&edit=2"), 2), "/i/abc?reedit=1#step-2");
        // Never another site, whatever the Referer said.
        assert_eq!(without_editor("//evil.example/x", None, 2), "/#step-2");
        assert_eq!(without_editor("/\\evil.example/x", None, 2), "/#step-2");
    }
}
