//! Hypotheses: a statement tied to numbers. Each holds one experiment — a
//! baseline group of runs against a treatment group on one metric — whose
//! comparison the server computes; the status is set by a person.

use crate::metrics::Comparison;
use serde::{Deserialize, Serialize};

pub const STATUSES: [&str; 4] = ["open", "supported", "refuted", "inconclusive"];

/// Runs named one by one, every run of the named (command) steps, and the runs
/// of a sweep's step whose configuration agrees with the one named (a partial
/// one picks every configuration that agrees: `{"NCCL_PROTO": "LL"}` is LL
/// with every NCCL_ALGO). Warm-up runs and runs without the metric are left out.
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
        self.runs.is_empty() && self.steps.is_empty() && self.configs.is_empty()
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
    /// The expected effect: `increase` or `decrease`, optionally by this many percent.
    pub direction: Option<String>,
    pub expected_pct: Option<f64>,
    /// `open`, `supported`, `refuted` or `inconclusive`.
    pub status: String,
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
    #[serde(default)]
    pub direction: Option<String>,
    /// Absent: unchanged; `null`: no expected size any more.
    #[serde(default, deserialize_with = "present")]
    pub expected_pct: Option<Option<f64>>,
    #[serde(default)]
    pub status: Option<String>,
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
