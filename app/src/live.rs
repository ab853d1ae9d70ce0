//! Live updates in the browser (hydrate only): Server-Sent Events from the
//! server, applied to signals. EventSource reconnects by itself and sends the
//! last event id (a byte offset), so a dropped connection resumes where it was.

use leptos::prelude::*;
use send_wrapper::SendWrapper;
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;
use web_sys::{EventSource, MessageEvent};

type Listener = Closure<dyn FnMut(MessageEvent)>;

/// Opens `url` and calls each listener for its event name. The source and the
/// listeners live until the component that opened them is cleaned up.
fn listen(url: &str, listeners: Vec<(&'static str, Listener)>) -> Option<EventSource> {
    let source = EventSource::new(url).ok()?;
    for (event, listener) in &listeners {
        let _ = source.add_event_listener_with_callback(event, listener.as_ref().unchecked_ref());
    }
    let held = SendWrapper::new((source.clone(), listeners));
    on_cleanup(move || {
        let (source, listeners) = held.take();
        source.close();
        drop(listeners);
    });
    Some(source)
}

/// Appends the run's output after `offset` to `html` as it arrives; calls
/// `on_end` when the run ends.
pub fn follow_output(run: i64, offset: u64, html: RwSignal<String>, bytes: RwSignal<u64>, on_end: impl Fn() + 'static) {
    let on_output = Listener::new(move |ev: MessageEvent| {
        if let Some(text) = ev.data().as_string() {
            html.update(|h| h.push_str(&text));
        }
        if let Ok(offset) = ev.last_event_id().parse::<u64>() {
            bytes.set(offset);
        }
    });
    let source = std::rc::Rc::new(std::cell::RefCell::new(None::<EventSource>));
    let closer = source.clone();
    let on_ended = Listener::new(move |_ev: MessageEvent| {
        if let Some(source) = closer.borrow().as_ref() {
            source.close();
        }
        on_end();
    });
    let url = format!("/api/v1/runs/{run}/stream?offset={offset}");
    *source.borrow_mut() = listen(&url, vec![("output", on_output), ("end", on_ended)]);
}

/// Refreshes the investigation page whenever it changes (a run, or anything
/// anyone edits), here or in anyone else's browser, and keeps `viewers` equal to
/// who has it open.
/// `known` is the runs fingerprint of what the page shows: the server sends a
/// sync event at once if its runs differ (something changed before this subscription).
pub fn follow_investigation(
    id: String,
    known: u64,
    on_change: impl Fn() + Clone + 'static,
    viewers: RwSignal<Vec<String>>,
) {
    let refresh = on_change.clone();
    let on_run = Listener::new(move |_ev: MessageEvent| when_idle(refresh.clone()));
    let on_edit = Listener::new(move |_ev: MessageEvent| when_idle(on_change.clone()));
    let on_presence = Listener::new(move |ev: MessageEvent| {
        if let Some(names) = ev.data().as_string().and_then(|d| serde_json::from_str::<Vec<String>>(&d).ok()) {
            viewers.try_set(names);
        }
    });
    listen(
        &format!("/api/v1/investigations/{id}/events?known={known}"),
        vec![("run", on_run), ("change", on_edit), ("presence", on_presence)],
    );
}

/// Calls `refresh` now, or, while the reader is typing in a field (a refresh
/// draws the page anew and would lose what they typed), once it loses focus.
fn when_idle(refresh: impl Fn() + 'static) {
    let typing =
        document().active_element().filter(|e| matches!(e.tag_name().as_str(), "INPUT" | "TEXTAREA" | "SELECT"));
    let Some(field) = typing else {
        refresh();
        return;
    };
    // Several changes while typing: one refresh at the end is enough.
    if field.get_attribute("data-refresh-pending").is_some() {
        return;
    }
    let _ = field.set_attribute("data-refresh-pending", "");
    let target = field.clone();
    let once = Closure::once_into_js(move || {
        let _ = target.remove_attribute("data-refresh-pending");
        refresh();
    });
    let options = web_sys::AddEventListenerOptions::new();
    options.set_once(true);
    let _ =
        field.add_event_listener_with_callback_and_add_event_listener_options("blur", once.unchecked_ref(), &options);
}

/// Keeps `focus` equal to what the URL fragment points at (on load and on every
/// `hashchange`), and scrolls its first line to the middle of the window: the
/// browser scrolls only to ids that exist (`#step-12-L130-L180` names none), puts
/// them at the very top, and after a reload restores the old position instead.
pub fn follow_fragment(focus: RwSignal<Option<crate::steps::snippet::Focus>>) {
    use crate::steps::snippet::{Focus, line_anchor};
    let apply = move || {
        let hash = window().location().hash().unwrap_or_default();
        let parsed = Focus::parse(&hash);
        focus.set(parsed);
        if let Some(Focus::Lines { step_id, start, .. }) = parsed
            && let Some(line) = document().get_element_by_id(&line_anchor(step_id, start))
        {
            let options = web_sys::ScrollIntoViewOptions::new();
            options.set_block(web_sys::ScrollLogicalPosition::Center);
            line.scroll_into_view_with_scroll_into_view_options(&options);
        }
    };
    apply();
    let handle = window_event_listener(leptos::ev::hashchange, move |_| apply());
    on_cleanup(move || handle.remove());
}

/// Puts `#anchor` in the address bar without scrolling or a history entry.
pub fn replace_fragment(anchor: &str) {
    if let Ok(history) = window().history() {
        let _ = history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&format!("#{anchor}")));
    }
}

