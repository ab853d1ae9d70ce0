//! Runs of command steps.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Queued,
    Running,
    Succeeded,
    Failed,
    Cancelled,
    TimedOut,
    /// The connection dropped; what arrived before is kept.
    Lost,
    /// The server stopped while the run was going.
    Interrupted,
}

impl RunStatus {
    pub const ALL: [RunStatus; 8] = [
        Self::Queued,
        Self::Running,
        Self::Succeeded,
        Self::Failed,
        Self::Cancelled,
        Self::TimedOut,
        Self::Lost,
        Self::Interrupted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
            Self::TimedOut => "timed_out",
            Self::Lost => "lost",
            Self::Interrupted => "interrupted",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|status| status.as_str() == s)
    }

    pub fn is_finished(self) -> bool {
        !matches!(self, Self::Queued | Self::Running)
    }
}

/// A stored run state that is none of [`RunStatus`] (the schema's CHECK keeps them out).
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not a run status")]
pub struct UnknownRunStatus(pub String);

/// How the store reads a row's status (`#[sqlx(try_from = "String")]`).
impl TryFrom<String> for RunStatus {
    type Error = UnknownRunStatus;

    fn try_from(text: String) -> Result<Self, UnknownRunStatus> {
        Self::parse(&text).ok_or(UnknownRunStatus(text))
    }
}

/// Who made a run: a person (a Run press, a sweep, `sleuth run`), a watch on
/// its schedule, or a replay. A hypothesis's arms leave a watch's runs out
/// unless they ask for them; the frontier and compare do too.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RunOrigin {
    #[default]
    Person,
    /// The watch's id.
    Watch { id: i64 },
    /// The replay's id.
    Replay { id: i64 },
}

/// The kind of [`RunOrigin`], as the store's `origin` column holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OriginKind {
    Person,
    Watch,
    Replay,
}

impl OriginKind {
    pub const ALL: [OriginKind; 3] = [Self::Person, Self::Watch, Self::Replay];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Person => "person",
            Self::Watch => "watch",
            Self::Replay => "replay",
        }
    }
}

/// A stored origin that is none of [`OriginKind`] (the schema's CHECK keeps them out).
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not a run origin")]
pub struct UnknownOrigin(pub String);

impl TryFrom<String> for OriginKind {
    type Error = UnknownOrigin;

    fn try_from(text: String) -> Result<Self, UnknownOrigin> {
        Self::ALL.into_iter().find(|k| k.as_str() == text).ok_or(UnknownOrigin(text))
    }
}

impl RunOrigin {
    /// From the row's two columns; a watch or replay without its id reads as a person's.
    pub fn of(kind: OriginKind, id: Option<i64>) -> Self {
        match (kind, id) {
            (OriginKind::Watch, Some(id)) => Self::Watch { id },
            (OriginKind::Replay, Some(id)) => Self::Replay { id },
            _ => Self::Person,
        }
    }

    pub fn kind(self) -> OriginKind {
        match self {
            Self::Person => OriginKind::Person,
            Self::Watch { .. } => OriginKind::Watch,
            Self::Replay { .. } => OriginKind::Replay,
        }
    }

    pub fn id(self) -> Option<i64> {
        match self {
            Self::Person => None,
            Self::Watch { id } | Self::Replay { id } => Some(id),
        }
    }

    pub fn is_watch(self) -> bool {
        matches!(self, Self::Watch { .. })
    }

