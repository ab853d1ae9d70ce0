//! Drawing the page anew: the same address (with what the reader opened since:
//! parts of a long timeline, an editor) fetched from the server, and its
//! `<main>` put in place of the old one. The server is the only place pages are
//! drawn, so a change shows the same way as a reload would show it.
//!
//! Kept across a refresh: the scroll position (the new `<main>` is put where
//! the old one was), the `<details>` the reader opened or closed, what was
//! typed into fields and not yet sent (and forms being sent, as they are), the
//! field being typed in with its caret, and islands whose props did not change
//! ([`super::islands::carry_over`]).

use super::dom;
use std::cell::RefCell;
use wasm_bindgen::JsCast;
use web_sys::{Element, HtmlFormElement, UrlSearchParams};

/// What the reader asked this page to show beyond what its address shows.
#[derive(Default)]
struct View {
    /// `?steps=`: parts of a long timeline (merged).
    steps: Option<String>,
    /// `?edit=`: the step whose editor is open (`Some(None)`: closed).
    edit: Option<Option<String>>,
}

/// Refreshes asked for while one runs are one more refresh after it; what is
/// to happen after a refresh waits for the first that started after it was asked.
#[derive(Default)]
struct Queue {
    running: bool,
    again: bool,
    after: Vec<Box<dyn FnOnce()>>,
}

thread_local! {
    static VIEW: RefCell<View> = RefCell::default();
    static QUEUE: RefCell<Queue> = RefCell::default();
    /// A redraw for changes made elsewhere is waiting ([`refresh_when_idle`]).
    static REMOTE_PENDING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// When the fetch of the page drawn last began (ms since the epoch).
    static DRAWN_FROM: std::cell::Cell<f64> = const { std::cell::Cell::new(0.0) };
    /// When the newest change made elsewhere was heard of.
    static CHANGED_AT: std::cell::Cell<f64> = const { std::cell::Cell::new(0.0) };
    /// Whether the reader is composing text with an input method (the
    /// characters under way are not the field's value yet).
    static COMPOSING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Shows the parts `steps` (`"21-60"`) of a long timeline too, from the next refresh on.
pub fn show_steps(steps: &str) {
    let current = current_param("steps");
    let merged = domain::model::StepWindow::parse(&format!("{},{steps}", current.unwrap_or_default())).query();
    VIEW.with_borrow_mut(|v| v.steps = Some(merged));
}

/// Opens the editor of step `step` (`None`: closes it) from the next refresh on.
pub fn set_edit(step: Option<String>) {
    let closing = step.is_none();
    VIEW.with_borrow_mut(|v| v.edit = Some(step));
    // A page opened at `?edit=` (a link followed before the bundle loaded)
    // would open the editor again on a reload: the address loses it too.
    let location = dom::window().location();
    let search = location.search().unwrap_or_default();
    if closing
        && let Ok(query) = UrlSearchParams::new_with_str(&search)
        && query.has("edit")
    {
        query.delete("edit");
        let path = location.pathname().unwrap_or_default();
        let url = format!("{}{}", with_query(path, &query), location.hash().unwrap_or_default());
        if let Ok(history) = dom::window().history() {
            let _ = history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&url));
        }
    }
}

/// The step whose editor is open now, if any.
pub fn editing() -> Option<String> {
    current_param("edit").filter(|s| !s.is_empty())
}

/// `name`'s value in what this page shows now.
fn current_param(name: &str) -> Option<String> {
    let from_view = VIEW.with_borrow(|v| match name {
        "steps" => v.steps.clone().map(Some),
        "edit" => v.edit.clone(),
        _ => None,
    });
    from_view.unwrap_or_else(|| {
        UrlSearchParams::new_with_str(&dom::window().location().search().unwrap_or_default()).ok()?.get(name)
    })
}

/// The address that draws the page as it is shown now.
fn address() -> String {
    let location = dom::window().location();
    let path = location.pathname().unwrap_or_else(|_| "/".into());
    let Ok(query) = UrlSearchParams::new_with_str(&location.search().unwrap_or_default()) else { return path };
    // A form's error carried back without JavaScript belongs to that one load.
    for stale in ["__err", "__path"] {
        query.delete(stale);
    }
    for name in ["steps", "edit"] {
        query.delete(name);
        if let Some(value) = current_param(name).filter(|v| !v.is_empty()) {
            query.append(name, &value);
        }
    }
    with_query(path, &query)
}