/// Goes to `url`; on this same page (only the fragment differs) reloads it, so the
/// new content is there and the browser scrolls to the fragment.
pub fn go_to(url: &str) {
    let location = window().location();
    let (path, fragment) = url.split_once('#').unwrap_or((url, ""));
    if location.pathname().ok().as_deref() == Some(path) {
        replace_fragment(fragment);
        // Otherwise the reload restores the scroll position and ignores the fragment.
        if let Ok(history) = window().history() {
            let _ = history.set_scroll_restoration(web_sys::ScrollRestoration::Manual);
        }
        let _ = location.reload();
    } else {
        let _ = location.assign(url);
    }
}

/// Opens the part of a long timeline that the address's fragment names (a folded
/// step, or a comment or annotation on one), on load and on every `hashchange`,
/// and goes to the target once the part is drawn. `data` is the page's resource
/// (read with tracking, so this runs again when it loads).
pub fn reveal_fragment(
    data: impl Fn() -> Option<crate::model::Investigation> + 'static,
    open: impl Fn((u32, u32)) + 'static,
) {
    let changed = RwSignal::new(0u32);
    let handle = window_event_listener(leptos::ev::hashchange, move |_| changed.update(|n| *n += 1));
    on_cleanup(move || handle.remove());
    // A part was opened for the fragment: go to it once it is on the page.
    let waiting = StoredValue::new(false);
    Effect::new(move |_| {
        changed.track();
        let Some(inv) = data() else { return };
        let hash = window().location().hash().unwrap_or_default();
        match crate::model::StepWindow::part_for_fragment(&inv, &hash) {
            Some(range) => {
                waiting.set_value(true);
                open(range);
            }
            None if waiting.get_value() => {
                waiting.set_value(false);
                go_to_fragment(20);
            }
            None => {}
        }
    });
}

/// Scrolls to what the fragment names, trying again for a second while the
/// page draws the part it is in.
fn go_to_fragment(tries: u32) {
    let hash = window().location().hash().unwrap_or_default();
    let id = hash.trim_start_matches('#');
    let target = document().get_element_by_id(id).or_else(|| match crate::steps::snippet::Focus::parse(&hash) {
        Some(crate::steps::snippet::Focus::Lines { step_id, start, .. }) => {
            document().get_element_by_id(&crate::steps::snippet::line_anchor(step_id, start))
        }
        _ => None,
    });
    let drawn = target.filter(|t| t.closest(".folded").ok().flatten().is_none());
    match drawn {
        Some(target) => {
            let options = web_sys::ScrollIntoViewOptions::new();
            options.set_block(web_sys::ScrollLogicalPosition::Center);
            target.scroll_into_view_with_scroll_into_view_options(&options);
        }
        None if tries > 0 => {
            set_timeout(move || go_to_fragment(tries - 1), std::time::Duration::from_millis(50));
        }
        None => {}
    }
}

/// Calls `on_near` once, when `node` comes within a screenful of the window
/// (the reader scrolls towards a folded part of the timeline).
pub fn when_near(node: NodeRef<leptos::html::Li>, on_near: impl Fn() + 'static) {
    use web_sys::{IntersectionObserver, IntersectionObserverEntry, IntersectionObserverInit, js_sys};
    let on_near = std::rc::Rc::new(on_near);
    Effect::new(move |_| {
        let Some(element) = node.get() else { return };
        let on_near = on_near.clone();
        let fired = std::cell::Cell::new(false);
        let callback = Closure::<dyn FnMut(js_sys::Array)>::new(move |entries: js_sys::Array| {
            let near = entries.iter().any(|e| e.unchecked_into::<IntersectionObserverEntry>().is_intersecting());
            if near && !fired.replace(true) {
                on_near();
            }
        });
        let options = IntersectionObserverInit::new();
        options.set_root_margin("100% 0px");
        let Ok(observer) = IntersectionObserver::new_with_options(callback.as_ref().unchecked_ref(), &options) else {
            return;
        };
        observer.observe(&element);
        let held = SendWrapper::new((observer, callback));
        on_cleanup(move || {
            let (observer, callback) = held.take();
            observer.disconnect();
            drop(callback);
        });
    });
}
