//! Which kernels changed: a hypothesis' two groups side by side by their
//! profiles' measurements (torch traces, `nsys stats`; `server::reports::kernels`)
//! — GPU time and calls per decode step by kernel category, the kernels that
//! changed most, and collective calls per step.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// One measurement of a run, as the diff reads it.
#[derive(Clone, Copy, Debug)]
pub struct Measured<'a> {
    pub run: i64,
    pub metric: &'a str,
    pub key: Option<&'a str>,
    pub value: f64,
}

/// Baseline against treatment, means over each group's profiled runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct ProfileDiff {
    /// Runs with a profile in each group.
    pub baseline_runs: Vec<i64>,
    pub treatment_runs: Vec<i64>,
    /// `per step` (the profiles knew their decode steps) or `whole profile`.
    pub per: String,
    pub collective_calls_per_step: (Option<f64>, Option<f64>),
    pub step_ms: (Option<f64>, Option<f64>),
    pub categories: Vec<DiffRow>,
    /// The kernels whose time changed most, the biggest change first.
    pub kernels: Vec<DiffRow>,
    /// The change in a sentence ("collective calls per step 32 → 16; …").
    pub summary: String,
}

/// A category's or a kernel's time (ms) and calls, baseline and treatment;
/// `None` where a side's profiles did not name it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct DiffRow {
    pub name: String,
    pub baseline_ms: Option<f64>,
    pub treatment_ms: Option<f64>,
    pub baseline_calls: Option<f64>,
    pub treatment_calls: Option<f64>,
}

impl DiffRow {
    /// Treatment less baseline, a side without it counted as 0.
    pub fn change_ms(&self) -> f64 {
        self.treatment_ms.unwrap_or(0.0) - self.baseline_ms.unwrap_or(0.0)
    }
}

/// Kernels a diff lists.
const KERNELS_SHOWN: usize = 10;

/// The mean over runs of each (metric, key) one side measured.
fn means(side: &[Measured<'_>]) -> BTreeMap<(String, Option<String>), f64> {
    let mut per: BTreeMap<(String, Option<String>), BTreeMap<i64, f64>> = BTreeMap::new();
    for m in side {
        // One value per run: the first (a run's profile is read once).
        per.entry((m.metric.to_string(), m.key.map(str::to_string))).or_default().entry(m.run).or_insert(m.value);
    }
    per.into_iter().map(|(k, runs)| (k, runs.values().sum::<f64>() / runs.len() as f64)).collect()
}

/// The diff, when both groups have a profile (a run with `gpu_time_ms`).
pub fn diff(baseline: &[Measured<'_>], treatment: &[Measured<'_>]) -> Option<ProfileDiff> {
    let profiled = |side: &[Measured<'_>]| -> Vec<i64> {
        side.iter().filter(|m| m.metric == "gpu_time_ms").map(|m| m.run).collect::<BTreeSet<_>>().into_iter().collect()
    };
    let (b_runs, t_runs) = (profiled(baseline), profiled(treatment));
    if b_runs.is_empty() || t_runs.is_empty() {
        return None;
    }
    let (b, t) = (means(&kept(baseline, &b_runs)), means(&kept(treatment, &t_runs)));
    let per_step = b.keys().chain(t.keys()).any(|(m, _)| m == "gpu_ms_per_step");
    let (ms, calls) = if per_step {
        (["gpu_ms_per_step", "kernel_ms_per_step"], "kernel_calls_per_step")
    } else {
        (["gpu_time_ms", "kernel_ms"], "kernel_calls")
    };
    let rows = |prefix: &str, time: &str| -> Vec<DiffRow> {
        let names: BTreeSet<&str> = b
            .keys()
            .chain(t.keys())
            .filter(|(m, _)| m == time)
            .filter_map(|(_, k)| k.as_deref()?.strip_prefix(prefix))
            .collect();
        names
            .into_iter()
            .map(|name| {
                let key = Some(format!("{prefix}{name}"));
                let get = |side: &BTreeMap<(String, Option<String>), f64>, metric: &str| {
                    side.get(&(metric.to_string(), key.clone())).copied()
                };
                DiffRow {
                    name: name.to_string(),
                    baseline_ms: get(&b, time),
                    treatment_ms: get(&t, time),
                    baseline_calls: get(&b, calls),
                    treatment_calls: get(&t, calls),
                }
            })
            .collect()
    };
    let categories = rows("category=", ms[0]);
    let mut kernels = rows("kernel=", ms[1]);
    kernels.sort_by(|x, y| y.change_ms().abs().total_cmp(&x.change_ms().abs()).then_with(|| x.name.cmp(&y.name)));
    kernels.truncate(KERNELS_SHOWN);
    let one =
        |side: &BTreeMap<(String, Option<String>), f64>, metric: &str| side.get(&(metric.to_string(), None)).copied();
    let collective = (one(&b, "collective_calls_per_step"), one(&t, "collective_calls_per_step"));
    let step_ms = (
        one(&b, "step_time_ms").or(one(&b, "gpu_ms_per_step")),
        one(&t, "step_time_ms").or(one(&t, "gpu_ms_per_step")),
    );
    let summary = summary(collective, &categories, &kernels);
    Some(ProfileDiff {
        baseline_runs: b_runs,
        treatment_runs: t_runs,
        per: if per_step { "per step" } else { "whole profile" }.into(),
        collective_calls_per_step: collective,
        step_ms,
        categories,
        kernels,
        summary,
    })
}

fn kept<'a>(side: &[Measured<'a>], runs: &[i64]) -> Vec<Measured<'a>> {
    side.iter().filter(|m| runs.contains(&m.run)).copied().collect()
}

