//! Live updates in the browser (hydrate only): Server-Sent Events from the
//! server, applied to signals. EventSource reconnects by itself and sends the
//! last event id (a byte offset), so a dropped connection resumes where it was.

use leptos::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;
use web_sys::{EventSource, MessageEvent};

/// Appends the run's output after `offset` to `html` as it arrives; calls
/// `on_end` when the run ends.
pub fn follow_output(run: i64, offset: u64, html: RwSignal<String>, bytes: RwSignal<u64>, on_end: impl Fn() + 'static) {
    let url = format!("/api/v1/runs/{run}/stream?offset={offset}");
    let Ok(source) = EventSource::new(&url) else { return };
    let on_output = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
        if let Some(text) = ev.data().as_string() {
            html.update(|h| h.push_str(&text));
        }
        if let Ok(offset) = ev.last_event_id().parse::<u64>() {
            bytes.set(offset);
        }
    });
    let closer = source.clone();
    let on_end = Closure::<dyn FnMut(MessageEvent)>::new(move |_ev: MessageEvent| {
        closer.close();
        on_end();
    });
    let _ = source.add_event_listener_with_callback("output", on_output.as_ref().unchecked_ref());
    let _ = source.add_event_listener_with_callback("end", on_end.as_ref().unchecked_ref());
    on_output.forget();
    on_end.forget();
    let cleanup = send_wrapper::SendWrapper::new(source);
    on_cleanup(move || cleanup.close());
}

/// Refreshes the investigation page whenever one of its runs changes, here or
/// in anyone else's browser.
pub fn follow_investigation(id: String, on_change: impl Fn() + 'static) {
    let Ok(source) = EventSource::new(&format!("/api/v1/investigations/{id}/events")) else { return };
    let on_run = Closure::<dyn FnMut(MessageEvent)>::new(move |_ev: MessageEvent| on_change());
    let _ = source.add_event_listener_with_callback("run", on_run.as_ref().unchecked_ref());
    on_run.forget();
    let cleanup = send_wrapper::SendWrapper::new(source);
    on_cleanup(move || cleanup.close());
}
