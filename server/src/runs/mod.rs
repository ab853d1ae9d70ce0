//! Command runs: queueing, executing over the SSH pool, recording output, and
//! telling watchers. See `runner` for the life of a run.

pub mod artifacts;
mod beside;
pub mod bridge;
pub mod compare;
pub mod dir;
mod engine_view;
pub mod events;
pub mod feed;
mod life;
pub mod live;
pub mod retention;
pub mod runner;
pub mod server;
mod service;
mod sink;
mod sse;
pub mod sweep;

pub use feed::Feeds;
pub use live::{Live, Progress, RunEvent};
pub use runner::Runner;
pub use service::{Output, Runs, Which};

use crate::db::RunRow;
use crate::time::timestamp;
use domain::runs::{Run, RunStatus};

/// What a run does besides its command, as queued: the server beside it
/// (its command with the configuration's placeholders filled in) and the files
/// to keep from its directory.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Plan {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<domain::steps::command::ServerSpec>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_limits: Option<domain::steps::command::ArtifactLimits>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_limit_bytes: Option<u64>,
    /// The patch applied on the host for the run (`crate::patches::arm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<crate::patches::arm::PlanPatch>,
}

impl Plan {
    /// A command step's plan, with `server_command` as the server's command.
    pub fn of(command: &domain::steps::command::CommandBody, server_command: impl FnOnce(&str) -> String) -> Self {
        let server = command.server.clone().map(|mut spec| {
            spec.command = server_command(&spec.command);
            spec
        });
        Self {
            server,
            artifacts: command.artifacts.clone(),
            artifact_limits: command.artifact_limits,
            output_limit_bytes: command.output_limit_bytes,
            patch: None,
        }
    }

    /// As stored: `None` when there is nothing besides the command.
    pub fn stored(&self) -> Option<String> {
        (*self != Self::default()).then(|| serde_json::to_string(self).unwrap_or_default())
    }

    /// Run `run`'s plan as stored (`None`: nothing besides its command).
    #[track_caller]
    pub fn read(run: i64, stored: Option<&str>) -> crate::error::Result<Self> {
        Ok(crate::error::stored_opt(stored, || format!("run {run}'s plan"))?.unwrap_or_default())
    }
}

/// The variables a sweep's configuration leaves unset (not its placeholders).
pub fn unset_in(config: &domain::sweeps::Config) -> Vec<String> {
    config
        .iter()
        .filter(|(key, level)| level.is_none() && domain::sweeps::is_env(key))
        .map(|(key, _)| key.clone())
        .collect()
}

/// A run as stored. Its JSON columns that do not parse make it an error
/// (`Error::unreadable`), never a run with nothing in them.
pub fn run_from_row(row: RunRow) -> crate::error::Result<Run> {
    use crate::error::{stored, stored_opt};
    let id = row.id;
    let env: Vec<(String, String)> = stored(&row.env, || format!("run {id}'s environment"))?;
    let config = stored_opt(row.config.as_deref(), || format!("run {id}'s configuration"))?;
    let server = stored_opt(row.server.as_deref(), || format!("run {id}'s server"))?;
    let artifact_notes =
        stored_opt(row.artifact_notes.as_deref(), || format!("run {id}'s artifact notes"))?.unwrap_or_default();
    let duration_ms = match (row.started_at, row.finished_at) {
        (Some(start), Some(end)) => u64::try_from(end - start).ok(),
        _ => None,
    };
    Ok(Run {
        id: row.id,
        step_id: row.step_id,
        host: row.host,
        command: row.command,
        env,
        cwd: row.cwd,
        timeout_s: row.timeout_s.and_then(|t| u64::try_from(t).ok()),
        status: row.status,
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
        other_sources: Vec::new(),
        config,
        sweep_id: row.sweep_id,
        sweep_index: row.sweep_index.and_then(|i| u32::try_from(i).ok()),
        telemetry: row.telemetry != 0,
        telemetry_svg: None,
        telemetry_drawn: row.telemetry_drawn != 0,
        server_tail: None,
        server_before: None,
        telemetry_notes: Vec::new(),
        run_dir: row.run_dir,
        server,
        artifacts: Vec::new(),
        artifact_notes,
        patch: None,
        reports: Vec::new(),
        host_quiet_s: (row.status == RunStatus::Running)
            .then_some(row.host_quiet_s)
            .flatten()
            .and_then(|s| u64::try_from(s).ok()),
        origin: domain::runs::RunOrigin::of(row.origin, row.origin_id),
        launch: row.launch,
        waiting: row.waiting.filter(|_| row.status == RunStatus::Queued),
        guards: Vec::new(),
    })
}

/// A stored report as runs show it; `metadata` only where one run is asked for.
pub fn report_of(row: crate::db::ReportRow, metadata: bool) -> crate::error::Result<domain::runs::ReportInfo> {
    use crate::error::stored;
    let notes = stored(&row.notes, || format!("run {}'s report {} notes", row.run_id, row.name))?;
    let metadata = match metadata {
        true => stored(&row.metadata, || format!("run {}'s report {} metadata", row.run_id, row.name))?,
        false => Default::default(),
    };
    let format = match row.format.as_deref().map(str::parse) {
        Some(Ok(format)) => Some(format),
        Some(Err(e)) => {
            return Err(crate::error::Error::unreadable(format!("run {}'s report {} format", row.run_id, row.name), e));
        }
        None => None,
    };
    Ok(domain::runs::ReportInfo { name: row.name, format, notes, metadata })
}

use crate::output::{OutputKey, Outputs};
use domain::runs::OutputTail;

/// How much of the newest run's output a page shows before "show earlier
/// output": the last `TAIL_LINES` lines, at most `TAIL_BYTES`. A page's cost
/// follows what it shows, not what the runs printed.
pub const TAIL_BYTES: u64 = 8 * 1024;
pub const TAIL_LINES: usize = 40;

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

/// The end of a run's output (or its server's log, `key`): its last
/// `TAIL_LINES` lines within `bytes`.
pub async fn tail(outputs: &Outputs, run: i64, key: OutputKey, bytes: u64) -> std::io::Result<OutputTail> {
    let len = outputs.len(key).await?;
    window(outputs, run, key, len, bytes, TAIL_LINES).await
}

/// Up to `bytes` and `lines` lines of output ending at `end`, starting at a
/// line boundary (or 0).
pub async fn window(
    outputs: &Outputs,
    run: i64,
    key: OutputKey,
    end: u64,
    bytes: u64,
    lines: usize,
) -> std::io::Result<OutputTail> {
    let len = end.min(outputs.len(key).await?);
    let mut start = len.saturating_sub(bytes);
    let (mut data, _) = outputs.read_range(key, start, len - start).await?;
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
