//! The run operations: queueing a step's runs (a batch or a sweep), reading
//! them, their output and telemetry, waiting for and cancelling them. The runs
//! themselves are driven by the [`Runner`].

use super::sweep;
use super::{Runner, TAIL_BYTES, run_from_row, tail, window};
use crate::db::{NewRun, RunRow, Store};
use crate::error::{Context, Error, Result, stored};
use crate::hosts::Hosts;
use crate::output::{OutputKey, Outputs};
use crate::policy::{Edit, Permit, Read, Run as RunRight, RunOn};
use bytes::Bytes;
use domain::error::{ApiError, ErrorCode};
use domain::model::Step;
use domain::runs::{MAX_REPEAT, MAX_WARMUP, OutputTail, Run, RunRequest, RunStatus};
use domain::steps::StepBody;
use futures::Stream;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

#[derive(Clone)]
pub struct Runs {
    store: Store,
    runner: Arc<Runner>,
    hosts: Hosts,
    outputs: Outputs,
}

/// How many runs of its configuration a run's guards compare it with (the nearest).
const GUARD_SIBLINGS: usize = 200;

/// Source references in output link to a runner's action (finding the file
/// on the host): a reader who may not run gets them as marked text, not as a
/// link that answers "needs the runner role".
fn for_reader(role: crate::policy::Role, html: &mut String) {
    if role < crate::policy::Role::Runner {
        *html = crate::snippets::refs::unlink(html);
    }
}

fn not_found(id: i64) -> ApiError {
    ApiError::not_found(format!("There is no run {id}."))
}

/// Which of a run's outputs: its command's (stdout and stderr as they came), or
/// its server's log (`?stream=server`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Which {
    #[default]
    Client,
    Server,
}

/// A run's output as the raw download gives it.
pub enum Output {
    /// Everything, streamed (output can be gigabytes); the length so far.
    Whole(std::pin::Pin<Box<dyn Stream<Item = std::io::Result<Bytes>> + Send>>, u64),
    /// A range; the length so far.
    Range(Vec<u8>, u64),
}

impl Runs {
    pub fn new(store: Store, runner: Arc<Runner>, hosts: Hosts, outputs: Outputs) -> Self {
        Self { store, runner, hosts, outputs }
    }

    fn outputs(&self) -> &Outputs {
        &self.outputs
    }

    pub fn runner(&self) -> &Arc<Runner> {
        &self.runner
    }

    /// The run row, if it is of the permit's investigation.
    async fn row(&self, permit: &Permit<impl crate::policy::Right>, id: i64) -> Result<RunRow> {
        let row = self.store.run(id).await?.ok_or_else(|| not_found(id))?;
        let investigation = self.store.run_investigation(id).await?;
        if investigation.as_deref() != Some(permit.investigation()) {
            return Err(not_found(id).into());
        }
        Ok(row)
    }

