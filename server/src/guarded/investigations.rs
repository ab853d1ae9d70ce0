//! Investigations: anyone signed in creates one (and owns it); the rest by role.

use crate::policy::{Edit, Own, Read, Role};
use domain::error::ApiError;
use domain::model::{Investigation, InvestigationPatch, InvestigationSummary, NewInvestigation, StepWindow};
use domain::ports::Actor;

impl super::Guarded {
    pub async fn list_investigations(&self, actor: &Actor) -> Result<Vec<InvestigationSummary>, ApiError> {
        let readers = self.access.readers(actor).await?;
        Ok(self.notebook.investigations.list(&readers).await?)
    }
    pub async fn abilities(&self, actor: &Actor, id: &str) -> Result<domain::model::Abilities, ApiError> {
        let permit = self.access.permit::<Read>(actor, id).await?;
        Ok(permit.abilities())
    }
    pub async fn create_investigation(&self, actor: &Actor, new: NewInvestigation) -> Result<Investigation, ApiError> {
        let id = self.notebook.investigations.create(&self.access.anyone(actor), new).await?;
        let permit = self.access.permit::<Read>(actor, &id).await?;
        Ok(self.notebook.investigation(&permit, None).await?)
    }
    pub async fn investigation(
        &self,
        actor: &Actor,
        id: &str,
        window: Option<&StepWindow>,
    ) -> Result<Investigation, ApiError> {
        let permit = self.access.permit::<Read>(actor, id).await?;
        let mut investigation = self.notebook.investigation(&permit, window).await?;
        if permit.role() == Role::Owner {
            let owner = self.access.permit::<Own>(actor, id).await?;
            investigation.share_links = self.notebook.shares.links(&owner).await?;
        }
        // Replays both ways, of those the reader may read the other side of.
        for row in self.notebook.replays.of(id).await? {
            if self.access.permit::<Read>(actor, &row.investigation_id).await.is_ok() {
                investigation.replays.push(crate::replays::link(&row));
            }
        }
        if let Some(row) = self.notebook.replays.copied_into(id).await? {
            investigation.replay_of = Some(crate::replays::link(&row));
        }
        Ok(investigation)
    }
    pub async fn update_investigation(
        &self,
        actor: &Actor,
        id: &str,
        patch: InvestigationPatch,
    ) -> Result<Investigation, ApiError> {
        let permit = self.access.permit::<Edit>(actor, id).await?;
        let done = self.notebook.investigations.update(&permit, patch).await;
        self.announce(actor, id, done)?;
        Ok(self.notebook.investigation(&permit.read(), None).await?)
    }
    pub async fn delete_investigation(&self, actor: &Actor, id: &str) -> Result<(), ApiError> {
        let permit = self.access.permit::<Own>(actor, id).await?;
        Ok(self.notebook.delete_investigation(&permit).await?)
    }
}
