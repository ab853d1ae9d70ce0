//! Server functions for investigations and the kind-independent step operations.
//! Each one is a thin call through [`crate::backend::Notebook`]; kind-specific
//! functions live with their kind in `steps/`.

use domain::error::ApiError;
use domain::hosts::Host;
use domain::model::{Investigation, InvestigationSummary, Step};
use leptos::prelude::*;

#[server]
pub async fn list_investigations() -> Result<Vec<InvestigationSummary>, ApiError> {
    crate::backend::call(move |notebook, actor| async move { notebook.list_investigations(&actor).await }).await
}

/// As the page shows it: `steps` (`"21-60,101-140"`) names the parts of a long
/// timeline shown in full besides its first and last steps.
#[server]
pub async fn get_investigation(id: String, steps: String) -> Result<Investigation, ApiError> {
    let window = domain::model::StepWindow::parse(&steps);
    crate::backend::call(move |notebook, actor| async move { notebook.investigation(&actor, &id, Some(&window)).await })
        .await
}

#[server]
pub async fn create_investigation(title: String, question: String) -> Result<Investigation, ApiError> {
    let new = domain::model::NewInvestigation { title, question: Some(question) };
    let investigation =
        crate::backend::call(move |notebook, actor| async move { notebook.create_investigation(&actor, new).await })
            .await?;
    leptos_axum::redirect(&investigation.url);
    Ok(investigation)
}

#[server]
pub async fn rename_investigation(id: String, title: String, question: String) -> Result<Investigation, ApiError> {
    let patch = domain::model::InvestigationPatch { title: Some(title), question: Some(question), status: None };
    crate::backend::call(move |notebook, actor| async move { notebook.update_investigation(&actor, &id, patch).await })
        .await
}

#[server]
pub async fn set_investigation_status(id: String, status: String) -> Result<Investigation, ApiError> {
    let status = domain::model::InvestigationStatus::parse(&status)
        .ok_or_else(|| ApiError::invalid(format!("unknown status {status:?}: use open or closed")))?;
    let patch = domain::model::InvestigationPatch { status: Some(status), ..Default::default() };
    crate::backend::call(move |notebook, actor| async move { notebook.update_investigation(&actor, &id, patch).await })
        .await
}

#[server]
pub async fn delete_investigation(id: String) -> Result<(), ApiError> {
    crate::backend::call(move |notebook, actor| async move { notebook.delete_investigation(&actor, &id).await })
        .await?;
    leptos_axum::redirect("/");
    Ok(())
}

#[server]
pub async fn move_step(step_id: i64, position: u32) -> Result<Step, ApiError> {
    crate::backend::call(move |notebook, actor| async move { notebook.move_step(&actor, step_id, position).await })
        .await
}

#[server]
pub async fn duplicate_step(step_id: i64) -> Result<Step, ApiError> {
    crate::backend::call(move |notebook, actor| async move { notebook.duplicate_step(&actor, step_id).await }).await
}

#[server]
pub async fn delete_step(step_id: i64) -> Result<(), ApiError> {
    crate::backend::call(move |notebook, actor| async move { notebook.delete_step(&actor, step_id).await }).await
}

#[server]
pub async fn list_hosts() -> Result<Vec<Host>, ApiError> {
    crate::backend::call(move |notebook, actor| async move { notebook.hosts(&actor).await }).await
}
