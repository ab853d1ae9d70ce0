//! Latency distributions: per-request samples, their percentiles, a service
//! level objective (SLO) and what meets it, the knee of a rate sweep, and a
//! bootstrap comparison of a percentile between two groups of runs.
//!
//! Percentiles interpolate linearly between order statistics (numpy's default,
//! which vLLM, SGLang and GuideLLM use), so a percentile computed here from a
//! run's samples is the one the tool printed.

use serde::{Deserialize, Serialize};

/// The `p`-th percentile (0–100) of `sorted` (ascending, finite); none if empty.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let rank = (p.clamp(0.0, 100.0) / 100.0) * last as f64;
    let (lo, frac) = (rank.floor() as usize, rank.fract());
    let hi = (lo + 1).min(last);
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * frac)
}

/// The same on unsorted values, in linear time (reorders `values`).
fn percentile_unsorted(values: &mut [f64], p: f64) -> Option<f64> {
    let last = values.len().checked_sub(1)?;
    let rank = (p.clamp(0.0, 100.0) / 100.0) * last as f64;
    let (lo, frac) = (rank.floor() as usize, rank.fract());
    let (_, &mut low, above) = values.select_nth_unstable_by(lo, f64::total_cmp);
    if frac == 0.0 || above.is_empty() {
        return Some(low);
    }
    let high = above.iter().copied().fold(f64::INFINITY, f64::min);
    Some(low + (high - low) * frac)
}

/// `ttft_ms_p99` → (`ttft_ms`, 99), `itl_ms_p99_9` → (`itl_ms`, 99.9),
/// `tpot_ms_median` → (`tpot_ms`, 50): a metric that names a percentile of another.
pub fn percentile_metric(metric: &str) -> Option<(&str, f64)> {
    if let Some(base) = metric.strip_suffix("_median") {
        return Some((base, 50.0));
    }
    let at = metric.rfind("_p")?;
    let (base, digits) = (&metric[..at], &metric[at + 2..]);
    let mut parts = digits.splitn(2, '_');
    let whole = parts.next()?;
    let frac = parts.next();
    if base.is_empty() || whole.is_empty() || !whole.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    if frac.is_some_and(|f| f.is_empty() || !f.chars().all(|c| c.is_ascii_digit())) {
        return None;
    }
    let p: f64 = match frac {
        Some(f) => format!("{whole}.{f}").parse().ok()?,
        None => whole.parse().ok()?,
    };
    (p > 0.0 && p < 100.0).then_some((base, p))
}

/// The metric name of the `p`-th percentile of `base`: (`ttft_ms`, 99.9) → `ttft_ms_p99_9`.
pub fn percentile_name(base: &str, p: f64) -> String {
    let text = format!("{p}");
    format!("{base}_p{}", text.replace('.', "_"))
}

/// The percentiles stored as measurements for every metric with samples (any
/// other is computed from them where a hypothesis names it: `ttft_ms_p99_9`).
pub const STANDARD_PERCENTILES: [f64; 4] = [50.0, 90.0, 95.0, 99.0];

/// One bound of an SLO: `ttft_ms ≤ 200`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Bound {
    /// The per-request metric (`ttft_ms`, `tpot_ms`, `itl_ms`, `e2el_ms`).
    pub metric: String,
    /// In the metric's unit (ms).
    pub at_most: f64,
}

/// A service level objective, written once per investigation:
/// `TTFT ≤ 200 ms and TPOT ≤ 50 ms` (optionally `at p90`; the knee of a rate
/// sweep holds each bound at that percentile, p99 by default).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Slo {
    pub bounds: Vec<Bound>,
    pub percentile: f64,
}

/// Latency names people write, and the per-request metric each is.
const SLO_METRICS: [(&str, &str); 8] = [
    ("ttft", "ttft_ms"),
    ("tpot", "tpot_ms"),
    ("itl", "itl_ms"),
    ("e2el", "e2el_ms"),
    ("e2e", "e2el_ms"),
    ("latency", "e2el_ms"),
    ("request_latency", "e2el_ms"),
    ("ttst", "ttst_ms"),
];

