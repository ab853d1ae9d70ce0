//! Runs side by side (`/compare?runs=A,B`): what differs in how and on what
//! they ran, and every metric they share with its change against the first
//! run and whether that change is more than the noise of each
//! configuration's repeats (`metrics::stats::compare`, Welch's interval).

use domain::hosts::HostFacts;
use domain::metrics::Measurement;
use domain::run_pages::{ComparedChart, ComparedMetric, ComparedRun, Difference, RunPage, RunsCompared};
use std::collections::HashMap;

/// A metric and its key, as the runs share them.
pub type MetricKey = (String, Option<String>);

/// What one run brings to a comparison.
pub struct Side {
    pub page: RunPage,
    /// The step's runs of the same configuration that succeeded.
    pub repeats: Vec<i64>,
    /// Their values, one per run, by metric.
    pub repeat_values: HashMap<MetricKey, Vec<f64>>,
    /// This run's per-request samples: a metric's first sampled key (the
    /// unkeyed one when it has one), as (metric, unit, sorted values).
    pub samples: Vec<(String, String, Vec<f64>)>,
    pub telemetry: domain::telemetry::Telemetry,
}

/// Most per-request metrics drawn as overlaid CDFs.
const CDFS: usize = 6;

/// One measurement per metric and key (`domain::metrics::one_each`), with its key.
pub fn one_each(found: &[Measurement]) -> Vec<(MetricKey, &Measurement)> {
    domain::metrics::one_each(found).into_iter().map(|m| ((m.metric.clone(), m.key.clone()), m)).collect()
}

pub fn compared(sides: Vec<Side>) -> Result<RunsCompared, crate::charts::ChartError> {
    let runs = sides
        .iter()
        .map(|s| ComparedRun {
            id: s.page.run.id,
            status: s.page.run.status,
            host: s.page.run.host.clone(),
            config: s.page.run.config_label(),
            origin: s.page.run.origin,
            investigation_id: s.page.investigation_id.clone(),
            investigation_title: s.page.investigation_title.clone(),
            step_id: s.page.run.step_id,
            step_position: s.page.step_position,
            repeats: s.repeats.clone(),
            guards: s.page.run.guards.clone(),
        })
        .collect();
    let (metrics, unshared) = metrics(&sides);
    let labels: Vec<String> = sides.iter().map(|s| format!("run {}", s.page.run.id)).collect();
    let telemetry: Vec<crate::charts::TelemetryLine> = sides
        .iter()
        .zip(&labels)
        .map(|(s, label)| crate::charts::TelemetryLine { label, telemetry: &s.telemetry })
        .collect();
    Ok(RunsCompared {
        runs,
        settings: settings(&sides),
        facts: facts(&sides),
        metrics,
        unshared,
        cdfs: cdfs(&sides, &labels)?,
        telemetry_svg: crate::charts::telemetry_compared(&telemetry)?,
    })
}

/// A CDF per sampled metric all the runs have, a line per run.
fn cdfs(sides: &[Side], labels: &[String]) -> Result<Vec<ComparedChart>, crate::charts::ChartError> {
    let Some(first) = sides.first() else { return Ok(Vec::new()) };
    let mut charts = Vec::new();
    for (metric, unit, _) in first.samples.iter().take(CDFS) {
        let each: Option<Vec<&Vec<f64>>> = sides
            .iter()
            .map(|s| s.samples.iter().find(|(m, _, values)| m == metric && !values.is_empty()).map(|(_, _, v)| v))
            .collect();
        let Some(each) = each else { continue };
        let lines: Vec<crate::charts::CdfLine> = each
            .iter()
            .zip(labels)
            .enumerate()
            .map(|(tone, (sorted, label))| crate::charts::CdfLine { label, sorted, tone, thin: false })
            .collect();
        use crate::charts::Axis;
        let axis = crate::charts::axis_for(&lines);
        // A log chart carries its linear twin, to switch to.
        let linear_svg = match axis {
            Axis::Log => Some(crate::charts::cdf_on(metric, unit, &lines, None, Axis::Linear)?),
            Axis::Linear => None,
        };
        let svg = crate::charts::cdf_on(metric, unit, &lines, None, axis)?;
        charts.push(ComparedChart { metric: metric.clone(), unit: unit.clone(), svg, axis, linear_svg });
    }
    Ok(charts)
}

