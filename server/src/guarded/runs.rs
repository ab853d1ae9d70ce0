//! Runs: runners start and cancel them (and the host must allow them); readers read them.

use crate::db::OwnedBy;
use crate::policy::{Read, Run as RunRight};
use domain::error::ApiError;
use domain::ports::Actor;
use domain::runs::{OutputTail, Run, RunOrigin, RunRequest};

impl super::Guarded {
    pub async fn start_runs(&self, actor: &Actor, step_id: i64, request: RunRequest) -> Result<Vec<Run>, ApiError> {
        self.start_runs_for(actor, step_id, request, RunOrigin::Person).await
    }
    /// Runs a watch or a replay starts as its creator: marked as its.
    pub async fn start_runs_for(
        &self,
        actor: &Actor,
        step_id: i64,
        request: RunRequest,
        origin: RunOrigin,
    ) -> Result<Vec<Run>, ApiError> {
        let permit = self.access.run_on_step(actor, step_id).await?;
        Ok(self.notebook.runs.start(&permit, step_id, request, origin).await?)
    }
    pub async fn run(&self, actor: &Actor, id: i64) -> Result<Run, ApiError> {
        let permit = self.access.permit_for::<Read>(actor, OwnedBy::Run, id).await?;
        Ok(self.notebook.runs.run(&permit, id).await?)
    }
    pub async fn run_page(&self, actor: &Actor, id: i64) -> Result<domain::run_pages::RunPage, ApiError> {
        let permit = self.access.permit_for::<Read>(actor, OwnedBy::Run, id).await?;
        let mut page = self.notebook.runs.page(&permit, id).await?;
        self.with_facts(actor, &mut page).await;
        Ok(page)
    }
    /// Each run needs its reader: runs of several investigations may be compared.
    pub async fn compare_runs(
        &self,
        actor: &Actor,
        runs: Vec<i64>,
    ) -> Result<domain::run_pages::RunsCompared, ApiError> {
        let mut sides = Vec::with_capacity(runs.len());
        for id in runs {
            let permit = self.access.permit_for::<Read>(actor, OwnedBy::Run, id).await?;
            let mut side = self.notebook.runs.side(&permit, id).await?;
            self.with_facts(actor, &mut side.page).await;
            sides.push(side);
        }
        Ok(crate::runs::compare::compared(sides).map_err(crate::error::Error::from)?)
    }
    /// The host facts the run points at: a reader of a run may read them (its provenance).
    async fn with_facts(&self, actor: &Actor, page: &mut domain::run_pages::RunPage) {
        if let Some(facts) = page.run.facts_id {
            page.facts = self.facts_by_id(actor, facts).await.ok();
        }
    }
    pub async fn wait_for_run(&self, actor: &Actor, id: i64, within: std::time::Duration) -> Result<Run, ApiError> {
        let permit = self.access.permit_for::<Read>(actor, OwnedBy::Run, id).await?;
        Ok(self.notebook.runs.wait(&permit, id, within).await?)
    }
    pub async fn cancel_run(&self, actor: &Actor, id: i64) -> Result<Run, ApiError> {
        let permit = self.access.permit_for::<RunRight>(actor, OwnedBy::Run, id).await?;
        Ok(self.notebook.runs.cancel(&permit, id).await?)
    }
    /// Deleting a run frees its output and its directory on the host: runners (and owners).
    pub async fn delete_run(&self, actor: &Actor, id: i64) -> Result<(), ApiError> {
        let permit = self.access.permit_for::<RunRight>(actor, OwnedBy::Run, id).await?;
        let done = self.notebook.runs.delete(&permit, id).await;
        Ok(self.announce(actor, permit.investigation(), done)?)
    }
    pub async fn output_before(&self, actor: &Actor, id: i64, before: u64, bytes: u64) -> Result<OutputTail, ApiError> {
        let permit = self.access.permit_for::<Read>(actor, OwnedBy::Run, id).await?;
        Ok(self.notebook.runs.output_before(&permit, id, before, bytes).await?)
    }
    pub async fn telemetry(&self, actor: &Actor, run: i64) -> Result<domain::telemetry::Telemetry, ApiError> {
        let permit = self.access.permit_for::<Read>(actor, OwnedBy::Run, run).await?;
        Ok(self.notebook.runs.telemetry(&permit, run).await?)
    }
    pub async fn engine(&self, actor: &Actor, run: i64) -> Result<domain::engine::series::EngineSeries, ApiError> {
        let permit = self.access.permit_for::<Read>(actor, OwnedBy::Run, run).await?;
        Ok(self.notebook.runs.engine(&permit, run).await?)
    }
    pub async fn artifacts(&self, actor: &Actor, run: i64) -> Result<Vec<domain::runs::Artifact>, ApiError> {
        let permit = self.access.permit_for::<Read>(actor, OwnedBy::Run, run).await?;
        Ok(self.notebook.runs.artifacts(&permit, run).await?)
    }
    pub async fn sweep(&self, actor: &Actor, id: i64) -> Result<domain::sweeps::Sweep, ApiError> {
        let permit = self.access.permit_for::<Read>(actor, OwnedBy::Sweep, id).await?;
        Ok(self.notebook.runs.sweep(&permit, id).await?)
    }
    pub async fn cancel_sweep(&self, actor: &Actor, id: i64) -> Result<domain::sweeps::Sweep, ApiError> {
        let permit = self.access.permit_for::<RunRight>(actor, OwnedBy::Sweep, id).await?;
        Ok(self.notebook.runs.cancel_sweep(&permit, id).await?)
    }
}
