//! A step's history of a metric and where it changed (`GET
//! /api/v1/steps/{id}/history`): every finished run's value in order, and the
//! change points in it.
//!
//! The detector is binary segmentation in three parts:
//! - **whether** a segment holds a change: the largest standardised
//!   Mann–Whitney statistic over its splits (at least [`MIN_SEGMENT`] runs a
//!   side), judged by a permutation test. Ranks make one wild run count as one
//!   run, not as its distance: an outlier is no change, where a mean-based test
//!   such as Otava's first E-Divisive cried;
//! - **where**: the split with the largest shift in level, `√(k(n−k)/n)·|mean
//!   before − mean after|` over the segment's values winsorised at its 5th and
//!   95th percentiles (one outlier cannot pull the split to itself). Ranks
//!   cannot place it: 8 runs at 425, 4 at 418 and 8 at 188 separate perfectly at
//!   both 8 and 12, and a rank split put the change at the 1.6 % wobble rather
//!   than at the −56 % drop;
//! - **how much**: once every segment is split, each change is measured
//!   between the two segments it separates, and one that moves the level by
//!   less than [`MIN_EFFECT_PCT`] is dropped (the smallest first, its segments
//!   merged, the rest measured again), so a significant 0.3 % wiggle of a very
//!   quiet series is not reported and never stands in for a larger change.

use serde::{Deserialize, Serialize};

/// Runs each side of a change, at least.
pub const MIN_SEGMENT: usize = 4;
/// A change moves the mean by at least this (percent of the mean before).
pub const MIN_EFFECT_PCT: f64 = 2.0;
/// Shuffles per permutation test, and the p-value a change needs. Four runs
/// after a change, all below the twelve before, give p ≈ 0.009 (the largest
/// of the splits' statistics is what is tested, so a perfect separation at
/// an end is rarer than its own exact 1/1820 says): 0.02 finds it, and the
/// effect floor keeps noise at that level from being reported.
const PERMUTATIONS: usize = 999;
const ALPHA: f64 = 0.02;

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
    /// Which way is better; left out, by the metric's name ([`Better::of`]).
    #[serde(default)]
    pub better: Option<Better>,
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
    pub direction: ChangeDirection,
    /// The last run before and the first after, and what differed between them.
    pub between: Between,
}

/// Which way a change went, by which way the metric is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum ChangeDirection {
    Regression,
    Improvement,
}

impl ChangeDirection {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Regression => "regression",
            Self::Improvement => "improvement",
        }
    }

    /// "regressed", "improved": what a watch tells.
    pub fn verb(self) -> &'static str {
        match self {
            Self::Regression => "regressed",
            Self::Improvement => "improved",
        }
    }
}

impl std::fmt::Display for ChangeDirection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
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
    let mut found: Vec<(usize, f64)> = Vec::new();
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    segment(values, 0, &mut found, &mut rng);
    found.sort_by_key(|(index, _)| *index);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    // Each change between its neighbours; the smallest under the floor goes, until none is.
    let measured = |found: &[(usize, f64)]| -> Vec<Found> {
        (0..found.len())
            .map(|i| {
                let from = if i == 0 { 0 } else { found[i - 1].0 };
                let to = found.get(i + 1).map_or(values.len(), |(index, _)| *index);
                let (index, p_value) = found[i];
                Found { index, before_mean: mean(&values[from..index]), after_mean: mean(&values[index..to]), p_value }
            })
            .collect()
    };
    loop {
        let changes = measured(&found);
        let smallest = changes
            .iter()
            .enumerate()
            .map(|(i, f)| (i, f.effect_pct()))
            .filter(|(_, effect)| *effect < MIN_EFFECT_PCT)
            .min_by(|a, b| a.1.total_cmp(&b.1));
        match smallest {
            Some((i, _)) => {
                found.remove(i);
            }
            None => return changes,
        }
    }
}

impl Found {
    /// How far the level moved, in percent of the level before (0 for a level of 0).
    pub fn effect_pct(&self) -> f64 {
        if self.before_mean == 0.0 {
            return 0.0;
        }
        ((self.after_mean - self.before_mean) / self.before_mean * 100.0).abs()
    }
}

