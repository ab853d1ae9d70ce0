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

use super::feed::Feeds;
use super::live::{Live, RunEvent};
use super::run_from_row;
use super::server::Server;
use crate::db::{NewAudit, NewRun, RunEnd, Store};
use crate::output::OutputKey;
use crate::output::{Outputs, Stream};
use crate::ssh::exec::{self, Event, Exit};
use crate::ssh::{Pool, Target, quote};
use crate::time::now_ms;
use app::runs::{Run, RunStatus};
use app::runs::{ServerPhase, ServerState};
use app::steps::command::{Reuse, ServerSpec};
use russh::Sig;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// Between SIGINT and SIGKILL + close, for cancel and timeout.
pub const GRACE: Duration = Duration::from_secs(3);
/// How often the page hears what a server being waited for last printed.
const WAITING_SAID: Duration = Duration::from_secs(2);
/// How often counters are written to the store while a run goes.
const COUNT_INTERVAL: Duration = Duration::from_millis(500);
/// How often new output is flushed to disk and announced to live readers. Not
/// per SSH packet: at 32 KB a packet, that was a syscall pair per packet and
/// halved the ingest rate.
const FLUSH_INTERVAL: Duration = Duration::from_millis(40);

#[derive(Clone, Copy, Debug, PartialEq)]
enum Stop {
    Cancel,
    Timeout,
    /// The server beside the command ended while it ran.
    ServerEnded,
}

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
    /// Hosts by name, for servers left running by runs that are over.
    hosts: crate::hosts::Hosts,
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
    pub fn new(store: Store, pool: Arc<Pool>, live: Arc<Live>, outputs: Outputs, search: bool) -> Self {
        let feeds = Arc::new(Feeds::new(outputs.clone(), live.clone()));
        let driving = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let search = if search {
            crate::search::Index::start(store.clone(), outputs.clone(), driving.clone())
        } else {
            crate::search::Index::off()
        };
        Self {
            hosts: crate::hosts::Hosts::new(store.clone(), pool.clone()),
            search,
            driving,
            store,
            pool,
            live,
            outputs,
            cancels: Mutex::new(HashMap::new()),
            facts_capture: Default::default(),
            feeds,
        }
    }

    /// The search index (what changed goes to it).
    pub fn search(&self) -> &Arc<crate::search::Index> {
        &self.search
    }

    /// Where run output is kept (files or the database).
    pub fn outputs(&self) -> &Outputs {
        &self.outputs
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn live(&self) -> &Arc<Live> {
        &self.live
    }

    pub fn feeds(&self) -> &Arc<Feeds> {
        &self.feeds
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
            let identities = runner.identities(&runs).await;
            for (i, run) in runs.into_iter().enumerate() {
                let next = identities.get(i + 1).cloned().flatten();
                if let Some(first) = failed {
                    let reason =
                        format!("Not run: run {first} before it did not succeed, and the batch stops at a failure.");
                    if let Ok(true) = runner.store.cancel_queued_run_because(run.id, &reason).await {
                        runner.publish(&investigation, run.id).await;
                    }
                } else {
                    kept = runner.execute(&investigation, run.id, &target, kept, next).await;
                    let ended = runner.store.run(run.id).await.ok().flatten().and_then(|r| RunStatus::parse(&r.status));
                    if stop_on_failure && ended.is_some_and(|s| s != RunStatus::Succeeded && s != RunStatus::Cancelled)
                    {
                        failed = Some(run.id);
                    }
                }
                runner.cancels.lock().unwrap_or_else(|e| e.into_inner()).remove(&run.id);
            }
            if let Some(kept) = kept {
                runner.stop_kept(kept, &target).await;
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

    pub async fn insert_batch(&self, new_runs: Vec<NewRun>) -> crate::db::StoreResult<Vec<Run>> {
        let mut runs = Vec::with_capacity(new_runs.len());
        for new in &new_runs {
            runs.push(run_from_row(self.store.insert_run(new).await?));
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
            loop {
                if let Err(e) = runner.store.renew_lease().await {
                    tracing::error!("cannot renew the replica lease: {e}");
                }
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
        if let Ok(Some(row)) = self.store.run(run_id).await {
            self.live.publish(RunEvent::new(investigation, run_from_row(row)));
        }
    }

    /// Runs one run of a batch; `kept`: a server an earlier run of its
    /// configuration left running, `next`: the identity of the next run's
    /// server. Returns the server to keep for the next run, if any.
    async fn execute(
        &self,
        investigation: &str,
        run_id: i64,
        target: &Target,
        kept: Option<Kept>,
        next: Option<String>,
    ) -> Option<Kept> {
        let Some(mut cancelled) =
            self.cancels.lock().unwrap_or_else(|e| e.into_inner()).get(&run_id).map(|tx| tx.subscribe())
        else {
            return self.stop_if_kept(kept, target).await;
        };
        let already_cancelled = *cancelled.borrow();
        if already_cancelled {
            return self.stop_if_kept(kept, target).await;
        }
        let row = match self.store.run(run_id).await {
            Ok(Some(row)) => row,
            _ => return self.stop_if_kept(kept, target).await,
        };
        // Its directory on the host, recorded as it starts (one write, not two).
        let dir = super::server::run_dir_name(run_id);
        match self.store.start_run(run_id, &format!("~/{}", super::server::run_dir_from_home(&dir))).await {
            Ok(true) => {}
            _ => return self.stop_if_kept(kept, target).await, // cancelled while queued
        }
        let plan = super::Plan::read(row.plan.as_deref());
        let progress = self.live.start(run_id);
        self.publish(investigation, run_id).await;

        let run = run_from_row(row);
        let who = run.who.clone().unwrap_or_else(|| crate::audit::SLEUTH.into());
        let entry = |action, outcome| NewAudit {
            who: who.clone(),
            action,
            host: Some(run.host.clone()),
            target: run.command.clone(),
            env: serde_json::to_string(&run.env).ok(),
            outcome,
            run_id: Some(run_id),
        };
        crate::audit::record(&self.store, entry("run.start", run.cwd.as_ref().map(|c| format!("in {c}")))).await;
        let driving = Driving::start(&self.driving);
        let context = Context { investigation, run: &run, plan: &plan, target, dir: &dir };
        let (end, keep) = self.drive(&context, &mut cancelled, &progress, kept, next).await;
        drop(driving);
        let how = match (end.exit_code, &end.exit_signal, &end.error) {
            (Some(code), _, _) => format!("{} (exit {code})", end.status.as_str()),
            (None, Some(signal), _) => format!("{} (signal {signal})", end.status.as_str()),
            (None, None, Some(error)) => format!("{}: {error}", end.status.as_str()),
            _ => end.status.as_str().to_string(),
        };
        crate::audit::record(&self.store, entry("run.end", Some(how))).await;
        let end_ref = RunEnd {
            status: end.status,
            exit_code: end.exit_code,
            exit_signal: end.exit_signal.as_deref(),
            error: end.error.as_deref(),
        };
        // Before the run is marked finished, so whoever sees it finished sees its numbers.
        match crate::metrics::record::for_run(&self.store, &self.outputs, investigation, run_id).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(run = run_id, "{n} measurements"),
            Err(e) => tracing::error!(run = run_id, "cannot extract measurements: {e}"),
        }
        if let Err(e) = self.store.finish_run(run_id, &end_ref).await {
            tracing::error!(run = run_id, "cannot record the end of the run: {e}");
        }
        self.live.finish(run_id);
        tracing::info!(run = run_id, host = %target.name, status = end.status.as_str(), "run finished");
        self.search.run_ended(run_id);
        self.publish(investigation, run_id).await;
        if let Some(sampled) = end.telemetry {
            self.telemetry_after(investigation, run_id, sampled);
        }
        keep
    }

    /// Once the sampler stored what it sampled: the run's telemetry chart, and
    /// its measurements again (with the telemetry's summaries), told like a change.
    fn telemetry_after(&self, investigation: &str, run: i64, sampled: tokio::task::JoinHandle<()>) {
        let (store, outputs, live) = (self.store.clone(), self.outputs.clone(), self.live.clone());
        let investigation = investigation.to_string();
        tokio::spawn(async move {
            if let Err(e) = sampled.await {
                tracing::error!(run, "the telemetry sampler failed: {e}");
            }
            if let Err(e) = crate::metrics::record::for_run(&store, &outputs, &investigation, run).await {
                tracing::error!(run, "cannot extract measurements: {e}");
            }
            // Last: the chart's being there is what runs fingerprints tell
            // (`app::runs::runs_fingerprint`), so a page opened before it sees
            // it is not current.
            draw_telemetry(&store, run).await;
            if let Ok(Some(row)) = store.run(run).await {
                live.publish(RunEvent::new(&investigation, run_from_row(row)));
            }
            live.changed(&investigation, crate::audit::SLEUTH);
        });
    }

    /// Runs the command (with its server, if it has one) and records its
    /// output; returns how it ended, and the server to keep for the next run.
    async fn drive(
        &self,
        context: &Context<'_>,
        cancelled: &mut watch::Receiver<bool>,
        progress: &watch::Sender<super::Progress>,
        kept: Option<Kept>,
        next: Option<String>,
    ) -> (OwnedEnd, Option<Kept>) {
        let (run, target) = (context.run, context.target);
        let timeout = run.timeout_s.map(Duration::from_secs);
        let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
        let sleep_until_deadline = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(sleep_until_deadline);

        // Connecting counts against the timeout and can be cancelled.
        let opened = tokio::select! {
            opened = exec::open(&self.pool, target) => opened,
            _ = cancel_requested(cancelled) => {
                let end = OwnedEnd::stopped(Stop::Cancel, "Cancelled while connecting.");
                return (end, self.stop_if_kept(kept, target).await);
            }
            () = &mut sleep_until_deadline => {
                let end = OwnedEnd::stopped(Stop::Timeout, "Timed out while connecting.");
                return (end, self.stop_if_kept(kept, target).await);
            }
        };
        let opened = match opened {
            Ok(opened) => opened,
            Err(e) => {
                return (OwnedEnd::error(RunStatus::Failed, e.to_string()), self.stop_if_kept(kept, target).await);
            }
        };
        let env: Vec<(&str, &str)> = run.env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let unset = run.config.as_ref().map(super::unset_in).unwrap_or_default();
        // The server first, in the same directory and environment as the command.
        let mut beside: Option<Beside> = None;
        match &context.plan.server {
            Some(spec) => {
                let env_owned: Vec<(String, String)> = run.env.clone();
                match self.bring_up(context, spec, &env_owned, &unset, kept, cancelled, &mut sleep_until_deadline).await
                {
                    Ok(up) => beside = Some(up),
                    Err(end) => return (end, None),
                }
            }
            None => {
                if let Some(kept) = kept {
                    self.stop_kept(kept, target).await;
                }
            }
        }
        let script = format!(
            "{}{}",
            super::server::run_dir_prelude(context.dir),
            quote::remote_script(&run.command, env, unset.iter().map(String::as_str), run.cwd.as_deref())
        );
        let started = std::time::Instant::now();
        let mut command = match opened.start(&script).await {
            Ok(command) => command,
            Err(e) => {
                let end = OwnedEnd::error(RunStatus::Lost, e.to_string());
                let keep = self.finish_server(context, beside, None, true).await;
                return (end, keep);
            }
        };
        // The GPUs, sampled on a second channel while the command runs.
        let sampler = run.telemetry.then(|| {
            crate::telemetry::Sampler::start(
                self.pool.clone(),
                self.store.clone(),
                target.clone(),
                run.env.clone(),
                run.id,
                started,
            )
        });

        let mut writer = match self.outputs.writer(run.id, progress.clone()) {
            Ok(w) => w,
            Err(e) => {
                command.close().await;
                let end = OwnedEnd::error(RunStatus::Failed, format!("Cannot store output: {e}"));
                let keep = self.finish_server(context, beside, None, true).await;
                return (end, keep);
            }
        };
        // The server ending while the command runs ends the command too.
        let mut server_exit: Option<super::server::Exited> = None;
        let on_end = beside.as_ref().map(|up| up.server.ended());
        let server_ended = async move {
            match on_end {
                Some(ended) => ended.await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(server_ended);
        let mut exit_code: Option<i64> = None;
        let mut exit_signal: Option<String> = None;
        let mut stop: Option<Stop> = None;
        let mut kill_at: Option<tokio::time::Instant> = None;
        // First ticks one period from now: a short command needs no interim writes.
        let now = tokio::time::Instant::now();
        let mut counts = tokio::time::interval_at(now + COUNT_INTERVAL, COUNT_INTERVAL);
        let mut flushes = tokio::time::interval_at(now + FLUSH_INTERVAL, FLUSH_INTERVAL);
        let mut unflushed = false;
        let mut write_error: Option<String> = None;

        loop {
            let kill = async {
                match kill_at {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                event = command.next() => {
                    let Some(event) = event else { break };
                    match event {
                        Event::Stdout(data) => {
                            if let Err(e) = writer.append(Stream::Stdout, &data, now_ms()).await {
                                write_error.get_or_insert(e.to_string());
                            }
                        }
                        Event::Stderr(data) => {
                            if let Err(e) = writer.append(Stream::Stderr, &data, now_ms()).await {
                                write_error.get_or_insert(e.to_string());
                            }
                        }
                        Event::Exit(Exit::Code(code)) => exit_code = Some(i64::from(code)),
                        Event::Exit(Exit::Signal(signal)) => exit_signal = Some(signal),
                    }
                    unflushed = true;
                }
                _ = flushes.tick(), if unflushed => {
                    // Readers only see what is flushed (the writer tells them).
                    if let Err(e) = writer.flush().await {
                        write_error.get_or_insert(e.to_string());
                    }
                    unflushed = false;
                }
                _ = cancel_requested(cancelled), if stop.is_none() => {
                    stop = Some(Stop::Cancel);
                    command.signal(Sig::INT).await;
                    kill_at = Some(tokio::time::Instant::now() + GRACE);
                }
                () = &mut sleep_until_deadline, if stop.is_none() => {
                    stop = Some(Stop::Timeout);
                    command.signal(Sig::INT).await;
                    kill_at = Some(tokio::time::Instant::now() + GRACE);
                }
                exited = &mut server_ended, if server_exit.is_none() && stop.is_none() => {
                    server_exit = Some(exited);
                    stop = Some(Stop::ServerEnded);
                    command.signal(Sig::INT).await;
                    kill_at = Some(tokio::time::Instant::now() + GRACE);
                }
                () = kill => {
                    command.signal(Sig::KILL).await;
                    command.close().await;
                    break;
                }
                _ = counts.tick() => {
                    let _ = self.store.update_run_counts(run.id, writer.stdout, writer.stderr, writer.lines).await;
                }
            }
        }
        // Off the critical path: its notes, chart and summaries come just after the run.
        let telemetry = sampler.map(crate::telemetry::Sampler::stop);
        let (stdout, stderr, lines) = (writer.stdout, writer.stderr, writer.lines);
        if let Err(e) = writer.finish().await {
            write_error.get_or_insert(e.to_string());
        }
        if let Err(e) = self.store.update_run_counts(run.id, stdout, stderr, lines).await {
            tracing::error!(run = run.id, "cannot record output counts: {e}");
        }

        let connection_lost = command.connection_lost();
        let mut end = match (stop, exit_code, &exit_signal) {
            (Some(Stop::Cancel), ..) => OwnedEnd::stopped(Stop::Cancel, "Cancelled."),
            (Some(Stop::ServerEnded), ..) => {
                let how = server_exit
                    .as_ref()
                    .map_or_else(String::new, |e| format!(" {} after {} s", e.how, e.after.as_secs()));
                OwnedEnd::error(
                    RunStatus::Failed,
                    format!("The server{how}, while the command ran; the command was stopped."),
                )
            }
            (Some(Stop::Timeout), ..) => OwnedEnd::stopped(
                Stop::Timeout,
                &format!("Stopped after the step's timeout of {} s.", run.timeout_s.unwrap_or_default()),
            ),
            (None, Some(0), _) => OwnedEnd::new(RunStatus::Succeeded),
            (None, Some(_), _) | (None, None, Some(_)) => OwnedEnd::new(RunStatus::Failed),
            (None, None, None) => OwnedEnd::error(
                RunStatus::Lost,
                if connection_lost {
                    format!("The connection to {} was lost; the output received until then is kept.", target.name)
                } else {
                    "The host closed the channel without reporting an exit status.".to_string()
                },
            ),
        };
        end.exit_code = exit_code;
        end.exit_signal = exit_signal;
        if let Some(e) = write_error {
            end.error = Some(format!("Some output could not be stored: {e}"));
            // Never `succeeded` about output it did not keep.
            if end.status == RunStatus::Succeeded {
                end.status = RunStatus::Failed;
            }
        }
        // Files as evidence, while the server (if any) still runs.
        if !context.plan.artifacts.is_empty() {
            self.fetch_artifacts(context).await;
        }
        let keep_for = (end.status.is_finished() && stop.is_none()).then_some(next).flatten();
        let keep = self.finish_server(context, beside, keep_for, stop == Some(Stop::Cancel)).await;
        end.telemetry = telemetry;
        (end, keep)
    }
}

/// Keeps the run's telemetry drawn, for its page: an empty chart when there is
/// nothing to draw or drawing failed, so that it is marked drawn either way.
async fn draw_telemetry(store: &Store, run: i64) {
    let drawn = match crate::telemetry::of_run(store, run, true).await {
        Ok(telemetry) => crate::charts::telemetry(&telemetry).map_err(crate::error::Error::from),
        Err(e) => Err(crate::error::Error::from(e)),
    };
    let svg = drawn.unwrap_or_else(|e| {
        tracing::error!(run, "cannot draw the telemetry: {e}");
        None
    });
    if let Err(e) = store.set_telemetry_svg(run, svg.as_deref().unwrap_or("")).await {
        tracing::error!(run, "cannot keep the telemetry chart: {e}");
    }
}

/// Resolves once Cancel was pressed (or never, if the switch is gone).
async fn cancel_requested(switch: &mut watch::Receiver<bool>) {
    if switch.wait_for(|c| *c).await.is_err() {
        std::future::pending::<()>().await;
    }
}

struct OwnedEnd {
    status: RunStatus,
    exit_code: Option<i64>,
    exit_signal: Option<String>,
    error: Option<String>,
    /// The GPU sampler, still storing what it sampled.
    telemetry: Option<tokio::task::JoinHandle<()>>,
}

impl OwnedEnd {
    fn new(status: RunStatus) -> Self {
        Self { status, exit_code: None, exit_signal: None, error: None, telemetry: None }
    }
    fn error(status: RunStatus, error: String) -> Self {
        Self { error: Some(error), ..Self::new(status) }
    }
    fn stopped(stop: Stop, why: &str) -> Self {
        let status = match stop {
            Stop::Cancel => RunStatus::Cancelled,
            Stop::Timeout => RunStatus::TimedOut,
            Stop::ServerEnded => RunStatus::Failed,
        };
        Self::error(status, why.to_string())
    }
}

/// What a run's life needs to know about it.
struct Context<'a> {
    investigation: &'a str,
    run: &'a Run,
    plan: &'a super::Plan,
    target: &'a Target,
    /// The name of its directory on the host (`server::run_dir_name`).
    dir: &'a str,
}

/// A server beside the run that is running now.
struct Beside {
    server: Server,
    /// This run's part of its log.
    log: i64,
    state: ServerState,
    grace: Duration,
    reuse: Reuse,
}

/// A server kept for the next run of its configuration.
pub(super) struct Kept {
    server: Server,
    /// The run that used it last (its page says it was kept).
    run: i64,
    investigation: String,
    state: ServerState,
    grace: Duration,
}

/// A run's server identity (`None` without a server), from its stored plan.
async fn server_identity(store: &Store, run: &Run) -> Option<String> {
    let row = store.run(run.id).await.ok().flatten()?;
    let plan = super::Plan::read(row.plan.as_deref());
    let unset = run.config.as_ref().map(super::unset_in).unwrap_or_default();
    plan.server.map(|spec| super::server::identity(&spec, &run.env, &unset, run.cwd.as_deref()))
}

impl Runner {
    /// The identities of a batch's servers, in its order.
    async fn identities(&self, runs: &[Run]) -> Vec<Option<String>> {
        let mut out = Vec::with_capacity(runs.len());
        for run in runs {
            out.push(server_identity(&self.store, run).await);
        }
        out
    }

    /// Keeps the server's state on its run, and tells the run's viewers.
    async fn save_server(&self, investigation: &str, run: i64, state: &ServerState) {
        let json = serde_json::to_string(state).unwrap_or_default();
        if let Err(e) = self.store.set_server_state(run, &json).await {
            tracing::error!(run, "cannot record the server's state: {e}");
        }
        self.publish(investigation, run).await;
    }

    /// The run's server: the one kept for it if it is the same and still
    /// running, else a new one; its log going to a log of this run; waited for
    /// until ready. `Err`: the run's end (the server could not start, did not
    /// become ready in time, ended; or the run was cancelled or timed out).
    #[allow(clippy::too_many_arguments)]
    async fn bring_up(
        &self,
        context: &Context<'_>,
        spec: &ServerSpec,
        env: &[(String, String)],
        unset: &[String],
        kept: Option<Kept>,
        cancelled: &mut watch::Receiver<bool>,
        run_deadline: &mut std::pin::Pin<&mut impl std::future::Future<Output = ()>>,
    ) -> Result<Beside, OwnedEnd> {
        let (run, target) = (context.run, context.target);
        let identity = super::server::identity(spec, env, unset, run.cwd.as_deref());
        let grace = Duration::from_secs(spec.stop_grace_s);
        let kept = match kept {
            Some(k) if k.server.identity == identity && k.server.exited().is_none() => Some(k),
            Some(k) => {
                self.stop_kept(k, target).await;
                None
            }
            None => None,
        };
        let reused = kept.is_some();
        let (server, state) = match kept {
            Some(k) => {
                // The handle moves with it: a run that is over holds none of a running server.
                if let Some(handle) = k.server.handle(Duration::from_secs(1)).await {
                    let json = serde_json::to_string(&handle).unwrap_or_default();
                    let _ = self.store.set_server_handle(run.id, Some(&json)).await;
                    let _ = self.store.set_server_handle(k.server.started_by, None).await;
                    let _ = self.store.set_server_handle(k.run, None).await;
                }
                let mut state = ServerState {
                    phase: ServerPhase::Ready,
                    started_by_run: Some(k.server.started_by),
                    notes: vec![format!("Kept from run {} (the same configuration, just before).", k.run)],
                    last_line: None,
                    log_bytes: 0,
                    ..k.state
                };
                state.notes.dedup();
                (k.server, state)
            }
            None => {
                let env_pairs = env.iter().map(|(k, v)| (k.as_str(), v.as_str()));
                let prelude = format!(
                    "{}{}\n",
                    super::server::run_dir_prelude(context.dir),
                    quote::remote_script("", env_pairs, unset.iter().map(String::as_str), run.cwd.as_deref())
                );
                let started = Server::start(&self.pool, target, prelude, spec, identity.clone(), run.id).await;
                let server = match started {
                    Ok(server) => server,
                    Err(e) => {
                        let why = crate::error::Error::from(e);
                        return Err(OwnedEnd::error(RunStatus::Failed, format!("The server could not start: {why}")));
                    }
                };
                if let Some(handle) = server.handle(Duration::from_secs(10)).await {
                    let json = serde_json::to_string(&handle).unwrap_or_default();
                    if let Err(e) = self.store.set_server_handle(run.id, Some(&json)).await {
                        tracing::error!(run = run.id, "cannot record the server's handle: {e}");
                    }
                }
                let state = ServerState::new(ServerPhase::Waiting, crate::time::timestamp(server.started_at_ms));
                (server, state)
            }
        };
        // This run's part of the server's log.
        let log = match self.store.insert_log(run.id, "server", "server").await {
            Ok(log) => log,
            Err(e) => {
                let beside = Beside { server, log: 0, state, grace, reuse: Reuse::Run };
                self.finish_server(context, Some(beside), None, true).await;
                return Err(OwnedEnd::error(RunStatus::Failed, format!("Cannot store the server's log: {e}")));
            }
        };
        match self.outputs.writer(OutputKey::Log(log), self.live.start_log(run.id, log)) {
            Ok(writer) => server.log_to(writer).await,
            Err(e) => tracing::error!(run = run.id, "cannot store the server's log: {e}"),
        }
        let mut beside = Beside { server, log, state, grace, reuse: spec.reuse };
        self.save_server(context.investigation, run.id, &beside.state).await;
        if reused {
            return Ok(beside);
        }
        // Waiting: until ready, or not.
        let limit = Duration::from_secs(spec.ready_timeout_s);
        let ready = beside.server.ready(&self.pool, target, &spec.ready);
        tokio::pin!(ready);
        let ready_by = tokio::time::sleep(limit);
        tokio::pin!(ready_by);
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + WAITING_SAID, WAITING_SAID);
        let failed = loop {
            tokio::select! {
                result = &mut ready => match result {
                    Ok(took) => {
                        beside.state.phase = ServerPhase::Ready;
                        beside.state.ready_at = Some(crate::time::timestamp(crate::time::now_ms()));
                        beside.state.ready_after_ms = u64::try_from(took.as_millis()).ok();
                        beside.state.last_line = None;
                        beside.state.waited_ms = None;
                        self.save_server(context.investigation, run.id, &beside.state).await;
                        tracing::info!(run = run.id, ready_after_ms = took.as_millis() as u64, "server ready");
                        return Ok(beside);
                    }
                    Err(e) => break OwnedEnd::error(RunStatus::Failed, e.to_string()),
                },
                () = &mut ready_by => break OwnedEnd::error(
                    RunStatus::Failed,
                    format!("The server was not ready after {} s (ready when {}).", limit.as_secs(), spec.ready.describe()),
                ),
                _ = cancel_requested(cancelled) => break OwnedEnd::stopped(Stop::Cancel, "Cancelled while the server started."),
                () = run_deadline.as_mut() => break OwnedEnd::stopped(Stop::Timeout, "Timed out while the server started."),
                _ = ticks.tick() => {
                    // "waiting for the server: 3 min 12 s, last line: …" on its page.
                    let line = beside.server.last_line();
                    if !line.is_empty() {
                        beside.state.last_line = Some(line);
                    }
                    beside.state.waited_ms = u64::try_from(beside.server.started.elapsed().as_millis()).ok();
                    self.save_server(context.investigation, run.id, &beside.state).await;
                }
            }
        };
        let mut failed = failed;
        let log_id = beside.log;
        self.finish_server(context, Some(beside), None, true).await;
        let tail = self.log_tail(log_id).await;
        if !tail.is_empty() {
            let why = failed.error.take().unwrap_or_default();
            failed.error = Some(format!("{why} Its log ended with:\n{tail}"));
        }
        Err(failed)
    }

    /// The last lines of a log (for a message).
    async fn log_tail(&self, log: i64) -> String {
        let len = self.outputs.len(OutputKey::Log(log)).await.unwrap_or(0);
        let from = len.saturating_sub(2048);
        let (bytes, _) = self.outputs.read_range(OutputKey::Log(log), from, 2048).await.unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text.lines().collect();
        let skip = usize::from(from > 0).max(lines.len().saturating_sub(10));
        lines[skip.min(lines.len())..].join("\n")
    }

    /// After the command: this run's log of the server ends; the server is kept
    /// for the next run (`keep_for`: its identity, when it is the same and
    /// `reuse: config`), or stopped. Returns it if kept.
    async fn finish_server(
        &self,
        context: &Context<'_>,
        beside: Option<Beside>,
        keep_for: Option<String>,
        cancelled: bool,
    ) -> Option<Kept> {
        let Beside { server, log, mut state, grace, reuse } = beside?;
        let run = context.run.id;
        if let Some(writer) = server.take_log().await {
            let size = writer.len;
            if let Err(e) = writer.finish().await {
                state.notes.push(format!("Part of the server's log could not be stored: {e}"));
            }
            state.log_bytes = size;
            if let Err(e) = self.store.finish_log(log, size, None).await {
                tracing::error!(run, "cannot record the server log's size: {e}");
            }
        }
        self.live.finish(OutputKey::Log(log));
        let ended = server.exited();
        let keep = !cancelled
            && ended.is_none()
            && reuse == Reuse::Config
            && keep_for.as_deref() == Some(server.identity.as_str());
        if keep {
            state.phase = ServerPhase::Kept;
            state.notes.push("Kept running for the next run of this configuration.".into());
            self.save_server(context.investigation, run, &state).await;
            return Some(Kept { server, run, investigation: context.investigation.to_string(), state, grace });
        }
        self.stop_server(context.investigation, run, server, state, grace, context.target).await;
        None
    }

    /// Stops a server and says how on `run`.
    async fn stop_server(
        &self,
        investigation: &str,
        run: i64,
        server: Server,
        mut state: ServerState,
        grace: Duration,
        target: &Target,
    ) {
        let ended = server.exited();
        let started_by = server.started_by;
        match server.stop(&self.pool, target, grace).await {
            Ok(stopped) => {
                if let Some(exited) = &ended {
                    state.notes.push(format!("The server {} after {} s.", exited.how, exited.after.as_secs()));
                }
                state.notes.extend(stopped.notes(grace));
                state.phase = if ended.is_some() { ServerPhase::Failed } else { ServerPhase::Stopped };
                for id in [started_by, run] {
                    if let Err(e) = self.store.set_server_handle(id, None).await {
                        tracing::error!(run = id, "cannot forget the server's handle: {e}");
                    }
                }
                tracing::info!(run, killed = stopped.killed, "server stopped");
            }
            Err(e) => {
                state
                    .notes
                    .push(format!("The server could not be stopped: {e} (Sleuth tries again at its next start)."));
                state.phase = ServerPhase::Failed;
            }
        }
        state.last_line = None;
        self.save_server(investigation, run, &state).await;
    }

    /// Stops a server kept for a run that will not use it.
    async fn stop_kept(&self, kept: Kept, target: &Target) {
        let Kept { server, run, investigation, state, grace } = kept;
        self.stop_server(&investigation, run, server, state, grace, target).await;
    }

    async fn stop_if_kept(&self, kept: Option<Kept>, target: &Target) -> Option<Kept> {
        if let Some(kept) = kept {
            self.stop_kept(kept, target).await;
        }
        None
    }

    /// The files the plan names, from the run's directory (notes for the rest).
    async fn fetch_artifacts(&self, context: &Context<'_>) {
        let run = context.run.id;
        let limits = context.plan.artifact_limits.unwrap_or_default();
        let notes = match self.pool.sftp(context.target).await {
            Ok(sftp) => {
                let dir = super::server::run_dir_from_home(context.dir);
                let fetched = super::artifacts::fetch(
                    &sftp,
                    &self.store,
                    &self.outputs,
                    run,
                    &dir,
                    &context.plan.artifacts,
                    limits,
                )
                .await;
                tracing::info!(run, files = fetched.kept.len(), bytes = fetched.bytes, "fetched artifacts");
                fetched.notes
            }
            Err(e) => vec![format!("The artifacts could not be fetched: {e}")],
        };
        if !notes.is_empty()
            && let Err(e) = self.store.set_artifact_notes(run, &serde_json::to_string(&notes).unwrap_or_default()).await
        {
            tracing::error!(run, "cannot record the artifacts' notes: {e}");
        }
    }

    /// Stops the servers that runs left running when their Sleuth (or
    /// replica) stopped before it could: at start, and whenever runs of a dead
    /// replica are taken over. Each is told on its run.
    pub async fn stop_orphans(&self) {
        let hosts = &self.hosts;
        let left = match self.store.servers_left().await {
            Ok(left) => left,
            Err(e) => return tracing::error!("cannot look for servers left running: {e}"),
        };
        for (run, host, handle) in left {
            let target = match hosts.target(&host).await {
                Ok(target) => target,
                Err(e) => {
                    tracing::warn!(run, host, "a server may be left running, but its host is gone: {e}");
                    continue;
                }
            };
            match super::server::stop_orphan(&self.pool, &target, &handle).await {
                Ok(stopped) => {
                    tracing::warn!(run, host, killed = stopped.killed, "stopped a server its run left running");
                    let mut state: ServerState = match self.store.run(run).await {
                        Ok(Some(row)) => row.server.as_deref().and_then(|s| serde_json::from_str(s).ok()),
                        _ => None,
                    }
                    .unwrap_or_else(|| ServerState::new(ServerPhase::Stopped, String::new()));
                    state.phase = ServerPhase::Stopped;
                    state.last_line = None;
                    state.notes.push("Left running when Sleuth stopped; stopped when it was found.".into());
                    state.notes.extend(stopped.notes(Duration::from_secs(10)));
                    if let Err(e) = self.store.set_server_handle(run, None).await {
                        tracing::error!(run, "cannot forget a stopped server's handle: {e}");
                    }
                    match self.store.run_investigation(run).await {
                        Ok(Some(investigation)) => self.save_server(&investigation, run, &state).await,
                        Ok(None) => {}
                        Err(e) => tracing::error!(run, "cannot record how its left-over server was stopped: {e}"),
                    }
                }
                Err(e) => tracing::error!(run, host, "cannot stop a server its run left running: {e}"),
            }
        }
    }
}
