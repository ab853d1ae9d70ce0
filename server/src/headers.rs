//! Defence in depth on every response: should some user or host text ever reach
//! a page as markup, the browser still runs no script of it.
//!
//! - Pages rendered by leptos carry a `Content-Security-Policy` whose
//!   `script-src` holds the nonce leptos put on the page's own inline scripts
//!   (the hydration bootstrap and the serialized resources), plus `'self'` for
//!   the bundle and `'wasm-unsafe-eval'` to compile it. No `'unsafe-inline'`.
//! - Any other response (JSON, static files, errors) gets the same policy
//!   without a nonce: no inline script at all.
//! - `nosniff`, `X-Frame-Options: DENY` and `frame-ancestors 'none'` (no
//!   clickjacking of the Run button), and `Referrer-Policy: same-origin`, so a
//!   link to another site never carries an investigation's or a share link's
//!   address.

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderName, HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;

/// The policy, with `nonce` allowed for inline scripts when a page has one.
///
/// `style-src` allows inline styles (leptos writes a few `style` attributes;
/// styles cannot run script). `img-src` is this site and `data:` only: a
/// Markdown image pointing elsewhere would tell another site who reads a note.
pub fn policy(nonce: Option<&str>) -> String {
    let scripts = match nonce {
        Some(nonce) => format!("script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'"),
        None => "script-src 'self' 'wasm-unsafe-eval'".to_string(),
    };
    format!(
        "default-src 'self'; {scripts}; style-src 'self' 'unsafe-inline'; img-src 'self' data:; \
         connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; \
         frame-ancestors 'none'"
    )
}

/// Called in every leptos render's context: sets the page's policy with the
/// nonce leptos_axum made for this response.
pub fn provide_page_policy() {
    let Some(nonce) = leptos::nonce::use_nonce() else { return };
    let Some(response) = leptos::prelude::use_context::<leptos_axum::ResponseOptions>() else { return };
    if let Ok(value) = HeaderValue::from_str(&policy(Some(&nonce))) {
        response.insert_header(header::CONTENT_SECURITY_POLICY, value);
    }
}

/// The middleware: adds what a response lacks (a page's own policy stays).
pub async fn secure(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    add_missing(response.headers_mut());
    response
}

fn add_missing(headers: &mut HeaderMap) {
    let fixed: [(HeaderName, &'static str); 3] = [
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "same-origin"),
    ];
    for (name, value) in fixed {
        headers.entry(name).or_insert(HeaderValue::from_static(value));
    }
    if !headers.contains_key(header::CONTENT_SECURITY_POLICY)
        && let Ok(value) = HeaderValue::from_str(&policy(None))
    {
        headers.insert(header::CONTENT_SECURITY_POLICY, value);
    }
}

/// The address a request was made to (`domain::watches::asked_origin`).
pub fn asked_origin(headers: &HeaderMap) -> Option<String> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    domain::watches::asked_origin(get("host"), get("x-forwarded-proto"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_allows_no_inline_script_but_the_nonce() {
        let with = policy(Some("abc123"));
        assert!(with.contains("script-src 'self' 'nonce-abc123' 'wasm-unsafe-eval';"), "{with}");
        for part in ["object-src 'none'", "base-uri 'none'", "frame-ancestors 'none'"] {
            assert!(with.contains(part), "{part} in {with}");
        }
        let scripts = policy(None);
        let script_src = scripts.split(';').find(|d| d.trim().starts_with("script-src")).unwrap_or_default();
        assert!(!script_src.contains("unsafe-inline") && !script_src.contains("nonce"), "{script_src}");
    }

    #[test]
    fn a_pages_own_policy_is_kept() {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("page"));
        add_missing(&mut headers);
        assert_eq!(headers[header::CONTENT_SECURITY_POLICY], "page");
        assert_eq!(headers[header::X_FRAME_OPTIONS], "DENY");
        assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
    }
}
