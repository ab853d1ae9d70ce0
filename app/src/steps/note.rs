//! Note steps: Markdown written by a person. The server renders and sanitizes it
//! (pulldown-cmark + ammonia), so neither crate ships to the browser.

use crate::error::ApiError;
use crate::model::Step;
use leptos::form::ActionForm;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

/// Largest note the server accepts, in bytes of Markdown.
pub const MAX_BYTES: usize = 100_000;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoteBody {
    /// Markdown (CommonMark + GFM tables, task lists, strikethrough).
    pub body: String,
}

#[server]
pub async fn add_note(investigation: String, body: String) -> Result<Step, ApiError> {
    crate::backend::notebook()?
        .add_step(&crate::backend::actor()?, &investigation, super::StepBody::Note(NoteBody { body }))
        .await
        .inspect_err(crate::backend::set_status)
}

#[server]
pub async fn edit_note(step_id: i64, version: String, body: String) -> Result<Step, ApiError> {
    let version = crate::backend::form_number("The version", &version)?;
    crate::backend::notebook()?
        .update_step(&crate::backend::actor()?, step_id, super::StepBody::Note(NoteBody { body }), version)
        .await
        .inspect_err(crate::backend::set_status)
}

/// The rendered note, or its editor while `editing`.
#[component]
pub fn NoteContent(step: Step, editing: RwSignal<bool>) -> impl IntoView {
    let body = match &step.body {
        super::StepBody::Note(note) => note.body.clone(),
        _ => String::new(),
    };
    let html = step.html.clone().unwrap_or_default();
    let edit = crate::pages::investigation::timeline_action::<EditNote>();
    crate::components::on_success(edit, move || editing.set(false));
    let (step_id, version) = (step.id, step.version);
    // Hidden, not dropped, while editing: the browser keeps the server's HTML,
    // which its hydration data leaves out.
    view! {
        <div class="markdown" inner_html=html hidden=move || editing.get()></div>
        {move || editing.get().then(|| view! { <NoteEditor step_id version body=body.clone() editing edit/> })}
    }
}

#[component]
fn NoteEditor(
    step_id: i64,
    /// The version being edited: saving over someone else's newer text is refused.
    version: i64,
    body: String,
    editing: RwSignal<bool>,
    edit: ServerAction<EditNote>,
) -> impl IntoView {
    // A page's hydration data leaves the Markdown out (the note is in the page
    // as HTML); the editor asks for it. The version stays the page's, so a
    // change made meanwhile is still refused rather than overwritten.
    let text = RwSignal::new(body.clone());
    #[cfg(feature = "hydrate")]
    if body.is_empty() {
        leptos::task::spawn_local(async move {
            if let Ok(crate::model::Step { body: super::StepBody::Note(note), .. }) =
                crate::api::get_step(step_id).await
            {
                text.try_set(note.body);
            }
        });
    }
    view! {
        <ActionForm action=edit attr:class="note-editor">
            <input type="hidden" name="step_id" value=step_id/>
            <input type="hidden" name="version" value=version/>
            <textarea name="body" rows="8" maxlength=MAX_BYTES aria-label="Note (Markdown)" prop:value=move || text.get()>
                {crate::components::textarea_text(&body)}
            </textarea>
            <crate::components::ActionError action=edit/>
            <div class="form-actions">
                <button type="submit" class="primary">"Save"</button>
                <button type="button" on:click=move |_| editing.set(false)>"Cancel"</button>
            </div>
        </ActionForm>
    }
}

/// The "add a note" form at the end of the timeline.
#[component]
pub fn AddNote(investigation: String) -> impl IntoView {
    let add = crate::pages::investigation::timeline_action::<AddNote>();
    // Clear the textarea once the note is saved; keep it on error so nothing is lost.
    let text = RwSignal::new(String::new());
    crate::components::on_success(add, move || text.set(String::new()));
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
                prop:value=move || text.get()
                on:input=move |ev| text.set(event_target_value(&ev))
            ></textarea>
            <crate::components::ActionError action=add/>
            <div class="form-actions">
                <button type="submit" class="primary">"Add note"</button>
            </div>
        </ActionForm>
    }
}
