//! Replaying an investigation on another host or with other versions
//! (`POST /api/v1/investigations/{id}/replay`): its steps copied into a new
//! investigation that runs there, its hypotheses judged again, and the two
//! conclusions side by side (`GET /api/v1/replays/{id}`).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What to replay, where and how.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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
pub struct Replay {
    pub id: i64,
    /// The investigation replayed, and the one the replay ran in.
    pub original: String,
    pub investigation: String,
    pub host: Option<String>,
    pub env: BTreeMap<String, String>,
    /// `running` while any of its runs is queued or running, else `finished`.
    pub status: String,
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
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplayedRun {
    pub id: i64,
    pub step_id: i64,
    pub host: String,
    pub status: crate::runs::RunStatus,
}

/// A hypothesis judged on the original's runs and on the replay's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplayedHypothesis {
    pub original_id: i64,
    pub replay_id: i64,
    pub statement: String,
    pub metric: Option<String>,
    /// `increase`, `decrease`, `within_noise`… (none until measured).
    pub original_outcome: Option<String>,
    pub replayed_outcome: Option<String>,
    pub original_verdict: Option<String>,
    pub replayed_verdict: Option<String>,
    /// Both judged, and to the same outcome.
    pub same_conclusion: Option<bool>,
}

/// A snippet read again from the replay's host.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplayedSnippet {
    pub original_step: i64,
    pub replay_step: i64,
    pub path: Option<String>,
    /// `same`, `changed`, or `unread` (a side has no snapshot).
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A hypothesis' outcome and verdict: the percentile bootstrap's when it has
/// one, else the comparison of means.
pub fn outcome(h: &crate::hypotheses::Hypothesis) -> (Option<String>, Option<String>) {
    match (&h.distribution, &h.comparison) {
        (Some(d), _) => (Some(d.outcome.clone()), Some(d.verdict.clone())),
        (None, Some(c)) => (Some(c.outcome.clone()), Some(c.verdict.clone())),
        (None, None) => (None, None),
    }
}
