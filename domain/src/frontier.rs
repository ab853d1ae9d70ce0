//! A sweep's frontier: each configuration's mean of a metric to maximize
//! (throughput) against one to minimize (a latency), which configurations no
//! other beats on both, and the best one that meets the investigation's SLO
//! (`GET /api/v1/steps/{id}/frontier`).

use serde::{Deserialize, Serialize};

/// One configuration of the sweep: its means over its measured runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct FrontierPoint {
    /// The configuration in words (`MAX_BATCH=8`), and as the runs carry it.
    pub label: String,
    pub config: crate::sweeps::Config,
    /// Its succeeded, measured runs that have both metrics.
    pub runs: Vec<i64>,
    pub n: usize,
    pub maximize: f64,
    pub minimize: f64,
    /// 95 % t intervals of the two means (none with one run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximize_ci: Option<(f64, f64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimize_ci: Option<(f64, f64)>,
    /// No other configuration is at least as good on both and better on one.
    pub on_frontier: bool,
    /// Whether its percentiles meet the SLO (none without an SLO, or when a
    /// bounded percentile was not measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meets_slo: Option<bool>,
    /// What its runs' guards found (`crate::guards::of_group`), when one
    /// warns or fails: a point to look at before believing it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hazards: Option<String>,
    /// The worst of its guards' levels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guard_level: Option<crate::guards::Level>,
}

/// Which metrics a frontier is of (`?maximize=…&minimize=…`); output
/// throughput against p99 TTFT when not said.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct FrontierQuery {
    #[serde(default)]
    pub maximize: Option<String>,
    #[serde(default)]
    pub minimize: Option<String>,
    /// A watch's runs count too (by default they do not: a watch's schedule
    /// is not the sweep's design).
    #[serde(default)]
    pub include_watch_runs: Option<bool>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Frontier {
    pub step_id: i64,
    pub maximize: String,
    pub minimize: String,
    pub points: Vec<FrontierPoint>,
    /// The label of the configuration with the highest `maximize` whose
    /// percentiles meet the SLO; none, with `why`, when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_under_slo: Option<String>,
    pub why: Option<String>,
    /// The SLO judged against, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo: Option<String>,
    /// The chart: `minimize` across, `maximize` up, the frontier joined (SVG).
    pub svg: String,
    /// Runs a watch made that were left out (`include_watch_runs` counts them).
    #[serde(default)]
    pub watch_runs_left_out: usize,
}

/// Marks the points no other dominates: at least as high on `maximize`, at
/// least as low on `minimize`, and strictly better on one.
pub fn mark_frontier(points: &mut [FrontierPoint]) {
    let dominated: Vec<bool> = points
        .iter()
        .map(|p| {
            points.iter().any(|q| {
                q.maximize >= p.maximize
                    && q.minimize <= p.minimize
                    && (q.maximize > p.maximize || q.minimize < p.minimize)
            })
        })
        .collect();
    for (p, dominated) in points.iter_mut().zip(dominated) {
        p.on_frontier = !dominated;
    }
}

/// The point with the highest `maximize` among those that meet the SLO (the
/// first listed of equals).
pub fn best_under_slo(points: &[FrontierPoint]) -> Option<&FrontierPoint> {
    points.iter().filter(|p| p.meets_slo == Some(true)).fold(None, |best, p| match best {
        Some(b) if b.maximize >= p.maximize => Some(b),
        _ => Some(p),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(label: &str, maximize: f64, minimize: f64, meets: Option<bool>) -> FrontierPoint {
        FrontierPoint {
            label: label.into(),
            config: Default::default(),
            runs: vec![],
            n: 1,
            maximize,
            minimize,
            maximize_ci: None,
            minimize_ci: None,
            on_frontier: false,
            meets_slo: meets,
            hazards: None,
            guard_level: None,
        }
    }

    #[test]
    fn the_frontier_is_what_nothing_beats_on_both() {
        let mut points = vec![
            point("batch 1", 100.0, 50.0, Some(true)),
            point("batch 8", 600.0, 120.0, Some(true)),
            point("batch 16", 700.0, 400.0, Some(false)),
            point("worse", 500.0, 130.0, Some(true)),
            point("tie", 600.0, 120.0, Some(true)),
        ];
        mark_frontier(&mut points);
        let on: Vec<&str> = points.iter().filter(|p| p.on_frontier).map(|p| p.label.as_str()).collect();
        assert_eq!(on, ["batch 1", "batch 8", "batch 16", "tie"], "equals do not dominate each other");
        assert_eq!(best_under_slo(&points).map(|p| p.label.as_str()), Some("batch 8"));
        let none = [point("a", 1.0, 1.0, Some(false)), point("b", 2.0, 2.0, None)];
        assert!(best_under_slo(&none).is_none());
    }
}
