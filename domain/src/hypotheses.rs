//! Hypotheses: a statement tied to numbers. Each holds one experiment — a
//! baseline arm of runs against a treatment arm on one metric — whose
//! comparison the server computes; its status follows the verdict until a
//! person sets it.

use crate::metrics::{Comparison, Outcome};
use serde::{Deserialize, Serialize};

/// Where a hypothesis stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum HypothesisStatus {
    #[default]
    Open,
    Supported,
    Refuted,
    Inconclusive,
}

impl HypothesisStatus {
    pub const ALL: [HypothesisStatus; 4] = [Self::Open, Self::Supported, Self::Refuted, Self::Inconclusive];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Supported => "supported",
            Self::Refuted => "refuted",
            Self::Inconclusive => "inconclusive",
        }
    }

    /// What the verdict says: supported when the change goes the expected way
    /// beyond noise, refuted when it goes the other way, inconclusive within
    /// noise, open while there is no judged verdict (or no expectation).
    pub fn of_verdict(direction: Option<Direction>, outcome: Option<Outcome>) -> Self {
        match (direction, outcome) {
            (Some(d), Some(o @ (Outcome::Increase | Outcome::Decrease))) => {
                if d.went(o) {
                    Self::Supported
                } else {
                    Self::Refuted
                }
            }
            (Some(_), Some(Outcome::WithinNoise)) => Self::Inconclusive,
            _ => Self::Open,
        }
    }
}

/// A stored status that is none of [`HypothesisStatus`] (the schema's CHECK keeps them out).
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not a hypothesis status")]
pub struct UnknownStatus(pub String);

impl TryFrom<String> for HypothesisStatus {
    type Error = UnknownStatus;

    fn try_from(text: String) -> Result<Self, UnknownStatus> {
        Self::ALL.into_iter().find(|s| s.as_str() == text).ok_or(UnknownStatus(text))
    }
}

/// A status as a person sets it, or `auto`: back to following the verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum StatusSetting {
    Open,
    Supported,
    Refuted,
    Inconclusive,
    Auto,
}

impl StatusSetting {
    /// `None` for `auto`.
    pub fn status(self) -> Option<HypothesisStatus> {
        match self {
            Self::Open => Some(HypothesisStatus::Open),
            Self::Supported => Some(HypothesisStatus::Supported),
            Self::Refuted => Some(HypothesisStatus::Refuted),
            Self::Inconclusive => Some(HypothesisStatus::Inconclusive),
            Self::Auto => None,
        }
    }

    /// From a form's select: a status, or `auto`.
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim() {
            "auto" => Some(Self::Auto),
            other => HypothesisStatus::ALL.into_iter().find(|s| s.as_str() == other).map(Self::from),
        }
    }
}

impl From<HypothesisStatus> for StatusSetting {
    fn from(status: HypothesisStatus) -> Self {
        match status {
            HypothesisStatus::Open => Self::Open,
            HypothesisStatus::Supported => Self::Supported,
            HypothesisStatus::Refuted => Self::Refuted,
            HypothesisStatus::Inconclusive => Self::Inconclusive,
        }
    }
}

/// Which way a hypothesis expects its metric to move.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Increase,
    Decrease,
}

impl Direction {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Increase => "increase",
            Self::Decrease => "decrease",
        }
    }

    /// `increase`, `decrease`; `None` for anything else (the caller says what is wrong).
    /// Whether `outcome` went this way.
    pub fn went(self, outcome: Outcome) -> bool {
        matches!((self, outcome), (Self::Increase, Outcome::Increase) | (Self::Decrease, Outcome::Decrease))
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text.trim() {
            "increase" => Some(Self::Increase),
            "decrease" => Some(Self::Decrease),
            _ => None,
        }
    }
}

/// A stored direction that is neither (the schema's CHECK keeps them out).
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not a direction")]
pub struct UnknownDirection(pub String);

impl TryFrom<String> for Direction {
    type Error = UnknownDirection;

    fn try_from(text: String) -> Result<Self, UnknownDirection> {
        Self::parse(&text).ok_or(UnknownDirection(text))
    }
}

/// The runs an arm compares: named one by one, every run of the named
/// (command) steps, and the runs of a sweep's step whose configuration agrees
/// with the one named (a partial one picks every configuration that agrees:
/// `{"NCCL_PROTO": "LL"}` is LL with every NCCL_ALGO); of those named by step
/// or configuration, optionally only those in a time window or of one launch.
/// Warm-up runs, runs left out by hand, and runs without the metric are left
/// out; so are a watch's runs unless the arm asks for them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RunGroup {
    #[serde(default)]
    pub runs: Vec<i64>,
    #[serde(default)]
    pub steps: Vec<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub configs: Vec<ConfigPick>,
    /// Of the runs of `steps` and `configs`: only those that started in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Window>,
    /// Only the runs of one launch (a Run press or a sweep), named by its first
    /// run; alone, every run of that launch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch: Option<i64>,
    /// Runs left out by hand.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<i64>,
    /// Runs a watch made of these steps join the arm too (by default they do not:
    /// a watch's schedule is not an experiment's design).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub include_watch_runs: bool,
}