/// Finds the changes in `values` (at `offset` in the whole series): a
/// significant rank split, placed where the level shifts most, then each side.
fn segment(values: &[f64], offset: usize, found: &mut Vec<(usize, f64)>, rng: &mut u64) {
    let n = values.len();
    if n < 2 * MIN_SEGMENT {
        return;
    }
    let ranks = ranks(values);
    let Some((_, stat)) = best_split(&ranks) else { return };
    // The permutation test: how often a shuffle of these ranks splits as well.
    // It stops as soon as the answer is no (most segments of a quiet series).
    let mut shuffled = ranks.clone();
    let mut as_extreme = 0usize;
    let allowed = (ALPHA * (PERMUTATIONS + 1) as f64) as usize;
    for _ in 0..PERMUTATIONS {
        shuffle(&mut shuffled, rng);
        if best_split(&shuffled).is_some_and(|(_, s)| s >= stat) {
            as_extreme += 1;
            if as_extreme + 1 > allowed {
                return;
            }
        }
    }
    let p_value = (as_extreme + 1) as f64 / (PERMUTATIONS + 1) as f64;
    let Some(split) = level_split(values) else { return };
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (before, after) = (mean(&values[..split]), mean(&values[split..]));
    // Too small to be a change here: nor is any part of it searched (a
    // smaller segment's split is measured again between its neighbours).
    if before == 0.0 || ((after - before) / before * 100.0).abs() < MIN_EFFECT_PCT {
        return;
    }
    found.push((offset + split, p_value));
    segment(&values[..split], offset, found, rng);
    segment(&values[split..], offset + split, found, rng);
}

/// The split (at least [`MIN_SEGMENT`] runs a side) where the level shifts
/// most: the largest `√(k(n−k)/n)·|mean before − mean after|` over the values
/// winsorised at the segment's 5th and 95th percentiles.
fn level_split(values: &[f64]) -> Option<usize> {
    let n = values.len();
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let cut = n / 20;
    let (low, high) = (sorted[cut], sorted[n - 1 - cut]);
    let clipped: Vec<f64> = values.iter().map(|v| v.clamp(low, high)).collect();
    let total: f64 = clipped.iter().sum();
    let mut sum = 0.0;
    let mut best: Option<(usize, f64)> = None;
    for (i, v) in clipped.iter().enumerate().take(n - MIN_SEGMENT) {
        sum += v;
        let k = i + 1;
        if k < MIN_SEGMENT {
            continue;
        }
        let (before, after) = (k as f64, (n - k) as f64);
        let shift = (sum / before - (total - sum) / after).abs() * (before * after / n as f64).sqrt();
        if best.is_none_or(|(_, b)| shift > b) {
            best = Some((k, shift));
        }
    }
    best.map(|(k, _)| k)
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

    /// Noisy runs (±5 %) that do not change: no change in at least 47 of 50 series.
    #[test]
    fn noise_alone_is_rarely_a_change() {
        let cried = (1..=50).filter(|seed| !change_points(&noisy(40, |_| 100.0, 5.0, *seed)).is_empty()).count();
        assert!(cried <= 3, "{cried} of 50");
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
        let found = change_points(&v);
        assert_eq!(found.iter().map(|f| f.index).collect::<Vec<_>>(), [15, 30]);
        // Each measured between its own neighbours (−20 % and +37.5 %), not
        // against the mean of everything on the other side.
        let deltas: Vec<f64> = found.iter().map(|f| (f.after_mean - f.before_mean) / f.before_mean * 100.0).collect();
        assert!((-21.5..=-18.5).contains(&deltas[0]) && (35.0..=40.0).contains(&deltas[1]), "{deltas:?}");
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

    /// The walkthrough's series: 8 runs at 425 tok/s, 4 at 418 (−1.6 %), 8 at
    /// 188 (−56 %). The ranks separate perfectly at both 8 and 12; the change
    /// is where the value falls, measured between the segments it separates,
    /// and the wobble is no change of its own.
    #[test]
    fn a_wobble_before_a_drop_does_not_take_its_place() {
        for seed in 1..20 {
            let v = noisy(
                20,
                |i| {
                    if i < 8 {
                        425.0
                    } else if i < 12 {
                        418.0
                    } else {
                        188.0
                    }
                },
                2.0,
                seed,
            );
            let found = change_points(&v);
            assert_eq!(found.len(), 1, "seed {seed}: {found:?}");
            assert_eq!(found[0].index, 12, "seed {seed}: {found:?}");
            let delta = (found[0].after_mean - found[0].before_mean) / found[0].before_mean * 100.0;
            assert!((-57.0..=-54.5).contains(&delta), "seed {seed}: {delta}");
        }
    }

    /// Four runs after a change are enough to see it (a watch says so early).
    #[test]
    fn a_change_four_runs_old_is_found() {
        for seed in 1..20 {
            let v = noisy(16, |i| if i < 12 { 100.0 } else { 80.0 }, 1.5, seed);
            let found = change_points(&v);
            assert_eq!(found.iter().map(|f| f.index).collect::<Vec<_>>(), [12], "seed {seed}: {found:?}");
        }
    }

    /// A real step with one wild run before it: the step is placed where the
    /// level moves, not at the outlier.
    #[test]
    fn an_outlier_does_not_pull_a_real_change_to_itself() {
        for seed in 1..20 {
            let mut v = noisy(30, |i| if i < 15 { 100.0 } else { 94.0 }, 1.0, seed);
            v[5] = 60.0;
            let found = change_points(&v);
            assert_eq!(found.iter().map(|f| f.index).collect::<Vec<_>>(), [15], "seed {seed}: {found:?}");
        }
    }

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
