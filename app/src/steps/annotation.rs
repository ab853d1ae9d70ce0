//! Annotations of snippet lines. Which lines a permalink or a selection marks
//! (`#step-12-L130-L180`, `#annotation-7`) is the browser's (`browser::lines`):
//! the server never sees the fragment.

use domain::error::ApiError;
use domain::steps::snippet::{Annotation, annotation_anchor, range_anchor};
use leptos::form::ActionForm;
use leptos::prelude::*;

#[server]
pub async fn add_annotation(
    step_id: i64,
    start: String,
    end: String,
    body: String,
    // Only the form without accounts asks for a name: a member's annotation is theirs.
    #[server(default)] author: Option<String>,
) -> Result<Annotation, ApiError> {
    let new = domain::steps::snippet::NewAnnotation {
        start: crate::backend::required_number("The first line", &start)?,
        end: crate::backend::required_number("The last line", &end)?,
        body,
        author: author.filter(|a| !a.trim().is_empty()),
    };
    crate::backend::call(move |notebook, actor| async move { notebook.add_annotation(&actor, step_id, new).await })
        .await
}

#[server]
pub async fn edit_annotation(id: i64, start: String, end: String, body: String) -> Result<Annotation, ApiError> {
    let patch = domain::steps::snippet::AnnotationPatch {
        start: Some(crate::backend::required_number("The first line", &start)?),
        end: Some(crate::backend::required_number("The last line", &end)?),
        body: Some(body),
    };
    crate::backend::call(move |notebook, actor| async move { notebook.update_annotation(&actor, id, patch).await })
        .await
}

#[server]
pub async fn delete_annotation(id: i64) -> Result<(), ApiError> {
    crate::backend::call(move |notebook, actor| async move { notebook.delete_annotation(&actor, id).await }).await
}

/// The annotation shown after its last line.
#[component]
pub fn AnnotationView(annotation: Annotation, first_of_range: bool) -> impl IntoView {
    let edit = ServerAction::<EditAnnotation>::new();
    let delete = ServerAction::<DeleteAnnotation>::new();
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
        <div
            class="annotation"
            id=annotation_anchor(annotation.id)
            data-step=annotation.step_id
            data-start=annotation.start
            data-end=annotation.end
        >
            {range_id.map(|id| view! { <span class="range-target" id=id></span> })}
            <div class="annotation-head">
                <a class="annotation-link" href=format!("#{}", annotation_anchor(annotation.id)) title="Link to this annotation">
                    {lines}
                </a>
                <span class="author">{annotation.author.clone().unwrap_or_else(|| "anonymous".into())}</span>
                <span class="muted"><crate::components::Time at=annotation.created_at.clone()/> {edited.then_some(" · edited")}</span>
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
                        <textarea name="body" rows="4" maxlength=domain::steps::snippet::ANNOTATION_CHARS aria-label="Annotation (Markdown)">
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
                        <crate::components::ActionError action=delete/>
                    </ActionForm>
                </crate::components::Confirm>
            </div>
            </crate::components::Can>
            <crate::pages::comments::Threads step_id=annotation.step_id annotation=annotation.id/>
        </div>
    }
    .into_any()
}

/// "Annotate lines…" under a snippet: its lines are typed by hand, or, with
/// JavaScript, filled from the lines selected (`browser::lines` sets the
/// fields, the summary and the link to the lines).
#[component]
pub fn AnnotateForm(step_id: i64, shown: (u64, u64)) -> impl IntoView {
    let add = ServerAction::<AddAnnotation>::new();
    view! {
        <details class="annotate" id=format!("annotate-{step_id}")>
            <summary class="button quiet">"Annotate lines…"</summary>
            <ActionForm action=add attr:class="stacked">
                <input type="hidden" name="step_id" value=step_id/>
                <p class="muted hint">"Click a line number to select it, Shift-click another to select a range."</p>
                <div class="row">
                    <label class="narrow">"From line"
                        <input name="start" inputmode="numeric" required value=shown.0/>
                    </label>
                    <label class="narrow">"To line"
                        <input name="end" inputmode="numeric" required value=shown.0/>
                    </label>
                    {(!crate::components::abilities().named).then(|| view! {
                        <label>"Your name" <input name="author" autocomplete="nickname" maxlength="80" placeholder="optional"/></label>
                    })}
                </div>
                <textarea name="body" rows="4" required maxlength=domain::steps::snippet::ANNOTATION_CHARS
                    aria-label="Annotation (Markdown)"
                    placeholder="What these lines do, and why it matters here. Markdown."></textarea>
                <crate::components::ActionError action=add/>
                <div class="form-actions">
                    <button type="submit" class="primary">"Save annotation"</button>
                    <a href="#" class="muted lines-link" hidden>"Link to these lines"</a>
                    <button type="button" class="copy quiet lines-copy" data-copy-link="" hidden>"Copy link"</button>
                </div>
            </ActionForm>
        </details>
    }
    .into_any()
}
