//! Annotations of snippet lines, and the line focus that permalinks and
//! selections share: `#step-12-L130-L180` or `#annotation-7` marks lines.

use super::snippet::{Annotation, Focus, annotation_anchor, range_anchor};
use crate::error::ApiError;
use crate::model::short_time;
use leptos::form::ActionForm;
use leptos::prelude::*;

#[server]
pub async fn add_annotation(
    step_id: i64,
    start: String,
    end: String,
    body: String,
    author: String,
) -> Result<Annotation, ApiError> {
    let new = super::snippet::NewAnnotation {
        start: crate::backend::required_number("The first line", &start)?,
        end: crate::backend::required_number("The last line", &end)?,
        body,
        author: Some(author),
    };
    crate::backend::notebook()?
        .add_annotation(&crate::backend::actor()?, step_id, new)
        .await
        .inspect_err(crate::backend::set_status)
}

#[server]
pub async fn edit_annotation(id: i64, start: String, end: String, body: String) -> Result<Annotation, ApiError> {
    let patch = super::snippet::AnnotationPatch {
        start: Some(crate::backend::required_number("The first line", &start)?),
        end: Some(crate::backend::required_number("The last line", &end)?),
        body: Some(body),
    };
    crate::backend::notebook()?
        .update_annotation(&crate::backend::actor()?, id, patch)
        .await
        .inspect_err(crate::backend::set_status)
}

#[server]
pub async fn delete_annotation(id: i64) -> Result<(), ApiError> {
    crate::backend::notebook()?
        .delete_annotation(&crate::backend::actor()?, id)
        .await
        .inspect_err(crate::backend::set_status)
}

/// The lines the URL fragment or the reader's selection points at. Empty while
/// the page renders on the server (which never sees the fragment); the browser
/// fills it after hydration, so server and browser HTML agree.
#[derive(Clone, Copy)]
pub struct LineFocus(pub RwSignal<Option<Focus>>);

impl LineFocus {
    /// Provides the page's focus and, in the browser, keeps it in step with the URL.
    pub fn provide() {
        let focus = RwSignal::new(None);
        provide_context(LineFocus(focus));
        #[cfg(feature = "hydrate")]
        Effect::new(move |_| crate::live::follow_fragment(focus));
    }

    pub fn get() -> Option<Self> {
        use_context::<Self>()
    }

    /// The selected lines of `step_id`, if the focus is there.
    pub fn lines_of(self, step_id: i64, annotations: &[(i64, u64, u64)]) -> Option<(u64, u64)> {
        match self.0.get()? {
            Focus::Lines { step_id: s, start, end } if s == step_id => Some((start, end)),
            Focus::Annotation(id) => annotations.iter().find(|(a, ..)| *a == id).map(|(_, s, e)| (*s, *e)),
            _ => None,
        }
    }

    /// A click on line `n`'s number: selects it, or with Shift extends the
    /// selection from its first line, and puts the range in the address bar
    /// without jumping the page.
    pub fn click(self, step_id: i64, n: u64, extend: bool) -> Focus {
        let next = match self.0.get_untracked() {
            Some(Focus::Lines { step_id: s, start, .. }) if extend && s == step_id => {
                Focus::Lines { step_id, start: start.min(n), end: start.max(n) }
            }
            _ => Focus::Lines { step_id, start: n, end: n },
        };
        if let Focus::Lines { start, end, .. } = next {
            #[cfg(feature = "hydrate")]
            crate::live::replace_fragment(&range_anchor(step_id, start, end));
            #[cfg(not(feature = "hydrate"))]
            let _ = (start, end);
        }
        self.0.set(Some(next));
        next
    }
}

