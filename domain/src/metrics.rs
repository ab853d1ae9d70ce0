//! Numbers measured in run output: what the extractors find, and what people
//! enter by hand. Plain data shared by the server, the API and the pages.

use serde::{Deserialize, Serialize};

/// One number, with where it came from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Measurement {
    /// `output_throughput`, `ttft_ms_p99`, `tg128`, or a user extractor's name.
    pub metric: String,
    pub value: f64,
    /// `tok/s`, `req/s`, `ms`, `s`, `requests`, `tokens`…
    pub unit: String,
    /// `vllm-bench-serve`, `vllm-bench-throughput`, `vllm-bench-latency`,
    /// `sglang-bench-serving`, `llama-bench`, `custom:NAME`, or `manual`.
    pub extractor: String,
    /// When the tool reports a spread itself (llama-bench's `± 0.16`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stddev: Option<f64>,
    /// What the number is about when one output holds several of the same metric
    /// (llama-bench's model; the n-th match of a user extractor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// [`one_each`], owned: the first of each metric and key, and the others
/// (the same number read again by another extractor), in the order found.
pub fn split_one_each(found: Vec<Measurement>) -> (Vec<Measurement>, Vec<Measurement>) {
    let (mut first, mut again): (Vec<Measurement>, Vec<Measurement>) = (Vec::new(), Vec::new());
    for m in found {
        if first.iter().any(|k| k.metric == m.metric && k.key == m.key) {
            again.push(m);
        } else {
            first.push(m);
        }
    }
    (first, again)
}

/// One measurement per metric and key, the first found, in the order found:
/// two extractors reading the same number (a log line and a result file)
/// give it twice.
pub fn one_each(found: &[Measurement]) -> Vec<&Measurement> {
    let mut kept: Vec<&Measurement> = Vec::new();
    for m in found {
        if !kept.iter().any(|k| k.metric == m.metric && k.key == m.key) {
            kept.push(m);
        }
    }
    kept
}

/// A measurement as stored in an investigation: from a run's output, or entered by hand.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct StoredMeasurement {
    pub id: i64,
    /// The run whose output it came from; none for manual ones.
    pub run_id: Option<i64>,
    #[serde(flatten)]
    pub measurement: Measurement,
    /// Manual ones: where and how it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Manual ones: the configuration it belongs to (`NCCL_PROTO=LL`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    pub created_at: String,
}

/// A number measured elsewhere, entered by hand.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NewMeasurement {
    pub metric: String,
    pub value: f64,
    pub unit: String,
    #[serde(default)]
    pub stddev: Option<f64>,
    #[serde(default)]
    pub note: Option<String>,
    #[serde(default)]
    pub label: Option<String>,
}

/// An investigation's own extractor: a regex with one capture group (the number).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ExtractorDef {
    pub name: String,
    pub pattern: String,
    pub unit: String,
}

/// A metric computed from a run's other measurements (`server/src/metrics/derived.rs`):
/// `hbm_gbps = output_throughput * weights_gb` with `weights_gb = 6.4`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct DerivedDef {
    pub name: String,
    #[serde(default)]
    pub unit: String,
    /// `+ - * /` (or × ÷), parentheses, numbers, metric names and constants.
    pub formula: String,
    #[serde(default)]
    pub constants: std::collections::BTreeMap<String, f64>,
}

impl DerivedDef {
    /// `hbm_gbps = output_throughput * weights_gb (weights_gb = 6.4) GB/s`
    pub fn describe(&self) -> String {
        let constants: Vec<String> = self.constants.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        let constants = if constants.is_empty() { String::new() } else { format!(" ({})", constants.join(", ")) };
        format!("{} = {}{constants} {}", self.name, self.formula.trim(), self.unit).trim_end().to_string()
    }
}

/// One side of a comparison.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct GroupSummary {
    pub n: usize,
    pub mean: f64,
    pub median: f64,
    /// Sample standard deviation; none with fewer than two values.
    pub stddev: Option<f64>,
    pub values: Vec<f64>,
}

/// Baseline against treatment on one metric.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Comparison {
    pub baseline: GroupSummary,
    pub treatment: GroupSummary,
    /// (treatment mean − baseline mean) / baseline mean, in percent.
    pub delta_pct: f64,
    /// 95 % confidence interval of that delta, in percent of the baseline mean
    /// (Welch's t interval of the difference of means); none when a side has one value.
    pub ci_pct: Option<(f64, f64)>,
    pub outcome: Outcome,
    /// The plain line: "+3.1 % ± 4.0 %: within noise", "−42 % (95 % CI −45 … −39 %)".
    pub verdict: String,
    #[serde(default)]
    pub scale: Scale,
}

