//! What the pages of runs show: one run whole (`/runs/{id}`) and runs side
//! by side (`/compare?runs=A,B`). Apart from `runs`, which `hosts` uses, as
//! these use both.

use crate::runs::{Run, RunStatus, batch_position};
use serde::{Deserialize, Serialize};

/// Everything `/runs/{id}` shows of one run: the run with the end of its
/// output and of its server's log, its telemetry and files, and where it
/// stands among its step's runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct RunPage {
    pub run: Run,
    pub investigation_id: String,
    pub investigation_title: String,
    /// The step's place in the timeline, 1-based.
    pub step_position: u32,
    /// The step's runs, oldest first, this one among them.
    pub runs: Vec<RunLink>,
    /// The host's facts when the run started, if captured.
    #[serde(default)]
    pub facts: Option<crate::hosts::HostFacts>,
    /// What the reader may do in its investigation (run it again, …).
    #[serde(default)]
    pub abilities: crate::model::Abilities,
    /// The engine's own signals during the run, when its server was scraped.
    #[serde(default)]
    pub engine: Option<crate::engine::series::EngineView>,
}

/// A run as another run's page links to it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct RunLink {
    pub id: i64,
    pub status: RunStatus,
    /// Its configuration and place in its batch, in words.
    pub label: String,
    /// Its configuration alone (empty for a run with neither env nor a sweep's settings).
    #[serde(default)]
    pub config: String,
}

impl RunLink {
    pub fn of(run: &Run) -> RunLink {
        let position = batch_position(run);
        let config = if run.config.is_some() || !run.env.is_empty() { run.config_label() } else { String::new() };
        let label = match (config.is_empty(), position.is_empty()) {
            (true, _) => position,
            (false, true) => config.clone(),
            (false, false) => format!("{config} · {position}"),
        };
        RunLink { id: run.id, status: run.status, label, config }
    }
}

impl RunPage {
    /// This run's place among its step's runs (0-based), if it is there.
    fn place(&self) -> Option<usize> {
        self.runs.iter().position(|r| r.id == self.run.id)
    }

    /// The step's run before this one.
    pub fn previous(&self) -> Option<&RunLink> {
        self.place().and_then(|i| i.checked_sub(1)).and_then(|i| self.runs.get(i))
    }

    /// The step's run after this one.
    pub fn next(&self) -> Option<&RunLink> {
        self.place().and_then(|i| self.runs.get(i + 1))
    }

    /// This run and, for each other configuration of its step, its newest
    /// run that succeeded (at most [`MAX_COMPARED`] in all): a sweep side by
    /// side. `None` when the step has a single configuration.
    pub fn one_of_each_config(&self) -> Option<Vec<i64>> {
        let mut picked: Vec<&RunLink> = Vec::new();
        for run in self.runs.iter().rev().filter(|r| r.status == RunStatus::Succeeded && r.id != self.run.id) {
            if !picked.iter().any(|p| p.config == run.config) {
                picked.push(run);
            }
        }
        let this = self.runs.iter().find(|r| r.id == self.run.id)?;
        picked.retain(|p| p.config != this.config);
        if picked.is_empty() {
            return None;
        }
        picked.reverse();
        let ids = std::iter::once(this.id).chain(picked.iter().map(|p| p.id)).take(MAX_COMPARED).collect();
        Some(ids)
    }

    /// Up to `n` of the step's runs around this one (it in the middle where
    /// there are enough on both sides), oldest first.
    pub fn around(&self, n: usize) -> &[RunLink] {
        let at = self.place().unwrap_or(0);
        let start = at.saturating_sub(n / 2).min(self.runs.len().saturating_sub(n));
        &self.runs[start..(start + n).min(self.runs.len())]
    }
}

/// At most this many runs side by side.
pub const MAX_COMPARED: usize = 8;

/// `"3,7"` (the `runs` of `/compare?runs=3,7`) → `[3, 7]`: two to
/// [`MAX_COMPARED`] different run ids, in the order given.
pub fn compared_runs(text: &str) -> Result<Vec<i64>, crate::error::ApiError> {
    let mut ids: Vec<i64> = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let id = part.trim_start_matches('#').parse::<i64>().ok().filter(|id| *id > 0).ok_or_else(|| {
            crate::error::ApiError::invalid(format!("{part:?} is not a run number: write them as runs=3,7."))
        })?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    if !(2..=MAX_COMPARED).contains(&ids.len()) {
        return Err(crate::error::ApiError::invalid(format!(
            "Compare 2 to {MAX_COMPARED} different runs (runs=3,7); {} given.",
            ids.len()
        )));
    }
    Ok(ids)
}

/// Runs side by side (`GET /api/v1/compare?runs=A,B[,…]`, the `/compare` page).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct RunsCompared {
    /// The runs in the order asked; the first is what the others are compared with.
    pub runs: Vec<ComparedRun>,
    /// Host, command, working directory, each environment variable and each of
    /// a sweep's settings: a row each, a value per run (`None`: not set).
    pub settings: Vec<Difference>,
    /// The host as each run found it: GPUs, driver, CUDA, interconnect, CPU,
    /// Python and each package.
    pub facts: Vec<Difference>,
    /// Every metric (and key) all the runs have.
    pub metrics: Vec<ComparedMetric>,
    /// Metrics only some of them have, as `metric` or `metric [key]`.
    pub unshared: Vec<String>,
    /// Per-request metrics every run has samples of: their CDFs overlaid, a
    /// line per run in the runs' order (SVG).
    #[serde(default)]
    pub cdfs: Vec<ComparedChart>,
    /// The runs' GPU telemetry on one time axis (SVG); none when no run was sampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry_svg: Option<String>,
}