/// `path?query`, or `path` when the query is empty.
fn with_query(path: String, query: &UrlSearchParams) -> String {
    let query = String::from(query.to_string());
    if query.is_empty() { path } else { format!("{path}?{query}") }
}

/// What the rest of the browser side does with a part of the page once it is
/// drawn (`browser::start` says; this module knows nothing of the others).
static DRAWN: std::sync::OnceLock<fn(&web_sys::Element)> = std::sync::OnceLock::new();

/// Sets what is done with each part of the page drawn anew, and draws the page
/// anew when anything on it asks ([`crate::components::redraw_page`]).
pub fn install(drawn: fn(&web_sys::Element)) {
    let _ = DRAWN.set(drawn);
    dom::listen(&dom::document(), crate::components::REDRAW_EVENT, false, |_| refresh_now());
    dom::listen(&dom::document(), "compositionstart", true, |_| COMPOSING.set(true));
    dom::listen(&dom::document(), "compositionend", true, |_| COMPOSING.set(false));
}

/// Draws the page anew now.
pub fn refresh_now() {
    refresh_then(|| ());
}

/// Draws the page anew after a change made elsewhere: a moment later, so a
/// burst of changes (a sweep's runs ending one after another) is one redraw,
/// and the pages open on it do not all ask the server in the same instant.
/// Also while the reader types in a form: what they typed, the focus and the
/// caret go into the new page (`drafts`, `caret`); only text being composed
/// with an input method, or an open list, holds it, and the page says so.
/// The reader's own changes are drawn at once.
pub fn refresh_when_idle() {
    // The newest change the redraw must show.
    CHANGED_AT.set(web_sys::js_sys::Date::now());
    if REMOTE_PENDING.replace(true) {
        return;
    }
    // 100–400 ms: spread over the open pages.
    let wait = 100.0 + 300.0 * web_sys::js_sys::Math::random();
    leptos::prelude::set_timeout(
        || {
            REMOTE_PENDING.set(false);
            // Drawn meanwhile from a fetch that began after the newest change
            // (the reader's own change comes back on the stream too): nothing to do.
            if DRAWN_FROM.get() < CHANGED_AT.get() {
                when_not_typing(refresh_now);
            }
        },
        std::time::Duration::from_millis(wait as u64),
    );
}

/// Calls `then` now; while the reader composes text with an input method
/// (a redraw would cut it), once that is done, and while a list (`<select>`)
/// has the focus (a redraw would close it), once it loses it.
fn when_not_typing(then: fn()) {
    let active = dom::document().active_element();
    let (field, until) = match active {
        Some(field) if COMPOSING.get() => (field, "compositionend"),
        Some(field) if field.tag_name() == "SELECT" => (field, "blur"),
        _ => {
            then();
            return;
        }
    };
    // Several changes meanwhile: one refresh at the end is enough.
    if field.has_attribute("data-refresh-pending") {
        return;
    }
    notice(Some("changes made meanwhile are shown when you leave this field"));
    let _ = field.set_attribute("data-refresh-pending", "");
    let target = field.clone();
    let once = wasm_bindgen::closure::Closure::once_into_js(move || {
        let _ = target.remove_attribute("data-refresh-pending");
        then();
    });
    let options = web_sys::AddEventListenerOptions::new();
    options.set_once(true);
    let _ =
        field.add_event_listener_with_callback_and_add_event_listener_options(until, once.unchecked_ref(), &options);
}

/// Draws the page anew, then calls `after` (also when the server could not be
/// reached: the page stays as it was, with a notice).
pub fn refresh_then(after: impl FnOnce() + 'static) {
    let start = QUEUE.with_borrow_mut(|q| {
        q.after.push(Box::new(after));
        if q.running {
            q.again = true;
            false
        } else {
            q.running = true;
            true
        }
    });
    if start {
        wasm_bindgen_futures::spawn_local(run_queue());
    }
}