fn figure(v: Option<f64>) -> String {
    v.map_or_else(|| "0".into(), crate::metrics::figure)
}

/// "collective calls per step 32 → 16; kernels new in the treatment: X (16
/// calls); most changed: Y (+0.02 ms)".
fn summary(collective: (Option<f64>, Option<f64>), categories: &[DiffRow], kernels: &[DiffRow]) -> String {
    let mut said = Vec::new();
    if let (Some(b), Some(t)) = collective
        && b != t
    {
        said.push(format!("collective calls per step {} → {}", figure(Some(b)), figure(Some(t))));
    }
    let added: Vec<String> = kernels
        .iter()
        .filter(|k| k.baseline_ms.is_none() && k.treatment_ms.is_some())
        .map(|k| format!("{} ({} calls)", k.name, figure(k.treatment_calls)))
        .collect();
    if !added.is_empty() {
        said.push(format!("new in the treatment: {}", added.join(", ")));
    }
    let gone: Vec<&str> = kernels
        .iter()
        .filter(|k| k.baseline_ms.is_some() && k.treatment_ms.is_none())
        .map(|k| k.name.as_str())
        .collect();
    if !gone.is_empty() {
        said.push(format!("gone: {}", gone.join(", ")));
    }
    if let Some(most) = categories.iter().max_by(|x, y| x.change_ms().abs().total_cmp(&y.change_ms().abs()))
        && most.change_ms() != 0.0
    {
        said.push(format!("most changed category: {} ({:+.3} ms)", most.name, most.change_ms()));
    }
    if said.is_empty() { "No kernel category or kernel changed.".into() } else { said.join("; ") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(run: i64, metric: &'static str, key: Option<&'static str>, value: f64) -> Measured<'static> {
        Measured { run, metric, key, value }
    }

    #[test]
    fn means_over_each_groups_profiled_runs() {
        let b = [
            m(1, "gpu_time_ms", None, 10.0),
            m(1, "gpu_ms_per_step", Some("category=collective"), 1.0),
            m(1, "kernel_calls_per_step", Some("category=collective"), 32.0),
            m(1, "collective_calls_per_step", None, 32.0),
            m(2, "gpu_time_ms", None, 10.0),
            m(2, "gpu_ms_per_step", Some("category=collective"), 3.0),
            m(2, "collective_calls_per_step", None, 32.0),
            m(3, "output_throughput", None, 50.0),
        ];
        let t = [
            m(4, "gpu_time_ms", None, 9.0),
            m(4, "gpu_ms_per_step", Some("category=collective"), 1.0),
            m(4, "kernel_calls_per_step", Some("category=collective"), 16.0),
            m(4, "collective_calls_per_step", None, 16.0),
            m(4, "kernel_ms_per_step", Some("kernel=CatArrayBatchedCopy"), 0.02),
            m(4, "kernel_calls_per_step", Some("kernel=CatArrayBatchedCopy"), 16.0),
        ];
        let d = diff(&b, &t).expect("both profiled");
        assert_eq!((d.baseline_runs, d.treatment_runs), (vec![1, 2], vec![4]));
        assert_eq!(d.collective_calls_per_step, (Some(32.0), Some(16.0)));
        let c = &d.categories[0];
        assert_eq!(
            (c.baseline_ms, c.treatment_ms, c.baseline_calls, c.treatment_calls),
            (Some(2.0), Some(1.0), Some(32.0), Some(16.0))
        );
        assert!(d.summary.contains("collective calls per step 32.00 → 16.00"), "{}", d.summary);
        assert!(d.summary.contains("new in the treatment: CatArrayBatchedCopy (16.00 calls)"), "{}", d.summary);
        assert!(diff(&b, &[m(5, "output_throughput", None, 1.0)]).is_none(), "no profile on one side");
    }
}