/// What is wrong with an SLO as written: the sentence the page and the API show.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SloError {
    #[error("Write the SLO as bounds joined by `and`, e.g. `TTFT <= 200 ms and TPOT <= 50 ms`.")]
    Empty,
    #[error("`at {0}`: name a percentile such as `at p99`.")]
    Percentile(String),
    #[error("`{0}`: write a bound as `TTFT <= 200 ms`.")]
    NotABound(String),
    #[error(
        "`{0}` is not a latency an SLO can bound (TTFT, TPOT, ITL, E2EL, or their names here: ttft_ms, ttft_ms_p99); e.g. `p99 TTFT <= 200 ms and TPOT <= 50 ms`."
    )]
    NotALatency(String),
    #[error("`{0}`: an SLO has one percentile for all its bounds (e.g. `p99 TTFT <= 200 ms and p99 TPOT <= 50 ms`).")]
    TwoPercentiles(String),
    #[error("`{0}`: the bound is a positive number.")]
    NotPositive(String),
    #[error("`{term}`: `{unit}` is not a time unit (ms, s, us).")]
    Unit { term: String, unit: String },
    #[error("`{0}` is bounded twice.")]
    Twice(String),
}

impl From<SloError> for crate::error::ApiError {
    fn from(error: SloError) -> Self {
        Self::invalid(error.to_string())
    }
}

/// A bound's name as people and Sleuth write it (`p99 TTFT`, `ttft p99`,
/// `ttft_ms`, `ttft_ms_p99`, `time-to-first-token`… lower case): the short
/// name, and the percentile it names.
fn slo_name(name: &str) -> (String, Option<f64>) {
    let mut name = name.trim().replace([' ', '-'], "_");
    let mut said = None;
    let pct = |word: &str| word.strip_prefix('p').and_then(|p| p.replace('_', ".").parse::<f64>().ok());
    if let Some((first, rest)) = name.split_once('_')
        && let Some(p) = pct(first)
    {
        said = Some(p);
        name = rest.to_string();
    }
    if let Some((base, p)) = percentile_metric(&name) {
        said = Some(p);
        name = base.to_string();
    } else if let Some((rest, last)) = name.rsplit_once('_')
        && let Some(p) = pct(last)
    {
        said = Some(p);
        name = rest.to_string();
    }
    let name = name.strip_suffix("_ms").unwrap_or(&name).to_string();
    (name, said.filter(|p| *p > 0.0 && *p < 100.0))
}

impl Slo {
    /// Reads `TTFT ≤ 200 ms and TPOT ≤ 50 ms at p99`; the error says what is wrong.
    pub fn parse(text: &str) -> Result<Slo, SloError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(SloError::Empty);
        }
        let lower = text.to_lowercase().replace('≤', "<=");
        let (terms, percentile) = match lower.rsplit_once(" at ") {
            Some((terms, at)) => {
                let at = at.trim();
                let p = at
                    .strip_prefix('p')
                    .and_then(|p| p.parse::<f64>().ok())
                    .filter(|p| *p > 0.0 && *p < 100.0)
                    .ok_or_else(|| SloError::Percentile(at.to_string()))?;
                (terms.to_string(), p)
            }
            None => (lower.clone(), 99.0),
        };
        let asked_at = lower.contains(" at ");
        let mut named_percentile: Option<f64> = None;
        let mut bounds = Vec::new();
        for term in terms.split(" and ") {
            let term = term.trim();
            let (name, rest) = term
                .split_once("<=")
                .or_else(|| term.split_once('<'))
                .ok_or_else(|| SloError::NotABound(term.to_string()))?;
            // `p99 TTFT`, `TTFT p99`, `ttft_ms`, `ttft_ms_p99`: the name, and the percentile it says.
            let (name, said) = slo_name(name);
            if let Some(p) = said {
                match named_percentile {
                    Some(q) if q != p => return Err(SloError::TwoPercentiles(term.to_string())),
                    _ if asked_at && p != percentile => return Err(SloError::TwoPercentiles(term.to_string())),
                    _ => named_percentile = Some(p),
                }
            }
            let metric = SLO_METRICS
                .iter()
                .find(|(said, _)| *said == name)
                .map(|(_, metric)| metric.to_string())
                .ok_or_else(|| SloError::NotALatency(name.clone()))?;
            let rest = rest.trim();
            let split = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
            let (number, unit) = (&rest[..split], rest[split..].trim());
            let value: f64 = number
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite() && *v > 0.0)
                .ok_or_else(|| SloError::NotPositive(term.to_string()))?;
            let factor = match unit {
                "ms" | "" => 1.0,
                "s" => 1e3,
                "us" | "µs" => 1e-3,
                other => return Err(SloError::Unit { term: term.to_string(), unit: other.to_string() }),
            };
            if bounds.iter().any(|b: &Bound| b.metric == metric) {
                return Err(SloError::Twice(name));
            }
            bounds.push(Bound { metric, at_most: value * factor });
        }
        Ok(Slo { bounds, percentile: named_percentile.unwrap_or(percentile) })
    }

    /// `TTFT ≤ 200 ms and TPOT ≤ 50 ms (p99)`.
    pub fn describe(&self) -> String {
        let terms: Vec<String> = self
            .bounds
            .iter()
            .map(|b| format!("{} ≤ {} ms", b.metric.trim_end_matches("_ms").to_uppercase(), b.at_most))
            .collect();
        format!("{} (p{} for the knee)", terms.join(" and "), self.percentile)
    }

    /// Of requests given as per-metric columns (same order, one value per
    /// request), how many meet every bound; none if a bounded metric is missing
    /// or the columns disagree in length.
    pub fn meeting(&self, columns: &[(&str, &[f64])]) -> Option<(usize, usize)> {
        let mut used: Vec<(&[f64], f64)> = Vec::new();
        for bound in &self.bounds {
            let (_, values) = columns.iter().find(|(metric, _)| *metric == bound.metric)?;
            used.push((values, bound.at_most));
        }
        let n = used.first()?.0.len();
        if used.iter().any(|(values, _)| values.len() != n) {
            return None;
        }
        let good = (0..n).filter(|&i| used.iter().all(|(values, bound)| values[i] <= *bound)).count();
        Some((good, n))
    }
}

