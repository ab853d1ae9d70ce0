//! Hypotheses: readers read, editors change.

use crate::db::OwnedBy;
use crate::policy::{Edit, Read};
use domain::error::ApiError;
use domain::hypotheses::{Hypothesis, HypothesisInput};
use domain::ports::Actor;

impl super::Guarded {
    pub async fn hypotheses(&self, actor: &Actor, investigation: &str) -> Result<Vec<Hypothesis>, ApiError> {
        let permit = self.access.permit::<Read>(actor, investigation).await?;
        Ok(self.notebook.hypotheses.list(&permit, None).await?)
    }
    pub async fn hypothesis(&self, actor: &Actor, id: i64) -> Result<Hypothesis, ApiError> {
        let permit = self.access.permit_for::<Read>(actor, OwnedBy::Hypothesis, id).await?;
        Ok(self.notebook.hypotheses.get(&permit, id).await?)
    }
    pub async fn add_hypothesis(
        &self,
        actor: &Actor,
        investigation: &str,
        input: HypothesisInput,
    ) -> Result<Hypothesis, ApiError> {
        let permit = self.access.permit::<Edit>(actor, investigation).await?;
        let done = self.notebook.hypotheses.add(&permit, input).await;
        Ok(self.announce(actor, investigation, done)?)
    }
    pub async fn update_hypothesis(
        &self,
        actor: &Actor,
        id: i64,
        input: HypothesisInput,
    ) -> Result<Hypothesis, ApiError> {
        let permit = self.access.permit_for::<Edit>(actor, OwnedBy::Hypothesis, id).await?;
        let done = self.notebook.hypotheses.update(&permit, id, input).await;
        Ok(self.announce(actor, permit.investigation(), done)?)
    }
    pub async fn delete_hypothesis(&self, actor: &Actor, id: i64) -> Result<(), ApiError> {
        let permit = self.access.permit_for::<Edit>(actor, OwnedBy::Hypothesis, id).await?;
        let done = self.notebook.hypotheses.delete(&permit, id).await;
        Ok(self.announce(actor, permit.investigation(), done)?)
    }
}