async fn run_queue() {
    loop {
        let after = QUEUE.with_borrow_mut(|q| {
            q.again = false;
            std::mem::take(&mut q.after)
        });
        let began = web_sys::js_sys::Date::now();
        let outcome = fetch_and_swap(&address()).await;
        if outcome.is_ok() {
            DRAWN_FROM.set(began);
        }
        notice(outcome.err().map(|e| e.to_string()).as_deref());
        for f in after {
            f();
        }
        let done = QUEUE.with_borrow_mut(|q| {
            if !q.again {
                q.running = false;
            }
            !q.again
        });
        if done {
            return;
        }
    }
}

async fn fetch_and_swap(url: &str) -> Result<(), dom::PageError> {
    let response = dom::fetch(url, None, "text/html").await?;
    // Signed out meanwhile, say: go where the server sent us, as a reload would.
    if response.redirected() {
        let _ = dom::window().location().assign(&response.url());
        return Ok(());
    }
    let html = dom::text(&response).await?;
    let parsed = web_sys::DomParser::new()
        .and_then(|p| p.parse_from_string(&html, web_sys::SupportedType::TextHtml))
        .map_err(dom::PageError::browser)?;
    let (Some(old), Some(new)) = (dom::find("main"), parsed.query_selector("main").ok().flatten()) else {
        return Err(dom::PageError::NoPage);
    };
    let new = dom::document().adopt_node(&new).map_err(dom::PageError::browser)?.unchecked_into::<Element>();
    let folds = folds(&old);
    let drafts = drafts(&old);
    let caret = caret(&old);
    carry_sending(&old, &new);
    super::islands::carry_over(&old, &new);
    old.replace_with_with_node_1(&new).map_err(dom::PageError::browser)?;
    unfold(&new, &folds);
    restore(&new, drafts);
    if let Some(caret) = caret {
        put_back(&new, &caret);
    }
    if !parsed.title().is_empty() {
        dom::document().set_title(&parsed.title());
    }
    super::islands::dispose_detached();
    if let Some(drawn) = DRAWN.get() {
        drawn(&new);
    }
    Ok(())
}

/// A line at the top of the page while it could not be drawn anew.
fn notice(problem: Option<&str>) {
    let existing = dom::find("#page-notice");
    match (problem, existing) {
        (None, Some(old)) => old.remove(),
        (None, None) => {}
        (Some(problem), existing) => {
            let element = existing.or_else(|| {
                let p = dom::document().create_element("p").ok()?;
                p.set_id("page-notice");
                let _ = p.set_attribute("class", "notice page-notice");
                let _ = p.set_attribute("role", "status");
                dom::find("main")?.before_with_node_1(&p).ok()?;
                Some(p)
            });
            if let Some(p) = element {
                p.set_text_content(Some(&format!("This page may be out of date: {problem}")));
            }
        }
    }
}

/// Which `<details>` each is, the same before and after a redraw: its id, or
/// the id of the nearest element around it that has one and its summary's
/// words ("step-12 Delete…"), and which of those it is, in order.
fn fold_keys(root: &Element) -> Vec<(String, Element)> {
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    dom::all(root, "details")
        .into_iter()
        .map(|details| {
            let key = match details.get_attribute("id").filter(|id| !id.is_empty()) {
                Some(id) => format!("#{id}"),
                None => {
                    let around = details.parent_element().and_then(|p| p.closest("[id]").ok().flatten());
                    let summary = details.query_selector(":scope > summary").ok().flatten();
                    format!(
                        "{} {}",
                        around.map(|a| a.id()).unwrap_or_default(),
                        summary.and_then(|s| s.text_content()).unwrap_or_default().trim()
                    )
                }
            };
            let n = seen.entry(key.clone()).or_default();
            *n += 1;
            (format!("{key} {n}"), details)
        })
        .collect()
}

/// Whether each `<details>` is open, by [`fold_keys`].
fn folds(root: &Element) -> std::collections::HashMap<String, bool> {
    fold_keys(root).into_iter().map(|(key, d)| (key, d.has_attribute("open"))).collect()
}