/// An investigation's SLO as written and as read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct SloView {
    pub text: String,
    pub slo: Slo,
    /// `TTFT ≤ 200 ms and TPOT ≤ 50 ms (p99 for the knee)`.
    pub description: String,
}

/// A new SLO for an investigation; an empty text removes it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SloInput {
    pub text: String,
}

/// The investigation's rate sweeps: latency against achieved request rate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct RateChart {
    /// The latency drawn (`ttft_ms`), its p50 solid and p99 dashed.
    pub metric: String,
    pub svg: String,
    pub lines: Vec<RateLineInfo>,
}

/// One configuration of a rate chart.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct RateLineInfo {
    pub label: String,
    pub points: usize,
    /// The highest achieved rate meeting the SLO (none without an SLO, or when no rate meets it).
    pub knee: Option<f64>,
}

/// One rate of a sweep: its load, and the percentiles measured at it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct RatePoint {
    /// The request rate asked for (or achieved, when the tool asks none: a
    /// throughput or synchronous strategy).
    pub rate: f64,
    /// `(metric, value)`: `ttft_ms_p99` → 180.0.
    pub values: Vec<(String, f64)>,
}

/// The highest rate whose every bound holds at the SLO's percentile (each
/// point must have that percentile of every bounded metric); none if no rate does.
pub fn knee(points: &[RatePoint], slo: &Slo) -> Option<f64> {
    points
        .iter()
        .filter(|point| {
            slo.bounds.iter().all(|bound| {
                // `ttft_ms_p50` and `ttft_ms_median` are the same percentile.
                let at = |metric: &str| {
                    percentile_metric(metric).is_some_and(|(base, p)| base == bound.metric && p == slo.percentile)
                };
                point.values.iter().find(|(metric, _)| at(metric)).is_some_and(|(_, v)| *v <= bound.at_most)
            })
        })
        .map(|point| point.rate)
        .fold(None, |best: Option<f64>, rate| Some(best.map_or(rate, |b| b.max(rate))))
}

/// Points of a CDF to draw: at most `points` (value, share ≤ value) pairs of `sorted`.
pub fn cdf_points(sorted: &[f64], points: usize) -> Vec<(f64, f64)> {
    let n = sorted.len();
    if n == 0 || points == 0 {
        return Vec::new();
    }
    let step = (n as f64 / points as f64).max(1.0);
    let mut out = Vec::with_capacity(points.min(n) + 1);
    let mut i = 0.0;
    while (i as usize) < n {
        let at = i as usize;
        out.push((sorted[at], (at + 1) as f64 / n as f64));
        i += step;
    }
    if out.last().is_some_and(|(_, share)| *share < 1.0) {
        out.push((sorted[n - 1], 1.0));
    }
    out
}