    /// Fills in the runs of command steps, and the output tail of the newest run
    /// of each step in `tails_for`.
    /// `known`: the investigation's measurements when the caller has them
    /// (a page loads them once for runs, hypotheses and the chart).
    /// `only_shown`: artifacts and reports only for the run a page shows of
    /// each step (and its newest), as a page needs; else for every run.
    pub async fn attach(
        &self,
        permit: &Permit<Read>,
        steps: &mut [Step],
        rows: Vec<RunRow>,
        tails_for: &HashSet<i64>,
        known: Option<&[crate::db::MeasurementRow]>,
        only_shown: bool,
    ) -> Result<()> {
        let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
        let mut measured: HashMap<i64, Vec<domain::metrics::Measurement>> = HashMap::new();
        let loaded = match known {
            Some(rows) => Ok(std::borrow::Cow::Borrowed(rows)),
            None => self.store.measurements_of_runs(&ids).await.map(std::borrow::Cow::Owned),
        };
        match loaded {
            Ok(found) => {
                for row in found.iter() {
                    if let Some(run) = row.run_id {
                        measured.entry(run).or_default().push(crate::metrics::value_of(row));
                    }
                }
            }
            Err(e) => tracing::error!("cannot read measurements: {}", crate::error::chain(&e)),
        }
        // Every run's patch proof (a small row each, and only patched runs
        // have one): the provenance manifest carries them all.
        let mut patches: HashMap<i64, domain::steps::patch::RunPatch> = HashMap::new();
        for row in self.store.run_patches_of(&ids).await? {
            patches.insert(row.run_id, crate::patches::arm::shown(&row)?);
        }
        let mut by_step: HashMap<i64, Vec<Run>> = HashMap::new();
        for row in rows {
            let mut run = run_from_row(row)?;
            run.measurements = measured.remove(&run.id).unwrap_or_default();
            run.patch = patches.remove(&run.id);
            by_step.entry(run.step_id).or_default().push(run);
        }
        // A page shows one run of a step in full (`shown_run`; the newest gets
        // the tail): only theirs are read, not a thousand runs' files.
        let detailed: Vec<i64> = match only_shown {
            false => ids,
            true => by_step
                .values()
                .flat_map(|runs| domain::runs::shown_run(runs).into_iter().chain(runs.last()))
                .map(|r| r.id)
                .collect(),
        };
        let (mut artifacts, server_logs) = self.logs_of(&detailed).await;
        let mut reports: HashMap<i64, Vec<domain::runs::ReportInfo>> = HashMap::new();
        match self.store.reports_of_runs(&detailed).await {
            Ok(rows) => {
                for row in rows {
                    reports.entry(row.run_id).or_default().push(super::report_of(row, false)?);
                }
            }
            Err(e) => tracing::error!("cannot read reports: {}", crate::error::chain(&e)),
        }
        for run in by_step.values_mut().flatten() {
            run.artifacts = artifacts.remove(&run.id).unwrap_or_default();
            run.reports = reports.remove(&run.id).unwrap_or_default();
        }
        for step in steps.iter_mut() {
            if let Some(mut runs) = by_step.remove(&step.id) {
                if let Some(newest) = runs.last_mut().filter(|_| tails_for.contains(&step.id)) {
                    match tail(self.outputs(), newest.id, OutputKey::Run(newest.id), TAIL_BYTES).await {
                        Ok(mut t) => {
                            for_reader(permit.role(), &mut t.html);
                            newest.tail = Some(t);
                        }
                        Err(e) => tracing::error!(run = newest.id, "cannot read output: {e}"),
                    }
                    if let Some(log) = server_logs.get(&newest.id) {
                        match tail(self.outputs(), newest.id, OutputKey::Log(*log), TAIL_BYTES).await {
                            Ok(mut t) => {
                                for_reader(permit.role(), &mut t.html);
                                newest.server_tail = Some(t);
                            }
                            Err(e) => tracing::error!(run = newest.id, "cannot read the server's log: {e}"),
                        }
                    }
                    if newest.telemetry && newest.status.is_finished() {
                        match self.store.telemetry_svg(newest.id).await {
                            Ok(svg) => newest.telemetry_svg = svg.filter(|svg| !svg.is_empty()),
                            Err(e) => tracing::error!(run = newest.id, "cannot read the telemetry chart: {e}"),
                        }
                        if let Ok(Some((_, Some(notes)))) = self.store.telemetry_info(newest.id).await {
                            let id = newest.id;
                            newest.telemetry_notes = stored(&notes, || format!("run {id}'s telemetry notes"))?;
                        }
                    }
                }
                step.runs = runs;
            }
        }
        Ok(())
    }

    /// The artifacts of these runs, and their server logs' ids, by run.
    async fn logs_of(&self, runs: &[i64]) -> (HashMap<i64, Vec<domain::runs::Artifact>>, HashMap<i64, i64>) {
        let mut by_run: HashMap<i64, Vec<domain::runs::Artifact>> = HashMap::new();
        let mut server_logs = HashMap::new();
        match self.store.logs_of_runs(runs).await {
            Ok(logs) => {
                for log in logs {
                    if log.kind == crate::db::LogKind::Server {
                        server_logs.insert(log.run_id, log.id);
                        continue;
                    }
                    if log.kind != crate::db::LogKind::Artifact {
                        continue;
                    }
                    by_run.entry(log.run_id).or_default().push(domain::runs::Artifact {
                        url: format!("/api/v1/runs/{}/artifacts/{}", log.run_id, log.id),
                        id: log.id,
                        name: log.name,
                        size: u64::try_from(log.size).unwrap_or(0),
                        sha256: log.sha256.unwrap_or_default(),
                    });
                }
            }
            Err(e) => tracing::error!("cannot read artifacts: {}", crate::error::chain(&e)),
        }
        (by_run, server_logs)
    }

    /// Cancels runs whose step is going away, and deletes their output, logs
    /// and directories on their hosts.
    pub async fn forget(&self, permit: &Permit<Edit>, rows: &[crate::db::RunRow]) {
        let runs: Vec<i64> = rows.iter().map(|r| r.id).collect();
        let logs = self.store.logs_of_runs(&runs).await.unwrap_or_default();
        let any_running = rows.iter().any(|r| !r.status.is_finished());
        let dirs = rows.iter().filter_map(|r| Some((r.host.clone(), r.run_dir.clone()?))).collect();
        self.runner.remove_run_dirs(dirs, any_running);
        for id in &runs {
            if let Err(e) = self.runner.cancel(permit.investigation(), *id).await {
                tracing::error!(run = id, "cannot cancel a run of a deleted step: {}", crate::error::chain(&e));
            }
            self.outputs().remove(*id).await;
        }
        for log in logs {
            self.outputs().remove(OutputKey::Log(log.id)).await;
        }
    }

