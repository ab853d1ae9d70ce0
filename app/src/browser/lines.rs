//! Lines of snippets marked by the address's fragment (`#step-12-L130-L180`,
//! `#annotation-7`) or selected by the reader: a click on a line number selects
//! it, a Shift-click extends the selection, and the address bar then holds a
//! link to those lines, which "Annotate lines" under the snippet is filled from.
//! The server never sees the fragment, so this is all the browser's.

use super::dom;
use domain::steps::snippet::{Focus, range_anchor};
use std::cell::Cell;
use wasm_bindgen::JsCast;
use web_sys::Event;

thread_local! {
    static FOCUS: Cell<Option<Focus>> = const { Cell::new(None) };
}

pub fn install() {
    dom::listen(&dom::window(), "hashchange", false, |_| {
        from_fragment();
        scroll_to_focus();
    });
    dom::listen(&dom::document(), "click", false, on_click);
    from_fragment();
    scroll_to_focus();
}

/// Takes the focus from the address's fragment.
pub fn from_fragment() {
    let hash = dom::window().location().hash().unwrap_or_default();
    FOCUS.set(Focus::parse(&hash));
    apply();
}

/// The browser scrolls only to ids that exist (`#step-12-L130-L180` names
/// none), puts them at the very top, and after a reload restores the old
/// position instead: a marked range's first line goes to the middle.
fn scroll_to_focus() {
    if let Some(Focus::Lines { step_id, start, .. }) = FOCUS.get()
        && let Some(line) = dom::document().get_element_by_id(&domain::steps::snippet::line_anchor(step_id, start))
    {
        dom::scroll_to(&line);
    }
}

fn on_click(event: Event) {
    let Some(link) = dom::closest(&event, "table.code-lines td.ln a") else { return };
    let (Ok(Some(table)), Ok(Some(row))) = (link.closest("table.code-lines"), link.closest("tr[data-line]")) else {
        return;
    };
    let (Some(step_id), Some(n)) = (dom::number::<i64>(&table, "data-step"), dom::number::<u64>(&row, "data-line"))
    else {
        return;
    };
    event.prevent_default();
    let extend = event.dyn_ref::<web_sys::MouseEvent>().is_some_and(web_sys::MouseEvent::shift_key);
    let next = match FOCUS.get() {
        Some(Focus::Lines { step_id: s, start, .. }) if extend && s == step_id => {
            Focus::Lines { step_id, start: start.min(n), end: start.max(n) }
        }
        _ => Focus::Lines { step_id, start: n, end: n },
    };
    if let Focus::Lines { start, end, .. } = next {
        dom::replace_fragment(&range_anchor(step_id, start, end));
    }
    FOCUS.set(Some(next));
    apply();
}

/// The lines the focus marks: (step, first, last).
fn marked() -> Option<(i64, u64, u64)> {
    match FOCUS.get()? {
        Focus::Lines { step_id, start, end } => Some((step_id, start, end)),
        Focus::Annotation(id) => {
            let note = dom::document().get_element_by_id(&domain::steps::snippet::annotation_anchor(id))?;
            Some((dom::number(&note, "data-step")?, dom::number(&note, "data-start")?, dom::number(&note, "data-end")?))
        }
    }
}

/// Marks the focused lines on the page as drawn now, and fills that snippet's
/// "Annotate lines" form from them.
pub fn apply() {
    let Some(root) = dom::document().document_element() else { return };
    for row in dom::all(&root, "table.code-lines tr.selected") {
        let _ = row.class_list().remove_1("selected");
    }
    let Some((step_id, start, end)) = marked() else { return };
    for row in dom::all(&root, &format!("table.code-lines[data-step=\"{step_id}\"] tr[data-line]")) {
        if dom::number::<u64>(&row, "data-line").is_some_and(|n| (start..=end).contains(&n)) {
            let _ = row.class_list().add_1("selected");
        }
    }
    let Some(form) = dom::document().get_element_by_id(&format!("annotate-{step_id}")) else { return };
    if let Ok(Some(summary)) = form.query_selector("summary") {
        let text =
            if start == end { format!("Annotate line {start}") } else { format!("Annotate lines {start}–{end}") };
        summary.set_text_content(Some(&text));
    }
    for (name, value) in [("start", start), ("end", end)] {
        if let Ok(Some(input)) = form.query_selector(&format!("input[name={name}]"))
            && let Some(input) = input.dyn_ref::<web_sys::HtmlInputElement>()
        {
            input.set_value(&value.to_string());
        }
    }
    if let Ok(Some(link)) = form.query_selector("a.lines-link") {
        let _ = link.set_attribute("href", &format!("#{}", range_anchor(step_id, start, end)));
        let _ = link.remove_attribute("hidden");
    }
    if let Ok(Some(copy)) = form.query_selector("button.lines-copy") {
        let _ = copy.set_attribute("data-copy-link", &format!("#{}", range_anchor(step_id, start, end)));
        let _ = copy.remove_attribute("hidden");
    }
}