/// A time window by when runs started (RFC 3339); either end may be open.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Window {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
}

/// Runs of step `step` whose configuration has every value of `config`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ConfigPick {
    pub step: i64,
    #[serde(default, deserialize_with = "deserialize_config")]
    pub config: crate::sweeps::Config,
}

/// A configuration with values as a matrix takes them (text, numbers, null).
fn deserialize_config<'de, D: serde::Deserializer<'de>>(d: D) -> Result<crate::sweeps::Config, D::Error> {
    let raw: std::collections::BTreeMap<String, serde_json::Value> = serde::Deserialize::deserialize(d)?;
    let as_matrix: serde_json::Value =
        serde_json::Value::Object(raw.into_iter().map(|(k, v)| (k, serde_json::Value::Array(vec![v]))).collect());
    let matrix = crate::sweeps::deserialize_matrix(as_matrix).map_err(serde::de::Error::custom)?;
    Ok(matrix.into_iter().filter_map(|(k, mut levels)| levels.pop().map(|l| (k, l))).collect())
}

impl RunGroup {
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty() && self.steps.is_empty() && self.configs.is_empty() && self.launch.is_none()
    }

    /// What narrows the arm beyond its runs, steps and configurations, in
    /// words ("of launch #41; 2 runs left out; watch runs included"); empty
    /// when nothing does.
    pub fn narrowed(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(window) = &self.window {
            match (&window.from, &window.to) {
                (Some(from), Some(to)) => out.push(format!("started {from} – {to}")),
                (Some(from), None) => out.push(format!("started from {from}")),
                (None, Some(to)) => out.push(format!("started until {to}")),
                (None, None) => {}
            }
        }
        if let Some(launch) = self.launch {
            out.push(format!("of the launch begun by run #{launch}"));
        }
        if !self.exclude.is_empty() {
            out.push(format!(
                "{} left out ({})",
                crate::runs::counted(self.exclude.len() as u64, "run", "runs"),
                run_ranges(&self.exclude)
            ));
        }
        if self.include_watch_runs {
            out.push("watch runs included".into());
        }
        out
    }
}

/// Run ids as people read them: `#9–16, #19`.
pub fn run_ranges(ids: &[i64]) -> String {
    let mut sorted = ids.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        parts.push(if j > i { format!("#{}–{}", sorted[i], sorted[j]) } else { format!("#{}", sorted[i]) });
        i = j + 1;
    }
    parts.join(", ")
}

/// A verdict as it was shown: its change, outcome and how many runs it rested on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct VerdictSeen {
    pub delta_pct: Option<f64>,
    pub outcome: Option<Outcome>,
    pub verdict: Option<String>,
    pub baseline_runs: Vec<i64>,
    pub treatment_runs: Vec<i64>,
    /// RFC 3339: when it was first shown so.
    pub at: String,
}

impl VerdictSeen {
    pub fn runs(&self) -> usize {
        self.baseline_runs.len() + self.treatment_runs.len()
    }
}

/// How the verdict moved when the runs under it changed: kept, never silent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct VerdictChange {
    pub was: VerdictSeen,
    pub now: VerdictSeen,
    /// Runs that joined either arm since, and runs that left it.
    pub joined: Vec<i64>,
    pub left: Vec<i64>,
    /// "was +100.0 % on 4 runs; now +2.0 % on 16 — runs #9–16 joined".
    pub text: String,
}