    /// Deletes a finished run: its output, logs, measurements and telemetry,
    /// and its directory on the host. A run still queued or running is
    /// refused: cancelling is its own action (and needs the runner role).
    /// Deletes a finished run: its output, measurements, files and its
    /// directory on the host. Runners (and owners) may; it is audited with
    /// who and what was freed.
    pub async fn delete(&self, permit: &Permit<RunRight>, id: i64) -> Result<()> {
        let permit_edit = permit.edit();
        let permit = &permit_edit;
        let row = self.row(permit, id).await?;
        if !row.status.is_finished() {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                format!(
                    "Run {id} is {}; cancel it first (POST /api/v1/runs/{id}/cancel), then delete it.",
                    row.status.as_str()
                ),
            )
            .into());
        }
        let freed = row.stdout_bytes + row.stderr_bytes;
        self.forget(permit, std::slice::from_ref(&row)).await;
        if !self.store.delete_run(id).await? {
            return Err(not_found(id).into());
        }
        let entry = crate::db::NewAudit {
            who: permit.actor().name.clone(),
            action: "run.delete",
            host: Some(row.host.clone()),
            target: format!("run {id} of step {} in {}", row.step_id, permit.investigation()),
            env: None,
            outcome: Some(format!(
                "freed {} of output{}",
                domain::runs::human_bytes(u64::try_from(freed).unwrap_or(0)),
                row.run_dir.as_deref().map(|d| format!(" and {d} on the host")).unwrap_or_default()
            )),
            run_id: Some(id),
        };
        crate::audit::record(&self.store, entry).await;
        Ok(())
    }

    /// The run's server log, if its step had a server.
    async fn server_log(&self, run: i64) -> Result<i64> {
        let logs = self.store.logs_of_runs(&[run]).await?;
        let log = logs.into_iter().rev().find(|l| l.kind == crate::db::LogKind::Server);
        Ok(log.map(|l| l.id).ok_or_else(|| ApiError::not_found(format!("Run {run} has no server log.")))?)
    }

    /// Which of the run's outputs: its own, or its server's log.
    async fn key(&self, run: i64, which: Which) -> Result<OutputKey> {
        Ok(match which {
            Which::Client => OutputKey::Run(run),
            Which::Server => OutputKey::Log(self.server_log(run).await?),
        })
    }

    /// The run's artifacts.
    pub async fn artifacts(&self, permit: &Permit<Read>, id: i64) -> Result<Vec<domain::runs::Artifact>> {
        self.row(permit, id).await?;
        Ok(self.logs_of(&[id]).await.0.remove(&id).unwrap_or_default())
    }

    /// One artifact's name and bytes (streamed: it can be gigabytes).
    pub async fn artifact(&self, permit: &Permit<Read>, run: i64, artifact: i64) -> Result<(String, u64, Output)> {
        self.row(permit, run).await?;
        let gone = || ApiError::not_found(format!("Run {run} has no artifact {artifact}."));
        let log = self
            .store
            .log(artifact)
            .await?
            .filter(|l| l.run_id == run && l.kind == crate::db::LogKind::Artifact)
            .ok_or_else(gone)?;
        let key = OutputKey::Log(log.id);
        let len = self.outputs().len(key).await.context(format!("reading artifact {artifact}'s length"))?;
        Ok((log.name, len, Output::Whole(Box::pin(self.outputs().whole(key)), len)))
    }

    /// Whether new runs may start here now: not while the server shuts down,
    /// nor below the disk's floor.
    pub fn ready_to_start(&self) -> Result<()> {
        if self.runner.draining() {
            return Err(ApiError::new(
                domain::error::ErrorCode::ShuttingDown,
                "This Sleuth server is shutting down (a deploy) and starts no new runs; run it again in a moment.",
            )
            .into());
        }
        Ok(self.runner.room_for_runs()?)
    }

    /// Queues runs of a command step (warm-ups first, or a sweep's plan); they start right away.
    pub async fn start(
        &self,
        permit: &RunOn,
        step_id: i64,
        request: RunRequest,
        origin: domain::runs::RunOrigin,
    ) -> Result<Vec<Run>> {
        self.ready_to_start()?;
        let repeat = request.repeat.unwrap_or(1);
        let warmup = request.warmup.unwrap_or(0);
        if !(1..=MAX_REPEAT).contains(&repeat) {
            return Err(ApiError::invalid(format!("repeat must be from 1 to {MAX_REPEAT}.")).into());
        }
        if warmup > MAX_WARMUP {
            return Err(ApiError::invalid(format!("warmup must be from 0 to {MAX_WARMUP}.")).into());
        }
        let row = self
            .store
            .step(step_id)
            .await?
            .filter(|s| s.investigation_id == permit.investigation())
            .ok_or_else(|| ApiError::not_found(format!("There is no step {step_id}.")))?;
        let body = crate::steps::from_stored(row.kind, &row.body)
            .map_err(|e| Error::unreadable(format!("step {step_id}'s body"), e))?;
        let StepBody::Command(command) = body else {
            return Err(
                ApiError::invalid(format!("Step {step_id} is a {} step; only command steps run.", row.kind)).into()
            );
        };
        if command.host != permit.host() {
            return Err(Error::bug(format!(
                "a permit for {} to run step {step_id} on {}",
                permit.host(),
                command.host
            )));
        }
        if let Some(seen) = request.version
            && seen != row.version
        {
            let env: Vec<(String, String)> = command.env.clone().into_iter().collect();
            let now = format!(
                "Nothing ran. It now runs on {} with {}:\n\n{}\n\nReload to read it, then run again.",
                command.host,
                domain::runs::config_label(&env),
                command.command
            );
            return Err(crate::error::stale_save(
                "command",
                row.updated_by.as_deref(),
                &crate::time::timestamp(row.updated_at),
                row.version,
                &now,
            )
            .into());
        }
        let target = self.hosts.target(&command.host).await?;
        // A failed run cancels the rest only when asked.
        let stop_on_failure = request.keep_going == Some(false);
        let who = &permit.actor().name;
        let new_runs = if command.matrix.is_empty() {
            sweep::check_plain_request(&request)?;
            plain_runs(step_id, &command, repeat, warmup, who)?
        } else {
            let (new_sweep, mut runs) = sweep::plan(step_id, &command, &request, repeat, warmup, who)?;
            let sweep = self.store.insert_sweep(&new_sweep).await?;
            for run in &mut runs {
                run.sweep_id = Some(sweep.id);
            }
            tracing::info!(step = step_id, sweep = sweep.id, host = %command.host, runs = runs.len(), "queued a sweep");
            runs
        };
        let new_runs = self.with_patches(&row.investigation_id, &command, new_runs).await?;
        let new_runs = new_runs.into_iter().map(|run| NewRun { origin, ..run }).collect();
        let runs = self.runner.insert_batch(new_runs).await?;
        tracing::info!(step = step_id, host = %command.host, runs = runs.len(), "queued runs");
        self.runner.announce(&row.investigation_id, &runs);
        self.runner.spawn_batch(row.investigation_id, runs.clone(), target, stop_on_failure);
        Ok(runs)
    }

    /// Each run's patch (its configuration's `@patch`, else the step's) in
    /// its plan, fixed now: a patch step of this investigation, on the
    /// command's host. The host must not be dirty.
    async fn with_patches(
        &self,
        investigation: &str,
        command: &domain::steps::command::CommandBody,
        mut runs: Vec<NewRun>,
    ) -> Result<Vec<NewRun>> {
        let mut found: HashMap<i64, crate::patches::arm::PlanPatch> = HashMap::new();
        let mut any = false;
        for run in &mut runs {
            let config: Option<domain::sweeps::Config> =
                run.config.as_deref().map(serde_json::from_str).transpose().context("a run's configuration")?;
            let Some(step) = config.as_ref().and_then(domain::sweeps::patch_of).unwrap_or(command.patch) else {
                continue;
            };
            any = true;
            if let std::collections::hash_map::Entry::Vacant(slot) = found.entry(step) {
                slot.insert(self.patch_for(investigation, &command.host, step).await?);
            }
            let mut plan = super::Plan::read(0, run.plan.as_deref())?;
            plan.patch = found.get(&step).cloned();
            run.plan = plan.stored();
        }
        if any {
            let dirty =
                self.store.run_patches_in(&[domain::steps::patch::ArmState::Dirty], Some(&command.host)).await?;
            if let Some(d) = dirty.first() {
                return Err(ApiError::new(
                    domain::error::ErrorCode::Conflict,
                    format!(
                        "{} is dirty: patch {} of run {} was not put back cleanly ({}). An admin restores or accepts the host first.",
                        command.host,
                        d.patch_step,
                        d.run_id,
                        d.said.as_deref().unwrap_or("unverified")
                    ),
                )
                .into());
            }
        }
        Ok(runs)
    }

    async fn patch_for(&self, investigation: &str, host: &str, step: i64) -> Result<crate::patches::arm::PlanPatch> {
        let not_one = || ApiError::invalid(format!("There is no patch step {step} in this investigation."));
        let row = self.store.step(step).await?.filter(|s| s.investigation_id == investigation).ok_or_else(not_one)?;
        let body = crate::steps::from_stored(row.kind, &row.body)
            .map_err(|e| Error::unreadable(format!("step {step}'s body"), e))?;
        let StepBody::Patch(patch) = body else { return Err(not_one().into()) };
        if patch.host != host {
            return Err(ApiError::invalid(format!(
                "Patch {step} changes files on {}; the command runs on {host}.",
                patch.host
            ))
            .into());
        }
        Ok(crate::patches::arm::PlanPatch {
            step,
            diff: patch.diff,
            files: patch.files,
            caches: patch.caches,
            expect: patch.expect,
        })
    }

    /// The GPUs' telemetry during a run.
    pub async fn telemetry(&self, permit: &Permit<Read>, id: i64) -> Result<domain::telemetry::Telemetry> {
        let found = self.run(permit, id).await?;
        crate::telemetry::of_run(&self.store, id, found.telemetry).await
    }

    /// The engine's series and notes during a run.
    pub async fn engine(&self, permit: &Permit<Read>, id: i64) -> Result<domain::engine::series::EngineSeries> {
        self.row(permit, id).await?;
        crate::engine::series(&self.store, id).await
    }

    /// Up to `bytes` of a run's output ending at `before`, as HTML, from a line start.
    pub async fn output_before(&self, permit: &Permit<Read>, id: i64, before: u64, bytes: u64) -> Result<OutputTail> {
        self.row(permit, id).await?;
        let mut earlier =
            window(self.outputs(), id, OutputKey::Run(id), before, bytes.clamp(1, 1024 * 1024), usize::MAX)
                .await
                .context(format!("reading the output of run {id}"))?;
        for_reader(permit.role(), &mut earlier.html);
        Ok(earlier)
    }

    /// The raw output (the run's own, or its server's log): all of it (a
    /// stream), or `limit` bytes from `offset`.
    pub async fn output(
        &self,
        permit: &Permit<Read>,
        id: i64,
        which: Which,
        offset: u64,
        limit: Option<u64>,
    ) -> Result<Output> {
        self.row(permit, id).await?;
        let key = self.key(id, which).await?;
        let len = self.outputs().len(key).await.context(format!("reading the output length of run {id}"))?;
        if limit.is_none() && offset == 0 {
            return Ok(Output::Whole(Box::pin(self.outputs().whole(key)), len));
        }
        let limit = limit.unwrap_or(1024 * 1024).min(16 * 1024 * 1024);
        let (bytes, len) =
            self.outputs().read_range(key, offset, limit).await.context(format!("reading the output of run {id}"))?;
        Ok(Output::Range(bytes, len))
    }

    /// The run's output (or its server's log) from `offset` as SSE frames,
    /// live while it runs (`runs::feed`); with `offsets_only`, frames that
    /// say only how far it has got (`Feeds::lengths`).
    pub async fn follow(
        &self,
        permit: &Permit<Read>,
        id: i64,
        which: Which,
        offset: u64,
        offsets_only: bool,
    ) -> Result<futures::stream::BoxStream<'static, Bytes>> {
        use futures::StreamExt;
        let run = self.run(permit, id).await?;
        let key = self.key(id, which).await?;
        if offsets_only {
            return Ok(self.runner.follow(key, id, offset, run.status, true).await);
        }
        let frames = self.runner.follow(key, id, offset, run.status, false).await;
        // The frames are rendered once for every viewer; a reader who may not
        // run gets the references in them unlinked.
        let role = permit.role();
        Ok(frames
            .map(move |frame| {
                if role >= crate::policy::Role::Runner {
                    return frame;
                }
                let mut text = String::from_utf8_lossy(&frame).into_owned();
                for_reader(role, &mut text);
                Bytes::from(text)
            })
            .boxed())
    }

    /// The investigation's runs fingerprint (`domain::runs::runs_fingerprint`), from the rows alone.
    pub async fn fingerprint(&self, permit: &Permit<Read>) -> Result<u64> {
        let investigation = permit.investigation();
        if self.store.investigation(investigation).await?.is_none() {
            return Err(crate::investigations::not_found(investigation).into());
        }
        let runs: Vec<Run> = self
            .store
            .runs_of_investigation(investigation)
            .await?
            .into_iter()
            .map(run_from_row)
            .collect::<Result<_>>()?;
        Ok(domain::runs::runs_fingerprint(&runs))
    }

    /// The run with its measurements (none until it has finished) and, once
    /// it has, its guards.
    pub async fn run(&self, permit: &Permit<Read>, id: i64) -> Result<Run> {
        let mut run = self.detail(permit, id).await?;
        if run.status.is_finished() {
            let runs = self.step_runs(run.step_id).await?;
            run.guards = self.guards_of(permit, &run, &runs).await?;
        }
        Ok(run)
    }

    /// The step's runs, oldest first.
    async fn step_runs(&self, step: i64) -> Result<Vec<Run>> {
        self.store.runs_of_step(step).await?.into_iter().map(run_from_row).collect()
    }

    /// The run with its files, patch, reports and measurements.
    async fn detail(&self, permit: &Permit<Read>, id: i64) -> Result<Run> {
        let mut run = run_from_row(self.row(permit, id).await?)?;
        run.artifacts = self.logs_of(&[id]).await.0.remove(&id).unwrap_or_default();
        run.patch = self.store.run_patches_of(&[id]).await?.first().map(crate::patches::arm::shown).transpose()?;
        run.reports = self
            .store
            .reports_of_runs(&[id])
            .await?
            .into_iter()
            .map(|r| super::report_of(r, true))
            .collect::<Result<_>>()?;
        if run.status.is_finished() {
            let found = self.store.measurements_of_runs(&[id]).await?.iter().map(crate::metrics::value_of).collect();
            (run.measurements, run.other_sources) = domain::metrics::split_one_each(found);
        }
        Ok(run)
    }

    /// A finished run's guards, judged with the other finished runs of its
    /// step and configuration (the [`GUARD_SIBLINGS`] nearest it), on the
    /// metric its step is read by (output throughput where it has it, else
    /// its first).
    /// `step_runs`: its step's runs, as the caller has them.
    async fn guards_of(
        &self,
        permit: &Permit<Read>,
        run: &Run,
        step_runs: &[Run],
    ) -> Result<Vec<domain::guards::Guard>> {
        let config = run.config_label();
        let mut siblings: Vec<&Run> =
            step_runs.iter().filter(|r| r.status.is_finished() && r.config_label() == config).collect();
        // The nearest runs of its configuration are what its guards compare it
        // with: a step of ten thousand runs is not read whole for one page.
        siblings.sort_by_key(|r| r.id.abs_diff(run.id));
        siblings.truncate(GUARD_SIBLINGS);
        let ids: Vec<i64> = siblings.iter().map(|r| r.id).collect();
        let mut measured: HashMap<i64, Vec<domain::metrics::Measurement>> = HashMap::new();
        for row in self.store.measurements_of_runs(&ids).await? {
            if let Some(id) = row.run_id {
                measured.entry(id).or_default().push(crate::metrics::value_of(&row));
            }
        }
        let metric = run
            .measurements
            .iter()
            .find(|m| m.metric == crate::metrics::frontier::MAXIMIZE && m.key.is_none())
            .or(run.measurements.first())
            .map(|m| (m.metric.clone(), m.key.clone()));
        let empty = Vec::new();
        let hosts = crate::facts::links_of_runs(&self.store, siblings.iter().copied().chain([run])).await?;
        let facts = |r: &Run| {
            let ms = measured.get(&r.id).unwrap_or(&empty);
            domain::guards::RunFacts {
                id: r.id,
                measurements: ms,
                value: metric
                    .as_ref()
                    .and_then(|(name, key)| ms.iter().find(|m| &m.metric == name && &m.key == key).map(|m| m.value)),
                server: r.server.as_ref().map(|s| s.started_by(r.id)),
                warmup: r.warmup,
                collective: domain::guards::collective(&r.command, &r.env),
                host: r.facts_id.and_then(|id| hosts.get(&id)),
            }
        };
        let all: Vec<domain::guards::RunFacts<'_>> = siblings.iter().map(|r| facts(r)).collect();
        let own = all.iter().find(|f| f.id == run.id).cloned().unwrap_or_else(|| facts(run));
        let (bounds, _) = crate::metrics::guard_bounds_of(&self.store, permit.investigation()).await?;
        Ok(domain::guards::of_run(&own, &all, &bounds))
    }

    /// The run as its page shows it: the end of its output and of its
    /// server's log, its telemetry drawn, its files, and its step's runs.
    pub async fn page(&self, permit: &Permit<Read>, id: i64) -> Result<domain::run_pages::RunPage> {
        let (mut page, _) = self.placed(permit, id).await?;
        let (run, outputs) = (&mut page.run, self.outputs());
        let mut output = tail(outputs, id, OutputKey::Run(id), TAIL_BYTES).await.context("reading the run's output")?;
        for_reader(permit.role(), &mut output.html);
        run.tail = Some(output);
        if let Some(log) = self.logs_of(&[id]).await.1.get(&id) {
            let mut log =
                tail(outputs, id, OutputKey::Log(*log), TAIL_BYTES).await.context("reading the server's log")?;
            for_reader(permit.role(), &mut log.html);
            run.server_tail = Some(log);
        }
        // On a kept server, this run's log is its window of the server's life:
        // the start-up is in the log of the run that started it.
        if let Some(started_by) = run.server.as_ref().and_then(|s| s.started_by_run).filter(|by| *by != id)
            && self.row(permit, started_by).await.is_ok()
            && let Some(log) = self.logs_of(&[started_by]).await.1.get(&started_by)
        {
            match tail(outputs, started_by, OutputKey::Log(*log), TAIL_BYTES).await {
                Ok(mut before) => {
                    for_reader(permit.role(), &mut before.html);
                    run.server_before = Some(domain::runs::ServerLogBefore { run: started_by, tail: before });
                }
                Err(e) => tracing::error!(run = id, started_by, "cannot read the kept server's log: {e}"),
            }
        }
        if run.telemetry && run.status.is_finished() {
            run.telemetry_svg = self.store.telemetry_svg(id).await?.filter(|svg| !svg.is_empty());
            if let Some((_, Some(notes))) = self.store.telemetry_info(id).await? {
                run.telemetry_notes = stored(&notes, || format!("run {id}'s telemetry notes"))?;
            }
        }
        if run.status.is_finished() {
            let sampled = run.telemetry;
            page.engine = super::engine_view::view(&self.store, id, sampled).await?;
        }
        Ok(page)
    }

    /// The run with its measurements and files, where it stands (its
    /// investigation, step and the step's runs, also returned whole); no
    /// output read.
    async fn placed(&self, permit: &Permit<Read>, id: i64) -> Result<(domain::run_pages::RunPage, Vec<Run>)> {
        // The step's runs are read once: for its list of them and the run's guards.
        let mut run = self.detail(permit, id).await?;
        let step = self.store.step(run.step_id).await?.ok_or_else(|| not_found(id))?;
        let investigation = self.store.investigation(&step.investigation_id).await?.ok_or_else(|| not_found(id))?;
        let runs = self.step_runs(run.step_id).await?;
        if run.status.is_finished() {
            run.guards = self.guards_of(permit, &run, &runs).await?;
        }
        let page = domain::run_pages::RunPage {
            run,
            investigation_title: investigation.title,
            investigation_id: step.investigation_id,
            step_position: u32::try_from(step.position).unwrap_or(0),
            runs: runs.iter().map(domain::run_pages::RunLink::of).collect(),
            facts: None,
            abilities: permit.abilities(),
            engine: None,
        };
        Ok((page, runs))
    }

    /// The run as a comparison needs it (no output), and its configuration's repeats.
    pub async fn side(&self, permit: &Permit<Read>, id: i64) -> Result<super::compare::Side> {
        let (page, runs) = self.placed(permit, id).await?;
        let config = page.run.config_label();
        // A watch's runs are not the experiment's repeats (unless this run is one).
        let watching = page.run.origin.is_watch();
        let repeats: Vec<i64> = runs
            .iter()
            .filter(|r| r.status == RunStatus::Succeeded && !r.warmup && r.config_label() == config)
            .filter(|r| watching || !r.origin.is_watch() || r.id == page.run.id)
            .map(|r| r.id)
            .collect();
        let mut by_run: HashMap<i64, Vec<domain::metrics::Measurement>> = HashMap::new();
        for row in self.store.measurements_of_runs(&repeats).await? {
            if let Some(run) = row.run_id {
                by_run.entry(run).or_default().push(crate::metrics::value_of(&row));
            }
        }
        let mut repeat_values: HashMap<super::compare::MetricKey, Vec<f64>> = HashMap::new();
        for found in by_run.values() {
            for (key, m) in super::compare::one_each(found) {
                repeat_values.entry(key).or_default().push(m.value);
            }
        }
        let mut samples: Vec<(String, String, Vec<f64>)> = Vec::new();
        let sampled = self.store.sampled_metrics(&[id]).await?;
        let mut metrics: Vec<&str> = Vec::new();
        for (_, metric, _, _) in &sampled {
            if !metrics.contains(&metric.as_str()) {
                metrics.push(metric);
            }
        }
        for metric in metrics {
            let rows = self.store.samples_of_runs(&[id], metric).await?;
            if let Some(row) = rows.iter().find(|r| r.key.is_none()).or(rows.first()) {
                samples.push((row.metric.clone(), row.unit.clone(), row.values()));
            }
        }
        let telemetry = crate::telemetry::of_run(&self.store, id, page.run.telemetry).await?;
        Ok(super::compare::Side { page, repeats, repeat_values, samples, telemetry })
    }

    /// The run once it has finished (measurements recorded: the runner
    /// announces the end after them), or as it is when `within` is over.
    pub async fn wait(&self, permit: &Permit<Read>, id: i64, within: std::time::Duration) -> Result<Run> {
        let deadline = tokio::time::Instant::now() + within;
        // Subscribed before reading, so an end between the two is not missed.
        let mut events = self.runner.events();
        let mut run = self.run(permit, id).await?;
        // What follows the end (its telemetry's notes and chart) is stored
        // just after it: waited for too, a few seconds at most (a run ended
        // by another replica or a restart never gets it).
        let mut deadline = deadline;
        let (mut ended_seen, mut whole) = (false, true);
        let told = |run: &Run| run.status.is_finished() && (!run.telemetry || run.telemetry_drawn);
        while !told(&run) {
            if run.status.is_finished() && !ended_seen {
                ended_seen = true;
                deadline = deadline.min(tokio::time::Instant::now() + std::time::Duration::from_secs(5));
            }
            match tokio::time::timeout_at(deadline, events.recv()).await {
                Err(_) => break,
                // The event's run says where it is (its status, its chart);
                // the answer is read whole once, at the end.
                Ok(Ok(event)) if event.run.id == id => (run, whole) = (event.run, false),
                Ok(Ok(_)) => {}
                Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => {
                    (run, whole) = (self.run(permit, id).await?, true);
                }
                // The server is shutting down: answer with what is known.
                Ok(Err(tokio::sync::broadcast::error::RecvError::Closed)) => break,
            }
        }
        if !whole {
            run = self.run(permit, id).await?;
        }
        Ok(run)
    }

    pub async fn cancel(&self, permit: &Permit<RunRight>, id: i64) -> Result<Run> {
        let read = permit.read();
        let run = self.run(&read, id).await?;
        if run.status.is_finished() {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                format!("Run {id} has already finished ({}).", run.status.as_str()),
            )
            .into());
        }
        self.runner.cancel(permit.investigation(), id).await?;
        // A running run finishes once the host has reacted; wait briefly so the
        // answer usually shows the end state.
        for _ in 0..50 {
            let run = self.run(&read, id).await?;
            if run.status.is_finished() {
                return Ok(run);
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        self.run(&read, id).await
    }

    /// A sweep and how far it got.
    pub async fn sweep(&self, permit: &Permit<Read>, id: i64) -> Result<domain::sweeps::Sweep> {
        let row = self.store.sweep(id).await?.ok_or_else(|| sweep::not_found(id))?;
        if self.store.investigation_of(crate::db::OwnedBy::Sweep, id).await?.as_deref() != Some(permit.investigation())
        {
            return Err(sweep::not_found(id).into());
        }
        let runs: Vec<Run> =
            self.store.runs_of_sweep(id).await?.into_iter().map(run_from_row).collect::<Result<_>>()?;
        Ok(sweep::view(row, &runs))
    }

    /// Cancels a sweep's runs that have not finished: the queued first, so none
    /// starts while the running one stops.
    pub async fn cancel_sweep(&self, permit: &Permit<RunRight>, id: i64) -> Result<domain::sweeps::Sweep> {
        self.sweep(&permit.read(), id).await?;
        let runs: Vec<Run> =
            self.store.runs_of_sweep(id).await?.into_iter().map(run_from_row).collect::<Result<_>>()?;
        for run in runs.iter().filter(|r| r.status == RunStatus::Queued) {
            self.runner.cancel(permit.investigation(), run.id).await?;
        }
        for run in runs.iter().filter(|r| r.status == RunStatus::Running) {
            self.runner.cancel(permit.investigation(), run.id).await?;
        }
        tracing::info!(sweep = id, "sweep cancelled");
        self.sweep(&permit.read(), id).await
    }
}

