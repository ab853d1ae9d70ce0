//! A refusal shown in a form: the server's sentence in a `p.error` before the
//! form's buttons, where `ActionError` puts it when the form was posted without
//! JavaScript. Forms show one when posting fails; the page puts it back when it
//! is drawn anew.

use super::dom;
use web_sys::{Element, HtmlFormElement};

/// Shows `message` in `form` (`None`: takes an earlier one away), where the
/// server puts a refused form's error without JavaScript: before the buttons.
pub fn show_error(form: &HtmlFormElement, message: Option<&str>) {
    let existing = form.query_selector(":scope > p.error[role=alert]").ok().flatten();
    match (message, existing) {
        (None, Some(old)) => old.remove(),
        (None, None) => {}
        (Some(message), existing) => {
            let Some(p) = existing.or_else(|| {
                let p = dom::document().create_element("p").ok()?;
                let _ = p.set_attribute("class", "error");
                let _ = p.set_attribute("role", "alert");
                // The page keeps it when drawn anew (`page::drafts`).
                let _ = p.set_attribute("data-browser", "");
                place(form, &p);
                Some(p)
            }) else {
                return;
            };
            // The server's code spans as code; every part goes in as text.
            p.set_text_content(None);
            for (code, part) in domain::html::code_spans(message) {
                let node: Option<web_sys::Node> = if code {
                    dom::document().create_element("code").ok().map(|c| {
                        c.set_text_content(Some(&part));
                        c.into()
                    })
                } else {
                    Some(dom::document().create_text_node(&part).into())
                };
                if let Some(node) = node {
                    let _ = p.append_child(&node);
                }
            }
        }
    }
}

/// Puts `element` into `form` before its buttons (`.form-actions`), or last.
pub fn place(form: &HtmlFormElement, element: &Element) {
    match form.query_selector(":scope > .form-actions").ok().flatten() {
        Some(actions) => {
            let _ = actions.before_with_node_1(element);
        }
        None => {
            let _ = form.append_with_node_1(element);
        }
    }
}
