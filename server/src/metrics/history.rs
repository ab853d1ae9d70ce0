//! A step's history of a metric (`GET /api/v1/steps/{id}/history`): its
//! finished runs' values in order (one configuration of a sweep at a time),
//! the change points `domain::history` finds in them, and what differed
//! between the runs either side of each.

use domain::error::ApiError;
use domain::history::{Better, Between, Change, History, HistoryPoint, HistoryQuery, change_points};
use domain::hosts::HostFacts;
use domain::model::Step;
use domain::runs::{Run, RunStatus};

/// The metric a history is of when none is asked.
pub const METRIC: &str = "output_throughput";

/// A run's value of `metric`: the unkeyed one, else the first it measured.
fn value_of(run: &Run, metric: &str) -> Option<f64> {
    let of = || run.measurements.iter().filter(|m| m.metric == metric);
    of().find(|m| m.key.is_none()).or_else(|| of().next()).map(|m| m.value)
}

/// The runs of `step` a history is of, in the order they were queued, with
/// their values; 422 (with what there is) for a metric no run has, or a
/// sweep whose configuration was not named.
pub fn measured<'a>(
    step: &'a Step,
    query: &HistoryQuery,
) -> Result<(String, Vec<(&'a Run, f64)>, Vec<String>), ApiError> {
    let metric = query.metric.as_deref().map(str::trim).filter(|m| !m.is_empty()).unwrap_or(METRIC).to_string();
    let mut runs: Vec<&Run> = step.runs.iter().filter(|r| r.status == RunStatus::Succeeded && !r.warmup).collect();
    runs.sort_by_key(|r| r.id);
    let mut configs: Vec<String> = Vec::new();
    for run in runs.iter().filter(|r| r.config.is_some()) {
        let label = run.config_label();
        if !configs.contains(&label) {
            configs.push(label);
        }
    }
    let config = query.config.as_deref().map(str::trim).filter(|c| !c.is_empty());
    match config {
        Some(config) if !configs.iter().any(|c| c == config) => {
            return Err(ApiError::invalid(format!(
                "This step has no configuration {config:?}; its runs ran {}.",
                if configs.is_empty() { "without one".to_string() } else { configs.join(", ") }
            )));
        }
        Some(config) => runs.retain(|r| r.config.is_some() && r.config_label() == config),
        None if configs.len() > 1 => {
            return Err(ApiError::invalid(format!(
                "A history is of one configuration at a time (their values differ by design); give config= one of: {}.",
                configs.join(", ")
            )));
        }
        None => {}
    }
    let values: Vec<(&Run, f64)> = runs.iter().filter_map(|r| Some((*r, value_of(r, &metric)?))).collect();
    if values.is_empty() {
        let mut known: Vec<&str> = runs.iter().flat_map(|r| r.measurements.iter().map(|m| m.metric.as_str())).collect();
        known.sort_unstable();
        known.dedup();
        return Err(ApiError::invalid(format!(
            "No finished run of this step measured {metric}{}.",
            if known.is_empty() { String::new() } else { format!("; its runs measured: {}", known.join(", ")) }
        )));
    }
    Ok((metric, values, configs))
}

/// What differs between two runs: host, the host's facts, env, command.
pub fn differences(before: &Run, after: &Run, facts: (Option<&HostFacts>, Option<&HostFacts>)) -> Vec<String> {
    let mut out = Vec::new();
    if before.host != after.host {
        out.push(format!("host {} → {}", before.host, after.host));
    }
    if let (Some(a), Some(b)) = facts {
        out.extend(crate::hypotheses::facts_differences(a, b));
    }
    let env = |run: &Run| run.env.iter().cloned().collect::<std::collections::BTreeMap<String, String>>();
    let (a, b) = (env(before), env(after));
    for name in a.keys().chain(b.keys()).collect::<std::collections::BTreeSet<_>>() {
        if a.get(name) != b.get(name) {
            let v =
                |m: &std::collections::BTreeMap<String, String>| m.get(name).cloned().unwrap_or_else(|| "unset".into());
            out.push(format!("env {name}: {} → {}", v(&a), v(&b)));
        }
    }
    if before.command != after.command {
        out.push("the command changed".into());
    }
    out
}

/// The history: values, change points with what differed across each, and the chart.
pub fn history(
    step: &Step,
    query: &HistoryQuery,
    facts: &std::collections::HashMap<i64, HostFacts>,
) -> Result<History, ApiError> {
    let (metric, values, configs) = measured(step, query)?;
    let better = match query.better.as_deref().map(str::trim).filter(|b| !b.is_empty()) {
        Some(text) => Better::parse(text)
            .ok_or_else(|| ApiError::invalid(format!("better= is `higher` or `lower`, not {text:?}.")))?,
        None => Better::of(&metric),
    };
    let series: Vec<f64> = values.iter().map(|(_, v)| *v).collect();
    let of_run = |run: &Run| run.facts_id.and_then(|id| facts.get(&id));
    let changes: Vec<Change> = change_points(&series)
        .into_iter()
        .map(|found| {
            let (before, after) = (values[found.index - 1].0, values[found.index].0);
            let delta_pct = (found.after_mean - found.before_mean) / found.before_mean * 100.0;
            let worse = match better {
                Better::Higher => delta_pct < 0.0,
                Better::Lower => delta_pct > 0.0,
            };
            Change {
                run_id: after.id,
                index: found.index,
                before_mean: found.before_mean,
                after_mean: found.after_mean,
                delta_pct,
                p_value: found.p_value,
                direction: if worse { "regression" } else { "improvement" }.into(),
                between: Between {
                    before_run: before.id,
                    after_run: after.id,
                    differs: differences(before, after, (of_run(before), of_run(after))),
                },
            }
        })
        .collect();
    let unit = values[0].0.measurements.iter().find(|m| m.metric == metric).map(|m| m.unit.clone());
    let runs: Vec<HistoryPoint> = values
        .iter()
        .map(|(run, value)| HistoryPoint { run_id: run.id, value: *value, at: run.started_at.clone() })
        .collect();
    let svg = crate::charts::history(&metric, unit.as_deref().unwrap_or(""), &runs, &changes)
        .inspect_err(|e| tracing::error!(step = step.id, "history chart: {e}"))
        .ok();
    Ok(History {
        step_id: step.id,
        metric,
        unit,
        config: query.config.clone().filter(|c| !c.trim().is_empty()),
        better,
        runs,
        changes,
        svg,
        configs,
    })
}