    /// "watch 3", "replay 2"; nothing for a person's run.
    pub fn label(self) -> Option<String> {
        match self {
            Self::Person => None,
            Self::Watch { id } => Some(format!("watch {id}")),
            Self::Replay { id } => Some(format!("replay {id}")),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Run {
    pub id: i64,
    pub step_id: i64,
    pub host: String,
    /// The command exactly as sent (before env and cwd were added).
    pub command: String,
    /// NAME=value pairs, in order.
    pub env: Vec<(String, String)>,
    pub cwd: Option<String>,
    pub timeout_s: Option<u64>,
    pub status: RunStatus,
    pub exit_code: Option<i32>,
    pub exit_signal: Option<String>,
    /// Why the run did not finish normally, in words.
    pub error: Option<String>,
    /// 1-based place in a "repeat N" batch, and the batch's size.
    pub batch_index: u32,
    pub batch_size: u32,
    pub warmup: bool,
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
    pub lines: u64,
    pub queued_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub duration_ms: Option<u64>,
    /// Who started the run; `None` while Sleuth runs without accounts.
    pub who: Option<String>,
    /// The host facts current when it started (`GET /api/v1/facts/{id}`).
    #[serde(default)]
    pub facts_id: Option<i64>,
    /// On pages, for the newest run of a step: the end of its output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail: Option<OutputTail>,
    /// What the extractors found in the output once the run ended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub measurements: Vec<crate::metrics::Measurement>,
    /// A run read alone (`GET /runs/{id}`) lists each metric and key once in
    /// `measurements` (the first source found); the same number read again
    /// by another extractor (a log line and a result file) is here, with it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_sources: Vec<crate::metrics::Measurement>,
    /// A sweep's run: the matrix values it ran with (`null`: unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<crate::sweeps::Config>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep_id: Option<i64>,
    /// Its place in the sweep's order, 1-based.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep_index: Option<u32>,
    /// Whether the host's GPUs were sampled during it.
    #[serde(default)]
    pub telemetry: bool,
    /// On pages, for the newest run of a step: its telemetry drawn (SVG), and
    /// what kept it from being sampled (no nvidia-smi, a failed sampler).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry_svg: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub telemetry_notes: Vec<String>,
    /// Whether what comes just after the run's end is stored: its telemetry
    /// chart and the summaries among its measurements.
    #[serde(default)]
    pub telemetry_drawn: bool,
    /// The directory made for the run on its host (`$SLEUTH_RUN_DIR`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_dir: Option<String>,
    /// The server beside the run, if its step names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerState>,
    /// On pages, for the newest run of a step: the end of its server's log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_tail: Option<OutputTail>,
    /// On its page, for a run on a server another run started (kept across
    /// runs): the end of that run's log of it, the server's start-up. This
    /// run's own log is its window of the server's life.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_before: Option<ServerLogBefore>,
    /// The files kept from the run's directory.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    /// What happened to them besides: limits reached, names refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifact_notes: Vec<String>,
    /// The patch it ran with, and the proof of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<crate::steps::patch::RunPatch>,
    /// Its artifacts (and output) that are report files a reader knows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reports: Vec<ReportInfo>,
    /// While it runs: how long its host has not answered, in seconds, once
    /// that is 15 s or more (a frozen host is given up after about 40 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_quiet_s: Option<u64>,
    /// Who made it: a person, a watch or a replay.
    #[serde(default)]
    pub origin: RunOrigin,
    /// The Run press or sweep it was one of, by that launch's first run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch: Option<i64>,
    /// What it waits for while queued: "waiting: patch 12 applied on gpu for run 88".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<String>,
    /// Once it has ended, on its own page and `GET /api/v1/runs/{id}`: the
    /// guards (`crate::guards`), one of each name, judged with the other
    /// runs of its configuration.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guards: Vec<crate::guards::Guard>,
}

/// Which of Sleuth's readers read a report file (`crate::reports` in the
/// server): the tool and the file's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum ReportFormat {
    VllmSaveResult,
    SglangBenchServing,
    VllmBenchLatency,
    VllmBenchThroughput,
    Guidellm,
    Aiperf,
    AiperfRequests,
    LlamaBench,
    MlperfLoadgen,
    NsysKernels,
    NsysNvtx,
    NsysApi,
    NsysStats,
    TorchTrace,
    TorchTable,
}

impl ReportFormat {
    pub const ALL: [ReportFormat; 15] = [
        Self::VllmSaveResult,
        Self::SglangBenchServing,
        Self::VllmBenchLatency,
        Self::VllmBenchThroughput,
        Self::Guidellm,
        Self::Aiperf,
        Self::AiperfRequests,
        Self::LlamaBench,
        Self::MlperfLoadgen,
        Self::NsysKernels,
        Self::NsysNvtx,
        Self::NsysApi,
        Self::NsysStats,
        Self::TorchTrace,
        Self::TorchTable,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::VllmSaveResult => "vllm-save-result",
            Self::SglangBenchServing => "sglang-bench-serving",
            Self::VllmBenchLatency => "vllm-bench-latency",
            Self::VllmBenchThroughput => "vllm-bench-throughput",
            Self::Guidellm => "guidellm",
            Self::Aiperf => "aiperf",
            Self::AiperfRequests => "aiperf-requests",
            Self::LlamaBench => "llama-bench",
            Self::MlperfLoadgen => "mlperf-loadgen",
            Self::NsysKernels => "nsys-kernels",
            Self::NsysNvtx => "nsys-nvtx",
            Self::NsysApi => "nsys-api",
            Self::NsysStats => "nsys-stats",
            Self::TorchTrace => "torch-trace",
            Self::TorchTable => "torch-table",
        }
    }
}

closed_set_words!(ReportFormat, UnknownReportFormat);

/// A stored report format that is none of [`ReportFormat`].
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not a report format Sleuth reads")]
pub struct UnknownReportFormat(pub String);

/// A report file of a run, as read: which tool's format, and what the reader
/// says about it (a truncated file, values skipped, ITLs sampled).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct ReportInfo {
    /// The artifact's name, or `output` for the run's own output.
    pub name: String,
    /// Which reader read it; none when the file was recognised but could not be read.
    pub format: Option<ReportFormat>,
    pub notes: Vec<String>,
    /// Fields no reader knows (the tool's settings, model names), as the file has them.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub metadata: serde_json::Map<String, serde_json::Value>,
}

