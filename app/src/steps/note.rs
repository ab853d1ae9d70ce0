//! Note steps: Markdown written by a person. The server renders and sanitizes it
//! (pulldown-cmark + ammonia), so neither crate ships to the browser.

use domain::error::ApiError;
use domain::model::Step;
use leptos::form::ActionForm;
use leptos::prelude::*;

pub(crate) use domain::steps::note::*;

#[server]
pub async fn add_note(investigation: String, body: String) -> Result<Step, ApiError> {
    crate::backend::call(move |notebook, actor| async move {
        notebook.add_step(&actor, &investigation, domain::steps::StepBody::Note(NoteBody { body })).await
    })
    .await
}

#[server]
pub async fn edit_note(step_id: i64, version: String, body: String) -> Result<Step, ApiError> {
    let version = crate::backend::form_number("The version", &version)?;
    let step = crate::backend::call(move |notebook, actor| async move {
        notebook.update_step(&actor, step_id, domain::steps::StepBody::Note(NoteBody { body }), version).await
    })
    .await?;
    crate::backend::close_editor(step_id);
    Ok(step)
}

/// The rendered note, or its editor while `editing`.
#[component]
pub fn NoteContent(step: Step, editing: bool) -> impl IntoView {
    if !editing {
        return view! { <div class="markdown" inner_html=step.html.clone().unwrap_or_default()></div> }.into_any();
    }
    let body = match &step.body {
        domain::steps::StepBody::Note(note) => note.body.clone(),
        _ => String::new(),
    };
    let edit = ServerAction::<EditNote>::new();
    let (step_id, version) = (step.id, step.version);
    // `data-ends-edit`: once saved, the browser shows the page without the editor.
    view! {
        <ActionForm action=edit attr:class="note-editor" attr:data-ends-edit="">
            <input type="hidden" name="step_id" value=step_id/>
            // The version being edited: saving over someone else's newer text is refused.
            <input type="hidden" name="version" value=version/>
            <textarea name="body" rows="8" maxlength=MAX_BYTES aria-label="Note (Markdown)">
                {crate::components::textarea_text(&body)}
            </textarea>
            <crate::components::ActionError action=edit/>
            <div class="form-actions">
                <button type="submit" class="primary">"Save"</button>
                <a class="button" href=crate::pages::shown::editor_href(step_id, false) data-view="close">"Cancel"</a>
            </div>
        </ActionForm>
    }
    .into_any()
}

/// The "add a note" form at the end of the timeline.
#[component]
pub fn AddNote(investigation: String) -> impl IntoView {
    let add = ServerAction::<AddNote>::new();
    view! {
        <ActionForm action=add attr:class="add-step" attr:id="add-note">
            <input type="hidden" name="investigation" value=investigation/>
            <label for="new-note-body">"Add a note"</label>
            <textarea
                id="new-note-body"
                name="body"
                rows="5"
                maxlength=MAX_BYTES
                placeholder="Markdown: what you saw, what you think, what to try next. Tables and - [ ] task lists work."
            ></textarea>
            <crate::components::ActionError action=add/>
            <div class="form-actions">
                <button type="submit" class="primary">"Add note"</button>
            </div>
        </ActionForm>
    }
}
