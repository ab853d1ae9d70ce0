//! The browser side of Sleuth (the `hydrate` build): what makes the server's
//! HTML interactive. Pages are server components; nothing here draws them.
//! Each module adds one behaviour to the page through the data attributes and
//! classes the server renders, with event listeners on the document, so a part
//! of the page drawn anew keeps working without being set up again:
//!
//! - [`forms`]: forms posted to server functions stay on the page: the answer
//!   is an error shown in the form, or the page drawn anew;
//! - [`page`]: drawing the page anew from the server ([`page::refresh_now`]),
//!   keeping what the reader typed, opened and scrolled to;
//! - [`islands`]: the `#[island]` widgets, hydrated and cleaned up per island;
//! - [`live`]: who else is here, and changes made anywhere, through the
//!   investigation's event stream; run output as it is printed;
//! - [`output`]: "show more" above a run's output, and a source reference in it
//!   opening as a snippet step;
//! - [`lines`]: snippet lines selected by a click or a permalink;
//! - [`timeline`]: the parts of a long timeline, opened as the reader scrolls,
//!   clicks or follows a permalink;
//! - [`links`]: editors opened and closed in place, mentions marked read;
//! - [`keys`]: keyboard shortcuts, copy buttons, relative times kept current;
//! - [`undo`]: a deleted step can be brought back for a few seconds;
//! - [`drag`]: steps moved by dragging.

mod dom;
mod drafts;
mod drag;
mod forms;
mod islands;
mod keys;
mod lines;
mod links;
mod live;
mod notify;
mod output;
mod page;
mod refusals;
mod timeline;
mod undo;

use wasm_bindgen::JsValue;

/// Starts every behaviour on the page the server sent; `exports` are the
/// bundle's (the islands' hydration functions are among them).
pub fn start(exports: JsValue) {
    islands::init(exports);
    forms::install();
    drafts::install();
    links::install();
    keys::install();
    undo::install();
    drag::install();
    output::install();
    lines::install();
    timeline::install();
    live::install();
    notify::install();
    page::install(drawn);
    if let Some(main) = dom::document().query_selector("main").ok().flatten() {
        drawn(&main);
    }
    // For tests and scripts: the page is interactive now, and when it became so
    // (ms since navigation started; the big-investigation benchmark reads it).
    if let Some(body) = dom::document().body() {
        let _ = body.set_attribute("data-hydrated", "");
        if let Some(now) = dom::window().performance().map(|p| p.now()) {
            let _ = body.set_attribute("data-hydrated-at", &format!("{now:.0}"));
        }
    }
}

/// What a part of the page drawn by the server needs once it is in the
/// document: at the start, and after every [`page`] refresh.
fn drawn(main: &web_sys::Element) {
    islands::hydrate(main);
    live::attach(main);
    notify::drawn(main);
    timeline::attach(main);
    lines::apply();
    undo::apply(main);
    // What was sent is gone from the forms now; what was not is kept.
    drafts::save();
}
