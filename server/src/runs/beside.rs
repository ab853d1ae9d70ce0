//! The server beside a run (`crate::runs::server` starts, probes and stops
//! one on its host): brought up with the run's directory and environment,
//! waited for until ready while the page hears how long, kept for the next run
//! of its configuration (`reuse: config`) or stopped, its log kept as the run's
//! second stream; and servers that outlived their Sleuth found and stopped.

use super::life::{Context, Deadline, OwnedEnd, Stop, cancel_requested, publish};
use super::live::Live;
use super::server::Server;
use crate::db::Store;
use crate::output::{OutputKey, Outputs};
use crate::ssh::{Pool, Target, quote};
use domain::runs::{Run, RunStatus, ServerPhase, ServerState};
use domain::steps::command::{Reuse, ServerSpec};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// How often the page hears what a server being waited for last printed.
const WAITING_SAID: Duration = Duration::from_secs(2);

/// A server beside the run that is running now.
pub(super) struct Beside {
    pub(super) server: Server,
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

/// A run's server identity (`None` without a server, or where its plan cannot
/// be read: the run itself fails on that when it begins).
/// A queued run's server identity and patch step, from its plan (read once per run).
async fn planned(store: &Store, run: &Run) -> (Option<String>, Option<i64>) {
    let Some(row) = store.run(run.id).await.ok().flatten() else { return (None, None) };
    let Ok(plan) = super::Plan::read(run.id, row.plan.as_deref()) else { return (None, None) };
    let unset = run.config.as_ref().map(super::unset_in).unwrap_or_default();
    let patch = plan.patch.as_ref().map(|p| p.step);
    let identity = plan.server.map(|spec| super::server::identity(&spec, &run.env, &unset, run.cwd.as_deref(), patch));
    (identity, patch)
}

/// The servers beside runs: brought up, waited for, kept or stopped, and
/// found again when their Sleuth stopped before they did.
pub(super) struct Servers {
    store: Store,
    pool: Arc<Pool>,
    live: Arc<Live>,
    outputs: Outputs,
    /// Hosts by name, for servers left running by runs that are over.
    hosts: crate::hosts::Hosts,
}

impl Servers {
    pub(super) fn new(store: Store, pool: Arc<Pool>, live: Arc<Live>, outputs: Outputs) -> Self {
        Self { hosts: crate::hosts::Hosts::new(store.clone(), pool.clone()), store, pool, live, outputs }
    }

    /// Each run of a batch, in its order: its server's identity and the patch
    /// step it runs with (which decides its turn on the host).
    pub(super) async fn planned(&self, runs: &[Run]) -> Vec<(Option<String>, Option<i64>)> {
        let mut out = Vec::with_capacity(runs.len());
        for run in runs {
            out.push(planned(&self.store, run).await);
        }
        out
    }

    /// Keeps the server's state on its run, and tells the run's viewers.
    async fn save_server(&self, investigation: &str, run: i64, state: &ServerState) {
        let json = serde_json::to_string(state).unwrap_or_default();
        if let Err(e) = self.store.set_server_state(run, &json).await {
            tracing::error!(run, "cannot record the server's state: {e}");
        }
        publish(&self.store, &self.live, investigation, run).await;
    }

    /// The run's server: the one kept for it if it is the same and still
    /// running, else a new one; its log going to a log of this run; waited for
    /// until ready. `Err`: the run's end (the server could not start, did not
    /// become ready in time, ended; or the run was cancelled or timed out).
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn bring_up(
        &self,
        context: &Context<'_>,
        spec: &ServerSpec,
        env: &[(String, String)],
        unset: &[String],
        kept: Option<Kept>,
        cancelled: &mut watch::Receiver<bool>,
        deadline: &mut Deadline,
    ) -> Result<Beside, OwnedEnd> {
        let (run, target) = (context.run, context.target);
        let patch = context.plan.patch.as_ref().map(|p| p.step);
        let identity = super::server::identity(spec, env, unset, run.cwd.as_deref(), patch);
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
            Some(kept) => self.take_over(run.id, kept).await,
            None => self.start(context, spec, env, unset, identity).await?,
        };
        let beside = self.log_beside(context, spec, server, state).await?;
        if reused {
            return Ok(beside);
        }
        self.wait_ready(context, spec, beside, cancelled, deadline).await
    }

    /// A kept server, handed to this run: its handle moves with it (a run
    /// that is over holds none of a running server) and its page says so.
    async fn take_over(&self, run: i64, kept: Kept) -> (Server, ServerState) {
        if let Some(handle) = kept.server.handle(Duration::from_secs(1)).await {
            let json = serde_json::to_string(&handle).unwrap_or_default();
            let _ = self.store.set_server_handle(run, Some(&json)).await;
            let _ = self.store.set_server_handle(kept.server.started_by, None).await;
            let _ = self.store.set_server_handle(kept.run, None).await;
        }
        let mut state = ServerState {
            phase: ServerPhase::Ready,
            started_by_run: Some(kept.server.started_by),
            notes: vec![format!("Kept from run {} (the same configuration, just before).", kept.run)],
            last_line: None,
            log_bytes: 0,
            ..kept.state
        };
        state.notes.dedup();
        (kept.server, state)
    }