/// Opens and closes the `<details>` of the new page as the reader had them;
/// those that are new keep what the server says.
fn unfold(root: &Element, folds: &std::collections::HashMap<String, bool>) {
    for (key, details) in fold_keys(root) {
        match folds.get(&key) {
            Some(true) => {
                let _ = details.set_attribute("open", "");
            }
            Some(false) => {
                let _ = details.remove_attribute("open");
            }
            None => {}
        }
    }
}

/// A form being sent (`browser::forms` marks it `aria-busy`) goes into the new
/// page as it is, in place of its fresh copy: its answer is still to come, and
/// must empty it, or show why it was refused, where the reader sees it.
fn carry_sending(old: &Element, new: &Element) {
    for sending in forms(old, "form[aria-busy]") {
        let key = form_key(&sending);
        if let Some(fresh) = forms(new, "form").into_iter().find(|f| form_key(f) == key) {
            let _ = fresh.replace_with_with_node_1(&sending);
        }
    }
}

/// The forms under `root` that match `selector`.
fn forms(root: &Element, selector: &str) -> Vec<HtmlFormElement> {
    dom::all(root, selector).into_iter().filter_map(|f| f.dyn_into().ok()).collect()
}

/// A field's value the reader changed and did not send: (form, field name, value).
type Draft = (String, String, String);

/// The name a form's refusal goes by among its drafts (no field has it).
const ERROR: &str = "\u{0}error";

/// Which form a field is in, the same before and after a refresh: its id, or
/// where it posts and the ids it sends (`step_id`, `parent_id` …).
fn form_key(form: &HtmlFormElement) -> String {
    // Attributes, not properties: a form's `id` property is its field named "id", if it has one.
    if let Some(id) = form.get_attribute("id").filter(|id| !id.is_empty()) {
        return id;
    }
    // Not the version: an editor's draft is the same form after someone else
    // saved the step (and keeps the version it was begun on, see `drafts`).
    let hidden: Vec<String> = dom::all(form, "input[type=hidden]:not([name=version])")
        .iter()
        .filter_map(|i| i.dyn_ref::<web_sys::HtmlInputElement>().map(|i| format!("{}={}", i.name(), i.value())))
        .collect();
    format!("{} {}", form.get_attribute("action").unwrap_or_default(), hidden.join("&"))
}

pub(super) fn drafts(root: &Element) -> Vec<Draft> {
    let mut out = Vec::new();
    for form in forms(root, "form") {
        let key = form_key(&form);
        for field in dom::all(&form, "input[name], textarea[name], select[name]") {
            let changed = if let Some(input) = field.dyn_ref::<web_sys::HtmlInputElement>() {
                match input.type_().as_str() {
                    "hidden" | "password" | "submit" | "button" | "file" => None,
                    "checkbox" | "radio" => {
                        (input.checked() != input.default_checked()).then(|| input.checked().to_string())
                    }
                    _ => (input.value() != input.default_value()).then(|| input.value()),
                }
            } else if let Some(text) = field.dyn_ref::<web_sys::HtmlTextAreaElement>() {
                (Ok(text.value()) != text.default_value()).then(|| text.value())
            } else if let Some(select) = field.dyn_ref::<web_sys::HtmlSelectElement>() {
                let options: Vec<web_sys::HtmlOptionElement> =
                    dom::all(select, "option").into_iter().filter_map(|o| o.dyn_into().ok()).collect();
                // With no option marked selected, the first one is.
                let default = options.iter().find(|o| o.default_selected()).or(options.first()).map(|o| o.value());
                (Some(select.value()) != default).then(|| select.value())
            } else {
                None
            };
            if let Some(value) = changed {
                out.push((key.clone(), field.get_attribute("name").unwrap_or_default(), value));
            }
        }
        // A refusal the reader has not acted on yet stays with what they typed.
        if let Ok(Some(error)) = form.query_selector(":scope > p.error[data-browser]") {
            out.push((key.clone(), ERROR.into(), error.text_content().unwrap_or_default()));
        }
        // A draft goes back with the version it was written against: saved over
        // a newer one, it is refused with who changed it, rather than
        // overwriting their change.
        let drafted = out.last().is_some_and(|(k, ..)| *k == key);
        if let (true, Ok(Some(version))) = (drafted, form.query_selector("input[type=hidden][name=version]"))
            && let Some(version) = version.dyn_ref::<web_sys::HtmlInputElement>()
        {
            out.push((key.clone(), "version".into(), version.value()));
        }
    }
    out
}

