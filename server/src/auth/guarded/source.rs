//! Source: fetching again reads the host (runner); annotations are an editor's; finding a file named in output runs a search on the host (runner).

use crate::auth::access::Need;
use crate::db::OwnedBy;
use app::backend::Actor;
use app::error::ApiError;
use app::model::Step;
use app::steps::StepBody;
use app::steps::snippet::{Annotation, AnnotationPatch, NewAnnotation, SourceCandidates};

#[async_trait::async_trait]
impl app::backend::SourceOps for super::Guarded {
    async fn refresh_snippet(
        &self,
        actor: &Actor,
        step_id: i64,
        start: Option<u64>,
        end: Option<u64>,
    ) -> Result<Step, ApiError> {
        let inner = &self.inner;
        let at = self
            .check_run(actor, OwnedBy::Step, step_id, async || match inner.step_body(step_id).await? {
                StepBody::Snippet(s) => Ok(s.host),
                _ => Ok(String::new()),
            })
            .await?;
        let done = self.inner.refresh_snippet(actor, step_id, start, end).await;
        self.announce(actor, at.as_deref(), done)
    }
    async fn add_annotation(
        &self,
        actor: &Actor,
        step_id: i64,
        mut new: NewAnnotation,
    ) -> Result<Annotation, ApiError> {
        let at = self.access.check_of(actor, OwnedBy::Step, step_id, Need::Edit).await?;
        // With accounts, the author is whoever is signed in, not what they type.
        // Without (`--no-auth`, one person), a typed name is kept.
        if !actor.local {
            new.author = Some(actor.name.clone());
        }
        let done = self.inner.add_annotation(step_id, new).await;
        self.announce(actor, at.as_deref(), done)
    }
    async fn annotation(&self, actor: &Actor, id: i64) -> Result<Annotation, ApiError> {
        self.access.check_of(actor, OwnedBy::Annotation, id, Need::Read).await?;
        self.inner.annotation(id).await
    }
    async fn update_annotation(&self, actor: &Actor, id: i64, patch: AnnotationPatch) -> Result<Annotation, ApiError> {
        let at = self.access.check_of(actor, OwnedBy::Annotation, id, Need::Edit).await?;
        let done = self.inner.update_annotation(id, patch).await;
        self.announce(actor, at.as_deref(), done)
    }
    async fn delete_annotation(&self, actor: &Actor, id: i64) -> Result<(), ApiError> {
        let at = self.access.check_of(actor, OwnedBy::Annotation, id, Need::Edit).await?;
        let done = self.inner.delete_annotation(id).await;
        self.announce(actor, at.as_deref(), done)
    }
    async fn source_candidates(
        &self,
        actor: &Actor,
        run_id: i64,
        file: &str,
        line: u64,
    ) -> Result<SourceCandidates, ApiError> {
        let inner = &self.inner;
        self.check_run(actor, OwnedBy::Run, run_id, async || Ok(inner.run(run_id).await?.host)).await?;
        self.inner.source_candidates(actor, run_id, file, line).await
    }
}