/// A small deterministic generator (splitmix64): the same samples give the same
/// interval on every page load and in every replica.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        ((self.next() >> 11) as f64 / (1u64 << 53) as f64 * n as f64) as usize % n.max(1)
    }
}

/// Bootstrap rounds, and requests drawn per side in each. A side with more
/// requests than that draws fewer than it has from each run (an m-out-of-n
/// bootstrap) and its spread is scaled by √(m/n) to stand for the whole: a
/// thousand runs cost a page load what a few do.
const ROUNDS: usize = 400;
const DRAWS_PER_SIDE: usize = 40_000;

/// A percentile compared between two groups of runs, each run's per-request samples.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct PercentileComparison {
    pub percentile: f64,
    /// Runs and requests (samples) on each side.
    pub runs: (usize, usize),
    pub requests: (usize, usize),
    /// The percentile of each side's requests pooled.
    pub baseline: f64,
    pub treatment: f64,
    pub delta_pct: f64,
    /// 95 % bootstrap interval of the delta, in percent of the baseline.
    pub ci_pct: (f64, f64),
    /// Share of the interval's variance that the requests within runs explain
    /// (the rest is run-to-run spread); none with one run per side.
    pub within_share: Option<f64>,
    /// Never `noise_unknown`: the bootstrap has an interval.
    pub outcome: crate::metrics::Outcome,
    /// "−31 % (95 % CI −36 … −25 %); request-to-request noise dominated (82 %)".
    pub verdict: String,
}

/// The statistic of one resample of a side: resample runs (when there are
/// several), then `per_run` requests (at most each run's count) within each
/// picked run; the percentile of the pool.
fn resample(
    runs: &[Vec<f64>],
    p: f64,
    resample_runs: bool,
    per_run: usize,
    random: &mut Random,
    pool: &mut Vec<f64>,
) -> f64 {
    pool.clear();
    for k in 0..runs.len() {
        let run = if resample_runs { &runs[random.below(runs.len())] } else { &runs[k] };
        for _ in 0..run.len().min(per_run) {
            pool.push(run[random.below(run.len())]);
        }
    }
    percentile_unsorted(pool, p).unwrap_or(f64::NAN)
}

/// Requests to draw per run of a side, and the factor its spread is scaled by.
fn draws(runs: &[Vec<f64>]) -> (usize, f64) {
    let total: usize = runs.iter().map(Vec::len).sum();
    if total <= DRAWS_PER_SIDE {
        return (usize::MAX, 1.0);
    }
    let per_run = (DRAWS_PER_SIDE / runs.len()).max(1);
    let drawn: usize = runs.iter().map(|r| r.len().min(per_run)).sum();
    (per_run, (drawn as f64 / total as f64).sqrt())
}

fn variance(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0)
}

