//! Steps: editors change notes and commands; saving a snippet or grep reads the host, so it needs a runner.

use crate::db::OwnedBy;
use crate::policy::Read;
use domain::error::ApiError;
use domain::model::Step;
use domain::ports::Actor;
use domain::steps::StepBody;

impl super::Guarded {
    pub async fn add_step(&self, actor: &Actor, investigation: &str, body: StepBody) -> Result<Step, ApiError> {
        let permit = self.access.for_body(actor, investigation, &body).await?;
        let done = self.notebook.steps.add(&permit, body).await;
        Ok(self.announce(actor, investigation, done)?)
    }
    pub async fn step(&self, actor: &Actor, id: i64) -> Result<Step, ApiError> {
        let permit = self.access.permit_for::<Read>(actor, OwnedBy::Step, id).await?;
        Ok(self.notebook.steps.get(&permit, id).await?)
    }
    pub async fn update_step(
        &self,
        actor: &Actor,
        id: i64,
        body: StepBody,
        version: Option<i64>,
    ) -> Result<Step, ApiError> {
        let investigation = self.access.investigation_of(OwnedBy::Step, id).await?;
        let permit = self.access.for_body(actor, &investigation, &body).await?;
        let done = self.notebook.steps.update(&permit, id, body, version).await;
        Ok(self.announce(actor, &investigation, done)?)
    }
    /// A copy of the step after it: who may add such a step may copy it.
    pub async fn duplicate_step(&self, actor: &Actor, id: i64) -> Result<Step, ApiError> {
        let read = self.access.permit_for::<Read>(actor, OwnedBy::Step, id).await?;
        let original = self.notebook.steps.get(&read, id).await?;
        let permit = self.access.for_body(actor, &original.investigation_id, &original.body).await?;
        let done = self.notebook.steps.duplicate(&permit, &original).await;
        Ok(self.announce(actor, &original.investigation_id, done)?)
    }
    /// A patch needs the editor role; made against the snapshot, it reads no host.
    pub async fn patch_snippet(&self, actor: &Actor, id: i64, text: &str) -> Result<Step, ApiError> {
        let read = self.access.permit_for::<Read>(actor, OwnedBy::Step, id).await?;
        let snippet = self.notebook.steps.get(&read, id).await?;
        let patch = crate::steps::patch_of_lines(&snippet, text)?;
        let permit = self.access.for_body(actor, &snippet.investigation_id, &patch).await?;
        let done = self.notebook.steps.add_after(&permit, &snippet, patch).await;
        Ok(self.announce(actor, &snippet.investigation_id, done)?)
    }
    pub async fn move_step(&self, actor: &Actor, id: i64, position: u32) -> Result<Step, ApiError> {
        let permit = self.access.permit_for(actor, OwnedBy::Step, id).await?;
        let done = self.notebook.steps.move_to(&permit, id, position).await;
        Ok(self.announce(actor, permit.investigation(), done)?)
    }
    /// Deleting a step cancels its runs, and cancelling needs the runner role.
    pub async fn delete_step(&self, actor: &Actor, id: i64) -> Result<(), ApiError> {
        let permit = self.access.step_deletion(actor, id).await?;
        let done = self.notebook.steps.delete(&permit, id).await;
        Ok(self.announce(actor, permit.investigation(), done)?)
    }
}
