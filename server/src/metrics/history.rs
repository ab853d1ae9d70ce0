//! A step's history of a metric (`GET /api/v1/steps/{id}/history`): its
//! finished runs' values in order (one configuration of a sweep at a time),
//! the change points `domain::history` finds in them, and what differed
//! between the runs either side of each.

use crate::db::HistoryRow;
use domain::error::ApiError;
use domain::history::{Better, Between, Change, ChangeDirection, History, HistoryPoint, HistoryQuery};
use domain::hosts::HostFacts;

/// The metric a history is of when none is asked.
pub const METRIC: &str = "output_throughput";

/// A run a history is of: what it ran, where, and its value.
pub struct Measured<'a> {
    pub row: &'a HistoryRow,
    pub env: Vec<(String, String)>,
    pub value: f64,
}

/// The metric a history is of.
pub fn metric_of(query: &HistoryQuery) -> String {
    query.metric.as_deref().map(str::trim).filter(|m| !m.is_empty()).unwrap_or(METRIC).to_string()
}

/// The runs of a history (`rows`: the step's succeeded, non-warm-up runs in
/// order, with their values), one configuration of a sweep; 422 (with what
/// there is) for a sweep whose configuration was not named, or a metric no
/// run has (`known`: the step's metrics, for the message).
pub fn measured<'a>(
    rows: &'a [HistoryRow],
    query: &HistoryQuery,
    known: impl FnOnce() -> Vec<String>,
) -> crate::error::Result<(Vec<Measured<'a>>, Vec<String>)> {
    use crate::error::{stored, stored_opt};
    let metric = metric_of(query);
    let mut labels: Vec<Option<String>> = Vec::with_capacity(rows.len());
    for row in rows {
        let config: Option<domain::sweeps::Config> =
            stored_opt(row.config.as_deref(), || format!("run {}'s configuration", row.id))?;
        labels.push(config.map(|c| domain::sweeps::config_label(&c)));
    }
    let mut configs: Vec<String> = Vec::new();
    for l in labels.iter().flatten() {
        if !configs.contains(l) {
            configs.push(l.clone());
        }
    }
    let config = query.config.as_deref().map(str::trim).filter(|c| !c.is_empty());
    let kept: Vec<&HistoryRow> = match config {
        Some(config) if !configs.iter().any(|c| c == config) => {
            return Err(ApiError::invalid(format!(
                "This step has no configuration {config:?}; its runs ran {}.",
                if configs.is_empty() { "without one".to_string() } else { configs.join(", ") }
            ))
            .into());
        }
        Some(config) => {
            rows.iter().zip(&labels).filter(|(_, l)| l.as_deref() == Some(config)).map(|(r, _)| r).collect()
        }
        None if configs.len() > 1 => {
            return Err(ApiError::invalid(format!(
                "A history is of one configuration at a time (their values differ by design); give config= one of: {}.",
                configs.join(", ")
            ))
            .into());
        }
        None => rows.iter().collect(),
    };
    let mut values: Vec<Measured<'a>> = Vec::with_capacity(kept.len());
    for row in kept {
        let Some(value) = row.value.filter(|v| v.is_finite()) else { continue };
        values.push(Measured { row, env: stored(&row.env, || format!("run {}'s environment", row.id))?, value });
    }
    if values.is_empty() {
        let known = known();
        return Err(ApiError::invalid(format!(
            "No finished run of this step measured {metric}{}.",
            if known.is_empty() { String::new() } else { format!("; its runs measured: {}", known.join(", ")) }
        ))
        .into());
    }
    Ok((values, configs))
}

/// What differs between two runs: host, the host's facts, env, command.
pub fn differences(
    before: &Measured,
    after: &Measured,
    facts: (Option<&HostFacts>, Option<&HostFacts>),
) -> Vec<String> {
    let mut out = Vec::new();
    if before.row.host != after.row.host {
        out.push(format!("host {} → {}", before.row.host, after.row.host));
    }
    if let (Some(a), Some(b)) = facts {
        out.extend(crate::facts::differ::differences(a, b));
    }
    let env = |m: &Measured| m.env.iter().cloned().collect::<std::collections::BTreeMap<String, String>>();
    let (a, b) = (env(before), env(after));
    for name in a.keys().chain(b.keys()).collect::<std::collections::BTreeSet<_>>() {
        if a.get(name) != b.get(name) {
            let v =
                |m: &std::collections::BTreeMap<String, String>| m.get(name).cloned().unwrap_or_else(|| "unset".into());
            out.push(format!("env {name}: {} → {}", v(&a), v(&b)));
        }
    }
    if before.row.command != after.row.command {
        out.push("the command changed".into());
    }
    out
}

/// The history: values, the change points `found` in them with what differed
/// across each (`facts` by capture), and the chart.
pub fn history(
    step: i64,
    query: &HistoryQuery,
    values: &[Measured],
    configs: Vec<String>,
    found: Vec<domain::history::Found>,
    facts: &std::collections::HashMap<i64, HostFacts>,
) -> Result<History, ApiError> {
    let metric = metric_of(query);
    let better = query.better.unwrap_or_else(|| Better::of(&metric));
    let of_run = |m: &Measured| m.row.facts_id.and_then(|id| facts.get(&id));
    let changes: Vec<Change> = found
        .into_iter()
        .map(|found| {
            let (before, after) = (&values[found.index - 1], &values[found.index]);
            let delta_pct = (found.after_mean - found.before_mean) / found.before_mean * 100.0;
            let worse = match better {
                Better::Higher => delta_pct < 0.0,
                Better::Lower => delta_pct > 0.0,
            };
            Change {
                run_id: after.row.id,
                index: found.index,
                before_mean: found.before_mean,
                after_mean: found.after_mean,
                delta_pct,
                p_value: found.p_value,
                direction: if worse { ChangeDirection::Regression } else { ChangeDirection::Improvement },
                between: Between {
                    before_run: before.row.id,
                    after_run: after.row.id,
                    differs: differences(before, after, (of_run(before), of_run(after))),
                },
            }
        })
        .collect();
    let unit = values.iter().find_map(|m| m.row.unit.clone());
    let runs: Vec<HistoryPoint> = values
        .iter()
        .map(|m| HistoryPoint { run_id: m.row.id, value: m.value, at: m.row.started_at.map(crate::time::timestamp) })
        .collect();
    let svg = crate::charts::history(&metric, unit.as_deref().unwrap_or(""), &runs, &changes)
        .inspect_err(|e| tracing::error!(step, "history chart: {e}"))
        .ok();
    Ok(History {
        step_id: step,
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
