//! The life of a run:
//!
//! `queued` → `running` (a channel on the host's pooled connection is open and the
//! command was sent) → one of `succeeded` (exit 0), `failed` (other exit code or a
//! signal), `cancelled` (someone pressed Cancel: SIGINT, then SIGKILL and close
//! after a grace period), `timed_out` (the step's timeout, same treatment), `lost`
//! (the connection dropped before the command reported an exit; output so far is
//! kept), or, found at server start, `interrupted`.
//!
//! A batch ("repeat N (+W warm-up)") runs its runs one after another, so they do
//! not disturb each other's measurements; separate batches run concurrently, and
//! the pool queues channels beyond the host's session limit.

use super::beside::{Beside, Kept, Servers};
use super::feed::Feeds;
use super::life::{Context, Deadline, OwnedEnd, Stop, cancel_requested, publish};
use super::live::{Live, RunEvent};
use super::sink::{Sink, Space};
use super::{Plan, run_from_row};
use crate::db::{NewAudit, NewRun, RunEnd, Store};
use crate::output::{OutputKey, Outputs, Stream};
use crate::ssh::exec::{self, Event, Exit};
use crate::ssh::{Pool, Target, quote};
use domain::runs::{Run, RunStatus};
use russh::Sig;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Between SIGINT and SIGKILL + close, for cancel and timeout.
pub const GRACE: Duration = Duration::from_secs(3);
/// How long a stopped run waits for the host to say its processes were killed.
const KILL_WITHIN: Duration = Duration::from_secs(5);
/// How often counters are written to the store while a run goes.
const COUNT_INTERVAL: Duration = Duration::from_millis(500);
/// How often new output is flushed to disk and announced to live readers. Not
/// per SSH packet: at 32 KB a packet, that was a syscall pair per packet and
/// halved the ingest rate.
const FLUSH_INTERVAL: Duration = Duration::from_millis(40);
/// How often a running run looks at how long its host has been silent, and
/// from how long on its page says so.
const QUIET_CHECK: Duration = Duration::from_secs(5);
const QUIET_AFTER: Duration = Duration::from_secs(15);
/// How long a run waits for its engine's first scrape before it starts anyway.
const FIRST_SCRAPE_WITHIN: Duration = Duration::from_secs(3);

pub struct Runner {
    store: Store,
    pool: Arc<Pool>,
    live: Arc<Live>,
    outputs: Outputs,
    /// Cancel switches of runs that are queued or running here.
    cancels: Mutex<HashMap<i64, watch::Sender<bool>>>,
    /// One day's-first facts capture at a time, so batches started together
    /// capture once.
    facts_capture: tokio::sync::Mutex<()>,
    /// Live output, rendered once per chunk for all its viewers.
    feeds: Arc<Feeds>,
    /// The search index, told what ended.
    search: Arc<crate::search::Index>,
    /// Runs this replica is driving now (the indexer holds back while there are any).
    driving: Arc<std::sync::atomic::AtomicUsize>,
    /// The servers beside runs.
    servers: Servers,
    /// Set on SIGTERM: no new runs start here (see [`Runner::drain`]).
    draining: std::sync::atomic::AtomicBool,
    /// Where run output is written on this machine, and how much room new
    /// runs need there (`--min-free`); none when output goes to PostgreSQL.
    floor: Option<(std::path::PathBuf, crate::operations::MinFree, bool)>,
    /// One GPU sampler per host, shared by its runs.
    samplers: crate::telemetry::Samplers,
    /// What runs leave on hosts, cleaned.
    retention: Arc<super::retention::Retention>,
    /// A patched run holds its host alone (`patches::gate`).
    gates: crate::patches::gate::Gates,
}

/// Counts a run as driven while it lives.
struct Driving(Arc<std::sync::atomic::AtomicUsize>);

impl Driving {
    fn start(count: &Arc<std::sync::atomic::AtomicUsize>) -> Self {
        count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Self(count.clone())
    }
}

impl Drop for Driving {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Runner {
    /// `search`: keep the search index (see `crate::search`).
    /// `search`: whether to keep the search index (its indexer holds back
    /// while this runner drives runs); [`Runner::index`] is it.
    pub fn new(store: Store, pool: Arc<Pool>, live: Arc<Live>, outputs: Outputs, search: bool) -> Self {
        let feeds = Arc::new(Feeds::new(outputs.clone(), live.clone(), store.clone()));
        let driving = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let search = if search {
            crate::search::Index::start(store.clone(), outputs.clone(), driving.clone())
        } else {
            crate::search::Index::off()
        };
        let samplers = crate::telemetry::Samplers::new(pool.clone(), store.clone(), crate::telemetry::sampler::LINGER);
        Self {
            samplers,
            retention: super::retention::Retention::new(store.clone(), pool.clone()),
            servers: Servers::new(store.clone(), pool.clone(), live.clone(), outputs.clone()),
            search,
            driving,
            store,
            pool,
            live,
            outputs,
            cancels: Mutex::new(HashMap::new()),
            facts_capture: Default::default(),
            feeds,
            draining: Default::default(),
            floor: None,
            gates: Default::default(),
        }
    }

    /// New runs need `min` free under the output directory (`None`: the
    /// default floor), when output is kept in files.
    pub fn with_floor(mut self, min: Option<crate::operations::MinFree>) -> Self {
        if let Outputs::Files(dir) = &self.outputs {
            self.floor = Some((dir.clone(), min.unwrap_or_default(), min.is_none()));
        }
        self
    }

    /// A host's GPU sampler stays this long after its last run (`None`: the default).
    pub fn with_telemetry_linger(mut self, linger: Option<Duration>) -> Self {
        if let Some(linger) = linger {
            self.samplers = crate::telemetry::Samplers::new(self.pool.clone(), self.store.clone(), linger);
        }
        self
    }

    /// Where output is kept in files: the disk's place, its free bytes, its
    /// size, and the floor new runs need.
    pub fn floor(&self) -> Option<(std::path::PathBuf, u64, u64, u64)> {
        let (dir, min, default) = self.floor.as_ref()?;
        // The output dir is made with the first run; its disk is its parent's.
        let at = dir.ancestors().find(|d| d.exists()).unwrap_or(dir);
        let (free, size) = crate::operations::space(at)?;
        Some((at.to_path_buf(), free, size, min.bytes(size, *default)))
    }

    /// Where half the free-space floor is all that is left: that half is kept
    /// for the notebook itself (runs' ends, everyone's edits), so a running
    /// run stops storing its output there. `(where, free, floor)`.
    /// `pending`: bytes the run has yet to write there.
    fn short_of_space(&self, pending: u64) -> Space {
        let Some((at, free, _, floor)) = self.floor() else { return Space::Room(u64::MAX) };
        let free = free.saturating_sub(pending);
        if free < floor / 2 { Space::Short((at, free, floor)) } else { Space::Room(free - floor / 2) }
    }

