//! Undo for deleting a step: the step leaves the page at once, and the
//! deletion is sent only after [`WAIT_MS`] unless the reader clicks Undo in
//! the notice that counts down. A deletion still waiting when the page goes
//! away is sent then (`keepalive`), so closing the tab does not undo it.
//! Without JavaScript the form posts at once, after its confirmation.

use super::dom;
use std::cell::RefCell;
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;
use web_sys::{Element, Event};

/// How long an Undo is offered.
pub const WAIT_MS: i32 = 10_000;

struct Pending {
    id: u32,
    /// The hidden step's element id (`step-12`), hidden again after a redraw.
    step: String,
    action: String,
    body: String,
    timer: i32,
}

thread_local! {
    static PENDING: RefCell<Vec<Pending>> = const { RefCell::new(Vec::new()) };
    static NEXT: RefCell<u32> = const { RefCell::new(1) };
}

pub fn install() {
    // Before `forms` sees the submit (capture), which then leaves it alone.
    dom::listen(&dom::document(), "submit", true, |event: Event| {
        let Some(form) = event.target().and_then(|t| t.dyn_into::<web_sys::HtmlFormElement>().ok()) else { return };
        let (Some(what), Some(action)) = (form.get_attribute("data-undo"), form.get_attribute("action")) else {
            return;
        };
        let submitter = event.dyn_ref::<web_sys::SubmitEvent>().and_then(|e| e.submitter());
        let Some(body) = super::forms::encode(&form, submitter.as_ref()) else { return };
        event.prevent_default();
        later(&form, what, action, body);
    });
    dom::listen(&dom::document(), "click", false, |event: Event| {
        if let Some(button) = dom::closest(&event, "button[data-undo-id]")
            && let Some(id) = dom::number::<u32>(&button, "data-undo-id")
        {
            undo(id);
        }
    });
    // Leaving the page sends what is waiting: a closed tab is not an Undo.
    dom::listen(&dom::window(), "pagehide", false, |_| {
        let waiting: Vec<Pending> = PENDING.with(|p| p.borrow_mut().drain(..).collect());
        for pending in waiting {
            dom::window().clear_timeout_with_handle(pending.timer);
            wasm_bindgen_futures::spawn_local(async move {
                let _ = super::forms::send_now(pending.action, pending.body).await;
            });
        }
    });
}

/// Hides the form's step and sends the form after the wait, unless undone.
fn later(form: &Element, what: String, action: String, body: String) {
    let Ok(Some(step)) = form.closest(".step") else { return };
    let id = NEXT.with(|n| {
        let mut n = n.borrow_mut();
        *n += 1;
        *n
    });
    let _ = step.set_attribute("hidden", "");
    if let Ok(Some(details)) = form.closest("details") {
        let _ = details.remove_attribute("open");
    }
    let fire = Closure::once_into_js(move || send(id));
    let timer = dom::window()
        .set_timeout_with_callback_and_timeout_and_arguments_0(fire.unchecked_ref(), WAIT_MS)
        .unwrap_or_default();
    PENDING.with(|p| p.borrow_mut().push(Pending { id, step: step.id(), action, body, timer }));
    notice(id, &what);
}

/// After the page is drawn anew: steps whose deletion waits stay hidden.
pub fn apply(main: &Element) {
    PENDING.with(|p| {
        for pending in p.borrow().iter() {
            if let Ok(Some(step)) = main.query_selector(&format!("#{}", pending.step)) {
                let _ = step.set_attribute("hidden", "");
            }
        }
    });
}

fn take(id: u32) -> Option<Pending> {
    PENDING.with(|p| {
        let mut p = p.borrow_mut();
        let at = p.iter().position(|x| x.id == id)?;
        Some(p.remove(at))
    })
}

fn undo(id: u32) {
    let Some(pending) = take(id) else { return };
    dom::window().clear_timeout_with_handle(pending.timer);
    if let Some(step) = dom::find(&format!("#{}", pending.step)) {
        let _ = step.remove_attribute("hidden");
        dom::scroll_to(&step);
    }
    remove_notice(id);
}

fn send(id: u32) {
    let Some(pending) = take(id) else { return };
    remove_notice(id);
    let step = pending.step.clone();
    wasm_bindgen_futures::spawn_local(async move {
        if let Err(message) = super::forms::send_now(pending.action, pending.body).await {
            // Not deleted after all: shown again, with why.
            if let Some(element) = dom::find(&format!("#{step}")) {
                let _ = element.remove_attribute("hidden");
            }
            failed(&format!("The step was not deleted: {message}"));
        }
    });
}

/// "Deleted step #3. Undo" at the bottom of the window, for as long as Undo works.
fn notice(id: u32, what: &str) {
    let document = dom::document();
    let Ok(box_) = document.create_element("div") else { return };
    let _ = box_.set_attribute("class", "undo-notice");
    let _ = box_.set_attribute("role", "status");
    let _ = box_.set_attribute("id", &format!("undo-{id}"));
    let text = document.create_text_node(&format!("Deleted {what}. "));
    let _ = box_.append_child(&text);
    if let Ok(button) = document.create_element("button") {
        let _ = button.set_attribute("type", "button");
        let _ = button.set_attribute("data-undo-id", &id.to_string());
        button.set_text_content(Some("Undo"));
        let _ = box_.append_child(&button);
    }
    if let Some(body) = document.body() {
        let _ = body.append_child(&box_);
    }
}

/// A deletion the server refused, said for a while at the same place.
fn failed(message: &str) {
    let document = dom::document();
    let Ok(box_) = document.create_element("div") else { return };
    let _ = box_.set_attribute("class", "undo-notice error");
    let _ = box_.set_attribute("role", "alert");
    box_.set_text_content(Some(message));
    if let Some(body) = document.body() {
        let _ = body.append_child(&box_);
    }
    let gone = Closure::once_into_js(move || box_.remove());
    let _ = dom::window().set_timeout_with_callback_and_timeout_and_arguments_0(gone.unchecked_ref(), 8_000);
}

fn remove_notice(id: u32) {
    if let Some(notice) = dom::find(&format!("#undo-{id}")) {
        notice.remove();
    }
}
