//! A step's history of a metric and where it changed (`GET
//! /api/v1/steps/{id}/history`): every finished run's value in order, and the
//! change points in it.
//!
//! The detector is binary segmentation on ranks: at each split the
//! standardised Mann–Whitney statistic of the values before against after,
//! the largest over splits leaving at least [`MIN_SEGMENT`] runs each side,
//! judged by a permutation test (the same statistic over shuffles of the
//! segment); a split that is significant and moves the mean by at least
//! [`MIN_EFFECT_PCT`] is a change, and each side is searched again. Ranks make
//! one wild run count as one run, not as its distance (an outlier is no
//! change, where a mean-based test such as Otava's first E-Divisive cried);
//! the minimum segment stops a change being one run wide; the effect size
//! stops a significant 0.3 % wiggle of a very quiet series being reported.

use serde::{Deserialize, Serialize};

/// Runs each side of a change, at least.
pub const MIN_SEGMENT: usize = 4;
/// A change moves the mean by at least this (percent of the mean before).
pub const MIN_EFFECT_PCT: f64 = 2.0;
/// Shuffles per permutation test, and the p-value a change needs.
const PERMUTATIONS: usize = 499;
const ALPHA: f64 = 0.01;

/// Which way is better for a metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Better {
    Higher,
    Lower,
}

impl Better {
    /// From its name: latencies, times, costs and queues are better lower;
    /// the rest (throughput, goodput, hit rates) higher.
    pub fn of(metric: &str) -> Self {
        let m = metric.to_ascii_lowercase();
        let lower = [
            "ttft",
            "tpot",
            "itl",
            "latency",
            "e2el",
            "_ms",
            "duration",
            "time",
            "cost",
            "preemption",
            "waiting",
            "_s_",
        ]
        .iter()
        .any(|w| m.contains(w))
            || m.ends_with("_s");
        if lower { Self::Lower } else { Self::Higher }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "higher" => Some(Self::Higher),
            "lower" => Some(Self::Lower),
            _ => None,
        }
    }
}

/// `?metric=…&config=…&better=higher|lower`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct HistoryQuery {
    #[serde(default)]
    pub metric: Option<String>,
    /// A sweep's configuration, as its runs are labelled (`NCCL_PROTO=LL`).
    #[serde(default)]
    pub config: Option<String>,
    #[serde(default)]
    pub better: Option<String>,
}

/// One run's value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct HistoryPoint {
    pub run_id: i64,
    pub value: f64,
    /// When it started (RFC 3339).
    pub at: Option<String>,
}

/// A change point: the runs from `run_id` on differ from those before.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Change {
    /// The first run after the change.
    pub run_id: i64,
    /// Its place in the history (0-based).
    pub index: usize,
    pub before_mean: f64,
    pub after_mean: f64,
    pub delta_pct: f64,
    pub p_value: f64,
    /// `regression` or `improvement`, by which way the metric is better.
    pub direction: String,
    /// The last run before and the first after, and what differed between them.
    pub between: Between,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Between {
    pub before_run: i64,
    pub after_run: i64,
    /// "driver 570.1 → 580.2", "env VLLM_USE_V1: 0 → 1", "command changed"…
    pub differs: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct History {
    pub step_id: i64,
    pub metric: String,
    pub unit: Option<String>,
    pub config: Option<String>,
    pub better: Better,
    pub runs: Vec<HistoryPoint>,
    pub changes: Vec<Change>,
    /// The series with its changes marked (SVG).
    pub svg: Option<String>,
    /// The configurations of a sweep, for picking one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub configs: Vec<String>,
}

/// A change found in a series: where, how much, how sure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Found {
    pub index: usize,
    pub before_mean: f64,
    pub after_mean: f64,
    pub p_value: f64,
}

/// The change points of `values`, in order.
pub fn change_points(values: &[f64]) -> Vec<Found> {
    let mut found = Vec::new();
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    segment(values, 0, &mut found, &mut rng);
    found.sort_by_key(|f| f.index);
    found
}

fn segment(values: &[f64], offset: usize, found: &mut Vec<Found>, rng: &mut u64) {
    let n = values.len();
    if n < 2 * MIN_SEGMENT {
        return;
    }
    let ranks = ranks(values);
    let Some((split, stat)) = best_split(&ranks) else { return };
    // The permutation test: how often a shuffle of these ranks splits as well.
    let mut shuffled = ranks.clone();
    let mut as_extreme = 0usize;
    for _ in 0..PERMUTATIONS {
        shuffle(&mut shuffled, rng);
        if best_split(&shuffled).is_some_and(|(_, s)| s >= stat) {
            as_extreme += 1;
        }
    }
    let p_value = (as_extreme + 1) as f64 / (PERMUTATIONS + 1) as f64;
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (before_mean, after_mean) = (mean(&values[..split]), mean(&values[split..]));
    let effect = if before_mean != 0.0 { ((after_mean - before_mean) / before_mean * 100.0).abs() } else { 0.0 };
    if p_value > ALPHA || effect < MIN_EFFECT_PCT {
        return;
    }
    found.push(Found { index: offset + split, before_mean, after_mean, p_value });
    segment(&values[..split], offset, found, rng);
    segment(&values[split..], offset + split, found, rng);
}

