//! Command runs: queueing, executing over the SSH pool, recording output, and
//! telling watchers. See `runner` for the life of a run.

pub mod bridge;
pub mod events;
pub mod feed;
pub mod live;
pub mod output;
pub mod runner;
pub mod sweep;

pub use feed::Feeds;
pub use live::{Live, Progress, RunEvent};
pub use runner::Runner;

use crate::db::RunRow;
use crate::notebook::timestamp;
use app::backend::Actor;
use app::runs::{Run, RunStatus};

/// The variables a sweep's configuration leaves unset (not its placeholders).
pub fn unset_in(config: &app::sweeps::Config) -> Vec<String> {
    config
        .iter()
        .filter(|(key, level)| level.is_none() && app::sweeps::placeholder(key).is_none())
        .map(|(key, _)| key.clone())
        .collect()
}

/// The same from a run row's stored configuration (JSON).
pub fn unset_by(config: Option<&str>) -> Vec<String> {
    config.and_then(|c| serde_json::from_str(c).ok()).map(|c| unset_in(&c)).unwrap_or_default()
}

pub fn run_from_row(row: RunRow) -> Run {
    let env: Vec<(String, String)> = serde_json::from_str(&row.env).unwrap_or_default();
    let duration_ms = match (row.started_at, row.finished_at) {
        (Some(start), Some(end)) => u64::try_from(end - start).ok(),
        _ => None,
    };
    Run {
        id: row.id,
        step_id: row.step_id,
        host: row.host,
        command: row.command,
        env,
        cwd: row.cwd,
        timeout_s: row.timeout_s.and_then(|t| u64::try_from(t).ok()),
        // The schema's CHECK admits nothing else.
        status: RunStatus::parse(&row.status).unwrap_or(RunStatus::Interrupted),
        exit_code: row.exit_code.and_then(|c| i32::try_from(c).ok()),
        exit_signal: row.exit_signal,
        error: row.error,
        batch_index: u32::try_from(row.batch_index).unwrap_or(1),
        batch_size: u32::try_from(row.batch_size).unwrap_or(1),
        warmup: row.warmup != 0,
        stdout_bytes: u64::try_from(row.stdout_bytes).unwrap_or(0),
        stderr_bytes: u64::try_from(row.stderr_bytes).unwrap_or(0),
        lines: u64::try_from(row.lines).unwrap_or(0),
        queued_at: timestamp(row.queued_at),
        started_at: row.started_at.map(timestamp),
        finished_at: row.finished_at.map(timestamp),
        duration_ms,
        who: row.who,
        facts_id: row.facts_id,
        tail: None,
        measurements: Vec::new(),
        config: row.config.as_deref().and_then(|c| serde_json::from_str(c).ok()),
        sweep_id: row.sweep_id,
        sweep_index: row.sweep_index.and_then(|i| u32::try_from(i).ok()),
        telemetry: row.telemetry != 0,
        telemetry_svg: None,
        telemetry_notes: Vec::new(),
    }
}

// ---- the notebook's run operations --------------------------------------------

use crate::db::NewRun;
use crate::notebook::{Service, internal};
use app::error::{ApiError, ErrorCode};
use app::model::Step;
use app::runs::{MAX_REPEAT, MAX_WARMUP, OutputTail, RunRequest};
use app::steps::StepBody;
use std::collections::HashMap;

/// How much of the newest run's output a page shows before "show earlier
/// output": the last `TAIL_LINES` lines, at most `TAIL_BYTES`. A page's cost
/// follows what it shows, not what the runs printed.
pub const TAIL_BYTES: u64 = 8 * 1024;
pub const TAIL_LINES: usize = 40;

fn run_not_found(id: i64) -> ApiError {
    ApiError::not_found(format!("There is no run {id}."))
}

/// Output bytes → HTML: ANSI colors become spans, everything else is escaped.
pub fn ansi_html(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    ansi_to_html::convert(&text).unwrap_or_else(|_| ammonia::clean_text(&text))
}