/// Where a run's server is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ServerPhase {
    /// Started; not ready yet.
    Waiting,
    Ready,
    /// Kept for the next run of the same configuration.
    Kept,
    Stopped,
    /// Ended before it was stopped: exited, or never became ready.
    Failed,
}

/// The server beside a run, as its page shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct ServerState {
    pub phase: ServerPhase,
    /// RFC 3339: when it was started (for this run, or for an earlier run of
    /// the configuration that kept it).
    pub started_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_at: Option<String>,
    /// From start to ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_after_ms: Option<u64>,
    /// The run whose server it is, when another run started it (kept across runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_by_run: Option<i64>,
    /// How long it has been waited for (while it is), updated every few seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waited_ms: Option<u64>,
    /// The newest line of its log (while it is waited for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_line: Option<String>,
    /// Bytes of its log kept with this run.
    #[serde(default)]
    pub log_bytes: u64,
    /// What happened: how it was stopped, whether it had to be killed, GPU memory freed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl ServerState {
    /// The run that started this server, for run `run` that ran on it: the
    /// one that kept it for it, else itself.
    pub fn started_by(&self, run: i64) -> i64 {
        self.started_by_run.unwrap_or(run)
    }

    /// A server just started (RFC 3339 `started_at`), in `phase`, nothing else known yet.
    pub fn new(phase: ServerPhase, started_at: String) -> Self {
        Self {
            phase,
            started_at,
            ready_at: None,
            ready_after_ms: None,
            started_by_run: None,
            waited_ms: None,
            last_line: None,
            log_bytes: 0,
            notes: Vec::new(),
        }
    }
}

/// The log of a kept server before a run: kept with the run that started it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct ServerLogBefore {
    /// The run that started the server.
    pub run: i64,
    pub tail: OutputTail,
}

/// A file kept from a run's directory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Artifact {
    pub id: i64,
    /// Its path relative to the run's directory.
    pub name: String,
    pub size: u64,
    pub sha256: String,
    /// `GET` it as a download (an attachment, never rendered).
    pub url: String,
}

/// Part of a run's output rendered as HTML (ANSI colors kept, everything escaped).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct OutputTail {
    pub html: String,
    /// Byte offsets of the rendered part in the raw output.
    pub start: u64,
    pub end: u64,
}

impl Run {
    /// The run's configuration as people talk about it: `NCCL_PROTO=LL`.
    /// A sweep's run is named by its configuration; another by its env.
    pub fn config_label(&self) -> String {
        match &self.config {
            Some(config) => crate::sweeps::config_label(config),
            None => config_label(&self.env),
        }
    }

    pub fn output_bytes(&self) -> u64 {
        self.stdout_bytes + self.stderr_bytes
    }
}

pub fn config_label(env: &[(String, String)]) -> String {
    if env.is_empty() {
        return "(default env)".to_string();
    }
    env.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
}

