//! The `#[island]` widgets: each hydrated under an owner of its own, which is
//! cleaned up (its effects and listeners gone) when its element leaves the page.
//! leptos's own island script hydrates every island under one owner that lives
//! for the page, which suits pages drawn once; these are drawn anew.
//!
//! Islands are leaves: none holds another or server-rendered children.

use super::dom;
use leptos::prelude::Owner;
use std::cell::RefCell;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::Element;

#[derive(Default)]
struct Islands {
    /// The bundle's exports: `{ NewToken_1234…: function(element) }` and the rest.
    exports: JsValue,
    /// The owner every island's owner is a child of.
    root: Option<Owner>,
    /// Each hydrated island's element and owner.
    live: Vec<(Element, Owner)>,
}

thread_local! {
    static ISLANDS: RefCell<Islands> = RefCell::default();
}

pub fn init(exports: JsValue) {
    // The reactive root, with the hydration context islands render in.
    leptos::mount::hydrate_islands();
    let root = Owner::current();
    ISLANDS.with_borrow_mut(|i| {
        i.exports = exports;
        i.root = root;
    });
}

/// Hydrates the islands under `root` that are not yet.
pub fn hydrate(root: &Element) {
    for element in dom::all(root, "leptos-island:not([data-ready])") {
        let Some(name) = element.get_attribute("data-component") else { continue };
        let (function, owner) = ISLANDS.with_borrow(|i| {
            let function = web_sys::js_sys::Reflect::get(&i.exports, &JsValue::from_str(&name))
                .ok()
                .and_then(|f| f.dyn_into::<web_sys::js_sys::Function>().ok());
            (function, i.root.as_ref().map(Owner::child))
        });
        let (Some(function), Some(owner)) = (function, owner) else {
            leptos::logging::warn!("no hydration function for the island {name}");
            continue;
        };
        // The island's own owner is made inside the call, as a child of the current one.
        if let Err(e) = owner.with(|| function.call1(&JsValue::NULL, &element)) {
            leptos::logging::warn!("the island {name} did not hydrate: {}", dom::describe(&e));
        }
        let _ = element.set_attribute("data-ready", "");
        ISLANDS.with_borrow_mut(|i| i.live.push((element, owner)));
    }
}

/// Puts the hydrated islands of `old` into `new` (not yet on the page) in
/// place of the same islands drawn anew: same component, same props — or, in
/// an element with a `data-island-key`, the same key (an island that keeps its
/// own state of what the props said: a host's keys it just trusted). They keep
/// what they show (a link just made) and their listeners.
pub fn carry_over(old: &Element, new: &Element) {
    let key = |e: &Element| {
        let keyed = e.parent_element().and_then(|p| p.get_attribute("data-island-key"));
        (e.get_attribute("data-component"), keyed.or_else(|| e.get_attribute("data-props")))
    };
    let mut hydrated = dom::all(old, "leptos-island[data-ready]");
    for fresh in dom::all(new, "leptos-island") {
        if let Some(i) = hydrated.iter().position(|h| key(h) == key(&fresh)) {
            let _ = fresh.replace_with_with_node_1(&hydrated.remove(i));
        }
    }
}

/// Cleans up the islands no longer on the page.
pub fn dispose_detached() {
    let gone: Vec<Owner> = ISLANDS.with_borrow_mut(|i| {
        let (kept, gone): (Vec<_>, Vec<_>) =
            std::mem::take(&mut i.live).into_iter().partition(|(e, _)| e.is_connected());
        i.live = kept;
        gone.into_iter().map(|(_, owner)| owner).collect()
    });
    for owner in gone {
        owner.cleanup();
    }
}
