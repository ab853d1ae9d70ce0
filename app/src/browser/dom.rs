//! Small helpers over web-sys, shared by the behaviours.

use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{Document, Element, Event, EventTarget, Response, Window};

pub fn window() -> Window {
    leptos::prelude::window()
}

pub fn document() -> Document {
    leptos::prelude::document()
}

/// The elements under `root` that match `selector`, in document order.
pub fn all(root: &Element, selector: &str) -> Vec<Element> {
    let Ok(list) = root.query_selector_all(selector) else { return Vec::new() };
    (0..list.length()).filter_map(|i| list.item(i)?.dyn_into::<Element>().ok()).collect()
}

/// The first element of the document that matches `selector`.
pub fn find(selector: &str) -> Option<Element> {
    document().query_selector(selector).ok().flatten()
}

/// The element an event happened in, or its nearest ancestor, that matches `selector`.
pub fn closest(event: &Event, selector: &str) -> Option<Element> {
    event.target()?.dyn_into::<Element>().ok()?.closest(selector).ok().flatten()
}

/// Calls `listener` for every `event` on `target` for the life of the page.
/// `capture`: before the event reaches its target (for events that do not
/// bubble, such as `scroll`).
pub fn listen(target: &EventTarget, event: &str, capture: bool, listener: impl FnMut(Event) + 'static) {
    let closure = Closure::<dyn FnMut(Event)>::new(listener);
    let _ = target.add_event_listener_with_callback_and_bool(event, closure.as_ref().unchecked_ref(), capture);
    closure.forget();
}

/// A click with the main button and no modifier: one the page may handle
/// itself (others keep the browser's meaning, such as opening a new tab).
pub fn plain_click(event: &Event) -> bool {
    event
        .dyn_ref::<web_sys::MouseEvent>()
        .is_some_and(|e| e.button() == 0 && !e.ctrl_key() && !e.meta_key() && !e.shift_key() && !e.alt_key())
}

/// A `data-` attribute read as a number.
pub fn number<T: std::str::FromStr>(element: &Element, attribute: &str) -> Option<T> {
    element.get_attribute(attribute)?.parse().ok()
}

/// The text of a JavaScript error, for messages.
pub fn describe(error: &JsValue) -> String {
    error
        .dyn_ref::<web_sys::js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| error.as_string())
        .unwrap_or_else(|| "unknown error".into())
}

/// Why talking to the server from the page failed, in the sentence the reader sees.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    /// The browser could not reach the server (offline, the server down).
    #[error("Could not reach the Sleuth server: {0}")]
    Unreachable(String),
    /// A browser API threw (its message, from [`describe`]).
    #[error("{0}")]
    Browser(String),
    /// The server refused, in its own words (an `ApiError`'s message).
    #[error("{0}")]
    Refused(String),
    /// The server failed without saying why in words.
    #[error("The server answered {status} {text}.")]
    Status { status: u16, text: String },
    /// A page's HTML without its `<main>` (not Sleuth's page, or cut short).
    #[error("the server's answer has no page in it")]
    NoPage,
}

impl PageError {
    /// A thrown JavaScript value.
    pub fn browser(error: JsValue) -> Self {
        Self::Browser(describe(&error))
    }
}

/// `fetch(url)`, with `body` as a form's fields (POST) or nothing (GET), asking
/// for `accept`. Fails only when the server could not be reached.
pub async fn fetch(url: &str, body: Option<String>, accept: &str) -> Result<Response, PageError> {
    fetch_with(url, body, accept, false).await
}

/// [`fetch`], optionally `keepalive`: sent even if the page goes away meanwhile.
pub async fn fetch_with(url: &str, body: Option<String>, accept: &str, keepalive: bool) -> Result<Response, PageError> {
    let init = web_sys::RequestInit::new();
    // Not in web-sys's `RequestInit`: set as the plain property it is.
    if keepalive {
        let _ = web_sys::js_sys::Reflect::set(&init, &JsValue::from_str("keepalive"), &JsValue::TRUE);
    }
    let headers = web_sys::Headers::new().map_err(PageError::browser)?;
    let _ = headers.set("Accept", accept);
    if let Some(body) = body {
        init.set_method("POST");
        let _ = headers.set("Content-Type", "application/x-www-form-urlencoded");
        init.set_body(&JsValue::from_str(&body));
    }
    init.set_headers(&headers);
    let answer = JsFuture::from(window().fetch_with_str_and_init(url, &init))
        .await
        .map_err(|e| PageError::Unreachable(describe(&e)))?;
    answer.dyn_into::<Response>().map_err(|e| PageError::browser(e.into()))
}

/// The body of `response` as text.
pub async fn text(response: &Response) -> Result<String, PageError> {
    let promise = response.text().map_err(PageError::browser)?;
    let text = JsFuture::from(promise).await.map_err(PageError::browser)?;
    Ok(text.as_string().unwrap_or_default())
}

/// Puts `#anchor` in the address bar without scrolling or a history entry.
pub fn replace_fragment(anchor: &str) {
    if let Ok(history) = window().history() {
        let _ = history.replace_state_with_url(&JsValue::NULL, "", Some(&format!("#{anchor}")));
    }
}

/// Scrolls `element` to the middle of the window.
pub fn scroll_to(element: &Element) {
    let options = web_sys::ScrollIntoViewOptions::new();
    options.set_block(web_sys::ScrollLogicalPosition::Center);
    element.scroll_into_view_with_scroll_into_view_options(&options);
}

/// The element a URL fragment names: an id, or the first line of a line range
/// (`#step-12-L130-L180`, which no element has as its id).
pub fn fragment_target(fragment: &str) -> Option<Element> {
    use domain::steps::snippet::{Focus, line_anchor};
    let id = fragment.trim_start_matches('#');
    if id.is_empty() {
        return None;
    }
    document().get_element_by_id(id).or_else(|| match Focus::parse(id)? {
        Focus::Lines { step_id, start, .. } => document()
            .get_element_by_id(&line_anchor(step_id, start))
            .or_else(|| document().get_element_by_id(&domain::model::step_anchor(step_id))),
        Focus::Annotation(_) => None,
    })
}
