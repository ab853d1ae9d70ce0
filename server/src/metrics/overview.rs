//! The investigation's chart: one metric across every configuration it was
//! measured in. A configuration is what a run ran with — its command and env —
//! named by its env (`NCCL_PROTO=LL`), the way people talk about it; manual
//! numbers go by the label they were entered with.

use super::stats::summarize;
use domain::hypotheses::Hypothesis;
use domain::metrics::{ConfigGroup, Overview, StoredMeasurement};
use domain::model::Step;
use std::collections::HashMap;

/// The metric to chart when none is asked for: the first hypothesis's, else
/// output throughput, else the one measured in the most runs.
fn default_metric<'a>(candidates: &'a [(String, usize)], hypotheses: &[Hypothesis]) -> Option<&'a str> {
    let has = |m: &str| candidates.iter().any(|(c, _)| c == m);
    let from_hypothesis = hypotheses.iter().filter_map(|h| h.metric.as_deref()).find(|m| has(m));
    from_hypothesis
        .or(has("output_throughput").then_some("output_throughput"))
        .or_else(|| candidates.iter().max_by_key(|(_, n)| *n).map(|(m, _)| m.as_str()))
        .and_then(|m| candidates.iter().find(|(c, _)| c == m).map(|(c, _)| c.as_str()))
}

/// `metric`: the one asked for (a 4xx is the caller's business when it is
/// unknown); `baseline`: the label of the group the others are compared with.
pub fn overview(
    metric: Option<&str>,
    baseline: Option<&str>,
    steps: &[Step],
    measurements: &[StoredMeasurement],
    hypotheses: &[Hypothesis],
) -> Option<Overview> {
    let runs: HashMap<i64, (&Step, &domain::runs::Run)> =
        steps.iter().flat_map(|s| s.runs.iter().map(move |r| (r.id, (s, r)))).collect();
    // One value per run and metric: the first the output gave (as experiments do);
    // every manual number counts.
    let mut seen = std::collections::HashSet::new();
    let usable: Vec<&StoredMeasurement> = measurements
        .iter()
        .filter(|m| match m.run_id {
            Some(run) => runs.get(&run).is_some_and(|(_, r)| !r.warmup) && seen.insert((run, &m.measurement.metric)),
            None => true,
        })
        .collect();
    let mut candidates: Vec<(String, usize)> = Vec::new();
    for m in &usable {
        match candidates.iter_mut().find(|(c, _)| *c == m.measurement.metric) {
            Some((_, n)) => *n += 1,
            None => candidates.push((m.measurement.metric.clone(), 1)),
        }
    }
    candidates.retain(|(_, n)| *n >= 2);
    let metric = match metric {
        Some(m) => candidates.iter().find(|(c, _)| c == m).map(|(c, _)| c.as_str())?,
        None => default_metric(&candidates, hypotheses)?,
    };

    // Group in order of first measurement, so the oldest configuration is drawn first.
    // ((what ran, label), values): a sweep's runs by their step (their commands
    // differ by the values put in), others by their command; manual numbers by
    // their label alone.
    type Key = (Option<String>, String);
    type Values = Vec<(Option<i64>, f64)>;
    let mut groups: Vec<(Key, Values)> = Vec::new();
    let mut unit = String::new();
    for m in usable.iter().filter(|m| m.measurement.metric == metric) {
        if unit.is_empty() {
            unit = m.measurement.unit.clone();
        }
        let key = match m.run_id.and_then(|id| runs.get(&id)) {
            Some((step, run)) if run.config.is_some() => (Some(format!("step:{}", step.id)), run.config_label()),
            Some((_, run)) => (Some(format!("command:{}", run.command)), run.config_label()),
            None => (None, m.label.clone().unwrap_or_else(|| "entered by hand".into())),
        };
        let value = (m.run_id, m.measurement.value);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, values)) => values.push(value),
            None => groups.push((key, vec![value])),
        }
    }
    // Same label, different commands: the step tells them apart.
    let position_of = |what: &str| {
        let found = match what.split_once(':') {
            Some(("step", id)) => steps.iter().find(|s| s.id.to_string() == id),
            Some((_, command)) => runs.values().find(|(_, r)| r.command == command).map(|(s, _)| *s),
            None => None,
        };
        found.map(|s| s.position).unwrap_or_default()
    };
    let ambiguous = |label: &str| groups.iter().filter(|((c, l), _)| c.is_some() && l == label).count() > 1;
    let groups: Vec<ConfigGroup> = groups
        .iter()
        .filter_map(|((command, label), values)| {
            let label = match command {
                Some(c) if ambiguous(label) => format!("#{} · {label}", position_of(c)),
                _ => label.clone(),
            };
            let summary = summarize(&values.iter().map(|(_, v)| *v).collect::<Vec<_>>())?;
            Some(ConfigGroup { label, values: values.clone(), summary, delta_pct: None })
        })
        .collect();
    let first = groups.first()?;
    let chosen = baseline.and_then(|b| groups.iter().find(|g| g.label == b));
    let (baseline, baseline_label) = match chosen {
        Some(group) => (group.summary.mean, group.label.clone()),
        None => hypotheses
            .iter()
            .find_map(|h| {
                let c = h.comparison.as_ref().filter(|_| h.metric.as_deref() == Some(metric))?;
                // Only over the steps it judges: a rate sweep elsewhere is not
                // held against another step's baseline.
                let step_of = |run: &i64| runs.get(run).map(|(s, _)| s.id);
                let judged: Vec<i64> =
                    h.baseline_values.iter().chain(&h.treatment_values).filter_map(|(r, _)| step_of(r)).collect();
                let charted = groups.iter().flat_map(|g| g.values.iter().filter_map(|(r, _)| r.as_ref()));
                let within = charted.filter_map(step_of).all(|step| judged.contains(&step));
                within.then(|| (c.baseline.mean, format!("baseline of “{}”", h.statement)))
            })
            .unwrap_or_else(|| (first.summary.mean, first.label.clone())),
    };
    let mut groups = groups;
    for group in &mut groups {
        group.delta_pct = (baseline != 0.0).then(|| (group.summary.mean - baseline) / baseline * 100.0);
    }
    let columns: Vec<(&str, &domain::metrics::GroupSummary)> =
        groups.iter().map(|g| (g.label.as_str(), &g.summary)).collect();
    let runs: Vec<Vec<Option<i64>>> = groups.iter().map(|g| g.values.iter().map(|(run, _)| *run).collect()).collect();
    let (svg, points) = crate::charts::by_group(metric, &unit, &columns, &runs, baseline)
        .inspect_err(|e| tracing::error!("overview chart: {e}"))
        .ok()?;
    Some(Overview {
        metric: metric.to_string(),
        unit,
        metrics: candidates.iter().map(|(c, _)| c.clone()).filter(|c| c != metric).collect(),
        groups,
        baseline,
        baseline_label,
        svg,
        points,
    })
}
