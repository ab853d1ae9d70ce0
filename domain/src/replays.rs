//! Replaying an investigation on another host or with other versions
//! (`POST /api/v1/investigations/{id}/replay`): its steps copied into a new
//! investigation that runs there, its hypotheses judged again, and the two
//! conclusions side by side (`GET /api/v1/replays/{id}`).

use crate::metrics::Outcome;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What to replay, where and how.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ReplayRequest {
    /// The host the copies run on (default: each step's own).
    #[serde(default)]
    pub host: Option<String>,
    /// Set over each command step's own (`VLLM_VERSION`, another venv's `PATH`).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The command steps to run (default: every one); the rest are copied, not run.
    #[serde(default)]
    pub steps: Option<Vec<i64>>,
    /// Measured runs per step (default 1; a sweep's: per configuration).
    #[serde(default)]
    pub repeat: Option<u32>,
}

/// A replay and where it stands.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Replay {
    pub id: i64,
    /// The investigation replayed (none when it came from another Sleuth's
    /// manifest), its title and address there, and the one the replay ran in.
    pub original: Option<String>,
    pub original_title: String,
    pub original_url: String,
    pub investigation: String,
    pub host: Option<String>,
    pub env: BTreeMap<String, String>,
    pub status: ReplayStatus,
    /// Each original step and its copy.
    pub steps: Vec<(i64, i64)>,
    pub runs: Vec<ReplayedRun>,
    pub hypotheses: Vec<ReplayedHypothesis>,
    pub snippets: Vec<ReplayedSnippet>,
    /// What differs between the hosts' facts, original → replay.
    pub host_facts: Vec<String>,
    pub created_at: String,
    pub created_by: Option<String>,
    pub url: String,
    /// What went wrong on the hosts after the copy (a snippet not read there, a
    /// step that could not be started).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Running while any of its runs is queued or running.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ReplayStatus {
    Running,
    Finished,
}

impl ReplayStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Finished => "finished",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct ReplayedRun {
    pub id: i64,
    pub step_id: i64,
    pub host: String,
    pub status: crate::runs::RunStatus,
}

/// A hypothesis judged on the original's runs and on the replay's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct ReplayedHypothesis {
    pub original_id: i64,
    pub replay_id: i64,
    pub statement: String,
    pub metric: Option<String>,
    /// None until measured.
    pub original_outcome: Option<Outcome>,
    pub replayed_outcome: Option<Outcome>,
    pub original_verdict: Option<String>,
    pub replayed_verdict: Option<String>,
    /// Both judged (not `noise_unknown`), and to the same outcome; none until then.
    pub same_conclusion: Option<bool>,
}

/// A snippet read again from the replay's host.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct ReplayedSnippet {
    pub original_step: i64,
    pub replay_step: i64,
    pub path: Option<String>,
    pub source: SnippetSource,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A snippet's file on the replay's host against the original's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SnippetSource {
    Same,
    Changed,
    /// A side has no snapshot (not read there).
    Unread,
}

impl SnippetSource {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Same => "same",
            Self::Changed => "changed",
            Self::Unread => "unread",
        }
    }
}

/// A hypothesis' outcome and verdict: the percentile bootstrap's when it has
/// one, else the comparison of means.
pub fn outcome(h: &crate::hypotheses::Hypothesis) -> (Option<Outcome>, Option<String>) {
    match (&h.distribution, &h.comparison) {
        (Some(d), _) => (Some(d.outcome), Some(d.verdict.clone())),
        (None, Some(c)) => (Some(c.outcome), Some(c.verdict.clone())),
        (None, None) => (None, None),
    }
}

/// The provenance manifest (`provenance.json` in a team's zip export): what
/// each run ran, where and under what, and the conclusions — enough to replay
/// the investigation on another Sleuth (`POST /api/v1/replays`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Manifest {
    /// `sleuth-provenance/1`.
    pub format: String,
    pub investigation: ManifestInvestigation,
    pub exported_at: String,
    pub steps: Vec<ManifestStep>,
    pub hypotheses: Vec<ManifestHypothesis>,
    /// How its runs' numbers are read: its own extractors, derived metrics and SLO.
    #[serde(default)]
    pub extractors: Vec<crate::metrics::ExtractorDef>,
    #[serde(default)]
    pub derived: Vec<crate::metrics::DerivedDef>,
    #[serde(default)]
    pub slo: Option<String>,
}

