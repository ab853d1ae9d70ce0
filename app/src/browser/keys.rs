//! What engineers expect of a tool they type in: Ctrl/Cmd+Enter saves the form
//! they are in (or runs the command), Esc cancels an edit or closes what is
//! open, `/` goes to search, `?` lists these; copy buttons; times that say
//! "3 min ago" and stay true while the page is open.

use super::dom;
use wasm_bindgen::JsCast;
use web_sys::{Element, Event, HtmlElement, KeyboardEvent};

pub fn install() {
    dom::listen(&dom::document(), "keydown", false, |event: Event| {
        if let Some(key) = event.dyn_ref::<KeyboardEvent>() {
            on_key(key);
        }
    });
    dom::listen(&dom::document(), "click", false, |event: Event| {
        if let Some(button) = dom::closest(&event, "button.copy") {
            event.prevent_default();
            copy(&button);
        } else if dom::closest(&event, "[data-shortcuts-close]").is_some() {
            show_shortcuts(false);
        }
        close_menus_outside(&event);
    });
    // A link shown to be copied is selected whole when focused.
    dom::listen(&dom::document(), "focusin", false, |event: Event| {
        if let Some(input) =
            dom::closest(&event, "input.link-url").and_then(|i| i.dyn_into::<web_sys::HtmlInputElement>().ok())
        {
            input.select();
        }
    });
    let tick = wasm_bindgen::closure::Closure::<dyn FnMut()>::new(refresh_times);
    let _ = dom::window().set_interval_with_callback_and_timeout_and_arguments_0(tick.as_ref().unchecked_ref(), 30_000);
    tick.forget();
}

/// A click outside an open menu (a `details` whose body is a `.popover`:
/// Export, Members, Share) closes it, as menus do; forms being filled in are
/// left open.
fn close_menus_outside(event: &Event) {
    let Some(root) = dom::document().document_element() else { return };
    let target = event.target().and_then(|t| t.dyn_into::<web_sys::Node>().ok());
    for menu in dom::all(&root, "details.inline-form[open]") {
        let is_menu = menu.query_selector(":scope > .popover").ok().flatten().is_some();
        let inside = target.as_ref().is_some_and(|t| menu.contains(Some(t)));
        if is_menu && !inside {
            let _ = menu.remove_attribute("open");
        }
    }
}

/// Whether the key was typed into something that takes text.
fn typing(target: Option<&Element>) -> bool {
    target.is_some_and(|t| {
        matches!(t.tag_name().as_str(), "INPUT" | "TEXTAREA" | "SELECT")
            || t.get_attribute("contenteditable").is_some_and(|v| v != "false")
    })
}

fn on_key(key: &KeyboardEvent) {
    let target = key.target().and_then(|t| t.dyn_into::<Element>().ok());
    match key.key().as_str() {
        "Enter" if key.ctrl_key() || key.meta_key() => {
            // The form the caret is in: saved as its primary button would.
            // Outside a form, in a command step: that step runs.
            let Some(form) = target.as_ref().and_then(|t| t.closest("form").ok().flatten()) else {
                let run = target
                    .as_ref()
                    .and_then(|t| t.closest(".step[data-kind=command]").ok().flatten())
                    .and_then(|step| step.query_selector("button.run-button").ok().flatten())
                    .and_then(|b| b.dyn_into::<HtmlElement>().ok());
                if let Some(run) = run {
                    key.prevent_default();
                    run.click();
                }
                return;
            };
            let Ok(form) = form.dyn_into::<web_sys::HtmlFormElement>() else { return };
            key.prevent_default();
            let primary = form.query_selector("button[type=submit].primary, button[type=submit]").ok().flatten();
            let submitter = primary.and_then(|b| b.dyn_into::<HtmlElement>().ok());
            match submitter {
                Some(button) => button.click(),
                None => {
                    let _ = form.request_submit();
                }
            }
        }
        "Escape" => {
            if show_shortcuts(false) {
                return;
            }
            // An open step editor: its Cancel, as if clicked (it keeps the page's place).
            let editing = target.as_ref().and_then(|t| t.closest(".step").ok().flatten());
            let cancel = editing
                .and_then(|step| step.query_selector("a[data-view=close]").ok().flatten())
                .or_else(|| if typing(target.as_ref()) { None } else { dom::find(".step a[data-view=close]") });
            if let Some(cancel) = cancel.and_then(|c| c.dyn_into::<HtmlElement>().ok()) {
                key.prevent_default();
                cancel.click();
                return;
            }
            // Else the innermost open popover or inline form (Members, Share, an edit…).
            let Some(root) = dom::document().document_element() else { return };
            if let Some(details) = dom::all(&root, "details[open]").last() {
                key.prevent_default();
                details.remove_attribute("open").ok();
                if let Some(summary) =
                    details.query_selector("summary").ok().flatten().and_then(|s| s.dyn_into::<HtmlElement>().ok())
                {
                    let _ = summary.focus();
                }
            }
        }
        "/" if !typing(target.as_ref()) && !key.ctrl_key() && !key.meta_key() && !key.alt_key() => {
            key.prevent_default();
            // The first search field that is shown: the top bar's is hidden in a
            // narrow window, and then `/` goes to the search page.
            let root = dom::document().document_element();
            let shown = root
                .iter()
                .flat_map(|root| dom::all(root, "input[type=search]"))
                .filter_map(|s| s.dyn_into::<web_sys::HtmlInputElement>().ok())
                .find(|s| s.offset_parent().is_some());
            match shown {
                Some(search) => {
                    let _ = search.focus();
                    search.select();
                }
                None => super::page::go_to("/search"),
            }
        }
        "?" if !typing(target.as_ref()) && !key.ctrl_key() && !key.meta_key() => {
            key.prevent_default();
            let shown = dom::find("#shortcuts").is_some_and(|s| !s.has_attribute("hidden"));
            show_shortcuts(!shown);
        }
        _ => {}
    }
}