/// 1-based ranks, ties sharing their mean rank.
fn ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|a, b| values[*a].total_cmp(&values[*b]));
    let mut ranks = vec![0.0; values.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && values[order[j + 1]] == values[order[i]] {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        for k in &order[i..=j] {
            ranks[*k] = rank;
        }
        i = j + 1;
    }
    ranks
}

/// The split with the largest |z| of the rank-sum of the runs before it, and that |z|.
fn best_split(ranks: &[f64]) -> Option<(usize, f64)> {
    let n = ranks.len() as f64;
    let mut best: Option<(usize, f64)> = None;
    let mut sum = 0.0;
    for (k, r) in ranks.iter().enumerate().take(ranks.len() - MIN_SEGMENT) {
        sum += r;
        let before = (k + 1) as f64;
        if k + 1 < MIN_SEGMENT {
            continue;
        }
        let after = n - before;
        let expected = before * (n + 1.0) / 2.0;
        let spread = (before * after * (n + 1.0) / 12.0).sqrt();
        let z = ((sum - expected) / spread).abs();
        if best.is_none_or(|(_, b)| z > b) {
            best = Some((k + 1, z));
        }
    }
    best
}

fn shuffle(values: &mut [f64], state: &mut u64) {
    for i in (1..values.len()).rev() {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        let j = (*state % (i as u64 + 1)) as usize;
        values.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reproducible noise: uniform in ±`amplitude`.
    fn noisy(n: usize, level: impl Fn(usize) -> f64, amplitude: f64, seed: u64) -> Vec<f64> {
        let mut state = seed;
        (0..n)
            .map(|i| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let u = (state >> 11) as f64 / (1u64 << 53) as f64;
                level(i) + (u * 2.0 - 1.0) * amplitude
            })
            .collect()
    }

    #[test]
    fn a_single_outlier_is_no_change() {
        for seed in 1..20 {
            let mut v = noisy(24, |_| 100.0, 1.5, seed);
            v[11] = 60.0;
            assert!(change_points(&v).is_empty(), "seed {seed}: {:?}", change_points(&v));
        }
    }

    #[test]
    fn a_five_percent_step_at_two_percent_noise_is_found() {
        for seed in 1..20 {
            let v = noisy(30, |i| if i < 15 { 100.0 } else { 95.0 }, 2.0, seed);
            let found = change_points(&v);
            assert_eq!(found.len(), 1, "seed {seed}: {found:?}");
            assert!((14..=16).contains(&found[0].index), "seed {seed}: {found:?}");
        }
    }

    #[test]
    fn two_steps_are_both_found_in_order() {
        let v = noisy(
            45,
            |i| {
                if i < 15 {
                    100.0
                } else if i < 30 {
                    80.0
                } else {
                    110.0
                }
            },
            1.5,
            3,
        );
        let found: Vec<usize> = change_points(&v).iter().map(|f| f.index).collect();
        assert_eq!(found, [15, 30]);
    }

    #[test]
    fn twenty_percent_drop_at_the_thirteenth_run() {
        let v = noisy(24, |i| if i < 12 { 60.0 } else { 48.0 }, 1.5, 5);
        let found = change_points(&v);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].index, 12);
        let delta = (found[0].after_mean - found[0].before_mean) / found[0].before_mean * 100.0;
        assert!((-23.0..=-17.0).contains(&delta), "{delta}");
    }

    /// A slow drift (10 % over 60 runs) is change, not noise: found, each
    /// change going the drift's way, and not a change every few runs.
    #[test]
    fn a_slow_drift_is_found_without_a_change_every_run() {
        let v = noisy(60, |i| 100.0 - i as f64 / 6.0, 1.0, 9);
        let found = change_points(&v);
        assert!(!found.is_empty() && found.len() <= 4, "{found:?}");
        assert!(found.iter().all(|f| f.after_mean < f.before_mean), "{found:?}");
    }

    #[test]
    fn the_better_way_by_name() {
        assert_eq!(Better::of("output_throughput"), Better::Higher);
        assert_eq!(Better::of("ttft_ms_p99"), Better::Lower);
        assert_eq!(Better::of("goodput_pct"), Better::Higher);
        assert_eq!(Better::of("cost_per_mtok"), Better::Lower);
        assert_eq!(Better::of("duration_s"), Better::Lower);
        assert_eq!(Better::of("prefix_cache_hit_pct"), Better::Higher);
    }

    #[test]
    fn ten_thousand_runs_are_quick() {
        let v = noisy(10_000, |i| if i < 7000 { 100.0 } else { 90.0 }, 2.0, 11);
        let started = std::time::Instant::now();
        let found = change_points(&v);
        assert!(found.iter().any(|f| (6990..=7010).contains(&f.index)), "{found:?}");
        // Not a timing test: a bound that only an accidental O(n²) would break.
        assert!(started.elapsed() < std::time::Duration::from_secs(60));
    }
}