/// What a comparison found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The interval lies above zero.
    Increase,
    /// The interval lies below zero.
    Decrease,
    /// The interval includes zero.
    WithinNoise,
    /// A side has a single value: there is no interval.
    NoiseUnknown,
}

impl Outcome {
    /// From a delta and its 95 % interval, which decides.
    pub fn of(delta_pct: f64, (lo, hi): (f64, f64)) -> Self {
        if lo <= 0.0 && hi >= 0.0 {
            Self::WithinNoise
        } else if delta_pct > 0.0 {
            Self::Increase
        } else {
            Self::Decrease
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Increase => "increase",
            Self::Decrease => "decrease",
            Self::WithinNoise => "within_noise",
            Self::NoiseUnknown => "noise_unknown",
        }
    }

    /// A conclusion either way or within noise; not `noise_unknown`.
    pub fn judged(self) -> bool {
        self != Self::NoiseUnknown
    }
}

impl std::str::FromStr for Outcome {
    type Err = UnknownOutcome;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        [Self::Increase, Self::Decrease, Self::WithinNoise, Self::NoiseUnknown]
            .into_iter()
            .find(|o| o.as_str() == text)
            .ok_or_else(|| UnknownOutcome(text.to_string()))
    }
}

/// A stored outcome that is none of [`Outcome`].
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not an outcome (increase, decrease, within_noise, noise_unknown)")]
pub struct UnknownOutcome(pub String);

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a comparison's delta is taken.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Scale {
    /// The means' difference in percent of the baseline's.
    #[default]
    Linear,
    /// The ratio of geometric means, its interval from the logarithms (a
    /// positive metric whose linear interval would pass −100 %).
    Log,
}

/// Runs (and manual numbers) of one configuration, on one metric.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct ConfigGroup {
    /// `NCCL_PROTO=LL`, `(default env)`, a sweep's configuration
    /// (`NCCL_ALGO=Ring NCCL_PROTO=(unset)`), a manual measurement's label;
    /// prefixed with the step (`#3 · …`) when several commands share a label.
    pub label: String,
    /// `(run id, value)`; manual measurements have no run.
    pub values: Vec<(Option<i64>, f64)>,
    pub summary: GroupSummary,
    /// (mean − baseline) / baseline, in percent.
    #[serde(default)]
    pub delta_pct: Option<f64>,
}

/// Which chart: the metric (default: the main one) and the configuration
/// whose mean the others are compared with (default: the first hypothesis's
/// baseline, else the first configuration measured).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct OverviewQuery {
    #[serde(default)]
    pub metric: Option<String>,
    /// A group's label, as the overview lists them.
    #[serde(default)]
    pub baseline: Option<String>,
}

/// The investigation's chart: one metric across every configuration measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Overview {
    pub metric: String,
    pub unit: String,
    /// The other metrics measured in more than one run (each has its own chart URL).
    pub metrics: Vec<String>,
    pub groups: Vec<ConfigGroup>,
    /// The mean the dashed line marks: the first hypothesis on this metric's
    /// baseline, else the first configuration measured.
    pub baseline: f64,
    pub baseline_label: String,
    pub svg: String,
    /// Where each run's dot is in `svg` (a group of more runs than the chart
    /// draws dots for has none): the team's page makes each a link to its run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub points: Vec<ChartPoint>,
}

/// A run's dot on a chart, in the SVG's pixels.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct ChartPoint {
    pub run: i64,
    pub x: i32,
    pub y: i32,
    pub value: f64,
}

/// A change in percent with its sign and one decimal: `+3.1 %`, `−42.0 %`
/// (a true minus; `+0.0 %` for what rounds to zero).
pub fn signed_pct(x: f64) -> String {
    let text = format!("{:.1}", x.abs());
    if x < 0.0 && text != "0.0" { format!("−{text} %") } else { format!("+{text} %") }
}

/// A measured value as the pages show it: one decimal from 100 up, two below.
pub fn figure(value: f64) -> String {
    if value.abs() >= 100.0 { format!("{value:.1}") } else { format!("{value:.2}") }
}