impl VerdictChange {
    /// The change from `was` to `now`; none when they rest on the same runs.
    pub fn between(was: VerdictSeen, now: VerdictSeen) -> Option<Self> {
        let all = |v: &VerdictSeen| -> std::collections::BTreeSet<i64> {
            v.baseline_runs.iter().chain(&v.treatment_runs).copied().collect()
        };
        let (before, after) = (all(&was), all(&now));
        let same_sides = was.baseline_runs == now.baseline_runs && was.treatment_runs == now.treatment_runs;
        if same_sides {
            return None;
        }
        let joined: Vec<i64> = after.difference(&before).copied().collect();
        let left: Vec<i64> = before.difference(&after).copied().collect();
        let said = |v: &VerdictSeen| match v.delta_pct {
            Some(d) => {
                format!("{} on {}", crate::metrics::signed_pct(d), crate::runs::counted(v.runs() as u64, "run", "runs"))
            }
            None => format!("no verdict on {}", crate::runs::counted(v.runs() as u64, "run", "runs")),
        };
        let mut moved = Vec::new();
        if !joined.is_empty() {
            moved.push(format!("{} {} joined", if joined.len() == 1 { "run" } else { "runs" }, run_ranges(&joined)));
        }
        if !left.is_empty() {
            moved.push(format!("{} {} left", if left.len() == 1 { "run" } else { "runs" }, run_ranges(&left)));
        }
        if moved.is_empty() {
            moved.push("runs moved between the arms".into());
        }
        let text = format!("was {}; now {} — {}", said(&was), said(&now), moved.join("; "));
        Some(Self { was, now, joined, left, text })
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Hypothesis {
    pub id: i64,
    pub investigation_id: String,
    pub statement: String,
    /// Markdown, and the same rendered and sanitized.
    pub rationale: String,
    pub rationale_html: String,
    /// The metric the experiment compares (`output_throughput`).
    pub metric: Option<String>,
    /// The expected effect: an increase or a decrease, optionally by this many percent.
    pub direction: Option<Direction>,
    pub expected_pct: Option<f64>,
    /// What the verdict says (supported, refuted, inconclusive, open), or what
    /// a person set it to.
    pub status: HypothesisStatus,
    /// Whether a person set the status (else it follows the verdict).
    #[serde(default)]
    pub status_set: bool,
    pub baseline: RunGroup,
    pub treatment: RunGroup,
    /// Steps that bear on it (notes, snippets, runs' steps).
    pub evidence: Vec<i64>,
    /// The runs each group resolved to, with the metric's value in each.
    pub baseline_values: Vec<(i64, f64)>,
    pub treatment_values: Vec<(i64, f64)>,
    pub comparison: Option<Comparison>,
    /// On a percentile of a metric with per-request samples (`ttft_ms_p99`):
    /// the percentile of each side's requests pooled, with a bootstrap interval
    /// over runs and requests. When there is one, it is the verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distribution: Option<crate::distributions::PercentileComparison>,
    /// Whether the measured change goes the expected way (none until both are known).
    pub as_expected: Option<bool>,
    /// The verdict's own word: "as expected", "opposite of expected", "within
    /// noise", "noise unknown"; none before there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict_word: Option<String>,
    /// The last time the runs under the verdict changed: what it was, what it
    /// is, which runs joined or left.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict_change: Option<VerdictChange>,
    /// Unit of the metric, from its measurements.
    pub unit: Option<String>,
    /// What else told the groups apart: host, host facts, command, env.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
    /// The experiment drawn as SVG (server-rendered), when there is a comparison.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart_svg: Option<String>,
    /// Where each run's dot is on it (none on a CDF): the team's page links them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chart_points: Vec<crate::metrics::ChartPoint>,
    /// When no run of the groups has the metric: saying so, with the nearest
    /// name they do have ("did you mean `ttft_ms_p99`?").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric_note: Option<String>,
    /// Which kernels changed, when both groups have profiles (torch traces, nsys).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_diff: Option<crate::profiles::ProfileDiff>,
    /// Runs of its arms it does not count, and why (a patch not applied, a
    /// patch's expectation not met).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<LeftOut>,
    /// The patches its arms' runs ran with: what each changed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patches: Vec<PatchSummary>,
    /// The guards over the runs its arms used (`crate::guards`): one of each
    /// name, once both arms have runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guards: Vec<crate::guards::Guard>,
    /// Whether no guard warns over those runs and one could see them (`None`:
    /// none could, or the arms have no runs yet; `guards::trusted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trusted: Option<bool>,
    /// The hazards found, in a sentence ("treatment: 1 of 3 treatment runs:
    /// prefix-cache hits up to 42 %…"); `fail` ones mark the verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hazards: Option<String>,
    pub url: String,
    pub created_at: String,
    pub updated_at: String,
    /// Bumped by every save; a save naming an older one is refused (409).
    #[serde(default)]
    pub version: i64,
    #[serde(default)]
    pub updated_by: Option<String>,
}

/// A new hypothesis, or (every field optional) a change to one.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct HypothesisInput {
    #[serde(default)]
    pub statement: Option<String>,
    #[serde(default)]
    pub rationale: Option<String>,
    #[serde(default)]
    pub metric: Option<String>,
    /// `increase` or `decrease`; `""` or `null` for none.
    #[serde(default, deserialize_with = "direction_input")]
    pub direction: Option<Option<Direction>>,
    /// Absent: unchanged; `null`: no expected size any more.
    #[serde(default, deserialize_with = "present")]
    pub expected_pct: Option<Option<f64>>,
    /// A status set by a person, or `auto` to have it follow the verdict again.
    #[serde(default)]
    pub status: Option<StatusSetting>,
    #[serde(default)]
    pub baseline: Option<RunGroup>,
    #[serde(default)]
    pub treatment: Option<RunGroup>,
    #[serde(default)]
    pub evidence: Option<Vec<i64>>,
    /// The version this change was made from; a newer one refuses it (409).
    /// Without it, the change applies to whatever is there (scripts).
    #[serde(default)]
    pub version: Option<i64>,
}

/// A direction as given: `increase`, `decrease`, or `""`/`null` for none.
fn direction_input<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<Direction>>, D::Error> {
    let text: Option<String> = Option::deserialize(d)?;
    match text.as_deref().map(str::trim) {
        None | Some("") => Ok(Some(None)),
        Some(text) => Direction::parse(text).map(|d| Some(Some(d))).ok_or_else(|| {
            serde::de::Error::custom(format!("the expected direction is increase or decrease, not {text:?}"))
        }),
    }
}

/// A field that is there, `null` included (`Some(None)`); absent is `None`
/// through `#[serde(default)]`.
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// The name in `known` nearest to `wanted`, if one is near: the most words
/// in common (`p99_ttft` and `ttft_ms_p99` share two of three), else at most
/// two letters apart (`ouput_throughput`).
pub fn did_you_mean<'a>(wanted: &str, known: &[&'a str]) -> Option<&'a str> {
    let words = |s: &str| -> std::collections::BTreeSet<String> {
        s.to_lowercase()
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(String::from)
            .collect()
    };
    let wanted_words = words(wanted);
    let shared = |name: &str| {
        let theirs = words(name);
        let common = wanted_words.intersection(&theirs).count() as f64;
        let all = wanted_words.union(&theirs).count().max(1) as f64;
        common / all
    };
    let by_words = known
        .iter()
        .map(|k| (shared(k), *k))
        .filter(|(score, _)| *score >= 0.5)
        .max_by(|a, b| a.0.total_cmp(&b.0).then_with(|| b.1.len().cmp(&a.1.len())));
    if let Some((_, name)) = by_words {
        return Some(name);
    }
    known
        .iter()
        .map(|k| (edit_distance(&wanted.to_lowercase(), &k.to_lowercase()), *k))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Levenshtein distance, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1).min(row[j] + 1).min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

