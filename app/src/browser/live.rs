//! Server-Sent Events: the investigation's stream (who else has it open, and
//! changes made anywhere, which draw the page anew) and each running run's
//! output, appended as it is printed. EventSource reconnects by itself and
//! sends the last event id (a byte offset), so a dropped connection resumes
//! where it was.

use super::dom;
use std::cell::RefCell;
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;
use web_sys::{Element, EventSource, MessageEvent};

type Listener = Closure<dyn FnMut(MessageEvent)>;

/// An open stream and the listeners it calls.
struct Stream {
    source: EventSource,
    _listeners: Vec<Listener>,
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.source.close();
    }
}

thread_local! {
    /// The page's investigation stream, for as long as the page is open.
    static PAGE: RefCell<Option<Stream>> = const { RefCell::new(None) };
    /// The runs followed in the page as drawn now.
    static RUNS: RefCell<Vec<Stream>> = const { RefCell::new(Vec::new()) };
    /// Everyone else who has the page open, from the last `presence` event.
    static OTHERS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

fn open(url: &str, listeners: Vec<(&'static str, Listener)>) -> Option<Stream> {
    let source = EventSource::new(url).ok()?;
    for (event, listener) in &listeners {
        let _ = source.add_event_listener_with_callback(event, listener.as_ref().unchecked_ref());
    }
    Some(Stream { source, _listeners: listeners.into_iter().map(|(_, l)| l).collect() })
}

/// Follows the investigation of this page, if it is one that follows
/// (`article[data-live]`; a share link's page does not).
pub fn install() {
    let Some(article) = dom::find("article.investigation[data-live]") else { return };
    let id = article.get_attribute("data-investigation").unwrap_or_default();
    // The runs as the page shows them: the server says at once if they differ
    // (something changed between the page's render and this subscription).
    let known = article.get_attribute("data-known").unwrap_or_default();
    let changed = || Listener::new(|_: MessageEvent| super::page::refresh_when_idle());
    let presence = Listener::new(|event: MessageEvent| {
        let names = event.data().as_string().and_then(|d| serde_json::from_str::<Vec<String>>(&d).ok());
        if let Some(names) = names {
            OTHERS.set(names);
            show_presence();
        }
    });
    let stream = open(
        &format!("/api/v1/investigations/{id}/events?known={known}"),
        vec![
            ("run", changed()),
            (
                "run",
                Listener::new(|event: MessageEvent| {
                    if let Some(data) = event.data().as_string() {
                        super::notify::run_changed(&data);
                    }
                }),
            ),
            ("change", changed()),
            ("presence", presence),
        ],
    );
    PAGE.set(stream);
}

/// "Also here: bob, carol"; nothing when the reader is alone.
fn show_presence() {
    let Some(line) = dom::find("p.also-here") else { return };
    let others = OTHERS.with_borrow(|o| o.join(", "));
    if others.is_empty() {
        let _ = line.set_attribute("hidden", "");
    } else {
        line.set_text_content(Some(&format!("Also here: {others}")));
        let _ = line.remove_attribute("hidden");
    }
}

/// Follows the output of every run in `root` that has not ended and is to be
/// followed (`data-follow`: not on a share link's page, whose reader may not
/// open the team's streams), from the byte the server's page showed last; the
/// runs of the page drawn before are let go.
pub fn attach(root: &Element) {
    show_presence();
    RUNS.with_borrow_mut(Vec::clear);
    let mut streams = Vec::new();
    for run in dom::all(root, ".run[data-follow][data-status=queued], .run[data-follow][data-status=running]") {
        let (Some(id), Some(end)) = (dom::number::<i64>(&run, "data-run"), dom::number::<u64>(&run, "data-end")) else {
            continue;
        };
        streams.extend(follow(id, end, Followed::Output));
        // Its server's log, while the server is up.
        let server = run.query_selector(".server-log[data-live]").ok().flatten();
        if let Some(end) = server.and_then(|log| dom::number::<u64>(&log, "data-end")) {
            streams.extend(follow(id, end, Followed::ServerLog));
        }
    }
    RUNS.set(streams);
}

/// One of a run's two streams.
#[derive(Clone, Copy)]
enum Followed {
    Output,
    ServerLog,
}

impl Followed {
    /// The element that holds the stream's `data-end`, its `code.live` and the bytes shown.
    fn selectors(self, run: i64) -> (String, &'static str, &'static str) {
        match self {
            Self::Output => (format!(".run[data-run=\"{run}\"]"), ":scope > pre.output code.live", ".run-head .bytes"),
            Self::ServerLog => (format!(".run[data-run=\"{run}\"] .server-log"), "code.live", ".server-bytes"),
        }
    }
}

fn follow(run: i64, offset: u64, followed: Followed) -> Option<Stream> {
    let (selector, live_selector, bytes_selector) = followed.selectors(run);
    let on_output = {
        let selector = selector.clone();
        Listener::new(move |event: MessageEvent| {
            // Looked up at each event: the page may have been drawn anew.
            let Some(element) = dom::find(&selector) else { return };
            if let (Some(html), Ok(Some(live))) = (event.data().as_string(), element.query_selector(live_selector)) {
                let _ = live.insert_adjacent_html("beforeend", &html);
            }
            if let Ok(bytes) = event.last_event_id().parse::<u64>() {
                let _ = element.set_attribute("data-end", &bytes.to_string());
                if let Ok(Some(shown)) = element.query_selector(bytes_selector) {
                    shown.set_text_content(Some(&domain::runs::human_bytes(bytes)));
                }
            }
        })
    };
    // The run ended: its status, exit and measurements are the server's to show.
    // (Closed, not dropped: this listener is part of the stream.)
    let on_end = Listener::new(|event: MessageEvent| {
        if let Some(source) = event.target().and_then(|t| t.dyn_into::<EventSource>().ok()) {
            source.close();
        }
        super::page::refresh_when_idle();
    });
    let stream = match followed {
        Followed::Output => "",
        Followed::ServerLog => "&stream=server",
    };
    open(&format!("/api/v1/runs/{run}/stream?offset={offset}{stream}"), vec![("output", on_output), ("end", on_end)])
}
