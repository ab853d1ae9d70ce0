//! Measurements, the chart and extractors: readers read, editors change.

use crate::db::OwnedBy;
use crate::policy::{Edit, Read};
use domain::distributions::{SloInput, SloView};
use domain::error::ApiError;
use domain::metrics::{DerivedDef, ExtractorDef, NewMeasurement, Overview, OverviewQuery, StoredMeasurement};
use domain::ports::Actor;

impl super::Guarded {
    pub async fn measurements(&self, actor: &Actor, investigation: &str) -> Result<Vec<StoredMeasurement>, ApiError> {
        let permit = self.access.permit::<Read>(actor, investigation).await?;
        Ok(self.notebook.metrics.measurements(&permit).await?)
    }
    pub async fn add_measurement(
        &self,
        actor: &Actor,
        investigation: &str,
        new: NewMeasurement,
    ) -> Result<StoredMeasurement, ApiError> {
        let permit = self.access.permit::<Edit>(actor, investigation).await?;
        let done = self.notebook.metrics.add(&permit, new).await;
        Ok(self.announce(actor, investigation, done)?)
    }
    pub async fn delete_measurement(&self, actor: &Actor, id: i64) -> Result<(), ApiError> {
        let permit = self.access.permit_for::<Edit>(actor, OwnedBy::Measurement, id).await?;
        let done = self.notebook.metrics.delete(&permit, id).await;
        Ok(self.announce(actor, permit.investigation(), done)?)
    }
    /// A sweep's frontier: a reader of the step may read it.
    pub async fn frontier(
        &self,
        actor: &Actor,
        step: i64,
        query: &domain::frontier::FrontierQuery,
    ) -> Result<domain::frontier::Frontier, ApiError> {
        let permit = self.access.permit_for::<Read>(actor, crate::db::OwnedBy::Step, step).await?;
        Ok(self.notebook.frontier(&permit, step, query).await?)
    }
    /// A step's history and change points: a reader of the step may read it.
    pub async fn history(
        &self,
        actor: &Actor,
        step: i64,
        query: &domain::history::HistoryQuery,
    ) -> Result<domain::history::History, ApiError> {
        let permit = self.access.permit_for::<Read>(actor, crate::db::OwnedBy::Step, step).await?;
        Ok(self.notebook.history(&permit, step, query).await?)
    }
    pub async fn overview(
        &self,
        actor: &Actor,
        investigation: &str,
        query: &OverviewQuery,
    ) -> Result<Option<Overview>, ApiError> {
        let permit = self.access.permit::<Read>(actor, investigation).await?;
        Ok(self.notebook.overview(&permit, query).await?)
    }
    pub async fn extractors(&self, actor: &Actor, investigation: &str) -> Result<Vec<ExtractorDef>, ApiError> {
        let permit = self.access.permit::<Read>(actor, investigation).await?;
        Ok(self.notebook.metrics.extractors(&permit).await?)
    }
    pub async fn add_extractor(
        &self,
        actor: &Actor,
        investigation: &str,
        def: ExtractorDef,
    ) -> Result<ExtractorDef, ApiError> {
        let permit = self.access.permit::<Edit>(actor, investigation).await?;
        let done = self.notebook.metrics.add_extractor(&permit, def).await;
        Ok(self.announce(actor, investigation, done)?)
    }
    pub async fn remove_extractor(&self, actor: &Actor, investigation: &str, name: &str) -> Result<(), ApiError> {
        let permit = self.access.permit::<Edit>(actor, investigation).await?;
        let done = self.notebook.metrics.remove_extractor(&permit, name).await;
        Ok(self.announce(actor, investigation, done)?)
    }
    pub async fn slo(&self, actor: &Actor, investigation: &str) -> Result<Option<SloView>, ApiError> {
        let permit = self.access.permit::<Read>(actor, investigation).await?;
        Ok(self.notebook.metrics.slo(&permit).await?)
    }
    pub async fn set_slo(
        &self,
        actor: &Actor,
        investigation: &str,
        input: SloInput,
    ) -> Result<Option<SloView>, ApiError> {
        let permit = self.access.permit::<Edit>(actor, investigation).await?;
        let done = self.notebook.metrics.set_slo(&permit, input).await;
        Ok(self.announce(actor, investigation, done)?)
    }
    pub async fn guard_bounds(
        &self,
        actor: &Actor,
        investigation: &str,
    ) -> Result<domain::guards::GuardBounds, ApiError> {
        let permit = self.access.permit::<Read>(actor, investigation).await?;
        Ok(self.notebook.metrics.guard_bounds(&permit).await?)
    }
    pub async fn set_guard_bounds(
        &self,
        actor: &Actor,
        investigation: &str,
        input: domain::guards::BoundsInput,
    ) -> Result<domain::guards::GuardBounds, ApiError> {
        let permit = self.access.permit::<Edit>(actor, investigation).await?;
        let done = self.notebook.metrics.set_guard_bounds(&permit, input).await;
        Ok(self.announce(actor, investigation, done)?)
    }
    pub async fn derived_metrics(&self, actor: &Actor, investigation: &str) -> Result<Vec<DerivedDef>, ApiError> {
        let permit = self.access.permit::<Read>(actor, investigation).await?;
        Ok(self.notebook.metrics.derived(&permit).await?)
    }
    pub async fn add_derived(
        &self,
        actor: &Actor,
        investigation: &str,
        def: DerivedDef,
    ) -> Result<DerivedDef, ApiError> {
        let permit = self.access.permit::<Edit>(actor, investigation).await?;
        let done = self.notebook.metrics.add_derived(&permit, def).await;
        Ok(self.announce(actor, investigation, done)?)
    }
    pub async fn remove_derived(&self, actor: &Actor, investigation: &str, name: &str) -> Result<(), ApiError> {
        let permit = self.access.permit::<Edit>(actor, investigation).await?;
        let done = self.notebook.metrics.remove_derived(&permit, name).await;
        Ok(self.announce(actor, investigation, done)?)
    }
}