/// `POST /api/v1/steps/{id}/runs`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    /// Measured runs to queue (default 1, at most 100).
    #[serde(default)]
    pub repeat: Option<u32>,
    /// Warm-up runs before them (default 0, at most 20).
    #[serde(default)]
    pub warmup: Option<u32>,
    /// The step's version the runner saw: if the command changed since, nothing
    /// runs (409, with who changed it and what it now runs).
    #[serde(default)]
    pub version: Option<i64>,
    /// A sweep's order (default interleaved); only for steps with a matrix.
    #[serde(default)]
    pub order: Option<crate::sweeps::Order>,
    /// The shuffled order's seed (0 to 2^53 − 1; default: a random one, recorded).
    #[serde(default)]
    pub seed: Option<u64>,
    /// After a run that does not succeed: go on (default) or cancel the rest.
    #[serde(default)]
    pub keep_going: Option<bool>,
    /// A sweep's configurations to run: those with every value given
    /// (`{"NCCL_PROTO": "LL"}`, `null` for unset); all of them by default.
    #[serde(default)]
    pub only: Option<crate::sweeps::Config>,
}

pub const MAX_REPEAT: u32 = 100;
pub const MAX_WARMUP: u32 = 20;

/// A digest of which runs exist and their states, so a page can tell whether
/// what it shows is current (FNV-1a over ids, statuses and whether the
/// telemetry drawn after the end is there, by run id, so the order runs are
/// listed in does not matter).
pub fn runs_fingerprint<'a>(runs: impl IntoIterator<Item = &'a Run>) -> u64 {
    let mut runs: Vec<&Run> = runs.into_iter().collect();
    runs.sort_by_key(|run| run.id);
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for run in runs {
        let drawn = [u8::from(run.telemetry_drawn)];
        for byte in run.id.to_le_bytes().iter().chain(run.status.as_str().as_bytes()).chain(&drawn) {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}

/// The run a command card shows among a step's runs (oldest first): the one
/// running now; else the newest that started (a batch between two runs shows
/// the one that just ended, not the next one queued; a cancelled batch the run
/// that was cancelled while running, not those cancelled before they began);
/// else the newest.
pub fn shown_run(runs: &[Run]) -> Option<&Run> {
    runs.iter()
        .rev()
        .find(|r| r.status == RunStatus::Running)
        .or_else(|| runs.iter().rev().find(|r| r.started_at.is_some()))
        .or_else(|| runs.last())
}

/// Runs of the step still queued, besides `shown`: the queue behind it.
pub fn queued_besides<'a>(runs: &'a [Run], shown: &Run) -> Vec<&'a Run> {
    runs.iter().filter(|r| r.status == RunStatus::Queued && r.id != shown.id).collect()
}

/// Where a run sits in its batch: "run 2 of 4", "warm-up 1 of 1"; nothing alone.
pub fn batch_position(run: &Run) -> String {
    match (run.warmup, run.batch_size) {
        (true, n) => format!("warm-up {} of {n}", run.batch_index),
        (false, 1) => String::new(),
        (false, n) => format!("run {} of {n}", run.batch_index),
    }
}

/// What the Run row last asked of a step: repeats and warm-ups (per
/// configuration in a sweep), and a sweep's order where its runs show it. The
/// row offers them again: a redraw or the next sweep does not fall back to one
/// run, interleaved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Asked {
    pub repeat: u32,
    pub warmup: u32,
    /// `None` when the runs do not tell (one run per configuration, one configuration).
    pub order: Option<crate::sweeps::Order>,
}

/// [`Asked`] of the newest batch or sweep among `runs`.
pub fn last_asked(runs: &[Run]) -> Option<Asked> {
    let newest = runs.iter().max_by_key(|r| r.id)?;
    let mut of: Vec<&Run> = match newest.sweep_id {
        Some(sweep) => runs.iter().filter(|r| r.sweep_id == Some(sweep)).collect(),
        // A batch: its measured runs, and the warm-ups just before them.
        None => {
            let first = newest.id - i64::from(newest.batch_index.saturating_sub(1));
            let warmups = runs.iter().find(|r| r.id == first - 1 && r.warmup && r.batch_index == r.batch_size);
            let lead = warmups.map_or(0, |w| i64::from(w.batch_size));
            runs.iter().filter(|r| (first - lead..=newest.id).contains(&r.id) && r.sweep_id.is_none()).collect()
        }
    };
    of.sort_by_key(|r| (r.sweep_index, r.id));
    let repeat = of.iter().find(|r| !r.warmup).map_or(1, |r| r.batch_size.max(1));
    let warmup = of.iter().find(|r| r.warmup).map_or(0, |r| r.batch_size);
    let order = newest.sweep_id.and_then(|_| order_of(&of, repeat));
    Some(Asked { repeat, warmup, order })
}