/// Names in the order the runs first have them.
fn union<'a>(lists: impl Iterator<Item = Vec<&'a str>>) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for list in lists {
        for name in list {
            if !names.iter().any(|n| n == name) {
                names.push(name.to_string());
            }
        }
    }
    names
}

fn settings(sides: &[Side]) -> Vec<Difference> {
    let runs: Vec<&domain::runs::Run> = sides.iter().map(|s| &s.page.run).collect();
    let each = |f: &dyn Fn(&domain::runs::Run) -> Option<String>| runs.iter().map(|r| f(r)).collect::<Vec<_>>();
    let mut rows = vec![
        Difference::new("host", each(&|r| Some(r.host.clone()))),
        Difference::new("command", each(&|r| Some(r.command.clone()))),
        Difference::new("working directory", each(&|r| r.cwd.clone())),
    ];
    for name in union(runs.iter().map(|r| r.env.iter().map(|(k, _)| k.as_str()).collect())) {
        let value = |r: &domain::runs::Run| r.env.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone());
        rows.push(Difference::new(name.clone(), each(&value)));
    }
    let configs = runs.iter().map(|r| r.config.iter().flatten().map(|(k, _)| k.as_str()).collect());
    for name in union(configs) {
        let value = |r: &domain::runs::Run| {
            let level = r.config.as_ref()?.get(&name)?;
            Some(level.clone().unwrap_or_else(|| "(unset)".into()))
        };
        rows.push(Difference::new(name.clone(), each(&value)));
    }
    rows
}

fn facts(sides: &[Side]) -> Vec<Difference> {
    let facts: Vec<Option<&HostFacts>> = sides.iter().map(|s| s.page.facts.as_ref()).collect();
    if facts.iter().all(Option::is_none) {
        return Vec::new();
    }
    let each = |f: &dyn Fn(&HostFacts) -> Option<String>| facts.iter().map(|h| h.and_then(f)).collect::<Vec<_>>();
    let mut rows = vec![
        Difference::new("GPUs", each(&|h| Some(h.gpu_summary()).filter(|s| !s.is_empty()))),
        Difference::new("driver", each(&|h| h.driver.clone())),
        Difference::new("CUDA", each(&|h| h.cuda.clone())),
        Difference::new("interconnect", each(&|h| h.interconnect.clone())),
        Difference::new("CPU", each(&|h| h.cpu_model.clone())),
        Difference::new("Python", each(&|h| h.python.clone())),
    ];
    let packages =
        facts.iter().map(|h| h.map(|h| h.packages.iter().map(|(n, _)| n.as_str()).collect()).unwrap_or_default());
    for name in union(packages) {
        let version = |h: &HostFacts| h.packages.iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone());
        rows.push(Difference::new(name.clone(), each(&version)));
    }
    rows.retain(|row| row.values.iter().any(Option::is_some));
    rows
}

fn metrics(sides: &[Side]) -> (Vec<ComparedMetric>, Vec<String>) {
    let found: Vec<Vec<(MetricKey, &Measurement)>> = sides.iter().map(|s| one_each(&s.page.run.measurements)).collect();
    let named = |(metric, key): &MetricKey| match key {
        Some(key) => format!("{metric} [{key}]"),
        None => metric.clone(),
    };
    let (mut shared, mut unshared) = (Vec::new(), Vec::new());
    let mut keys: Vec<&MetricKey> = Vec::new();
    for (key, _) in found.iter().flatten() {
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    for key in keys {
        let values: Vec<&Measurement> =
            found.iter().filter_map(|run| run.iter().find(|(k, _)| k == key).map(|(_, m)| *m)).collect();
        if values.len() < sides.len() {
            unshared.push(named(key));
            continue;
        }
        let first = values[0].value;
        let base = sides[0].repeat_values.get(key).cloned().unwrap_or_default();
        let deltas = values
            .iter()
            .enumerate()
            .map(|(i, m)| (i > 0 && first != 0.0).then(|| (m.value - first) / first.abs() * 100.0))
            .collect();
        let verdicts = sides
            .iter()
            .enumerate()
            .map(|(i, side)| {
                let other = side.repeat_values.get(key).cloned().unwrap_or_default();
                (i > 0).then(|| crate::metrics::stats::compare(&base, &other)).flatten()
            })
            .collect();
        shared.push(ComparedMetric {
            metric: key.0.clone(),
            key: key.1.clone(),
            unit: values[0].unit.clone(),
            values: values.iter().map(|m| (m.value, m.extractor.clone())).collect(),
            deltas,
            verdicts,
        });
    }
    (shared, unshared)
}
