//! What the reader typed and did not send survives a reload, a closed tab or
//! a crash: the page's drafts ([`super::page::drafts`], passwords never among
//! them) are kept in the browser's local storage under the page's path, with
//! the step editor that was open, and put back into the same forms when the
//! page loads. Sending a form, discarding an edit or signing out drops them.
//!
//! Closing a step editor whose text changed (Esc, or its Cancel) asks first.

use super::dom;
use wasm_bindgen::JsCast;
use web_sys::Event;

const PREFIX: &str = "sleuth-drafts:";

thread_local! {
    /// A save is due (keys typed since the last one).
    static DUE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[derive(serde::Serialize, serde::Deserialize, Default)]
struct Saved {
    /// The step whose editor was open.
    edit: Option<String>,
    /// `(form, field, value)`, as [`super::page::drafts`] gives them.
    fields: Vec<(String, String, String)>,
}

fn storage() -> Option<web_sys::Storage> {
    dom::window().local_storage().ok().flatten()
}

fn key() -> String {
    format!("{PREFIX}{}", dom::window().location().pathname().unwrap_or_default())
}

pub fn install() {
    let document = dom::document();
    // Not at every key: reading every form of a long page is kept for a pause,
    // and for leaving the page (a reload), whichever comes first.
    dom::listen(&document, "input", true, |_| save_soon());
    dom::listen(&document, "change", true, |_| save_soon());
    dom::listen(&dom::window(), "pagehide", false, |_| {
        if DUE.replace(false) {
            save();
        }
    });
    // Before the link that closes an editor acts (capture), and before the
    // sign-out form is sent.
    dom::listen(&document, "click", true, |event: Event| {
        if let Some(cancel) = dom::closest(&event, ".step a[data-view=close]")
            && dom::plain_click(&event)
            && !may_close(&cancel)
        {
            event.prevent_default();
            event.stop_propagation();
        }
    });
    dom::listen(&document, "submit", true, |event: Event| {
        let signing_out = event
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            .and_then(|form| form.get_attribute("action"))
            .is_some_and(|action| action.starts_with("/auth/logout"));
        if signing_out {
            forget_all();
        }
    });
    put_back();
}

/// Whether the editor that `cancel` closes may close: unchanged, or the reader
/// said to discard the change.
pub fn may_close(cancel: &web_sys::Element) -> bool {
    let Ok(Some(step)) = cancel.closest(".step") else { return true };
    if super::page::drafts(&step).iter().all(|(_, name, _)| name == "version") {
        return true;
    }
    dom::window().confirm_with_message("Discard your changes to this step?").unwrap_or(true)
}

fn save_soon() {
    if DUE.replace(true) {
        return;
    }
    leptos::prelude::set_timeout(
        || {
            if DUE.replace(false) {
                save();
            }
        },
        std::time::Duration::from_millis(400),
    );
}

/// Keeps the page's drafts now (none: forgets them).
pub fn save() {
    let (Some(storage), Some(main)) = (storage(), dom::find("main")) else { return };
    let fields: Vec<(String, String, String)> =
        super::page::drafts(&main).into_iter().filter(|(_, name, _)| !name.starts_with('\u{0}')).collect();
    if fields.iter().all(|(_, name, _)| name == "version") {
        let _ = storage.remove_item(&key());
        return;
    }
    let saved = Saved { edit: super::page::editing(), fields };
    if let Ok(text) = serde_json::to_string(&saved) {
        // A full storage keeps the older copy: nothing on the page is lost.
        let _ = storage.set_item(&key(), &text);
    }
}

/// The drafts kept for this page, into its forms (its editor opened again first).
fn put_back() {
    let Some(text) = storage().and_then(|s| s.get_item(&key()).ok().flatten()) else { return };
    let Ok(saved) = serde_json::from_str::<Saved>(&text) else { return };
    let fields = saved.fields;
    match saved.edit.filter(|step| dom::find(&format!("#step-{step}")).is_some()) {
        Some(step) => {
            super::page::set_edit(Some(step));
            super::page::refresh_then(move || {
                if let Some(main) = dom::find("main") {
                    super::page::restore(&main, fields);
                    save();
                }
            });
        }
        None => {
            if let Some(main) = dom::find("main") {
                super::page::restore(&main, fields);
            }
        }
    }
}

fn forget_all() {
    let Some(storage) = storage() else { return };
    let keys: Vec<String> = (0..storage.length().unwrap_or(0)).filter_map(|i| storage.key(i).ok().flatten()).collect();
    for key in keys.into_iter().filter(|k| k.starts_with(PREFIX)) {
        let _ = storage.remove_item(&key);
    }
}