/// The `p`-th percentile of `treatment` against `baseline`, each a list of runs'
/// samples, with a two-level bootstrap (runs, then requests in runs); none when
/// a side has no samples or the baseline's percentile is zero.
pub fn compare_percentile(baseline: &[Vec<f64>], treatment: &[Vec<f64>], p: f64) -> Option<PercentileComparison> {
    let baseline: Vec<Vec<f64>> = baseline.iter().filter(|r| !r.is_empty()).cloned().collect();
    let treatment: Vec<Vec<f64>> = treatment.iter().filter(|r| !r.is_empty()).cloned().collect();
    if baseline.is_empty() || treatment.is_empty() {
        return None;
    }
    let pooled = |runs: &[Vec<f64>]| {
        let mut all: Vec<f64> = runs.iter().flatten().copied().collect();
        percentile_unsorted(&mut all, p)
    };
    let (b, t) = (pooled(&baseline)?, pooled(&treatment)?);
    if b == 0.0 || !b.is_finite() || !t.is_finite() {
        return None;
    }
    let mut random = Random(0x5E_ED0F_D15C);
    let mut pool = Vec::new();
    let several = baseline.len() > 1 || treatment.len() > 1;
    let ((b_per_run, b_scale), (t_per_run, t_scale)) = (draws(&baseline), draws(&treatment));
    // Latencies are positive: each resample's change is a ratio, its spread
    // scaled on the logarithms, so no interval passes −100 % (a linear scaling
    // of a 9 ms side's spread once gave −101.5 … −97.8 %).
    let positive = baseline.iter().chain(&treatment).flatten().all(|v| *v > 0.0);
    let mut deltas_of = |resample_runs: bool| -> Vec<f64> {
        let mut deltas: Vec<f64> = (0..ROUNDS)
            .map(|_| {
                let rb = resample(&baseline, p, resample_runs && baseline.len() > 1, b_per_run, &mut random, &mut pool);
                let rt =
                    resample(&treatment, p, resample_runs && treatment.len() > 1, t_per_run, &mut random, &mut pool);
                if positive {
                    let (lb, lt) = (b.ln() + (rb.ln() - b.ln()) * b_scale, t.ln() + (rt.ln() - t.ln()) * t_scale);
                    return ((lt - lb).exp() - 1.0) * 100.0;
                }
                let (rb, rt) = (b + (rb - b) * b_scale, t + (rt - t) * t_scale);
                (rt - rb) / b.abs() * 100.0
            })
            .filter(|d| d.is_finite())
            .collect();
        deltas.sort_by(f64::total_cmp);
        deltas
    };
    let deltas = deltas_of(true);
    let ci = (percentile(&deltas, 2.5)?, percentile(&deltas, 97.5)?);
    let within_share = several.then(|| {
        let within = variance(&deltas_of(false));
        let total = variance(&deltas);
        if total > 0.0 { (within / total).min(1.0) } else { 1.0 }
    });
    let delta_pct = (t - b) / b.abs() * 100.0;
    let outcome = crate::metrics::Outcome::of(delta_pct, ci);
    let noise = match within_share {
        None => "one run per side: only request-to-request noise is known — repeat runs for run-to-run".to_string(),
        Some(share) if share >= 0.5 => format!("request-to-request noise dominated ({:.0} %)", share * 100.0),
        Some(share) => format!("run-to-run noise dominated ({:.0} %)", (1.0 - share) * 100.0),
    };
    let pct = |x: f64| crate::metrics::signed_pct(x).trim_end_matches(" %").to_string();
    let verdict = match outcome {
        crate::metrics::Outcome::WithinNoise => {
            format!("{} % (95 % CI {} … {} %): within noise; {noise}", pct(delta_pct), pct(ci.0), pct(ci.1))
        }
        _ => format!("{} % (95 % CI {} … {} %); {noise}", pct(delta_pct), pct(ci.0), pct(ci.1)),
    };
    let count = |runs: &[Vec<f64>]| runs.iter().map(Vec::len).sum::<usize>();
    Some(PercentileComparison {
        percentile: p,
        runs: (baseline.len(), treatment.len()),
        requests: (count(&baseline), count(&treatment)),
        baseline: b,
        treatment: t,
        delta_pct,
        ci_pct: ci,
        within_share,
        outcome,
        verdict,
    })
}