    /// A new server, in the run's directory and environment, its handle kept
    /// on the run (to stop it after a crash of this Sleuth).
    async fn start(
        &self,
        context: &Context<'_>,
        spec: &ServerSpec,
        env: &[(String, String)],
        unset: &[String],
        identity: String,
    ) -> Result<(Server, ServerState), OwnedEnd> {
        let run = context.run;
        let env_pairs = env.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        let prelude = format!(
            "{}{}\n",
            super::dir::prelude(context.dir),
            quote::remote_script("", env_pairs, unset.iter().map(String::as_str), run.cwd.as_deref())
        );
        let server = Server::start(&self.pool, context.target, prelude, spec, identity, run.id)
            .await
            .map_err(|e| OwnedEnd::error(RunStatus::Failed, format!("The server could not start: {e}")))?;
        if let Some(handle) = server.handle(Duration::from_secs(10)).await {
            let json = serde_json::to_string(&handle).unwrap_or_default();
            if let Err(e) = self.store.set_server_handle(run.id, Some(&json)).await {
                tracing::error!(run = run.id, "cannot record the server's handle: {e}");
            }
        }
        let state = ServerState::new(ServerPhase::Waiting, crate::time::timestamp(server.started_at_ms));
        Ok((server, state))
    }

    /// The server's log from now on goes to a log of this run (its second stream).
    async fn log_beside(
        &self,
        context: &Context<'_>,
        spec: &ServerSpec,
        server: Server,
        state: ServerState,
    ) -> Result<Beside, OwnedEnd> {
        let run = context.run;
        let grace = Duration::from_secs(spec.stop_grace_s);
        let log = match self.store.insert_log(run.id, crate::db::LogKind::Server, "server").await {
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
        let beside = Beside { server, log, state, grace, reuse: spec.reuse };
        self.save_server(context.investigation, run.id, &beside.state).await;
        Ok(beside)
    }

    /// Waiting: until the server is ready, or not (then it is stopped, and
    /// the run's end quotes the end of its log).
    async fn wait_ready(
        &self,
        context: &Context<'_>,
        spec: &ServerSpec,
        mut beside: Beside,
        cancelled: &mut watch::Receiver<bool>,
        deadline: &mut Deadline,
    ) -> Result<Beside, OwnedEnd> {
        let run = context.run;
        let limit = Duration::from_secs(spec.ready_timeout_s);
        let ready = beside.server.ready(&self.pool, context.target, &spec.ready);
        tokio::pin!(ready);
        let ready_by = tokio::time::sleep(limit);
        tokio::pin!(ready_by);
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + WAITING_SAID, WAITING_SAID);
        let mut failed = loop {
            tokio::select! {
                result = &mut ready => match result {
                    Ok(took) => {
                        self.ready(context, &mut beside, took).await;
                        return Ok(beside);
                    }
                    Err(e) => break OwnedEnd::error(RunStatus::Failed, e.to_string()),
                },
                () = &mut ready_by => break OwnedEnd::error(
                    RunStatus::Failed,
                    format!("The server was not ready after {} s (ready when {}).", limit.as_secs(), spec.ready.describe()),
                ),
                _ = cancel_requested(cancelled) => break OwnedEnd::stopped(Stop::Cancel, "Cancelled while the server started."),
                () = deadline.reached() => break OwnedEnd::stopped(Stop::Timeout, "Timed out while the server started."),
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
        let log_id = beside.log;
        self.finish_server(context, Some(beside), None, true).await;
        let tail = self.log_tail(log_id).await;
        if !tail.is_empty() {
            let why = failed.error.take().unwrap_or_default();
            failed.error = Some(format!("{why} Its log ended with:\n{tail}"));
        }
        Err(failed)
    }

    /// The server answered: its page says when and after how long.
    async fn ready(&self, context: &Context<'_>, beside: &mut Beside, took: Duration) {
        beside.state.phase = ServerPhase::Ready;
        beside.state.ready_at = Some(crate::time::timestamp(crate::time::now_ms()));
        beside.state.ready_after_ms = u64::try_from(took.as_millis()).ok();
        beside.state.last_line = None;
        beside.state.waited_ms = None;
        self.save_server(context.investigation, context.run.id, &beside.state).await;
        tracing::info!(run = context.run.id, ready_after_ms = took.as_millis() as u64, "server ready");
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
    pub(super) async fn finish_server(
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
    pub(super) async fn stop_kept(&self, kept: Kept, target: &Target) {
        let Kept { server, run, investigation, state, grace } = kept;
        self.stop_server(&investigation, run, server, state, grace, target).await;
    }

    pub(super) async fn stop_if_kept(&self, kept: Option<Kept>, target: &Target) -> Option<Kept> {
        if let Some(kept) = kept {
            self.stop_kept(kept, target).await;
        }
        None
    }

    /// Stops the servers that runs left running when their Sleuth (or
    /// replica) stopped before it could: at start, and whenever runs of a dead
    /// replica are taken over. Each is told on its run.
    pub(super) async fn stop_orphans(&self) {
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
                    // What the page said of the server, where it can be read; else a state anew.
                    let said = match self.store.run(run).await {
                        Ok(Some(row)) => {
                            crate::error::stored_opt(row.server.as_deref(), || format!("run {run}'s server"))
                                .inspect_err(|e| tracing::error!(run, "{e}"))
                                .ok()
                                .flatten()
                        }
                        _ => None,
                    };
                    let mut state: ServerState =
                        said.unwrap_or_else(|| ServerState::new(ServerPhase::Stopped, String::new()));
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
