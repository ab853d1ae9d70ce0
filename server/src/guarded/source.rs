//! Source: fetching again reads the host (runner), as does checking a patch; annotations are an editor's; finding a file named in output runs a search on the host (runner).

use crate::db::OwnedBy;
use crate::policy::{Edit, Read};
use domain::error::ApiError;
use domain::model::Step;
use domain::ports::Actor;
use domain::steps::StepBody;
use domain::steps::patch::PatchCheck;
use domain::steps::snippet::{Annotation, AnnotationPatch, NewAnnotation, SourceCandidates};

impl super::Guarded {
    pub async fn check_patch(&self, actor: &Actor, step_id: i64) -> Result<PatchCheck, ApiError> {
        let permit = self.access.run_on_step(actor, step_id).await?;
        let step = self.notebook.steps.get(&permit.permit().read(), step_id).await?;
        let StepBody::Patch(patch) = &step.body else {
            return Err(ApiError::invalid(format!("Step {step_id} is a {} step, not a patch.", step.body.kind())));
        };
        Ok(self.notebook.patches.check(&permit, patch).await?)
    }
    pub async fn refresh_snippet(
        &self,
        actor: &Actor,
        step_id: i64,
        start: Option<u64>,
        end: Option<u64>,
    ) -> Result<Step, ApiError> {
        let permit = self.access.run_on_step(actor, step_id).await?;
        let investigation = permit.investigation().to_string();
        let done = self.notebook.steps.refresh_snippet(permit, step_id, start, end).await;
        Ok(self.announce(actor, &investigation, done)?)
    }
    pub async fn add_annotation(
        &self,
        actor: &Actor,
        step_id: i64,
        new: NewAnnotation,
    ) -> Result<Annotation, ApiError> {
        let permit = self.access.permit_for::<Edit>(actor, OwnedBy::Step, step_id).await?;
        let done = self.notebook.source.add_annotation(&permit, step_id, new).await;
        Ok(self.announce(actor, permit.investigation(), done)?)
    }
    pub async fn annotation(&self, actor: &Actor, id: i64) -> Result<Annotation, ApiError> {
        let permit = self.access.permit_for::<Read>(actor, OwnedBy::Annotation, id).await?;
        Ok(self.notebook.source.annotation(&permit, id).await?)
    }
    pub async fn update_annotation(
        &self,
        actor: &Actor,
        id: i64,
        patch: AnnotationPatch,
    ) -> Result<Annotation, ApiError> {
        let permit = self.access.permit_for::<Edit>(actor, OwnedBy::Annotation, id).await?;
        let done = self.notebook.source.update_annotation(&permit, id, patch).await;
        Ok(self.announce(actor, permit.investigation(), done)?)
    }
    pub async fn delete_annotation(&self, actor: &Actor, id: i64) -> Result<(), ApiError> {
        let permit = self.access.permit_for::<Edit>(actor, OwnedBy::Annotation, id).await?;
        let done = self.notebook.source.delete_annotation(&permit, id).await;
        Ok(self.announce(actor, permit.investigation(), done)?)
    }
    pub async fn source_candidates(
        &self,
        actor: &Actor,
        run_id: i64,
        file: &str,
        line: u64,
    ) -> Result<SourceCandidates, ApiError> {
        let permit = self.access.run_on_run(actor, run_id).await?;
        Ok(self.notebook.source.candidates(&permit, run_id, file, line).await?)
    }
}
