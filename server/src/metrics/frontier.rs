//! A sweep's frontier (`GET /api/v1/steps/{id}/frontier`): per configuration,
//! the means of a metric to maximize and one to minimize over its measured
//! runs, with 95 % t intervals; which configurations nothing beats on both;
//! and the best that meets the investigation's SLO at its percentile.

use domain::distributions::{Slo, percentile_name};
use domain::error::ApiError;
use domain::frontier::{Frontier, FrontierPoint, best_under_slo, mark_frontier};
use domain::model::Step;
use domain::runs::{Run, RunStatus};

/// The metrics a frontier is of when none are asked.
pub const MAXIMIZE: &str = "output_throughput";
pub const MINIMIZE: &str = "ttft_ms_p99";

/// A run's value of `metric`: the unkeyed one, else the first it measured.
fn value_of(run: &Run, metric: &str) -> Option<f64> {
    let of = || run.measurements.iter().filter(|m| m.metric == metric);
    of().find(|m| m.key.is_none()).or_else(|| of().next()).map(|m| m.value)
}

/// The mean of `values` and its 95 % t interval (none for one value).
fn mean_and_ci(values: &[f64]) -> (f64, Option<(f64, f64)>) {
    match super::stats::summarize(values) {
        Some(group) => (group.mean, super::stats::mean_interval(&group)),
        None => (f64::NAN, None),
    }
}

/// Whether the runs' mean of each bounded percentile meets its bound; none
/// when one was not measured.
fn meets(slo: &Slo, runs: &[&Run]) -> Option<bool> {
    let mut all = true;
    for bound in &slo.bounds {
        let name = percentile_name(&bound.metric, slo.percentile);
        let values: Vec<f64> = runs.iter().filter_map(|r| value_of(r, &name)).collect();
        if values.len() < runs.len() || values.is_empty() {
            return None;
        }
        all &= mean_and_ci(&values).0 <= bound.at_most;
    }
    Some(all)
}

/// The frontier of `step`'s configurations; 422 for a step without a sweep or
/// metrics no configuration has.
pub fn frontier(
    step: &Step,
    (maximize, minimize): (&str, &str),
    slo: Option<&Slo>,
    bounds: &domain::guards::Bounds,
    hosts: &std::collections::HashMap<i64, domain::guards::Links>,
    include_watch_runs: bool,
) -> Result<Frontier, ApiError> {
    let domain::steps::StepBody::Command(command) = &step.body else {
        return Err(ApiError::invalid("A frontier is of a command step's sweep; this step is not a command."));
    };
    if command.matrix.is_empty() {
        return Err(ApiError::invalid(
            "A frontier is of a sweep's configurations; this step sweeps nothing (give it a matrix).",
        ));
    }
    let by_watch = |r: &&Run| r.origin.is_watch() && !include_watch_runs;
    let watch_runs_left_out = step.runs.iter().filter(|r| by_watch(r)).count();
    let measured: Vec<&Run> = step
        .runs
        .iter()
        .filter(|r| !by_watch(r))
        .filter(|r| r.status == RunStatus::Succeeded && !r.warmup && r.config.is_some())
        .filter(|r| value_of(r, maximize).is_some() && value_of(r, minimize).is_some())
        .collect();
    let mut labels: Vec<String> = Vec::new();
    for run in &measured {
        let label = run.config_label();
        if !labels.contains(&label) {
            labels.push(label);
        }
    }
    if labels.is_empty() {
        let mut known: Vec<&str> =
            step.runs.iter().flat_map(|r| r.measurements.iter().map(|m| m.metric.as_str())).collect();
        known.sort_unstable();
        known.dedup();
        return Err(ApiError::invalid(format!(
            "No run of this sweep measured both {maximize} and {minimize}{}.",
            if known.is_empty() { String::new() } else { format!("; its runs measured: {}", known.join(", ")) }
        )));
    }
    // Guards judge a configuration's runs on the metric it maximizes.
    let judged_by = maximize;
    let mut points: Vec<FrontierPoint> = labels
        .iter()
        .map(|label| {
            let runs: Vec<&Run> = measured.iter().copied().filter(|r| r.config_label() == *label).collect();
            let up: Vec<f64> = runs.iter().filter_map(|r| value_of(r, maximize)).collect();
            let down: Vec<f64> = runs.iter().filter_map(|r| value_of(r, minimize)).collect();
            let ((maximize, maximize_ci), (minimize, minimize_ci)) = (mean_and_ci(&up), mean_and_ci(&down));
            let facts: Vec<domain::guards::RunFacts<'_>> = runs
                .iter()
                .map(|r| domain::guards::RunFacts {
                    id: r.id,
                    measurements: &r.measurements,
                    value: value_of(r, judged_by),
                    server: r.server.as_ref().map(|s| s.started_by(r.id)),
                    warmup: r.warmup,
                    collective: domain::guards::collective(&r.command, &r.env),
                    host: r.facts_id.and_then(|id| hosts.get(&id)),
                })
                .collect();
            let guards = domain::guards::of_group(&facts, bounds);
            FrontierPoint {
                label: label.clone(),
                config: runs[0].config.clone().unwrap_or_default(),
                runs: runs.iter().map(|r| r.id).collect(),
                n: runs.len(),
                maximize,
                minimize,
                maximize_ci,
                minimize_ci,
                on_frontier: false,
                meets_slo: slo.and_then(|slo| meets(slo, &runs)),
                hazards: domain::guards::hazards(&guards),
                guard_level: guards.iter().map(|g| g.level).max(),
            }
        })
        .collect();
    mark_frontier(&mut points);
    let best = best_under_slo(&points).map(|p| p.label.clone());
    let why = match (slo, &best) {
        (_, Some(_)) => None,
        (None, None) => {
            Some("The investigation has no SLO: set one (TTFT <= 200 ms) to pick the best configuration.".into())
        }
        (Some(slo), None) if points.iter().all(|p| p.meets_slo.is_none()) => Some(format!(
            "No configuration has the percentiles {} bounds (p{}) measured.",
            slo.describe(),
            slo.percentile
        )),
        (Some(slo), None) => Some(format!("No configuration meets {}.", slo.describe())),
    };
    let svg = crate::charts::frontier(maximize, minimize, &points).map_err(|e| {
        tracing::error!(step = step.id, "frontier chart: {e}");
        ApiError::internal()
    })?;
    Ok(Frontier {
        step_id: step.id,
        maximize: maximize.to_string(),
        minimize: minimize.to_string(),
        points,
        best_under_slo: best,
        why,
        slo: slo.map(Slo::describe),
        svg,
        watch_runs_left_out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mean_and_its_interval_are_scipys() {
        // scipy.stats.t.interval(0.95, 2, loc=2, scale=stats.sem([1, 2, 3])) = (-0.484, 4.484)
        let (mean, ci) = mean_and_ci(&[1.0, 2.0, 3.0]);
        let (lo, hi) = ci.unwrap();
        assert_eq!(mean, 2.0);
        assert!((lo - -0.4841377592).abs() < 1e-6 && (hi - 4.4841377592).abs() < 1e-6, "{lo} {hi}");
        assert_eq!(mean_and_ci(&[5.0]), (5.0, None));
    }
}