/// A run's output as HTML: colours, and links from source references
/// (`[custom_all_reduce.py:137]`) to the run's source page.
pub fn output_html(run: i64, bytes: &[u8]) -> String {
    crate::snippets::refs::linkify(&ansi_html(bytes), run)
}

/// The end of a run's output: its last `TAIL_LINES` lines within `bytes`.
pub async fn tail(outputs: &output::Outputs, run: i64, bytes: u64) -> std::io::Result<OutputTail> {
    let len = outputs.len(run).await?;
    window(outputs, run, len, bytes, TAIL_LINES).await
}

/// Up to `bytes` and `lines` lines of output ending at `end`, starting at a
/// line boundary (or 0).
pub async fn window(
    outputs: &output::Outputs,
    run: i64,
    end: u64,
    bytes: u64,
    lines: usize,
) -> std::io::Result<OutputTail> {
    let len = end.min(outputs.len(run).await?);
    let mut start = len.saturating_sub(bytes);
    let (mut data, _) = outputs.read_range(run, start, len - start).await?;
    let cut = line_start(&data, start > 0, lines);
    data.drain(..cut);
    start += cut as u64;
    Ok(OutputTail { html: output_html(run, &data), start, end: len })
}

/// Where the last `lines` lines of `data` begin; a first line that began before
/// `data` (`partial`) does not count and is never shown cut.
fn line_start(data: &[u8], partial: bool, lines: usize) -> usize {
    // The text's own last newline ends its last line; it does not start one.
    let body = data.strip_suffix(b"\n").unwrap_or(data);
    let from_end = body.iter().rev().enumerate().filter(|(_, b)| **b == b'\n').nth(lines.saturating_sub(1));
    match from_end {
        Some((i, _)) => body.len() - i,
        None if partial => body.iter().position(|&b| b == b'\n').map_or(0, |nl| nl + 1),
        None => 0,
    }
}

impl Service {
    /// Fills in the runs of command steps, and the output tail of the newest run
    /// of each step in `tails_for`.
    pub(crate) async fn attach_runs(
        &self,
        steps: &mut [Step],
        rows: Vec<crate::db::RunRow>,
        tails_for: &std::collections::HashSet<i64>,
    ) {
        let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
        let mut measured: HashMap<i64, Vec<app::metrics::Measurement>> = HashMap::new();
        match self.store.measurements_of_runs(&ids).await {
            Ok(found) => {
                for row in found {
                    if let Some(run) = row.run_id {
                        measured.entry(run).or_default().push(crate::metrics::service::measurement_of(row).measurement);
                    }
                }
            }
            Err(e) => tracing::error!("cannot read measurements: {e}"),
        }
        let mut by_step: HashMap<i64, Vec<app::runs::Run>> = HashMap::new();
        for row in rows {
            let mut run = run_from_row(row);
            run.measurements = measured.remove(&run.id).unwrap_or_default();
            by_step.entry(run.step_id).or_default().push(run);
        }
        for step in steps.iter_mut() {
            if let Some(mut runs) = by_step.remove(&step.id) {
                if let Some(newest) = runs.last_mut().filter(|_| tails_for.contains(&step.id)) {
                    match tail(self.runner.outputs(), newest.id, TAIL_BYTES).await {
                        Ok(t) => newest.tail = Some(t),
                        Err(e) => tracing::error!(run = newest.id, "cannot read output: {e}"),
                    }
                    if newest.telemetry && newest.status.is_finished() {
                        match self.store.telemetry_svg(newest.id).await {
                            Ok(svg) => newest.telemetry_svg = svg,
                            Err(e) => tracing::error!(run = newest.id, "cannot read the telemetry chart: {e}"),
                        }
                        if let Ok(Some((_, Some(notes)))) = self.store.telemetry_info(newest.id).await {
                            newest.telemetry_notes = serde_json::from_str(&notes).unwrap_or_default();
                        }
                    }
                }
                step.runs = runs;
            }
        }
    }

