//! What a timeline page shows besides its first and last steps, as its address
//! says (`?steps=`, `?edit=`): read once per page, and the addresses of the
//! same page showing more (or editing another step).

use domain::model::StepWindow;
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

/// The address of this page with step `step_id`'s editor open, or closed: the
/// editor is the page with `?edit=`, and Cancel (and saving) the page without.
pub(crate) fn editor_href(step_id: i64, open: bool) -> String {
    let shown = Shown::get();
    Shown::href(&shown.window, open.then_some(step_id), &domain::model::step_anchor(step_id))
}

/// What the address asks a timeline page to show besides its first and last
/// steps: the parts of a long timeline (`?steps=21-60`) and the step being
/// edited (`?edit=12`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Shown {
    pub window: StepWindow,
    pub edit: Option<i64>,
}

impl Shown {
    pub fn provide() -> Self {
        let query = use_query_map();
        let shown = query.with_untracked(|q| Shown {
            window: StepWindow::parse(&q.get("steps").unwrap_or_default()),
            edit: q.get("edit").and_then(|e| e.parse().ok()),
        });
        provide_context(shown.clone());
        shown
    }

    pub fn get() -> Self {
        use_context::<Self>().unwrap_or_default()
    }

    /// The address of this page showing `window` and editing `edit`, at `#target`.
    pub fn href(window: &StepWindow, edit: Option<i64>, target: &str) -> String {
        let mut query = Vec::new();
        if let Some(step) = edit {
            query.push(format!("edit={step}"));
        }
        if !window.ranges.is_empty() {
            query.push(format!("steps={}", window.query()));
        }
        format!("?{}#{target}", query.join("&"))
    }
}

#[cfg(test)]
mod tests {
    use super::Shown;
    use domain::model::StepWindow;

    #[test]
    fn page_addresses_keep_the_parts_shown_and_name_the_editor() {
        let parts = StepWindow::parse("61-100,21-60");
        assert_eq!(Shown::href(&parts, Some(12), "step-12"), "?edit=12&steps=21-100#step-12");
        assert_eq!(Shown::href(&parts, None, "step-12"), "?steps=21-100#step-12");
        // Nothing asked for: an empty query, which drops an `?edit=` the page had.
        assert_eq!(Shown::href(&StepWindow::default(), None, "step-3"), "?#step-3");
    }
}