/// Shows or hides the list of shortcuts; whether it was shown before.
fn show_shortcuts(show: bool) -> bool {
    let Some(list) = dom::find("#shortcuts") else { return false };
    let was = !list.has_attribute("hidden");
    if show {
        let _ = list.remove_attribute("hidden");
        if let Some(close) = list.query_selector("button").ok().flatten().and_then(|b| b.dyn_into::<HtmlElement>().ok())
        {
            let _ = close.focus();
        }
    } else {
        let _ = list.set_attribute("hidden", "");
    }
    was
}

/// Copies the button's text: through a selected text area and the browser's
/// copy command, which works on plain http too (the Clipboard API needs https
/// or localhost); where even that is refused, a prompt holds it selected.
fn copy(button: &Element) {
    let Some(text) = copied_text(button) else { return };
    let document = dom::document();
    let Ok(area) = document.create_element("textarea") else { return };
    let Ok(area) = area.dyn_into::<web_sys::HtmlTextAreaElement>() else { return };
    area.set_value(&text);
    let _ = area.set_attribute("readonly", "");
    let _ = area.set_attribute("style", "position:fixed;top:0;left:0;opacity:0;");
    let Some(body) = document.body() else { return };
    let _ = body.append_child(&area);
    area.select();
    let copied = document.dyn_ref::<web_sys::HtmlDocument>().and_then(|d| d.exec_command("copy").ok()).unwrap_or(false);
    area.remove();
    if !copied {
        let _ = dom::window().prompt_with_message_and_default("Copy this (Ctrl+C, then Enter):", &text);
    }
    let label = button.text_content().unwrap_or_default();
    button.set_text_content(Some(if copied { "Copied" } else { label.as_str() }));
    let _ = button.set_attribute("data-copied", if copied { "yes" } else { "no" });
    let button = button.clone();
    let restore = wasm_bindgen::closure::Closure::once_into_js(move || {
        button.set_text_content(Some(&label));
        let _ = button.remove_attribute("data-copied");
    });
    let _ = dom::window().set_timeout_with_callback_and_timeout_and_arguments_0(restore.unchecked_ref(), 1_500);
}

/// What a copy button copies: its text (`data-copy`), a link to a place on
/// this page (`data-copy-link="#step-3"`, made whole from the address), or
/// the run output shown above it (`data-copy-output`).
fn copied_text(button: &Element) -> Option<String> {
    if let Some(text) = button.get_attribute("data-copy") {
        return Some(text);
    }
    if let Some(anchor) = button.get_attribute("data-copy-link") {
        let location = dom::window().location();
        let page = format!("{}{}{}", location.origin().ok()?, location.pathname().ok()?, location.search().ok()?);
        return Some(format!("{page}{anchor}"));
    }
    if button.has_attribute("data-copy-output") {
        let output = button.closest(".run").ok()??.query_selector("pre.output").ok()??;
        return output.text_content();
    }
    None
}

/// Every "3 min ago" on the page, said again from now.
fn refresh_times() {
    let now = web_sys::js_sys::Date::now() as i64;
    let Some(root) = dom::document().document_element() else { return };
    for time in dom::all(&root, "time[data-relative]") {
        if let Some(at) = time.get_attribute("datetime") {
            time.set_text_content(Some(&domain::model::relative_time(&at, now)));
        }
    }
}
