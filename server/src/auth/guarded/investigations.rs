//! Investigations: anyone signed in creates one (and owns it); the rest by role.

use crate::auth::access::{Need, Role};

use app::backend::Actor;
use app::error::ApiError;
use app::model::{Investigation, InvestigationPatch, InvestigationSummary, NewInvestigation, StepWindow};

#[async_trait::async_trait]
impl app::backend::InvestigationOps for super::Guarded {
    async fn list_investigations(&self, actor: &Actor) -> Result<Vec<InvestigationSummary>, ApiError> {
        let all = self.inner.list_investigations().await?;
        Ok(match self.access.readable(actor).await? {
            None => all,
            Some(ids) => all.into_iter().filter(|i| ids.contains(&i.id)).collect(),
        })
    }
    async fn create_investigation(&self, actor: &Actor, new: NewInvestigation) -> Result<Investigation, ApiError> {
        let created = self.inner.create_investigation(new).await?;
        self.access.store().set_member(&created.id, &actor.name, Role::Owner.as_str()).await?;
        Ok(created)
    }
    async fn investigation(
        &self,
        actor: &Actor,
        id: &str,
        window: Option<&StepWindow>,
    ) -> Result<Investigation, ApiError> {
        let role = self.access.checked_role(actor, id, Need::Read).await?;
        let mut investigation = self.inner.investigation(id, window).await?;
        investigation.abilities = role.abilities();
        if role == Role::Owner {
            investigation.share_links = self.inner.share_links(id).await?;
        }
        Ok(investigation)
    }
    async fn update_investigation(
        &self,
        actor: &Actor,
        id: &str,
        patch: InvestigationPatch,
    ) -> Result<Investigation, ApiError> {
        self.access.check(actor, id, Need::Edit).await?;
        let done = self.inner.update_investigation(id, patch).await;
        self.announce(actor, Some(id), done)
    }
    async fn delete_investigation(&self, actor: &Actor, id: &str) -> Result<(), ApiError> {
        self.access.check(actor, id, Need::Own).await?;
        self.inner.delete_investigation(id).await
    }
}