pub const MANIFEST_FORMAT: &str = "sleuth-provenance/1";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct ManifestInvestigation {
    pub id: String,
    pub title: String,
    pub question: String,
    pub url: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct ManifestStep {
    pub id: i64,
    pub position: u32,
    /// The step as it is now (a command's server spec, env and matrix included).
    pub body: crate::steps::StepBody,
    #[serde(default)]
    pub runs: Vec<ManifestRun>,
    /// A snippet's snapshots: which file, which lines, its hash.
    #[serde(default)]
    pub snapshots: Vec<ManifestSnapshot>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct ManifestRun {
    pub id: i64,
    pub host: String,
    /// The command as it ran, and its env.
    pub command: String,
    pub env: Vec<(String, String)>,
    pub config: Option<crate::sweeps::Config>,
    pub status: crate::runs::RunStatus,
    pub warmup: bool,
    pub started_at: Option<String>,
    /// The host as it was when the run started (GPUs, driver, CUDA, packages).
    pub facts: Option<crate::hosts::HostFacts>,
    /// Its files: name, bytes, sha256.
    pub artifacts: Vec<(String, u64, String)>,
    pub measurements: Vec<(String, f64, String, Option<String>)>,
    /// The patch it ran with: per file its base, the sha256 written (applied),
    /// at the end and put back; caches cleared; expectations met. (The diff
    /// is its patch step's body.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<crate::steps::patch::RunPatch>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct ManifestSnapshot {
    pub path: String,
    pub start: u64,
    pub end: u64,
    pub sha256: Option<String>,
    pub lines: Vec<String>,
    pub fetched_at: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct ManifestHypothesis {
    pub id: i64,
    pub statement: String,
    pub rationale: String,
    pub metric: Option<String>,
    pub direction: Option<crate::hypotheses::Direction>,
    pub expected_pct: Option<f64>,
    pub baseline: crate::hypotheses::RunGroup,
    pub treatment: crate::hypotheses::RunGroup,
    /// The runs each arm used when the manifest was made (a replay maps them
    /// to the same configurations of the copied steps).
    #[serde(default)]
    pub baseline_runs: Vec<i64>,
    #[serde(default)]
    pub treatment_runs: Vec<i64>,
    pub outcome: Option<Outcome>,
    pub verdict: Option<String>,
}

/// `POST /api/v1/replays`: a manifest from another Sleuth, replayed here.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ManifestReplay {
    pub provenance: Manifest,
    #[serde(default)]
    pub host: Option<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub steps: Option<Vec<i64>>,
    #[serde(default)]
    pub repeat: Option<u32>,
}

/// The manifest of `inv`; `facts` by capture id, for its runs.
pub fn manifest_of(
    inv: &crate::model::Investigation,
    facts: &std::collections::HashMap<i64, crate::hosts::HostFacts>,
    exported_at: String,
) -> Manifest {
    let steps = inv
        .steps
        .iter()
        .map(|s| ManifestStep {
            id: s.id,
            position: s.position,
            body: s.body.clone(),
            runs: s
                .runs
                .iter()
                .map(|r| ManifestRun {
                    id: r.id,
                    host: r.host.clone(),
                    command: r.command.clone(),
                    env: r.env.clone(),
                    config: r.config.clone(),
                    status: r.status,
                    warmup: r.warmup,
                    started_at: r.started_at.clone(),
                    facts: r.facts_id.and_then(|id| facts.get(&id).cloned()),
                    artifacts: r.artifacts.iter().map(|a| (a.name.clone(), a.size, a.sha256.clone())).collect(),
                    measurements: r
                        .measurements
                        .iter()
                        .map(|m| (m.metric.clone(), m.value, m.unit.clone(), m.key.clone()))
                        .collect(),
                    patch: r.patch.clone(),
                })
                .collect(),
            snapshots: s
                .snapshots
                .iter()
                .map(|snap| ManifestSnapshot {
                    path: snap.path.clone(),
                    start: snap.start,
                    end: snap.end,
                    sha256: snap.sha256.clone(),
                    lines: snap.lines.clone(),
                    fetched_at: snap.fetched_at.clone(),
                })
                .collect(),
        })
        .collect();
    let hypotheses = inv
        .hypotheses
        .iter()
        .map(|h| {
            let (outcome, verdict) = outcome(h);
            ManifestHypothesis {
                id: h.id,
                statement: h.statement.clone(),
                rationale: h.rationale.clone(),
                metric: h.metric.clone(),
                direction: h.direction,
                expected_pct: h.expected_pct,
                baseline: h.baseline.clone(),
                treatment: h.treatment.clone(),
                baseline_runs: h.baseline_values.iter().map(|(run, _)| *run).collect(),
                treatment_runs: h.treatment_values.iter().map(|(run, _)| *run).collect(),
                outcome,
                verdict,
            }
        })
        .collect();
    Manifest {
        format: MANIFEST_FORMAT.into(),
        investigation: ManifestInvestigation {
            id: inv.id.clone(),
            title: inv.title.clone(),
            question: inv.question.clone(),
            url: inv.url.clone(),
        },
        exported_at,
        steps,
        hypotheses,
        extractors: inv.extractors.clone(),
        derived: inv.derived.clone(),
        slo: inv.slo.as_ref().map(|s| s.text.clone()),
    }
}
