//! Runs: runners start and cancel them (and the host must allow them); readers read them.

use crate::auth::access::Need;
use crate::db::OwnedBy;
use app::backend::Actor;
use app::error::ApiError;
use app::runs::{OutputTail, Run, RunRequest};
use app::steps::StepBody;

#[async_trait::async_trait]
impl app::backend::RunOps for super::Guarded {
    async fn start_runs(&self, actor: &Actor, step_id: i64, request: RunRequest) -> Result<Vec<Run>, ApiError> {
        let inner = &self.inner;
        self.check_run(actor, OwnedBy::Step, step_id, async || match inner.step_body(step_id).await? {
            StepBody::Command(c) => Ok(c.host),
            _ => Ok(String::new()),
        })
        .await?;
        self.inner.start_runs(actor, step_id, request).await
    }
    async fn run(&self, actor: &Actor, id: i64) -> Result<Run, ApiError> {
        self.access.check_of(actor, OwnedBy::Run, id, Need::Read).await?;
        self.inner.run(id).await
    }
    async fn wait_for_run(&self, actor: &Actor, id: i64, within: std::time::Duration) -> Result<Run, ApiError> {
        self.access.check_of(actor, OwnedBy::Run, id, Need::Read).await?;
        self.inner.wait_for_run(id, within).await
    }
    async fn cancel_run(&self, actor: &Actor, id: i64) -> Result<Run, ApiError> {
        self.access.check_of(actor, OwnedBy::Run, id, Need::Run).await?;
        self.inner.cancel_run(id).await
    }
    async fn output_before(&self, actor: &Actor, id: i64, before: u64, bytes: u64) -> Result<OutputTail, ApiError> {
        self.access.check_of(actor, OwnedBy::Run, id, Need::Read).await?;
        self.inner.output_before(id, before, bytes).await
    }
    async fn telemetry(&self, actor: &Actor, run: i64) -> Result<app::telemetry::Telemetry, ApiError> {
        self.access.check_of(actor, OwnedBy::Run, run, Need::Read).await?;
        self.inner.telemetry(run).await
    }
    async fn sweep(&self, actor: &Actor, id: i64) -> Result<app::sweeps::Sweep, ApiError> {
        self.access.check_of(actor, OwnedBy::Sweep, id, Need::Read).await?;
        self.inner.sweep(id).await
    }
    async fn cancel_sweep(&self, actor: &Actor, id: i64) -> Result<app::sweeps::Sweep, ApiError> {
        self.access.check_of(actor, OwnedBy::Sweep, id, Need::Run).await?;
        self.inner.cancel_sweep(id).await
    }
}
