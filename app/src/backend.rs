//! The server-side boundary the UI's server functions call through. The server crate
//! implements [`Notebook`] and provides it as context, so this crate never links the
//! store, SSH or anything else server-only.

use crate::error::ApiError;
use crate::model::{Investigation, InvestigationPatch, InvestigationSummary, NewInvestigation, Step};
use crate::steps::StepBody;
use std::sync::Arc;

#[async_trait::async_trait]
pub trait Notebook: Send + Sync + 'static {
    async fn list_investigations(&self) -> Result<Vec<InvestigationSummary>, ApiError>;
    async fn create_investigation(&self, new: NewInvestigation) -> Result<Investigation, ApiError>;
    async fn investigation(&self, id: &str) -> Result<Investigation, ApiError>;
    async fn update_investigation(&self, id: &str, patch: InvestigationPatch) -> Result<Investigation, ApiError>;
    async fn delete_investigation(&self, id: &str) -> Result<(), ApiError>;

    async fn add_step(&self, investigation: &str, body: StepBody) -> Result<Step, ApiError>;
    async fn step(&self, id: i64) -> Result<Step, ApiError>;
    /// Replaces the step's body; its kind cannot change.
    async fn update_step(&self, id: i64, body: StepBody) -> Result<Step, ApiError>;
    /// Moves the step to `position` (1-based, clamped to the timeline).
    async fn move_step(&self, id: i64, position: u32) -> Result<Step, ApiError>;
    async fn delete_step(&self, id: i64) -> Result<(), ApiError>;
}

/// The notebook the server provided for this request.
pub fn notebook() -> Result<Arc<dyn Notebook>, ApiError> {
    leptos::prelude::use_context::<Arc<dyn Notebook>>().ok_or_else(|| {
        leptos::logging::error!("no Notebook in context: the server must provide one");
        ApiError::internal()
    })
}

/// Gives the page or server-function response the HTTP status that fits `error`,
/// so a missing investigation is a real 404 even when rendered as a page.
pub fn set_status(error: &ApiError) {
    let status =
        http::StatusCode::from_u16(error.code.http_status()).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    if let Some(response) = leptos::prelude::use_context::<leptos_axum::ResponseOptions>() {
        response.set_status(status);
    }
}
