//! A long timeline's folded parts open in place: when the reader scrolls near
//! one, clicks its "Show steps 21–60", clicks a folded step, or follows a
//! permalink (`#step-412`, `#comment-9`, a line range) to a step in one. The
//! server renders each of those as a link to the page with the part shown
//! (`?steps=`); this opens the same part by drawing the page anew with it.

use super::dom;
use std::cell::RefCell;
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;
use web_sys::{Element, Event, IntersectionObserver, IntersectionObserverEntry, js_sys};

/// Watches the part heads of the page as drawn now.
struct Near {
    observer: IntersectionObserver,
    _callback: Closure<dyn FnMut(js_sys::Array)>,
}

thread_local! {
    static NEAR: RefCell<Option<Near>> = const { RefCell::new(None) };
}

pub fn install() {
    dom::listen(&dom::document(), "click", false, |event: Event| {
        if !dom::plain_click(&event) {
            return;
        }
        let link =
            dom::closest(&event, "li.part a.show-part").or_else(|| dom::closest(&event, "li.folded a.step-link"));
        let Some(link) = link else { return };
        event.prevent_default();
        // A folded step's own link goes to the step; a part's head stays put.
        let target = link.closest("li.folded").ok().flatten().map(|li| li.id());
        open(&link, move || {
            if let Some(element) = target.and_then(|id| dom::document().get_element_by_id(&id)) {
                dom::replace_fragment(&element.id());
                dom::scroll_to(&element);
            }
        });
    });
    dom::listen(&dom::window(), "hashchange", false, |_| reveal());
    reveal();
}

/// Opens the part that `link` (a part's head, or a folded step's) shows, then
/// calls `then`.
fn open(link: &Element, then: impl FnOnce() + 'static) {
    let Some(href) = link.get_attribute("href") else { return };
    let base = dom::window().location().href().unwrap_or_default();
    let Some(steps) = web_sys::Url::new_with_base(&href, &base).ok().and_then(|u| u.search_params().get("steps"))
    else {
        return;
    };
    super::page::show_steps(&steps);
    super::page::refresh_then(then);
}

/// A permalink to a step in a folded part (or to a comment or annotation on
/// one, or to lines of one): opens the part, then goes to the target.
fn reveal() {
    let hash = dom::window().location().hash().unwrap_or_default();
    let folded = dom::fragment_target(&hash).and_then(|t| t.closest("li.folded").ok().flatten());
    let Some(link) = folded.and_then(|f| f.query_selector("a.step-link").ok().flatten()) else { return };
    open(&link, || {
        super::lines::from_fragment();
        let hash = dom::window().location().hash().unwrap_or_default();
        if let Some(target) = dom::fragment_target(&hash) {
            dom::scroll_to(&target);
        }
    });
}

/// Opens a part when its head comes within a screenful of the window.
pub fn attach(root: &Element) {
    NEAR.with_borrow_mut(|near| {
        if let Some(old) = near.take() {
            old.observer.disconnect();
        }
    });
    let heads = dom::all(root, "li.part");
    if heads.is_empty() {
        return;
    }
    let callback = Closure::<dyn FnMut(js_sys::Array)>::new(|entries: js_sys::Array| {
        let near = entries
            .iter()
            .map(|e| e.unchecked_into::<IntersectionObserverEntry>())
            .find(|e| e.is_intersecting())
            .map(|e| e.target());
        if let Some(head) = near
            && let Ok(Some(link)) = head.query_selector("a.show-part")
        {
            open(&link, || ());
        }
    });
    let options = web_sys::IntersectionObserverInit::new();
    options.set_root_margin("100% 0px");
    let Ok(observer) = IntersectionObserver::new_with_options(callback.as_ref().unchecked_ref(), &options) else {
        return;
    };
    for head in &heads {
        observer.observe(head);
    }
    NEAR.set(Some(Near { observer, _callback: callback }));
}