/// The order a sweep's runs (in their order) ran in: each configuration's
/// runs together (grouped), round after round alike (interleaved), or neither
/// (shuffled).
fn order_of(runs: &[&Run], repeat: u32) -> Option<crate::sweeps::Order> {
    use crate::sweeps::Order;
    let labels: Vec<String> = runs.iter().map(|r| r.config_label()).collect();
    let mut configs: Vec<&String> = labels.iter().collect();
    configs.sort();
    configs.dedup();
    if repeat < 2 || configs.len() < 2 {
        return None;
    }
    let changes = labels.windows(2).filter(|w| w[0] != w[1]).count();
    if changes == configs.len() - 1 {
        return Some(Order::Grouped);
    }
    let measured: Vec<String> = runs.iter().filter(|r| !r.warmup).map(|r| r.config_label()).collect();
    let period = configs.len();
    let rounds_alike = measured.iter().enumerate().all(|(i, label)| i < period || *label == measured[i - period]);
    Some(if rounds_alike { Order::Interleaved } else { Order::Shuffled })
}

/// "1 line", "2 lines": a count with its noun.
pub fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Human-readable byte counts: 1.5 MB.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit < UNITS.len() - 1 {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 { format!("{n} B") } else { format!("{value:.1} {}", UNITS[unit]) }
}