/// A chart of a comparison, drawn on the server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct ComparedChart {
    pub metric: String,
    pub unit: String,
    /// Drawn on `axis`: log for values that span more than a factor of ten
    /// (latencies, mostly), else linear.
    pub svg: String,
    pub axis: ChartAxis,
    /// The same chart on the other axis, when `axis` is log (to switch to).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linear_svg: Option<String>,
}

/// How a chart's value axis is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ChartAxis {
    Linear,
    Log,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct ComparedRun {
    pub id: i64,
    pub status: RunStatus,
    pub host: String,
    /// Its configuration in words (`NCCL_PROTO=LL`, a sweep's settings).
    pub config: String,
    /// A person's, a watch's or a replay's.
    #[serde(default)]
    pub origin: crate::runs::RunOrigin,
    pub investigation_id: String,
    pub investigation_title: String,
    pub step_id: i64,
    pub step_position: u32,
    /// The step's runs of the same configuration that succeeded (this one
    /// among them if it did): what tells a difference from noise.
    pub repeats: Vec<i64>,
    /// Its guards (`crate::guards`): a difference between runs one of which
    /// a guard flags is not the change alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guards: Vec<crate::guards::Guard>,
}

/// One thing the runs were run with or on, a value per run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Difference {
    pub name: String,
    pub values: Vec<Option<String>>,
    /// Whether the runs differ in it.
    pub differs: bool,
}

impl Difference {
    pub fn new(name: impl Into<String>, values: Vec<Option<String>>) -> Difference {
        let differs = values.iter().any(|v| *v != values[0]);
        Difference { name: name.into(), values, differs }
    }
}

/// One metric every run has.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct ComparedMetric {
    pub metric: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    pub unit: String,
    /// Each run's value, and the extractor that found it (one per run: a
    /// number two extractors both found is shown once).
    pub values: Vec<(f64, String)>,
    /// Against the first run, each run's difference in percent of its value
    /// (`None` for the first, and where the first is 0).
    pub deltas: Vec<Option<f64>>,
    /// Against the first run's configuration, over the repeats of both: within
    /// noise, an interval, or "noise unknown" (`None` for the first).
    pub verdicts: Vec<Option<crate::metrics::Comparison>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a_run(id: i64) -> Run {
        serde_json::from_value(serde_json::json!({
            "id": id, "step_id": 1, "host": "h", "command": "true", "env": [], "status": "succeeded",
            "batch_index": 1, "batch_size": 1, "warmup": false, "stdout_bytes": 0, "stderr_bytes": 0,
            "lines": 0, "queued_at": "2026-12-03T00:00:00Z",
        }))
        .unwrap()
    }

    #[test]
    fn a_run_page_lists_the_runs_around_it_and_its_neighbours() {
        let page = |this: i64, n: i64| RunPage {
            run: a_run(this),
            investigation_id: "i".into(),
            investigation_title: String::new(),
            step_position: 1,
            runs: (1..=n).map(|id| RunLink::of(&a_run(id))).collect(),
            facts: None,
            abilities: Default::default(),
            engine: None,
        };
        let ids = |links: &[RunLink]| links.iter().map(|r| r.id).collect::<Vec<_>>();
        let middle = page(10, 20);
        assert_eq!(ids(middle.around(5)), [8, 9, 10, 11, 12]);
        assert_eq!((middle.previous().map(|r| r.id), middle.next().map(|r| r.id)), (Some(9), Some(11)));
        let first = page(1, 20);
        assert_eq!(ids(first.around(5)), [1, 2, 3, 4, 5], "as many as there are, after it");
        assert_eq!((first.previous().map(|r| r.id), first.next().map(|r| r.id)), (None, Some(2)));
        let last = page(20, 20);
        assert_eq!(ids(last.around(5)), [16, 17, 18, 19, 20]);
        assert_eq!(last.next().map(|r| r.id), None);
        assert_eq!(ids(page(2, 3).around(15)), [1, 2, 3], "fewer runs than asked for");
        assert_eq!(RunLink::of(&a_run(1)).label, "", "a lone run has nothing to tell it apart");
    }

    #[test]
    fn runs_to_compare_are_two_to_eight_different_numbers() {
        assert_eq!(compared_runs("3,7").unwrap(), [3, 7]);
        assert_eq!(compared_runs(" #3, 7 ,3,").unwrap(), [3, 7], "repeats and blanks dropped, order kept");
        for (bad, says) in [
            ("3", "2 to 8 different runs"),
            ("3,3", "2 to 8 different runs"),
            ("", "2 to 8 different runs"),
            ("1,2,3,4,5,6,7,8,9", "9 given"),
            ("3,<b>x</b>", "\"<b>x</b>\" is not a run number"),
            ("3,-7", "is not a run number"),
        ] {
            let error = compared_runs(bad).unwrap_err();
            assert!(error.message.contains(says), "{bad:?}: {}", error.message);
        }
    }

    #[test]
    fn a_difference_is_a_row_whose_values_are_not_all_the_same() {
        assert!(Difference::new("X", vec![Some("1".into()), Some("2".into())]).differs);
        assert!(Difference::new("X", vec![Some("1".into()), None]).differs);
        assert!(!Difference::new("X", vec![Some("1".into()), Some("1".into())]).differs);
    }
}