pub fn hypothesis_anchor(id: i64) -> String {
    format!("hypothesis-{id}")
}

/// How an experiment's two groups differ beyond the metric, from what each run
/// recorded: its host, the host facts current at its start, its command and env.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Provenance {
    /// "Same host (h200) and host facts (2 × NVIDIA H200, driver 580.159.04, CUDA 13.0);
    /// only NCCL_PROTO differs: (unset) → LL."
    pub summary: String,
    /// What makes the comparison doubtful: other hosts, other drivers or packages.
    pub warnings: Vec<String>,
}

/// What is wrong with a hypothesis's metric as given.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum MetricError {
    #[error("Choose the metric this hypothesis is judged on: one measured here (the list), or a new name.")]
    Blank,
    #[error("{0:?} is not a metric name (e.g. output_throughput).")]
    NotAName(String),
}

impl From<MetricError> for crate::error::ApiError {
    fn from(error: MetricError) -> Self {
        Self::invalid(error.to_string())
    }
}

/// A metric a hypothesis names: a word of letters, digits, `_`, `-` or `.`,
/// at most 80 bytes; blank is refused (a script that has none yet leaves the
/// field out).
pub fn check_metric(text: &str) -> Result<String, MetricError> {
    let metric = text.trim();
    if metric.is_empty() {
        Err(MetricError::Blank)
    } else if metric.len() <= 80 && metric.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.')) {
        Ok(metric.to_string())
    } else {
        Err(MetricError::NotAName(metric.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mistyped_metric_gets_the_nearest_name() {
        let known = ["ttft_ms_p99", "ttft_ms_median", "tpot_ms_p99", "output_throughput", "tg128"];
        assert_eq!(did_you_mean("p99_ttft", &known), Some("ttft_ms_p99"));
        assert_eq!(did_you_mean("ouput_throughput", &known), Some("output_throughput"));
        assert_eq!(did_you_mean("TTFT_MS_P99", &known), Some("ttft_ms_p99"));
        assert_eq!(did_you_mean("tg12", &known), Some("tg128"));
        assert_eq!(did_you_mean("gpu_util_mean", &known), None, "nothing near");
        assert_eq!(did_you_mean("p99", &[]), None);
    }
}

/// A run an arm names that its verdict does not count.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct LeftOut {
    pub run: i64,
    pub why: String,
}

/// A patch an arm's runs ran with, as the verdict shows it beside its numbers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct PatchSummary {
    pub step: i64,
    /// `baseline` or `treatment` (or both: `baseline, treatment`).
    pub arms: String,
    pub files: Vec<String>,
    pub added: u32,
    pub removed: u32,
    /// The patch step, with its whole diff.
    pub url: String,
}
