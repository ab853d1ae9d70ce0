//! Forms posted to server functions (`/api/…`, what every `ActionForm` outside
//! an island renders) are sent by the page instead of the browser: the reader
//! stays where they are, a refusal is shown in the form with what they typed
//! kept, and a success draws the page anew ([`super::page`]). One handler for
//! every form: no form has code of its own in the bundle. Without JavaScript
//! the same forms post the usual way and come back to the page.

use super::dom;
use domain::error::ApiError;
use wasm_bindgen::JsCast;
use web_sys::{Element, Event, HtmlFormElement};

pub fn install() {
    dom::listen(&dom::document(), "submit", false, on_submit);
}

fn on_submit(event: Event) {
    let Some(form) = event.target().and_then(|t| t.dyn_into::<HtmlFormElement>().ok()) else { return };
    let action = form.get_attribute("action").unwrap_or_default();
    // Islands post their own forms; `/api/v1` and `/auth` are not server functions.
    let ours = action.starts_with("/api/") && !action.starts_with("/api/v1/");
    // Attributes, not properties: a form's properties are shadowed by fields of the same name.
    let post = form.get_attribute("method").is_some_and(|m| m.eq_ignore_ascii_case("post"));
    if event.default_prevented() || !ours || !post || form.closest("leptos-island").ok().flatten().is_some() {
        return;
    }
    event.prevent_default();
    if form.has_attribute("aria-busy") {
        return;
    }
    let submitter = event.dyn_ref::<web_sys::SubmitEvent>().and_then(|e| e.submitter());
    wasm_bindgen_futures::spawn_local(send(form, action, submitter));
}

/// Posts a form's body now, even if the page is going away (a deletion whose
/// Undo time ran out); the page is drawn anew when it is done.
pub async fn send_now(action: String, body: String) -> Result<(), dom::PageError> {
    let response = dom::fetch_with(&action, Some(body), "application/json", true).await?;
    if response.ok() {
        super::page::refresh_now();
        Ok(())
    } else {
        let text = dom::text(&response).await.unwrap_or_default();
        Err(dom::PageError::Refused(serde_json::from_str::<ApiError>(&text).map(|e| e.message).unwrap_or(text)))
    }
}

async fn send(form: HtmlFormElement, action: String, submitter: Option<web_sys::HtmlElement>) {
    let Some(body) = encode(&form, submitter.as_ref()) else { return };
    let sent = encode(&form, None);
    let busy = Busy::start(&form);
    let answer = post(&action, body).await;
    drop(busy);
    match answer {
        Ok(Some(location)) => super::page::go_to(&location),
        Ok(None) => {
            super::refusals::show_error(&form, None);
            // Emptied for the next one, unless the reader began it while this
            // one was on its way: what they typed since stays.
            if encode(&form, None) == sent {
                form.reset();
            }
            if form.has_attribute("data-ends-edit") {
                super::page::set_edit(None);
            }
            super::page::refresh_now();
        }
        Err(error) => super::refusals::show_error(&form, Some(&error.to_string())),
    }
}

/// The form's fields as `application/x-www-form-urlencoded`, the button that
/// sent it included (as a browser would).
pub fn encode(form: &HtmlFormElement, submitter: Option<&web_sys::HtmlElement>) -> Option<String> {
    let data = web_sys::FormData::new_with_form(form).ok()?;
    if let Some(button) = submitter.and_then(|s| s.dyn_ref::<web_sys::HtmlButtonElement>())
        && !button.name().is_empty()
    {
        let _ = data.append_with_str(&button.name(), &button.value());
    }
    let params = web_sys::UrlSearchParams::new_with_str_sequence_sequence(&data).ok()?;
    Some(String::from(params.to_string()))
}

/// Posts to a server function: `Ok(Some(url))` when it sends the reader
/// elsewhere, `Ok(None)` when it succeeded, `Err` with a sentence otherwise.
async fn post(action: &str, body: String) -> Result<Option<String>, dom::PageError> {
    let response = dom::fetch(action, Some(body), "application/json").await?;
    let headers = response.headers();
    if headers.has("serverfnredirect").unwrap_or(false)
        && let Ok(Some(location)) = headers.get("location")
    {
        return Ok(Some(location));
    }
    if response.ok() {
        return Ok(None);
    }
    let text = dom::text(&response).await.unwrap_or_default();
    Err(match serde_json::from_str::<ApiError>(&text) {
        Ok(error) => dom::PageError::Refused(error.message),
        Err(_) => dom::PageError::Status { status: response.status(), text: response.status_text() },
    })
}

/// While a form is being sent: its buttons disabled (a second click sends
/// nothing), and after a second how long it has taken (a snippet or grep on a
/// slow host can take a while).
struct Busy {
    form: HtmlFormElement,
    buttons: Vec<Element>,
    ticker: Option<leptos::prelude::IntervalHandle>,
}

impl Busy {
    fn start(form: &HtmlFormElement) -> Self {
        let _ = form.set_attribute("aria-busy", "true");
        let buttons = dom::all(form, "button:not([disabled])");
        for b in &buttons {
            let _ = b.set_attribute("disabled", "");
        }
        let started = web_sys::js_sys::Date::now();
        let watched = form.clone();
        let ticker = leptos::prelude::set_interval_with_handle(
            move || {
                let seconds = ((web_sys::js_sys::Date::now() - started) / 1000.0).floor();
                let Some(line) = busy_line(&watched) else { return };
                line.set_text_content(Some(&format!("working… {seconds:.0} s")));
            },
            std::time::Duration::from_secs(1),
        )
        .ok();
        Busy { form: form.clone(), buttons, ticker }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        if let Some(ticker) = self.ticker.take() {
            ticker.clear();
        }
        let _ = self.form.remove_attribute("aria-busy");
        for b in &self.buttons {
            let _ = b.remove_attribute("disabled");
        }
        if let Ok(Some(line)) = self.form.query_selector(":scope > .busy") {
            line.remove();
        }
    }
}

/// The "working… 3 s" line of a form, made when first needed.
fn busy_line(form: &HtmlFormElement) -> Option<Element> {
    if let Ok(Some(line)) = form.query_selector(":scope > .busy") {
        return Some(line);
    }
    let line = dom::document().create_element("span").ok()?;
    let _ = line.set_attribute("class", "busy muted");
    let _ = line.set_attribute("role", "status");
    super::refusals::place(form, &line);
    Some(line)
}