/// The runs of a plain command (no matrix): warm-ups, then the measured runs.
fn plain_runs(
    step_id: i64,
    command: &domain::steps::command::CommandBody,
    repeat: u32,
    warmup: u32,
    who: &str,
) -> Result<Vec<NewRun>> {
    let env: Vec<(String, String)> = command.env.clone().into_iter().collect();
    let env_json = serde_json::to_string(&env).context("a run's environment as JSON")?;
    let total = warmup + repeat;
    Ok((1..=total)
        .map(|i| NewRun {
            step_id,
            host: command.host.clone(),
            command: command.command.clone(),
            env: env_json.clone(),
            cwd: command.cwd.clone(),
            timeout_s: command.timeout_s.and_then(|t| i64::try_from(t).ok()),
            // Warm-ups are numbered apart from the measured runs: "warm-up 1/2", "run 3/10".
            batch_index: i64::from(if i <= warmup { i } else { i - warmup }),
            batch_size: i64::from(if i <= warmup { warmup } else { repeat }),
            warmup: i <= warmup,
            who: Some(who.to_string()),
            config: None,
            sweep_id: None,
            sweep_index: None,
            telemetry: command.telemetry,
            plan: super::Plan::of(command, str::to_string).stored(),
            origin: domain::runs::RunOrigin::Person,
        })
        .collect())
}