pub(super) fn restore(root: &Element, drafts: Vec<Draft>) {
    if drafts.is_empty() {
        return;
    }
    for form in forms(root, "form") {
        let key = form_key(&form);
        for (_, name, value) in drafts.iter().filter(|(k, ..)| *k == key) {
            if name == ERROR {
                super::refusals::show_error(&form, Some(value));
                continue;
            }
            let Some(field) = dom::all(&form, &format!("[name=\"{name}\"]")).into_iter().next() else { continue };
            if let Some(input) = field.dyn_ref::<web_sys::HtmlInputElement>() {
                match input.type_().as_str() {
                    "checkbox" | "radio" => input.set_checked(value == "true"),
                    _ => input.set_value(value),
                }
            } else if let Some(text) = field.dyn_ref::<web_sys::HtmlTextAreaElement>() {
                text.set_value(value);
            } else if let Some(select) = field.dyn_ref::<web_sys::HtmlSelectElement>() {
                select.set_value(value);
            }
        }
    }
}

/// Where the reader is typing: the field (by its form's [`form_key`] and its
/// name) and what is selected in it. Without it the keys typed after a redraw
/// would go nowhere: the focused field is the old page's.
struct Caret {
    form: String,
    name: String,
    selection: Option<(u32, u32)>,
}

fn caret(old: &Element) -> Option<Caret> {
    let active = dom::document().active_element()?;
    if !old.contains(Some(&active)) {
        return None;
    }
    let form = active.closest("form").ok().flatten()?.dyn_into::<HtmlFormElement>().ok()?;
    let name = active.get_attribute("name")?;
    // Only text has a selection (the others throw, hence `ok()`).
    let selection = if let Some(text) = active.dyn_ref::<web_sys::HtmlTextAreaElement>() {
        text.selection_start().ok().flatten().zip(text.selection_end().ok().flatten())
    } else if let Some(input) = active.dyn_ref::<web_sys::HtmlInputElement>() {
        input.selection_start().ok().flatten().zip(input.selection_end().ok().flatten())
    } else {
        None
    };
    Some(Caret { form: form_key(&form), name, selection })
}

/// Focuses the field of the new page that `caret` was in, with its selection.
fn put_back(new: &Element, caret: &Caret) {
    let field = forms(new, "form")
        .into_iter()
        .filter(|f| form_key(f) == caret.form)
        .find_map(|f| f.query_selector(&format!("[name=\"{}\"]", caret.name)).ok().flatten());
    let Some(field) = field.and_then(|f| f.dyn_into::<web_sys::HtmlElement>().ok()) else { return };
    let options = web_sys::FocusOptions::new();
    options.set_prevent_scroll(true);
    let _ = field.focus_with_options(&options);
    if let Some((start, end)) = caret.selection {
        if let Some(text) = field.dyn_ref::<web_sys::HtmlTextAreaElement>() {
            let _ = text.set_selection_range(start, end);
        } else if let Some(input) = field.dyn_ref::<web_sys::HtmlInputElement>() {
            let _ = input.set_selection_range(start, end);
        }
    }
}

/// Goes to `url`: on this same page (only the fragment differs) by drawing it
/// anew and scrolling to the fragment, elsewhere by loading it.
pub fn go_to(url: &str) {
    let location = dom::window().location();
    let (path, fragment) = url.split_once('#').unwrap_or((url, ""));
    if location.pathname().ok().as_deref() == Some(path) {
        dom::replace_fragment(fragment);
        let fragment = fragment.to_string();
        refresh_then(move || {
            super::lines::from_fragment();
            if let Some(target) = dom::fragment_target(&fragment) {
                dom::scroll_to(&target);
            }
        });
    } else {
        let _ = location.assign(url);
    }
}
