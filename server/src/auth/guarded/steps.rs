//! Steps: editors change notes and commands; saving a snippet or grep reads the host, so it needs a runner.

use crate::auth::access::Need;
use crate::db::OwnedBy;
use app::backend::Actor;
use app::error::ApiError;
use app::model::Step;
use app::steps::StepBody;

#[async_trait::async_trait]
impl app::backend::StepOps for super::Guarded {
    async fn add_step(&self, actor: &Actor, investigation: &str, body: StepBody) -> Result<Step, ApiError> {
        self.check_body(actor, investigation, &body).await?;
        let done = self.inner.add_step(actor, investigation, body).await;
        self.announce(actor, Some(investigation), done)
    }
    async fn step(&self, actor: &Actor, id: i64) -> Result<Step, ApiError> {
        self.access.check_of(actor, OwnedBy::Step, id, Need::Read).await?;
        self.inner.step(id).await
    }
    async fn update_step(
        &self,
        actor: &Actor,
        id: i64,
        body: StepBody,
        version: Option<i64>,
    ) -> Result<Step, ApiError> {
        let at = self.step_investigation(id).await?;
        if let Some(investigation) = &at {
            self.check_body(actor, investigation, &body).await?;
        }
        let done = self.inner.update_step(actor, id, body, version).await;
        self.announce(actor, at.as_deref(), done)
    }
    async fn move_step(&self, actor: &Actor, id: i64, position: u32) -> Result<Step, ApiError> {
        let at = self.access.check_of(actor, OwnedBy::Step, id, Need::Edit).await?;
        let done = self.inner.move_step(id, position).await;
        self.announce(actor, at.as_deref(), done)
    }
    /// Deleting a step cancels its runs, and cancelling needs the runner role.
    async fn delete_step(&self, actor: &Actor, id: i64) -> Result<(), ApiError> {
        let at = self.access.check_of(actor, OwnedBy::Step, id, Need::Edit).await?;
        if let Some(investigation) = &at
            && self.inner.has_active_run(id).await?
        {
            self.access.check(actor, investigation, Need::Run).await.map_err(|_| {
                ApiError::new(
                    app::error::ErrorCode::Forbidden,
                    "This step has a run in progress; deleting it would cancel the run, which needs the runner role. \
                     Wait for the run to end, or ask a runner.",
                )
            })?;
        }
        let done = self.inner.delete_step(id).await;
        self.announce(actor, at.as_deref(), done)
    }
}