/// 83 ms, 4.2 s, 3 min 05 s.
pub fn human_duration(ms: u64) -> String {
    match ms {
        0..1_000 => format!("{ms} ms"),
        1_000..60_000 => format!("{:.1} s", ms as f64 / 1000.0),
        _ => format!("{} min {:02} s", ms / 60_000, (ms % 60_000) / 1000),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_round_trip() {
        for status in RunStatus::ALL {
            assert_eq!(RunStatus::parse(status.as_str()), Some(status));
            let json = serde_json::to_string(&status).unwrap();
            assert_eq!(json, format!("\"{}\"", status.as_str()));
        }
        assert!(RunStatus::Lost.is_finished());
        assert!(!RunStatus::Queued.is_finished());
    }

    #[test]
    fn fingerprints_tell_runs_states_and_late_telemetry_apart() {
        let run = |id: i64, status: &str, drawn: bool| {
            serde_json::from_value::<Run>(serde_json::json!({
                "id": id, "step_id": 1, "host": "h", "command": "true", "env": [], "status": status,
                "batch_index": 1, "batch_size": 1, "warmup": false, "stdout_bytes": 0, "stderr_bytes": 0,
                "lines": 0, "queued_at": "2026-12-03T00:00:00Z", "telemetry_drawn": drawn,
            }))
            .unwrap()
        };
        let (a, b) = (run(1, "succeeded", false), run(2, "running", false));
        let base = runs_fingerprint([&a, &b]);
        assert_eq!(base, runs_fingerprint([&b, &a]), "the order runs are listed in does not matter");
        assert_ne!(base, runs_fingerprint([&a]));
        assert_ne!(base, runs_fingerprint([&a, &run(2, "succeeded", false)]));
        // The chart stored just after the end: a page opened before it is stale.
        assert_ne!(base, runs_fingerprint([&run(1, "succeeded", true), &b]));
    }

    /// A run in `status`; it started unless it is queued or `unstarted`.
    fn a_run(id: i64, status: &str) -> Run {
        let (status, unstarted) = match status.strip_suffix(" unstarted") {
            Some(status) => (status, true),
            None => (status, status == "queued"),
        };
        serde_json::from_value(serde_json::json!({
            "id": id, "step_id": 1, "host": "h", "command": "true", "env": [], "status": status,
            "batch_index": 1, "batch_size": 1, "warmup": false, "stdout_bytes": 0, "stderr_bytes": 0,
            "lines": 0, "queued_at": "2026-12-03T00:00:00Z",
            "started_at": (!unstarted).then_some("2026-12-03T00:00:01Z"),
        }))
        .unwrap()
    }

    #[test]
    fn the_row_offers_again_what_it_last_asked() {
        use crate::sweeps::Order;
        let run = |id: i64, warmup: bool, index: u32, size: u32, sweep: Option<(i64, u32, &str)>| {
            let mut r = a_run(id, "succeeded");
            (r.warmup, r.batch_index, r.batch_size) = (warmup, index, size);
            if let Some((sweep, at, x)) = sweep {
                (r.sweep_id, r.sweep_index) = (Some(sweep), Some(at));
                r.config = Some([("X".to_string(), Some(x.to_string()))].into_iter().collect());
            }
            r
        };
        assert_eq!(last_asked(&[]), None);
        // An older run of 1, then a warm-up and 3 runs.
        let batch = [run(1, false, 1, 1, None), run(2, true, 1, 1, None), run(3, false, 1, 3, None)];
        let batch = [&batch[..], &[run(4, false, 2, 3, None), run(5, false, 3, 3, None)]].concat();
        assert_eq!(last_asked(&batch), Some(Asked { repeat: 3, warmup: 1, order: None }));
        // A sweep of X ∈ {a, b}, 2 runs each, as each order lays them out.
        let sweep = |xs: [&str; 4]| -> Vec<Run> {
            let mut index = [0u32; 2];
            xs.iter()
                .enumerate()
                .map(|(i, x)| {
                    let slot = usize::from(*x == "b");
                    index[slot] += 1;
                    run(10 + i as i64, false, index[slot], 2, Some((7, i as u32 + 1, x)))
                })
                .collect()
        };
        let asked = |xs| last_asked(&sweep(xs)).and_then(|a| a.order);
        assert_eq!(asked(["a", "a", "b", "b"]), Some(Order::Grouped));
        assert_eq!(asked(["a", "b", "a", "b"]), Some(Order::Interleaved));
        assert_eq!(asked(["a", "b", "b", "a"]), Some(Order::Shuffled));
        assert_eq!(last_asked(&sweep(["a", "b", "a", "b"])).map(|a| a.repeat), Some(2));
    }

    #[test]
    fn a_card_shows_the_running_run_not_the_last_queued() {
        let batch =
            [a_run(4, "succeeded"), a_run(5, "succeeded"), a_run(6, "running"), a_run(7, "queued"), a_run(8, "queued")];
        let shown = shown_run(&batch).unwrap();
        assert_eq!(shown.id, 6);
        assert_eq!(queued_besides(&batch, shown).iter().map(|r| r.id).collect::<Vec<_>>(), [7, 8]);
        // Between two runs of a batch: the one that just ended.
        let between = [a_run(5, "succeeded"), a_run(6, "failed"), a_run(7, "queued")];
        assert_eq!(shown_run(&between).unwrap().id, 6);
        // A cancelled batch: the run cancelled while it ran, not those cancelled before.
        let cancelled = [a_run(5, "succeeded"), a_run(6, "cancelled"), a_run(7, "cancelled unstarted")];
        assert_eq!(shown_run(&cancelled).unwrap().id, 6);
        let waiting = [a_run(7, "queued"), a_run(8, "queued")];
        assert_eq!(shown_run(&waiting).unwrap().id, 8);
        assert!(shown_run(&[]).is_none());
        assert_eq!(counted(1, "line", "lines"), "1 line");
        assert_eq!(counted(0, "line", "lines"), "0 lines");
    }

    #[test]
    fn labels_and_units() {
        assert_eq!(config_label(&[("NCCL_PROTO".into(), "LL".into())]), "NCCL_PROTO=LL");
        assert_eq!(config_label(&[]), "(default env)");
        assert_eq!(human_bytes(999), "999 B");
        assert_eq!(human_bytes(1_500_000), "1.5 MB");
        assert_eq!(human_duration(83), "83 ms");
        assert_eq!(human_duration(4_200), "4.2 s");
        assert_eq!(human_duration(185_000), "3 min 05 s");
    }
}