    /// Checks that what a step body names exists (the host of a command, snippet or grep).
    pub(crate) async fn check_references(&self, body: &StepBody) -> Result<(), ApiError> {
        let host = match body {
            StepBody::Command(command) => &command.host,
            StepBody::Snippet(snippet) => &snippet.host,
            StepBody::Grep(grep) => &grep.host,
            StepBody::Note(_) | StepBody::Calculator(_) => return Ok(()),
        };
        if self.store.host(host).await?.is_none() {
            return Err(ApiError::invalid(format!("There is no host {host:?}; add it on the Hosts page first.")));
        }
        Ok(())
    }

    /// Cancels and deletes the output of runs whose step is going away.
    pub(crate) async fn forget_runs(&self, investigation: &str, runs: impl Iterator<Item = i64>) {
        for id in runs {
            let _ = self.runner.cancel(investigation, id).await;
            self.runner.outputs().remove(id).await;
        }
    }

    pub(crate) async fn start_runs(
        &self,
        actor: &Actor,
        step_id: i64,
        request: RunRequest,
    ) -> Result<Vec<Run>, ApiError> {
        let repeat = request.repeat.unwrap_or(1);
        let warmup = request.warmup.unwrap_or(0);
        if !(1..=MAX_REPEAT).contains(&repeat) {
            return Err(ApiError::invalid(format!("repeat must be from 1 to {MAX_REPEAT}.")));
        }
        if warmup > MAX_WARMUP {
            return Err(ApiError::invalid(format!("warmup must be from 0 to {MAX_WARMUP}.")));
        }
        let row = self
            .store
            .step(step_id)
            .await?
            .ok_or_else(|| ApiError::not_found(format!("There is no step {step_id}.")))?;
        let body = crate::steps::from_stored(&row.kind, &row.body).map_err(|e| internal("step body", e))?;
        let StepBody::Command(command) = body else {
            return Err(ApiError::invalid(format!("Step {step_id} is a {} step; only command steps run.", row.kind)));
        };
        if let Some(seen) = request.version
            && seen != row.version
        {
            let env: Vec<(String, String)> = command.env.clone().into_iter().collect();
            let now = format!(
                "Nothing ran. It now runs on {} with {}:\n\n{}\n\nReload to read it, then run again.",
                command.host,
                app::runs::config_label(&env),
                command.command
            );
            return Err(crate::notebook::stale_save(
                "command",
                row.updated_by.as_deref(),
                &crate::notebook::timestamp(row.updated_at),
                row.version,
                &now,
            ));
        }
        let target = self.target(&command.host).await?;
        // A failed run cancels the rest only when asked.
        let stop_on_failure = request.keep_going == Some(false);
        if !command.matrix.is_empty() {
            let (sweep, new_runs) = self.sweep_runs(step_id, &command, &request, repeat, warmup, &actor.name).await?;
            let runs = self.runner.insert_batch(new_runs).await?;
            tracing::info!(step = step_id, sweep = sweep.id, host = %command.host, runs = runs.len(), "queued a sweep");
            for run in &runs {
                self.runner.live().publish(RunEvent::new(&row.investigation_id, run.clone()));
            }
            self.runner.spawn_batch(row.investigation_id, runs.clone(), target, stop_on_failure);
            return Ok(runs);
        }
        sweep::check_plain_request(&request)?;
        let env: Vec<(String, String)> = command.env.into_iter().collect();
        let env_json = serde_json::to_string(&env).map_err(|e| internal("env", e))?;
        let total = warmup + repeat;
        let new_runs = (1..=total)
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
                who: Some(actor.name.clone()),
                config: None,
                sweep_id: None,
                sweep_index: None,
                telemetry: command.telemetry,
            })
            .collect();
        let runs = self.runner.insert_batch(new_runs).await?;
        tracing::info!(step = step_id, host = %command.host, runs = runs.len(), "queued runs");
        for run in &runs {
            self.runner.live().publish(RunEvent::new(&row.investigation_id, run.clone()));
        }
        self.runner.spawn_batch(row.investigation_id, runs.clone(), target, stop_on_failure);
        Ok(runs)
    }

    pub(crate) async fn telemetry(&self, run: i64) -> Result<app::telemetry::Telemetry, ApiError> {
        let found = self.run(run).await?;
        Ok(crate::telemetry::of_run(&self.store, run, found.telemetry).await?)
    }

    pub(crate) async fn output_before(&self, id: i64, before: u64, bytes: u64) -> Result<OutputTail, ApiError> {
        self.run(id).await?;
        window(self.runner.outputs(), id, before, bytes.clamp(1, 1024 * 1024), usize::MAX)
            .await
            .map_err(|e| internal("output window", e))
    }

    /// The run with its measurements (none until it has finished).
    pub(crate) async fn run(&self, id: i64) -> Result<Run, ApiError> {
        let row = self.store.run(id).await?.ok_or_else(|| run_not_found(id))?;
        let mut run = run_from_row(row);
        if run.status.is_finished() {
            run.measurements = self
                .store
                .measurements_of_runs(&[id])
                .await?
                .into_iter()
                .map(|row| crate::metrics::service::measurement_of(row).measurement)
                .collect();
        }
        Ok(run)
    }

    /// The run once it has finished (measurements recorded: the runner
    /// announces the end after them), or as it is when `within` is over.
    pub(crate) async fn wait_for_run(&self, id: i64, within: std::time::Duration) -> Result<Run, ApiError> {
        let deadline = tokio::time::Instant::now() + within;
        // Subscribed before reading, so an end between the two is not missed.
        let mut events = self.runner.live().subscribe();
        let mut run = self.run(id).await?;
        while !run.status.is_finished() {
            match tokio::time::timeout_at(deadline, events.recv()).await {
                Err(_) => break,
                Ok(Ok(event)) if event.run.id == id => run = self.run(id).await?,
                Ok(Ok(_)) => {}
                Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => run = self.run(id).await?,
                // The server is shutting down: answer with what is known.
                Ok(Err(tokio::sync::broadcast::error::RecvError::Closed)) => break,
            }
        }
        Ok(run)
    }

    pub(crate) async fn cancel_run(&self, id: i64) -> Result<Run, ApiError> {
        let run = self.run(id).await?;
        if run.status.is_finished() {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                format!("Run {id} has already finished ({}).", run.status.as_str()),
            ));
        }
        let investigation = self.store.run_investigation(id).await?.ok_or_else(|| run_not_found(id))?;
        self.runner.cancel(&investigation, id).await?;
        // A running run finishes once the host has reacted; wait briefly so the
        // answer usually shows the end state.
        for _ in 0..50 {
            let run = self.run(id).await?;
            if run.status.is_finished() {
                return Ok(run);
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        self.run(id).await
    }
}

#[cfg(test)]
mod tests {
    use super::line_start;

    #[test]
    fn tails_start_at_a_whole_line() {
        let text = b"one\ntwo\nthree\nfour\n";
        assert_eq!(&text[line_start(text, false, 2)..], b"three\nfour\n");
        assert_eq!(&text[line_start(text, false, 10)..], text, "fewer lines than asked: all of them");
        assert_eq!(&text[line_start(text, true, 10)..], b"two\nthree\nfour\n", "a cut first line is dropped");
        assert_eq!(&text[line_start(text, true, 1)..], b"four\n");
        let unended = b"one\ntwo\nthr";
        assert_eq!(&unended[line_start(unended, false, 1)..], b"thr", "a line still being printed counts");
        let one_long_line = b"progress 10%\rprogress 20%";
        assert_eq!(line_start(one_long_line, true, 40), 0, "no newline at all: keep what there is");
    }
}
