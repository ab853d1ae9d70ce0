//! Hypotheses: readers read, editors change.

use crate::auth::access::Need;
use crate::db::OwnedBy;
use app::backend::Actor;
use app::error::ApiError;
use app::hypotheses::{Hypothesis, HypothesisInput};

#[async_trait::async_trait]
impl app::backend::HypothesisOps for super::Guarded {
    async fn hypotheses(&self, actor: &Actor, investigation: &str) -> Result<Vec<Hypothesis>, ApiError> {
        self.access.check(actor, investigation, Need::Read).await?;
        self.inner.hypotheses(investigation).await
    }
    async fn hypothesis(&self, actor: &Actor, id: i64) -> Result<Hypothesis, ApiError> {
        self.access.check_of(actor, OwnedBy::Hypothesis, id, Need::Read).await?;
        self.inner.hypothesis(id).await
    }
    async fn add_hypothesis(
        &self,
        actor: &Actor,
        investigation: &str,
        input: HypothesisInput,
    ) -> Result<Hypothesis, ApiError> {
        self.access.check(actor, investigation, Need::Edit).await?;
        let done = self.inner.add_hypothesis(investigation, input).await;
        self.announce(actor, Some(investigation), done)
    }
    async fn update_hypothesis(&self, actor: &Actor, id: i64, input: HypothesisInput) -> Result<Hypothesis, ApiError> {
        let at = self.access.check_of(actor, OwnedBy::Hypothesis, id, Need::Edit).await?;
        let done = self.inner.update_hypothesis(actor, id, input).await;
        self.announce(actor, at.as_deref(), done)
    }
    async fn delete_hypothesis(&self, actor: &Actor, id: i64) -> Result<(), ApiError> {
        let at = self.access.check_of(actor, OwnedBy::Hypothesis, id, Need::Edit).await?;
        let done = self.inner.delete_hypothesis(id).await;
        self.announce(actor, at.as_deref(), done)
    }
}
