//! Measurements, the chart and extractors: readers read, editors change.

use crate::auth::access::Need;
use crate::db::OwnedBy;
use app::backend::Actor;
use app::error::ApiError;
use app::metrics::{ExtractorDef, NewMeasurement, Overview, StoredMeasurement};

#[async_trait::async_trait]
impl app::backend::MeasurementOps for super::Guarded {
    async fn measurements(&self, actor: &Actor, investigation: &str) -> Result<Vec<StoredMeasurement>, ApiError> {
        self.access.check(actor, investigation, Need::Read).await?;
        self.inner.measurements(investigation).await
    }
    async fn add_measurement(
        &self,
        actor: &Actor,
        investigation: &str,
        new: NewMeasurement,
    ) -> Result<StoredMeasurement, ApiError> {
        self.access.check(actor, investigation, Need::Edit).await?;
        let done = self.inner.add_measurement(investigation, new).await;
        self.announce(actor, Some(investigation), done)
    }
    async fn delete_measurement(&self, actor: &Actor, id: i64) -> Result<(), ApiError> {
        let at = self.access.check_of(actor, OwnedBy::Measurement, id, Need::Edit).await?;
        let done = self.inner.delete_measurement(id).await;
        self.announce(actor, at.as_deref(), done)
    }
    async fn overview(
        &self,
        actor: &Actor,
        investigation: &str,
        query: &app::metrics::OverviewQuery,
    ) -> Result<Option<Overview>, ApiError> {
        self.access.check(actor, investigation, Need::Read).await?;
        self.inner.overview(investigation, query).await
    }
    async fn extractors(&self, actor: &Actor, investigation: &str) -> Result<Vec<ExtractorDef>, ApiError> {
        self.access.check(actor, investigation, Need::Read).await?;
        self.inner.extractors(investigation).await
    }
    async fn add_extractor(
        &self,
        actor: &Actor,
        investigation: &str,
        def: ExtractorDef,
    ) -> Result<ExtractorDef, ApiError> {
        self.access.check(actor, investigation, Need::Edit).await?;
        let done = self.inner.add_extractor(investigation, def).await;
        self.announce(actor, Some(investigation), done)
    }
    async fn remove_extractor(&self, actor: &Actor, investigation: &str, name: &str) -> Result<(), ApiError> {
        self.access.check(actor, investigation, Need::Edit).await?;
        let done = self.inner.remove_extractor(investigation, name).await;
        self.announce(actor, Some(investigation), done)
    }
    async fn derived_metrics(
        &self,
        actor: &Actor,
        investigation: &str,
    ) -> Result<Vec<app::metrics::DerivedDef>, ApiError> {
        self.access.check(actor, investigation, Need::Read).await?;
        self.inner.derived_metrics(investigation).await
    }
    async fn add_derived(
        &self,
        actor: &Actor,
        investigation: &str,
        def: app::metrics::DerivedDef,
    ) -> Result<app::metrics::DerivedDef, ApiError> {
        self.access.check(actor, investigation, Need::Edit).await?;
        let done = self.inner.add_derived(investigation, def).await;
        self.announce(actor, Some(investigation), done)
    }
    async fn remove_derived(&self, actor: &Actor, investigation: &str, name: &str) -> Result<(), ApiError> {
        self.access.check(actor, investigation, Need::Edit).await?;
        let done = self.inner.remove_derived(investigation, name).await;
        self.announce(actor, Some(investigation), done)
    }
}