/// The annotation shown after its last line.
#[component]
pub fn AnnotationView(annotation: Annotation, first_of_range: bool) -> impl IntoView {
    let edit = crate::pages::investigation::timeline_action::<EditAnnotation>();
    let delete = crate::pages::investigation::timeline_action::<DeleteAnnotation>();
    let lines = if annotation.start == annotation.end {
        format!("Line {}", annotation.start)
    } else {
        format!("Lines {}–{}", annotation.start, annotation.end)
    };
    // A range link without JavaScript lands here (the browser cannot mark lines by itself).
    let range_id = (first_of_range && annotation.start != annotation.end)
        .then(|| range_anchor(annotation.step_id, annotation.start, annotation.end));
    let edited = annotation.updated_at != annotation.created_at;
    let a = annotation.clone();
    view! {
        <div class="annotation" id=annotation_anchor(annotation.id)>
            {range_id.map(|id| view! { <span class="range-target" id=id></span> })}
            <div class="annotation-head">
                <a class="annotation-link" href=format!("#{}", annotation_anchor(annotation.id)) title="Link to this annotation">
                    {lines}
                </a>
                <span class="author">{annotation.author.clone().unwrap_or_else(|| "anonymous".into())}</span>
                <span class="muted">{short_time(&annotation.created_at)} {edited.then_some(" · edited")}</span>
            </div>
            {annotation.outdated.then(|| view! {
                <p class="notice">"Written against an earlier version of the file; these lines may have moved."</p>
            })}
            <div class="markdown" inner_html=annotation.html.clone()></div>
            <crate::components::Can what=crate::components::Ability::Edit>
            <div class="annotation-controls">
                <details class="inline-form">
                    <summary class="button quiet">"Edit"</summary>
                    <ActionForm action=edit attr:class="stacked">
                        <input type="hidden" name="id" value=a.id/>
                        <div class="row">
                            <label class="narrow">"From line" <input name="start" inputmode="numeric" value=a.start/></label>
                            <label class="narrow">"To line" <input name="end" inputmode="numeric" value=a.end/></label>
                        </div>
                        <textarea name="body" rows="4" maxlength=super::snippet::ANNOTATION_CHARS aria-label="Annotation (Markdown)">
                            {crate::components::textarea_text(&a.body)}
                        </textarea>
                        <crate::components::ActionError action=edit/>
                        <div class="form-actions"><button type="submit" class="primary">"Save"</button></div>
                    </ActionForm>
                </details>
                <crate::components::Confirm label="Delete…" prompt="Delete this annotation?">
                    <ActionForm action=delete attr:class="inline">
                        <input type="hidden" name="id" value=a.id/>
                        <button type="submit" class="danger">"Delete annotation"</button>
                    </ActionForm>
                </crate::components::Confirm>
            </div>
            </crate::components::Can>
            <crate::components::ActionError action=delete/>
            <crate::pages::comments::Threads step_id=annotation.step_id annotation=annotation.id/>
        </div>
    }
    .into_any()
}

/// "Annotate lines…" under a snippet: filled from the selected lines when there
/// is JavaScript, typed by hand when there is not.
#[component]
pub fn AnnotateForm(step_id: i64, shown: (u64, u64), ranges: std::sync::Arc<Vec<(i64, u64, u64)>>) -> impl IntoView {
    let add = crate::pages::investigation::timeline_action::<AddAnnotation>();
    let form = crate::components::reset_on_success(add);
    let focus = LineFocus::get();
    let selected = move || focus.and_then(|f| f.lines_of(step_id, &ranges));
    let selected_start = selected.clone();
    let selected_end = selected.clone();
    let selected_link = selected.clone();
    let summary = move || match selected() {
        Some((a, b)) if a == b => format!("Annotate line {a}"),
        Some((a, b)) => format!("Annotate lines {a}–{b}"),
        None => "Annotate lines…".to_string(),
    };
    view! {
        <details class="annotate" id=format!("annotate-{step_id}")>
            <summary class="button quiet">{summary}</summary>
            <ActionForm action=add node_ref=form attr:class="stacked">
                <input type="hidden" name="step_id" value=step_id/>
                <p class="muted hint">"Click a line number to select it, Shift-click another to select a range."</p>
                <div class="row">
                    <label class="narrow">"From line"
                        <input name="start" inputmode="numeric" required value=shown.0
                            prop:value=move || selected_start().map_or(shown.0, |s| s.0).to_string()/>
                    </label>
                    <label class="narrow">"To line"
                        <input name="end" inputmode="numeric" required value=shown.0
                            prop:value=move || selected_end().map_or(shown.0, |s| s.1).to_string()/>
                    </label>
                    <label>"Your name (kept only without accounts)" <input name="author" autocomplete="nickname" maxlength="80" placeholder="optional"/></label>
                </div>
                <textarea name="body" rows="4" required maxlength=super::snippet::ANNOTATION_CHARS
                    aria-label="Annotation (Markdown)"
                    placeholder="What these lines do, and why it matters here. Markdown."></textarea>
                <crate::components::ActionError action=add/>
                <div class="form-actions">
                    <button type="submit" class="primary">"Save annotation"</button>
                    {move || selected_link().map(|(a, b)| view! {
                        <a href=format!("#{}", range_anchor(step_id, a, b)) class="muted">"Link to these lines"</a>
                    })}
                </div>
            </ActionForm>
        </details>
    }
    .into_any()
}