/// At most `cap` of `values`, sorted: every one when there are few enough, else
/// an evenly spaced pick of the sorted values (the quantiles, so percentiles
/// and the CDF keep their shape to within 1/cap).
pub fn compact(mut values: Vec<f64>, cap: usize) -> Vec<f64> {
    values.retain(|v| v.is_finite());
    values.sort_by(f64::total_cmp);
    if values.len() <= cap || cap < 2 {
        return values;
    }
    let last = values.len() - 1;
    (0..cap).map(|i| values[i * last / (cap - 1)]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate_like_numpy() {
        // numpy.percentile([1, 2, 3, 4, 10], [50, 90, 99]) = 3.0, 7.6, 9.76
        let sorted = [1.0, 2.0, 3.0, 4.0, 10.0];
        assert_eq!(percentile(&sorted, 50.0), Some(3.0));
        assert!((percentile(&sorted, 90.0).unwrap() - 7.6).abs() < 1e-12);
        assert!((percentile(&sorted, 99.0).unwrap() - 9.76).abs() < 1e-12);
        let mut shuffled = vec![10.0, 3.0, 1.0, 4.0, 2.0];
        assert!((percentile_unsorted(&mut shuffled, 99.0).unwrap() - 9.76).abs() < 1e-12);
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&[7.0], 99.0), Some(7.0));
    }

    #[test]
    fn percentile_metric_names() {
        assert_eq!(percentile_metric("ttft_ms_p99"), Some(("ttft_ms", 99.0)));
        assert_eq!(percentile_metric("itl_ms_p99_9"), Some(("itl_ms", 99.9)));
        assert_eq!(percentile_metric("tpot_ms_median"), Some(("tpot_ms", 50.0)));
        assert_eq!(percentile_metric("output_throughput"), None);
        assert_eq!(percentile_metric("ttft_ms_p"), None);
        assert_eq!(percentile_metric("_p99"), None);
        assert_eq!(percentile_metric("x_p100"), None);
        assert_eq!(percentile_name("itl_ms", 99.9), "itl_ms_p99_9");
        assert_eq!(percentile_name("ttft_ms", 99.0), "ttft_ms_p99");
    }

    #[test]
    fn slos_are_read_and_counted() {
        let slo = Slo::parse("TTFT ≤ 200 ms and TPOT <= 0.05 s").unwrap();
        assert_eq!(
            slo.bounds,
            vec![Bound { metric: "ttft_ms".into(), at_most: 200.0 }, Bound { metric: "tpot_ms".into(), at_most: 50.0 }]
        );
        assert_eq!(slo.percentile, 99.0);
        assert_eq!(Slo::parse("ttft < 1 s at p90").unwrap().percentile, 90.0);
        // The product's own names, and the percentile said with the bound.
        let named = Slo::parse("p99 TTFT <= 200 ms").unwrap();
        assert_eq!((named.bounds[0].metric.as_str(), named.percentile), ("ttft_ms", 99.0));
        let named = Slo::parse("ttft_ms_p90 <= 200 and tpot_ms <= 50").unwrap();
        assert_eq!((named.bounds.len(), named.percentile), (2, 90.0));
        assert_eq!(Slo::parse("TTFT p95 <= 1 s").unwrap().percentile, 95.0);
        assert!(Slo::parse("p99 TTFT <= 1 s and p90 TPOT <= 1 s").is_err(), "one percentile");
        let said = Slo::parse("GPU <= 3 ms").unwrap_err().to_string();
        assert!(said.contains("e.g. `p99 TTFT <= 200 ms"), "{said}");
        for bad in [
            "",
            "TTFT",
            "TTFT <= fast",
            "GPU <= 3 ms",
            "TTFT <= 3 parsecs",
            "TTFT <= 1 and TTFT <= 2",
            "TTFT <= 1 at p100",
        ] {
            assert!(Slo::parse(bad).is_err(), "{bad}");
        }
        let ttft = [100.0, 250.0, 150.0, 199.9];
        let tpot = [40.0, 10.0, 60.0, 50.0];
        assert_eq!(slo.meeting(&[("ttft_ms", &ttft), ("tpot_ms", &tpot)]), Some((2, 4)));
        assert_eq!(slo.meeting(&[("ttft_ms", &ttft)]), None, "TPOT is missing");
        assert_eq!(slo.meeting(&[("ttft_ms", &ttft), ("tpot_ms", &tpot[..3])]), None);
    }

    #[test]
    fn the_knee_is_the_highest_rate_meeting_the_slo() {
        let slo = Slo::parse("TTFT <= 200 ms").unwrap();
        let point = |rate: f64, p99: f64| RatePoint { rate, values: vec![("ttft_ms_p99".into(), p99)] };
        let points = [point(1.0, 90.0), point(4.0, 150.0), point(8.0, 240.0), point(2.0, 120.0)];
        assert_eq!(knee(&points, &slo), Some(4.0));
        assert_eq!(knee(&[point(8.0, 240.0)], &slo), None);
        let unmeasured = RatePoint { rate: 16.0, values: vec![("ttft_ms_p50".into(), 10.0)] };
        assert_eq!(knee(&[unmeasured], &slo), None, "no p99 there: not known to meet it");
    }

    /// A seeded, roughly log-normal latency sample.
    fn latencies(seed: u64, n: usize, scale: f64) -> Vec<f64> {
        let mut r = Random(seed);
        (0..n)
            .map(|_| {
                let u: f64 = (0..6).map(|_| (r.next() >> 11) as f64 / (1u64 << 53) as f64).sum::<f64>() - 3.0;
                scale * (0.4 * u).exp()
            })
            .collect()
    }

    #[test]
    fn a_real_shift_is_found_and_noise_is_not() {
        let baseline: Vec<Vec<f64>> = (0..3).map(|s| latencies(s, 2_000, 100.0)).collect();
        let faster: Vec<Vec<f64>> = (10..13).map(|s| latencies(s, 2_000, 70.0)).collect();
        let same: Vec<Vec<f64>> = (20..23).map(|s| latencies(s, 2_000, 100.0)).collect();
        let c = compare_percentile(&baseline, &faster, 99.0).unwrap();
        assert_eq!(c.outcome, crate::metrics::Outcome::Decrease, "{}", c.verdict);
        assert!((c.delta_pct + 30.0).abs() < 6.0, "{}", c.delta_pct);
        assert!(c.ci_pct.0 < c.delta_pct && c.delta_pct < c.ci_pct.1);
        let c = compare_percentile(&baseline, &same, 99.0).unwrap();
        assert_eq!(c.outcome, crate::metrics::Outcome::WithinNoise, "{}", c.verdict);
        assert!(c.within_share.is_some());
        // Runs far apart from each other: the spread across runs dominates.
        let apart: Vec<Vec<f64>> =
            [60.0, 100.0, 140.0].iter().enumerate().map(|(i, s)| latencies(i as u64 + 30, 2_000, *s)).collect();
        let c = compare_percentile(&apart, &same, 99.0).unwrap();
        assert!(c.verdict.contains("run-to-run noise dominated"), "{}", c.verdict);
        let one = compare_percentile(&baseline[..1], &faster[..1], 99.0).unwrap();
        assert!(one.within_share.is_none() && one.verdict.contains("one run per side"), "{}", one.verdict);
        assert!(compare_percentile(&[], &faster, 99.0).is_none());
    }

    /// The walkthrough's batching hypothesis: p99 TTFT from seconds to 9 ms,
    /// runs far apart, more requests (40 500) than a resample draws. The interval is
    /// of a ratio of positive values: never below −100 %.
    #[test]
    fn a_latency_interval_never_passes_minus_100_percent() {
        let slow: Vec<Vec<f64>> =
            [800.0, 2_500.0, 4_900.0].iter().enumerate().map(|(i, s)| latencies(i as u64 + 40, 13_500, *s)).collect();
        let fast: Vec<Vec<f64>> =
            [4.0, 9.0, 30.0].iter().enumerate().map(|(i, s)| latencies(i as u64 + 50, 13_500, *s)).collect();
        let c = compare_percentile(&slow, &fast, 99.0).unwrap();
        assert!(c.ci_pct.0 > -100.0 && c.ci_pct.1 < 0.0, "{:?}: {}", c.ci_pct, c.verdict);
        assert!(c.ci_pct.0 <= c.delta_pct && c.delta_pct <= c.ci_pct.1, "{}", c.verdict);
        assert_eq!(c.outcome, crate::metrics::Outcome::Decrease);
        // The other way round: an increase's interval is not bounded above.
        let c = compare_percentile(&fast, &slow, 99.0).unwrap();
        assert!(c.ci_pct.0 > 0.0, "{:?}", c.ci_pct);
    }

    #[test]
    fn compacting_keeps_the_shape() {
        let values: Vec<f64> = (0..100_000).rev().map(f64::from).collect();
        let kept = compact(values, 1_000);
        assert_eq!(kept.len(), 1_000);
        assert_eq!((kept[0], kept[999]), (0.0, 99_999.0));
        let p99 = percentile(&kept, 99.0).unwrap();
        assert!((p99 - 98_999.0).abs() < 150.0, "{p99}");
        assert_eq!(compact(vec![3.0, f64::NAN, 1.0], 10), vec![1.0, 3.0]);
        let cdf = cdf_points(&kept, 50);
        assert!(cdf.len() <= 51 && cdf.last() == Some(&(99_999.0, 1.0)));
    }
}
