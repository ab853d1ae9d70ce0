//! Step kinds in the page: each kind's view, forms and server functions (its
//! body type is in `domain::steps`), and the one switch between them.

pub mod annotation;
pub mod calculator;
pub mod command;
pub mod grep;
pub mod note;
pub mod patch;
pub mod snippet;
pub mod watch;

use domain::steps::StepBody;
use leptos::prelude::*;

/// The body of a step in the timeline; `editing`: its editor (notes and commands).
#[component]
pub fn StepContent(step: domain::model::Step, editing: bool) -> impl IntoView {
    match step.body.clone() {
        StepBody::Note(_) => view! { <note::NoteContent step editing/> }.into_any(),
        StepBody::Command(_) => view! { <command::CommandContent step editing/> }.into_any(),
        StepBody::Snippet(_) => view! { <snippet::SnippetContent step/> }.into_any(),
        StepBody::Grep(_) => view! { <grep::GrepContent step/> }.into_any(),
        StepBody::Calculator(_) => view! { <calculator::CalculatorContent step/> }.into_any(),
        StepBody::Patch(_) => view! { <patch::PatchContent step/> }.into_any(),
    }
}