    /// Refuses new runs below the free-space floor, before the disk is full.
    pub fn room_for_runs(&self) -> Result<(), domain::error::ApiError> {
        let Some((at, free, _, floor)) = self.floor() else { return Ok(()) };
        if free >= floor {
            return Ok(());
        }
        Err(domain::error::ApiError::new(
            domain::error::ErrorCode::StoreFull,
            format!(
                "The data disk has {} free in {}, under the floor of {} (--min-free): no new runs start until space \
                 is freed or the floor lowered. Reading works.",
                domain::runs::human_bytes(free),
                at.display(),
                domain::runs::human_bytes(floor)
            ),
        ))
    }

    /// Whether this server is shutting down (it takes no new runs).
    pub fn draining(&self) -> bool {
        self.draining.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A deploy's SIGTERM: takes no new runs, lets the running ones finish for
    /// up to `grace`, then ends what is left here — running or still queued —
    /// `interrupted` with the reason, their output up to then kept. Returns
    /// how many it had to end.
    pub async fn drain(&self, grace: std::time::Duration) -> usize {
        self.draining.store(true, std::sync::atomic::Ordering::Relaxed);
        let started = tokio::time::Instant::now();
        let left = || self.cancels.lock().unwrap_or_else(|e| e.into_inner()).keys().copied().collect::<Vec<i64>>();
        let mut said = tokio::time::Instant::now() - std::time::Duration::from_secs(60);
        loop {
            // Queued runs do not start any more: only running ones are waited for.
            let running = self.driving.load(std::sync::atomic::Ordering::Relaxed);
            if running == 0 || started.elapsed() >= grace {
                break;
            }
            if said.elapsed() >= std::time::Duration::from_secs(5) {
                let (waited, grace) = (started.elapsed().as_secs(), grace.as_secs());
                tracing::info!("shutting down: waiting for {running} runs to end ({waited} s of {grace} s)");
                said = tokio::time::Instant::now();
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        let reason = format!(
            "The Sleuth server was stopped (SIGTERM) and this run had not ended within its {} s grace period; \
             the output up to then is kept. Run it again.",
            grace.as_secs()
        );
        let mut ended = 0;
        for run in left() {
            let end = crate::db::RunEnd {
                status: RunStatus::Interrupted,
                exit_code: None,
                exit_signal: None,
                error: Some(&reason),
            };
            match self.store.finish_run(run, &end).await {
                Ok(true) => {
                    ended += 1;
                    if let Ok(Some(investigation)) = self.store.run_investigation(run).await {
                        self.publish(&investigation, run).await;
                    }
                }
                Ok(false) => {}
                Err(e) => tracing::error!(run, "cannot end the run at shutdown: {e}"),
            }
        }
        ended
    }

    /// The search index this runner tells what ended (the notebook tells it what changed).
    pub fn index(&self) -> Arc<crate::search::Index> {
        self.search.clone()
    }

    /// Tells the viewers of `investigation` that these runs are queued.
    pub fn announce(&self, investigation: &str, runs: &[Run]) {
        for run in runs {
            self.live.publish(RunEvent::new(investigation, run.clone()));
        }
    }

    /// A run's output (or a log of it) from `offset` as it comes, in frames
    /// rendered once for every viewer; `lengths_only`: only how long it is.
    pub async fn follow(
        &self,
        key: OutputKey,
        run: i64,
        offset: u64,
        status: RunStatus,
        lengths_only: bool,
    ) -> futures::stream::BoxStream<'static, bytes::Bytes> {
        use futures::StreamExt;
        match lengths_only {
            true => self.feeds.lengths(key, run, offset, status).await.boxed(),
            false => self.feeds.follow(key, run, offset, status).await.boxed(),
        }
    }

    /// Every run event from now on (a run's end, its new state).
    pub fn events(&self) -> tokio::sync::broadcast::Receiver<RunEvent> {
        self.live.subscribe()
    }

    /// Queues `runs` (already inserted as `queued`) and executes them in order;
    /// with `stop_on_failure`, a run that does not succeed cancels the rest.
    pub fn spawn_batch(self: &Arc<Self>, investigation: String, runs: Vec<Run>, target: Target, stop_on_failure: bool) {
        for run in &runs {
            let (tx, _) = watch::channel(false);
            self.cancels.lock().unwrap_or_else(|e| e.into_inner()).insert(run.id, tx);
        }
        let runner = self.clone();
        tokio::spawn(async move {
            {
                let _one = runner.facts_capture.lock().await;
                crate::facts::capture_if_stale(&runner.store, &runner.pool, &target).await;
            }
            let mut failed: Option<i64> = None;
            // A server kept for the next run of its configuration (`reuse: config`).
            let mut kept: Option<Kept> = None;
            let planned = runner.servers.planned(&runs).await;
            for (i, run) in runs.into_iter().enumerate() {
                let next = planned.get(i + 1).and_then(|(identity, _)| identity.clone());
                let patch = planned.get(i).and_then(|(_, patch)| *patch);
                if runner.draining() {
                    // Left for `drain` to end with the reason.
                    continue;
                }
                if let Some(first) = failed {
                    let reason =
                        format!("Not run: run {first} before it did not succeed, and the batch stops at a failure.");
                    if let Ok(true) = runner.store.cancel_queued_run_because(run.id, &reason).await {
                        runner.publish(&investigation, run.id).await;
                    }
                } else {
                    kept = runner.execute(&investigation, run.id, &target, kept, next, patch).await;
                    let ended = runner.store.run(run.id).await.ok().flatten().map(|r| r.status);
                    if stop_on_failure && ended.is_some_and(|s| s != RunStatus::Succeeded && s != RunStatus::Cancelled)
                    {
                        failed = Some(run.id);
                    }
                }
                runner.cancels.lock().unwrap_or_else(|e| e.into_inner()).remove(&run.id);
            }
            if let Some(kept) = kept {
                runner.servers.stop_kept(kept, &target).await;
            }
        });
    }

    /// Cancels a queued or running run. `false` if it had already finished.
    pub async fn cancel(&self, investigation: &str, run_id: i64) -> crate::db::StoreResult<bool> {
        let switch = self.cancels.lock().unwrap_or_else(|e| e.into_inner()).get(&run_id).cloned();
        // A queued run is finished right here; a running one by its task.
        let was_queued = self.store.cancel_queued_run(run_id).await?;
        if was_queued {
            self.publish(investigation, run_id).await;
        }
        match switch {
            Some(tx) => {
                let _ = tx.send(true);
                Ok(true)
            }
            None => Ok(was_queued),
        }
    }

    pub async fn insert_batch(&self, new_runs: Vec<NewRun>) -> crate::error::Result<Vec<Run>> {
        let mut runs: Vec<Run> = Vec::with_capacity(new_runs.len());
        for new in &new_runs {
            let launch = runs.first().map(|first| first.id);
            runs.push(run_from_row(self.store.insert_run(new, launch).await?)?);
        }
        Ok(runs)
    }

    /// On a shared database: renews this replica's lease every
    /// [`LEASE_RENEW`](crate::db::LEASE_RENEW) and ends the runs of replicas
    /// whose lease expired, telling their viewers. Runs until the server stops.
    pub fn spawn_leases(self: &Arc<Self>) {
        let runner = self.clone();
        tokio::spawn(async move {
            let closed = runner.live.closed();
            tokio::pin!(closed);
            let mut judge = crate::db::LeaseJudge::default();
            loop {
                let renewed = runner.store.renew_lease().await;
                if let Err(e) = &renewed {
                    tracing::error!("cannot renew the replica lease: {e}");
                    if e.trouble() == crate::db::Trouble::Unavailable {
                        runner.store.note_unreachable();
                    }
                }
                judge.renewed(renewed.is_ok(), std::time::Instant::now());
                if renewed.is_ok() {
                    runner.store.note_reachable();
                }
                // Output a run held for the store and left when it stayed away.
                if let Some(dir) = runner.outputs.held_dir() {
                    crate::output::held::replay(&runner.store, dir, false).await;
                }
                // After the database was away, live replicas' leases lapsed too.
                if judge.may_judge_others(std::time::Instant::now()) {
                    match runner.store.interrupt_runs_of_dead_replicas().await {
                        Ok(ended) => {
                            for (investigation, run) in &ended {
                                tracing::warn!(run, "the replica driving this run stopped: now `interrupted`");
                                runner.publish(investigation, *run).await;
                                // Its driver would have indexed it at the end; this replica does.
                                runner.search.run_ended(*run);
                            }
                            if !ended.is_empty() {
                                // Their servers, if any, are this replica's to stop.
                                runner.stop_orphans().await;
                            }
                        }
                        Err(e) => tracing::error!("cannot look for runs of stopped replicas: {e}"),
                    }
                    match runner.store.release_index_claims_of_dead_replicas().await {
                        Ok(released) => {
                            for run in released {
                                tracing::warn!(run, "the replica indexing this run's output stopped: indexing it here");
                                runner.search.run_ended(run);
                            }
                        }
                        Err(e) => tracing::error!("cannot look for index claims of stopped replicas: {e}"),
                    }
                }
                runner.live.repeat_viewers();
                tokio::select! {
                    () = tokio::time::sleep(crate::db::LEASE_RENEW) => {}
                    () = &mut closed => break,
                }
            }
            if let Err(e) = runner.store.release_lease().await {
                tracing::error!("cannot release the replica lease: {e}");
            }
        });
    }

    async fn publish(&self, investigation: &str, run_id: i64) {
        publish(&self.store, &self.live, investigation, run_id).await;
    }

    /// Stops the servers that runs left running when their Sleuth (or
    /// replica) stopped before it could (`Servers::stop_orphans`).
    pub async fn stop_orphans(&self) {
        self.servers.stop_orphans().await;
        // After their servers: what ran with a patch loaded is stopped first.
        crate::patches::arm::recover(&self.store, &self.pool).await;
        for (investigation, run) in self.retention.stop_clients_left().await {
            self.publish(&investigation, run).await;
        }
    }

    /// Removes deleted runs' directories on their hosts (`(host, run_dir)`),
    /// once their cancelled commands have had time to stop.
    pub fn remove_run_dirs(&self, runs: Vec<(String, String)>, any_running: bool) {
        let wait = if any_running { GRACE + Duration::from_secs(2) } else { Duration::ZERO };
        self.retention.remove_deleted(runs, wait);
    }

    /// Runs one run of a batch; `kept`: a server an earlier run of its
    /// configuration left running, `next`: the identity of the next run's
    /// server, `patch`: the patch step it runs with (its turn on the host
    /// waits on that). Returns the server to keep for the next run, if any.
    async fn execute(
        &self,
        investigation: &str,
        run_id: i64,
        target: &Target,
        kept: Option<Kept>,
        next: Option<String>,
        patch: Option<i64>,
    ) -> Option<Kept> {
        let _turn = match self.gates.try_enter(&target.name, run_id, patch) {
            Ok(turn) => turn,
            Err(why) => {
                // Said on the queued run until it starts (`start_run` clears it).
                tracing::info!(run = run_id, host = %target.name, "{why}");
                if let Err(e) = self.store.set_run_waiting(run_id, Some(&why.0)).await {
                    tracing::error!(run = run_id, "cannot record what the run waits for: {e}");
                }
                self.publish(investigation, run_id).await;
                self.gates.enter(&target.name, run_id, patch).await
            }
        };
        let _claim = self.claim_host(investigation, run_id, target, patch).await;
        let Some((mut cancelled, run, plan, dir)) = self.begin(investigation, run_id).await else {
            return self.servers.stop_if_kept(kept, target).await;
        };
        let progress = self.live.start(run_id);
        self.publish(investigation, run_id).await;
        crate::audit::record(&self.store, audit_entry(&run, "run.start", run.cwd.as_ref().map(|c| format!("in {c}"))))
            .await;
        let driving = Driving::start(&self.driving);
        let context = Context { investigation, run: &run, plan: &plan, target, dir: &dir };
        let (end, keep) = match self.apply_patch(&context).await {
            Err(end) => (end, self.servers.stop_if_kept(kept, target).await),
            Ok(applied) => {
                let driven = self.drive(&context, &mut cancelled, &progress, kept, next).await;
                if let Some(applied) = applied {
                    self.revert_patch(&context, &applied).await;
                }
                driven
            }
        };
        crate::audit::record(&self.store, audit_entry(&run, "run.end", Some(end.describe()))).await;
        // Before the run is marked finished, so whoever sees it finished sees its numbers.
        match crate::metrics::record::for_run(&self.store, &self.outputs, investigation, run_id).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(run = run_id, "{n} measurements"),
            Err(e) => tracing::error!(run = run_id, "cannot extract measurements: {e}"),
        }
        self.record_end(run_id, &end).await;
        self.live.finish(run_id);
        // Only now: a shutdown waiting for runs to end must not take this one
        // for unfinished while its end is being recorded.
        drop(driving);
        tracing::info!(run = run_id, host = %target.name, status = end.status.as_str(), "run finished");
        self.search.run_ended(run_id);
        self.publish(investigation, run_id).await;
        if let Some(sampled) = end.telemetry {
            self.telemetry_after(investigation, run_id, sampled);
        }
        self.retention.after_run(target);
        keep
    }

    /// The host's turn across replicas (PostgreSQL; `crate::db::HostClaim`),
    /// once this process's gate gave it: waited for, saying what for. `None`
    /// where there is nothing to hold (SQLite) or the database would not say
    /// (logged; the process's own gate still holds).
    async fn claim_host(
        &self,
        investigation: &str,
        run_id: i64,
        target: &Target,
        patch: Option<i64>,
    ) -> Option<crate::db::HostClaim> {
        let failed = |e: crate::db::StoreError| {
            tracing::error!(run = run_id, host = %target.name, "cannot take the host's turn across replicas: {e}");
        };
        let mut claim = self.store.host_claim(&target.name).await.map_err(failed).ok()?;
        let mut said = false;
        loop {
            if claim.try_take(patch.is_some()).await.map_err(failed).ok()? {
                return Some(claim);
            }
            if !said {
                said = true;
                let states = [domain::steps::patch::ArmState::Applying, domain::steps::patch::ArmState::Applied];
                let holder = match self.store.run_patches_in(&states, Some(&target.name)).await {
                    Ok(rows) => rows.first().map(|r| (r.patch_step, r.run_id)),
                    Err(e) => {
                        failed(e);
                        None
                    }
                };
                let why = crate::patches::gate::Waiting::for_turn(&target.name, holder, patch);
                tracing::info!(run = run_id, host = %target.name, "{why} (another replica)");
                if let Err(e) = self.store.set_run_waiting(run_id, Some(&why.0)).await {
                    tracing::error!(run = run_id, "cannot record what the run waits for: {e}");
                }
                self.publish(investigation, run_id).await;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// Before the run's server and command: its host checked for a patch left
    /// dirty, and its patch (if any) applied. `Err`: how the run ends instead.
    async fn apply_patch(&self, context: &Context<'_>) -> Result<Option<crate::patches::arm::Applied>, OwnedEnd> {
        let (run, target) = (context.run, context.target);
        if let Some(why) = self.dirty(target).await {
            return Err(OwnedEnd::error(RunStatus::Failed, why));
        }
        let Some(patch) = &context.plan.patch else { return Ok(None) };
        let keep = format!("{}/patch", super::dir::from_home(context.dir));
        // A replay's patch meets another host or version: applied by context there.
        let by_context = matches!(run.origin, domain::runs::RunOrigin::Replay { .. });
        let applied =
            crate::patches::arm::apply(&self.store, &self.pool, target, run.id, &keep, patch, by_context).await;
        let outcome = match &applied {
            Ok(a) => {
                let files =
                    a.files.iter().map(|f| format!("{}: {} → {}", f.path, f.base, f.applied.as_deref().unwrap_or("?")));
                format!("patch {} applied: {}", a.step, files.collect::<Vec<_>>().join("; "))
            }
            Err(why) => format!("error: {why}"),
        };
        crate::audit::record(&self.store, audit_entry(run, "patch.apply", Some(outcome))).await;
        self.publish(context.investigation, run.id).await;
        let applied = applied.map_err(|why| OwnedEnd::error(RunStatus::Failed, why.to_string()))?;
        // Caches go once the patch is on (a refused one clears nothing), before the run compiles anew.
        match crate::patches::arm::clear_caches(&self.pool, target, &patch.caches).await {
            Ok(cleared) if cleared.is_empty() => {}
            Ok(cleared) => {
                let json = serde_json::to_string(&cleared).unwrap_or_default();
                if let Err(e) = self.store.set_run_patch_checks(run.id, Some(&json), None).await {
                    tracing::error!(run = run.id, "cannot record the caches cleared: {e}");
                }
            }
            Err(e) => {
                self.revert_patch(context, &applied).await;
                return Err(OwnedEnd::error(RunStatus::Failed, e.to_string()));
            }
        }
        Ok(Some(applied))
    }

    /// Why no run starts on the host: a patch left dirty there (or the store
    /// cannot say).
    async fn dirty(&self, target: &Target) -> Option<String> {
        match self.store.run_patches_in(&[domain::steps::patch::ArmState::Dirty], Some(&target.name)).await {
            Ok(dirty) if dirty.is_empty() => None,
            Ok(dirty) => {
                let runs: Vec<String> = dirty.iter().map(|d| format!("run {}", d.run_id)).collect();
                Some(format!(
                    "{} is dirty: a patch ({}) was not put back cleanly; an admin restores or accepts the host first.",
                    target.name,
                    runs.join(", ")
                ))
            }
            Err(e) => Some(format!("Cannot read the host's patches: {e}")),
        }
    }

    /// After the run, whatever happened: its expectations read, its patch put
    /// back and verified, its caches cleared again (the next arm compiles anew).
    async fn revert_patch(&self, context: &Context<'_>, applied: &crate::patches::arm::Applied) {
        if let Some(patch) = context.plan.patch.as_ref().filter(|p| !p.expect.is_empty()) {
            let log = match self.store.logs_of_runs(&[context.run.id]).await {
                Ok(logs) => logs.into_iter().find(|l| l.kind == crate::db::LogKind::Server).map(|l| l.id),
                Err(e) => {
                    tracing::error!(run = context.run.id, "cannot find the run's server log: {e}");
                    None
                }
            };
            let met = crate::patches::arm::read_expectations(&self.outputs, context.run.id, log, &patch.expect).await;
            let json = serde_json::to_string(&met).unwrap_or_default();
            if let Err(e) = self.store.set_run_patch_checks(context.run.id, None, Some(&json)).await {
                tracing::error!(run = context.run.id, "cannot record the patch's expectations: {e}");
            }
        }
        let done = crate::patches::arm::revert(&self.store, &self.pool, context.target, applied).await;
        if let Some(patch) = context.plan.patch.as_ref().filter(|p| !p.caches.is_empty())
            && let Err(e) = crate::patches::arm::clear_caches(&self.pool, context.target, &patch.caches).await
        {
            tracing::warn!(run = context.run.id, "caches not cleared after the patch: {e}");
        }
        let files = done.files.iter().map(|f| {
            let hash = |h: &Option<String>| h.clone().unwrap_or_else(|| "?".into());
            format!("{}: {} → {}", f.path, hash(&f.at_end), hash(&f.reverted))
        });
        let outcome = format!("{}: {} {}", done.state.as_str(), done.text, files.collect::<Vec<_>>().join("; "));
        crate::audit::record(&self.store, audit_entry(context.run, "patch.revert", Some(outcome))).await;
    }

    /// Queued → running: its cancel switch and row, and the run marked started
    /// with the name of its directory on the host (one write, not two; the
    /// name has a random part, so it is made once, here). `None`: it was
    /// cancelled (or removed) while it waited.
    async fn begin(&self, investigation: &str, run_id: i64) -> Option<(watch::Receiver<bool>, Run, Plan, String)> {
        let cancelled = self.cancels.lock().unwrap_or_else(|e| e.into_inner()).get(&run_id).map(|tx| tx.subscribe())?;
        if *cancelled.borrow() {
            return None;
        }
        let row = self.store.run(run_id).await.ok().flatten()?;
        let read = Plan::read(run_id, row.plan.as_deref()).and_then(|plan| Ok((run_from_row(row)?, plan)));
        let dir = super::dir::name(run_id);
        match self.store.start_run(run_id, &format!("~/{}", super::dir::from_home(&dir))).await {
            Ok(true) => {}
            _ => return None, // cancelled while queued
        }
        match read {
            Ok((run, plan)) => Some((cancelled, run, plan, dir)),
            Err(e) => {
                // Logged once here; the run says what could not be read.
                let told = domain::error::ApiError::from(e).message;
                self.record_end(run_id, &OwnedEnd::error(RunStatus::Failed, told)).await;
                self.publish(investigation, run_id).await;
                None
            }
        }
    }

    /// The run's end, stored. A database that is restarting, or a full disk,
    /// is waited for (the run is `running` meanwhile): its end is recorded
    /// once it takes writes again, without a restart. Stopped meanwhile, the
    /// next start ends it `interrupted`.
    async fn record_end(&self, run_id: i64, end: &OwnedEnd) {
        let end = RunEnd {
            status: end.status,
            exit_code: end.exit_code,
            exit_signal: end.exit_signal.as_deref(),
            error: end.error.as_deref(),
        };
        let mut wait = Duration::from_secs(1);
        loop {
            match self.store.finish_run(run_id, &end).await {
                Err(e) if matches!(e.trouble(), crate::db::Trouble::Unavailable | crate::db::Trouble::Full) => {
                    if wait == Duration::from_secs(1) {
                        tracing::warn!(run = run_id, "waiting for the store to record the end of the run: {e}");
                    }
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(Duration::from_secs(10));
                }
                Err(e) => {
                    tracing::error!(run = run_id, "cannot record the end of the run: {e}");
                    return;
                }
                Ok(_) => return,
            }
        }
    }

    /// Once the sampler stored what it sampled: the run's telemetry chart, and
    /// its measurements again (with the telemetry's summaries), told like a
    /// change; a run without samples is only told.
    fn telemetry_after(&self, investigation: &str, run: i64, sampled: tokio::task::JoinHandle<usize>) {
        let (store, outputs, live) = (self.store.clone(), self.outputs.clone(), self.live.clone());
        let investigation = investigation.to_string();
        tokio::spawn(async move {
            let samples = sampled.await.unwrap_or_else(|e| {
                tracing::error!(run, "the telemetry sampler failed: {e}");
                usize::MAX // drawn from what is stored, below
            });
            // Without samples there is nothing to summarise or draw: its
            // measurements stand, and its empty chart was stored with its notes.
            if samples > 0 {
                if let Err(e) = crate::metrics::record::for_run(&store, &outputs, &investigation, run).await {
                    tracing::error!(run, "cannot extract measurements: {e}");
                }
                // Last: the chart's being there is what runs fingerprints tell
                // (`domain::runs::runs_fingerprint`), so a page opened before it
                // sees it is not current.
                draw_telemetry(&store, run).await;
            }
            super::life::publish(&store, &live, &investigation, run).await;
            live.changed(&investigation, crate::audit::SLEUTH);
        });
    }

    /// A run's life on its host, one phase after another: connecting,
    /// starting its server (if its step has one), starting the command,
    /// running, ending, collecting its files. Each phase is a function that
    /// either hands the next what it needs or says how the run ended; the
    /// step's timeout and Cancel count in every phase. Returns how it ended,
    /// and the server to keep for the next run.
    async fn drive(
        &self,
        context: &Context<'_>,
        cancelled: &mut watch::Receiver<bool>,
        progress: &watch::Sender<super::Progress>,
        kept: Option<Kept>,
        next: Option<String>,
    ) -> (OwnedEnd, Option<Kept>) {
        let target = context.target;
        let mut deadline = Deadline::after(context.run.timeout_s);
        let opened = match self.connect(target, cancelled, &mut deadline).await {
            Ok(opened) => opened,
            Err(end) => return (end, self.servers.stop_if_kept(kept, target).await),
        };
        let beside = match self.serve(context, kept, cancelled, &mut deadline).await {
            Ok(beside) => beside,
            Err(end) => return (end, None),
        };
        let scraping = self.scrape(context, beside.is_some()).await;
        let mut running = match self.start_command(context, opened, progress).await {
            Ok(running) => running,
            Err(end) => return (end, self.servers.finish_server(context, beside, None, true).await),
        };
        if let Some(scraping) = &scraping {
            scraping.command_started(running.started);
        }
        let ran = self.run_command(context, &mut running, beside.as_ref(), cancelled, &mut deadline).await;
        let stop = ran.stop;
        let end = self.end_command(context, running, ran).await;
        if let Some(scraping) = scraping {
            scraping.stop().await;
        }
        // Files as evidence, while the server (if any) still runs.
        if !context.plan.artifacts.is_empty() {
            super::artifacts::fetch_for_run(&self.pool, &self.store, &self.outputs, context).await;
        }
        let keep_for = (end.status.is_finished() && stop.is_none()).then_some(next).flatten();
        let keep = self.servers.finish_server(context, beside, keep_for, stop == Some(Stop::Cancel)).await;
        (end, keep)
    }

    /// Connecting: a channel on the host's pooled connection.
    async fn connect(
        &self,
        target: &Target,
        cancelled: &mut watch::Receiver<bool>,
        deadline: &mut Deadline,
    ) -> Result<exec::Opened, OwnedEnd> {
        tokio::select! {
            opened = exec::open(&self.pool, target) => {
                opened.map_err(|e| OwnedEnd::error(RunStatus::Failed, e.to_string()))
            }
            _ = cancel_requested(cancelled) => Err(OwnedEnd::stopped(Stop::Cancel, "Cancelled while connecting.")),
            () = deadline.reached() => Err(OwnedEnd::stopped(Stop::Timeout, "Timed out while connecting.")),
        }
    }

    /// Starting the server beside the command, in the same directory and
    /// environment, until it is ready (`beside`); without one, a server kept
    /// from the run before is stopped.
    async fn serve(
        &self,
        context: &Context<'_>,
        kept: Option<Kept>,
        cancelled: &mut watch::Receiver<bool>,
        deadline: &mut Deadline,
    ) -> Result<Option<Beside>, OwnedEnd> {
        let Some(spec) = &context.plan.server else {
            if let Some(kept) = kept {
                self.servers.stop_kept(kept, context.target).await;
            }
            return Ok(None);
        };
        let run = context.run;
        let unset = run.config.as_ref().map(super::unset_in).unwrap_or_default();
        self.servers.bring_up(context, spec, &run.env, &unset, kept, cancelled, deadline).await.map(Some)
    }

    /// The engine's metrics asked for while the run goes, when its server says
    /// where; its first scrape waited for (a few seconds at most), so the
    /// run's counters count from before its first request.
    async fn scrape(&self, context: &Context<'_>, served: bool) -> Option<crate::engine::Scraping> {
        let spec = context.plan.server.as_ref().and_then(|s| s.metrics.clone()).filter(|_| served)?;
        let mut scraping = crate::engine::Scraping::start(
            self.pool.clone(),
            self.store.clone(),
            context.target.clone(),
            spec,
            context.run.id,
        );
        scraping.first_scrape(FIRST_SCRAPE_WITHIN).await;
        Some(scraping)
    }

    /// Starting the command: the script sent on the opened channel while its
    /// directory is made over SFTP (`dir`: that request goes first; whichever
    /// answers last is not waited for), its output's store opened, its GPUs
    /// sampled on a second channel.
    async fn start_command(
        &self,
        context: &Context<'_>,
        opened: exec::Opened,
        progress: &watch::Sender<super::Progress>,
    ) -> Result<Running, OwnedEnd> {
        let (run, target) = (context.run, context.target);
        let env = run.env.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        let unset = run.config.as_ref().map(super::unset_in).unwrap_or_default();
        let script = format!(
            "{}{}",
            super::dir::prelude(context.dir),
            quote::remote_script(&run.command, env, unset.iter().map(String::as_str), run.cwd.as_deref())
        );
        let started = std::time::Instant::now();
        let early = super::dir::make_early(&self.pool, target, context.dir);
        let start = opened.start(&script);
        tokio::pin!(early, start);
        let start = tokio::select! {
            biased;
            () = &mut early => start.await,
            started = &mut start => started,
        };
        let command = start.map_err(|e| OwnedEnd::error(RunStatus::Lost, e.to_string()))?;
        let sampler = run.telemetry.then(|| self.samplers.watch(target, &run.env, run.id, started));
        let writer = match self.outputs.writer(run.id, progress.clone()) {
            Ok(writer) => writer,
            Err(e) => {
                command.close().await;
                return Err(OwnedEnd::error(RunStatus::Failed, format!("Cannot store output: {e}")));
            }
        };
        let limit = context.plan.output_limit_bytes.unwrap_or(domain::steps::command::DEFAULT_OUTPUT_BYTES);
        Ok(Running::new(command, Sink::new(writer, limit), sampler, started))
    }

    /// Running: until the command's channel closes. The loop only
    /// dispatches; what each event does is a function of its own.
    async fn run_command(
        &self,
        context: &Context<'_>,
        running: &mut Running,
        beside: Option<&Beside>,
        cancelled: &mut watch::Receiver<bool>,
        deadline: &mut Deadline,
    ) -> Ran {
        let mut stopping = Stopping::default();
        let mut clocks = Clocks::start();
        // The server ending while the command runs ends the command too.
        let mut server_exit: Option<super::server::Exited> = None;
        let server_ended = crate::time::or_never(beside.map(|up| up.server.ended()));
        tokio::pin!(server_ended);
        loop {
            let kill = crate::time::or_never(stopping.kill_at.map(tokio::time::sleep_until));
            tokio::select! {
                event = running.command.next() => match event {
                    Some(event) => self.take(running, event).await,
                    None => break,
                },
                _ = clocks.flushes.tick(), if running.sink.unflushed => running.sink.flush().await,
                _ = cancel_requested(cancelled), if stopping.stop.is_none() => {
                    self.stop_command(&mut stopping, Stop::Cancel, context, running).await;
                }
                () = deadline.reached(), if stopping.stop.is_none() => {
                    self.stop_command(&mut stopping, Stop::Timeout, context, running).await;
                }
                exited = &mut server_ended, if server_exit.is_none() && stopping.stop.is_none() => {
                    server_exit = Some(exited);
                    self.stop_command(&mut stopping, Stop::ServerEnded, context, running).await;
                }
                () = kill => {
                    running.command.signal(Sig::KILL).await;
                    // Gone before the run says it ended: a cancelled benchmark
                    // left running would skew the next runs on its GPUs.
                    let _ = tokio::time::timeout(KILL_WITHIN, self.signal_processes(context, "KILL")).await;
                    running.command.close().await;
                    break;
                }
                _ = clocks.counts.tick() => self.count(context.run.id, running),
                _ = clocks.quiet_checks.tick() => self.check_quiet(context, running).await,
            }
        }
        Ran {
            stop: stopping.stop,
            server_exit,
            exit_code: running.exit_code,
            exit_signal: running.exit_signal.take(),
            connection_lost: running.command.connection_lost(),
        }
    }

    /// Begins stopping the command: SIGINT through its channel and to its
    /// processes on the host; SIGKILL follows after [`GRACE`].
    async fn stop_command(&self, stopping: &mut Stopping, stop: Stop, context: &Context<'_>, running: &Running) {
        stopping.begin(stop, &running.command).await;
        self.signal_processes(context, "INT");
    }

    /// Sends `signal` to the run's processes on the host through a channel of
    /// its own ([`super::dir::signal_script`]): sshd passes on a channel's
    /// signal request only where it supports one, and closing a channel
    /// without a terminal ends nothing. Runs on by itself; awaited, it is done
    /// once the host has answered.
    fn signal_processes(&self, context: &Context<'_>, signal: &'static str) -> tokio::task::JoinHandle<()> {
        let (pool, target) = (self.pool.clone(), context.target.clone());
        let (script, run) = (super::dir::signal_script(context.dir, signal), context.run.id);
        tokio::spawn(async move {
            match exec::capture(&pool, &target, &script, 4096).await {
                Ok(done) => {
                    let pids = String::from_utf8_lossy(&done.stdout).split_whitespace().count();
                    tracing::debug!(run, signal, pids, "signalled the run's processes");
                }
                Err(e) => tracing::warn!(run, signal, "could not signal the run's processes: {e}"),
            }
        })
    }

    /// One event of the command: output stored (within its limit and the
    /// disk's floor), or its exit noted.
    async fn take(&self, running: &mut Running, event: Event) {
        match event {
            Event::Stdout(data) => {
                running.sink.append(Stream::Stdout, &data, |pending| self.short_of_space(pending)).await
            }
            Event::Stderr(data) => {
                running.sink.append(Stream::Stderr, &data, |pending| self.short_of_space(pending)).await
            }
            Event::Exit(Exit::Code(code)) => running.exit_code = Some(i64::from(code)),
            Event::Exit(Exit::Signal(signal)) => running.exit_signal = Some(signal),
        }
    }

    /// The run row's interim counts, written off the loop and one at a time:
    /// a database that is away (each write waiting the pool's 10 s) must not
    /// hold up the output, or the host's command would stall behind it. And a
    /// look at the disk.
    fn count(&self, run: i64, running: &mut Running) {
        if running.counting.as_ref().is_none_or(tokio::task::JoinHandle::is_finished) && self.store.reachable_now() {
            let store = self.store.clone();
            let (stdout, stderr, lines) = running.sink.counts();
            running.counting = Some(tokio::spawn(async move {
                let _ = store.update_run_counts(run, stdout, stderr, lines).await;
            }));
        }
        running.sink.check_space(|pending| self.short_of_space(pending));
    }

    /// Said on the run while its host is silent, and taken back when it answers.
    async fn check_quiet(&self, context: &Context<'_>, running: &mut Running) {
        let silent = running.command.host_silent_for();
        if (silent >= QUIET_AFTER || running.quiet) && self.store.reachable_now() {
            running.quiet = silent >= QUIET_AFTER;
            let seconds = running.quiet.then(|| i64::try_from(silent.as_secs()).unwrap_or(i64::MAX));
            if self.store.set_host_quiet(context.run.id, seconds).await.is_ok() {
                self.publish(context.investigation, context.run.id).await;
            }
        }
    }

    /// Ending: the sampler stopped (its notes, chart and summaries come just
    /// after the run, off the critical path), the output closed and its last
    /// counts written, and the end judged, with what was not kept.
    async fn end_command(&self, context: &Context<'_>, running: Running, ran: Ran) -> OwnedEnd {
        let run = context.run;
        let Running { sink, sampler, counting, .. } = running;
        let telemetry = sampler.map(crate::telemetry::Watching::stop);
        let stored = sink.finish().await;
        // The last interim count lands before the final one.
        if let Some(counting) = counting {
            let _ = counting.await;
        }
        if let Err(e) = self.store.update_run_counts(run.id, stored.stdout, stored.stderr, stored.lines).await {
            tracing::error!(run = run.id, "cannot record output counts: {e}");
        }
        let mut end = ran.judge(run.timeout_s, &context.target.name);
        stored.tell(&mut end);
        end.telemetry = telemetry;
        end
    }
}

/// A run's line in the audit log: who ran what where, and `outcome`.
fn audit_entry(run: &Run, action: &'static str, outcome: Option<String>) -> NewAudit {
    NewAudit {
        who: run.who.clone().unwrap_or_else(|| crate::audit::SLEUTH.into()),
        action,
        host: Some(run.host.clone()),
        target: run.command.clone(),
        env: serde_json::to_string(&run.env).ok(),
        outcome,
        run_id: Some(run.id),
    }
}

/// The command on its host while it runs.
struct Running {
    command: exec::Exec,
    sink: Sink,
    sampler: Option<crate::telemetry::Watching>,
    exit_code: Option<i64>,
    exit_signal: Option<String>,
    /// The interim count being written, if one is.
    counting: Option<tokio::task::JoinHandle<()>>,
    /// Whether the run says its host is silent.
    quiet: bool,
    /// When its command was started: t = 0 of its time axis.
    started: Instant,
}

impl Running {
    fn new(command: exec::Exec, sink: Sink, sampler: Option<crate::telemetry::Watching>, started: Instant) -> Self {
        Self { command, sink, sampler, started, exit_code: None, exit_signal: None, counting: None, quiet: false }
    }
}

/// A command being stopped: why, and when SIGKILL follows the SIGINT.
#[derive(Default)]
struct Stopping {
    stop: Option<Stop>,
    kill_at: Option<tokio::time::Instant>,
}

impl Stopping {
    async fn begin(&mut self, stop: Stop, command: &exec::Exec) {
        self.stop = Some(stop);
        command.signal(Sig::INT).await;
        self.kill_at = Some(tokio::time::Instant::now() + GRACE);
    }
}

/// A running command's clocks. Each first ticks one period from now: a
/// short command needs no interim writes.
struct Clocks {
    counts: tokio::time::Interval,
    flushes: tokio::time::Interval,
    quiet_checks: tokio::time::Interval,
}

impl Clocks {
    fn start() -> Self {
        let now = tokio::time::Instant::now();
        Self {
            counts: tokio::time::interval_at(now + COUNT_INTERVAL, COUNT_INTERVAL),
            flushes: tokio::time::interval_at(now + FLUSH_INTERVAL, FLUSH_INTERVAL),
            quiet_checks: tokio::time::interval_at(now + QUIET_CHECK, QUIET_CHECK),
        }
    }
}

/// How the command's channel ended.
struct Ran {
    stop: Option<Stop>,
    server_exit: Option<super::server::Exited>,
    exit_code: Option<i64>,
    exit_signal: Option<String>,
    connection_lost: bool,
}

impl Ran {
    /// The run's end, from why it was stopped (if it was), its exit and its
    /// connection (`host`'s name, `timeout_s` of its step: for the sentence).
    fn judge(self, timeout_s: Option<u64>, host: &str) -> OwnedEnd {
        let mut end = match (self.stop, self.exit_code, &self.exit_signal) {
            (Some(Stop::Cancel), ..) => OwnedEnd::stopped(Stop::Cancel, "Cancelled."),
            (Some(Stop::ServerEnded), ..) => {
                let how = self
                    .server_exit
                    .as_ref()
                    .map_or_else(String::new, |e| format!(" {} after {} s", e.how, e.after.as_secs()));
                OwnedEnd::error(
                    RunStatus::Failed,
                    format!("The server{how}, while the command ran; the command was stopped."),
                )
            }
            (Some(Stop::Timeout), ..) => OwnedEnd::stopped(
                Stop::Timeout,
                &format!("Stopped after the step's timeout of {} s.", timeout_s.unwrap_or_default()),
            ),
            (None, Some(0), _) => OwnedEnd::new(RunStatus::Succeeded),
            (None, Some(_), _) | (None, None, Some(_)) => OwnedEnd::new(RunStatus::Failed),
            (None, None, None) => OwnedEnd::error(
                RunStatus::Lost,
                if self.connection_lost {
                    format!("The connection to {host} was lost; the output received until then is kept.")
                } else {
                    "The host closed the channel without reporting an exit status.".to_string()
                },
            ),
        };
        end.exit_code = self.exit_code;
        end.exit_signal = self.exit_signal;
        end
    }
}

/// Keeps the run's telemetry drawn, for its page: an empty chart when there is
/// nothing to draw or drawing failed, so that it is marked drawn either way.
async fn draw_telemetry(store: &Store, run: i64) {
    let drawn = match crate::telemetry::of_run(store, run, true).await {
        Ok(telemetry) => crate::charts::telemetry(&telemetry).map_err(crate::error::Error::from),
        Err(e) => Err(e),
    };
    let svg = drawn.unwrap_or_else(|e| {
        tracing::error!(run, "cannot draw the telemetry: {e}");
        None
    });
    if let Err(e) = store.set_telemetry_svg(run, svg.as_deref().unwrap_or("")).await {
        tracing::error!(run, "cannot keep the telemetry chart: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ssh::known_hosts::KnownHosts;

    fn ran(stop: Option<Stop>, exit_code: Option<i64>, exit_signal: Option<&str>, connection_lost: bool) -> Ran {
        let server_exit = (stop == Some(Stop::ServerEnded))
            .then(|| super::super::server::Exited { how: "exited with 1".into(), after: Duration::from_secs(7) });
        Ran { stop, server_exit, exit_code, exit_signal: exit_signal.map(str::to_string), connection_lost }
    }

    #[test]
    fn ending_judges_a_stop_before_the_exit_and_says_why() {
        let judged = |r: Ran| r.judge(Some(30), "gpu");
        // A stop wins over the exit a SIGINT caused; the exit is kept beside it.
        let cancelled = judged(ran(Some(Stop::Cancel), Some(130), None, false));
        assert_eq!((cancelled.status, cancelled.exit_code), (RunStatus::Cancelled, Some(130)));
        let timed_out = judged(ran(Some(Stop::Timeout), None, Some("INT"), false));
        assert_eq!(timed_out.status, RunStatus::TimedOut);
        assert_eq!(timed_out.error.as_deref(), Some("Stopped after the step's timeout of 30 s."));
        assert_eq!(timed_out.exit_signal.as_deref(), Some("INT"));
        let server = judged(ran(Some(Stop::ServerEnded), Some(0), None, false));
        assert_eq!(server.status, RunStatus::Failed, "a command whose server died did not succeed, whatever it exited");
        let why = server.error.unwrap_or_default();
        assert!(why.contains("exited with 1 after 7 s"), "{why}");
        // Without a stop, the exit decides.
        assert_eq!(judged(ran(None, Some(0), None, false)).status, RunStatus::Succeeded);
        assert_eq!(judged(ran(None, Some(2), None, false)).status, RunStatus::Failed);
        assert_eq!(judged(ran(None, None, Some("KILL"), false)).status, RunStatus::Failed);
        // No exit at all: lost, and the sentence says whether the connection went.
        let lost = judged(ran(None, None, None, true));
        assert_eq!(lost.status, RunStatus::Lost);
        assert!(lost.error.unwrap_or_default().contains("connection to gpu was lost"));
        let closed = judged(ran(None, None, None, false));
        assert!(closed.error.unwrap_or_default().contains("without reporting an exit status"));
    }

    /// A runner on a test store, for the phases that need one.
    async fn runner(store: &Store, dir: &std::path::Path) -> Runner {
        let known = KnownHosts::new(Arc::new(crate::hosts::keys::StoredKeys::new(store.clone())));
        let pool = Arc::new(Pool::new(known, false));
        Runner::new(store.clone(), pool, Arc::new(Live::default()), Outputs::Files(dir.join("runs")), false)
    }

    fn target(port: u16) -> Target {
        Target {
            name: "gpu".into(),
            hostname: "127.0.0.1".into(),
            port,
            user: "nobody".into(),
            identity_file: None,
            jump: None,
        }
    }

    /// A port that takes connections and never says a word (a frozen host).
    fn silent_host() -> (std::net::TcpListener, u16) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("address").port();
        (listener, port)
    }

    #[tokio::test]
    async fn connecting_ends_on_a_refusal_a_cancel_or_the_timeout() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(&crate::db::Database::Sqlite(dir.path().to_path_buf())).await.expect("store");
        let runner = runner(&store, dir.path()).await;
        let (_switch, mut cancelled) = watch::channel(false);

        // Nothing listens: failed, saying so.
        let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("address").port();
        let refused = runner.connect(&target(closed), &mut cancelled, &mut Deadline::after(None)).await;
        let end = refused.err().expect("no channel on a closed port");
        assert_eq!(end.status, RunStatus::Failed, "{:?}", end.error);

        // A frozen host: Cancel ends the wait.
        let (_frozen, port) = silent_host();
        let (switch, mut cancelled) = watch::channel(false);
        let pressed = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let _ = switch.send(true);
            switch
        });
        let began = Instant::now();
        let end = runner.connect(&target(port), &mut cancelled, &mut Deadline::after(None)).await.err().expect("ended");
        assert_eq!((end.status, end.error.as_deref()), (RunStatus::Cancelled, Some("Cancelled while connecting.")));
        assert!(began.elapsed() < Duration::from_secs(5), "{:?}", began.elapsed());
        drop(pressed.await);

        // A frozen host: the step's timeout ends it.
        let (_switch, mut cancelled) = watch::channel(false);
        let end =
            runner.connect(&target(port), &mut cancelled, &mut Deadline::after(Some(1))).await.err().expect("ended");
        assert_eq!((end.status, end.error.as_deref()), (RunStatus::TimedOut, Some("Timed out while connecting.")));
    }

    #[test]
    fn a_runs_audit_line_names_its_person_or_sleuth() {
        let mut run: Run = serde_json::from_value(serde_json::json!({
            "id": 7, "step_id": 1, "host": "gpu", "command": "nvidia-smi", "env": [["A", "1"]], "status": "queued",
            "batch_index": 1, "batch_size": 1, "warmup": false, "stdout_bytes": 0, "stderr_bytes": 0, "lines": 0,
            "queued_at": "2026-12-07T00:00:00Z", "telemetry": false, "telemetry_drawn": false
        }))
        .expect("a run");
        let entry = audit_entry(&run, "run.start", None);
        assert_eq!((entry.who.as_str(), entry.env.as_deref()), (crate::audit::SLEUTH, Some(r#"[["A","1"]]"#)));
        run.who = Some("ana".into());
        assert_eq!(audit_entry(&run, "run.end", Some("succeeded".into())).who, "ana");
    }
}
