//! Where decode time goes, beside what the collective calculator predicts:
//! the newest run whose profile (`crate::reports::kernels`) counted
//! collectives per step.

use domain::metrics::StoredMeasurement;
use domain::model::Step;
use domain::steps::StepBody;
use domain::steps::calculator::{CalculatorBody, CalculatorResults, ProfileMeasured};

/// The newest run's profile measurements, if any run has them.
pub fn newest(measurements: &[StoredMeasurement]) -> Option<ProfileMeasured> {
    let of = |run: i64, metric: &str| {
        measurements
            .iter()
            .find(|m| m.run_id == Some(run) && m.measurement.metric == metric && m.measurement.key.is_none())
            .map(|m| m.measurement.value)
    };
    let run = measurements
        .iter()
        .filter(|m| m.measurement.metric == "collective_calls_per_step" && m.measurement.key.is_none())
        .filter_map(|m| m.run_id)
        .max()?;
    Some(ProfileMeasured {
        run,
        calls_per_step: of(run, "collective_calls_per_step")?,
        share_pct: of(run, "collective_share_of_step_pct"),
        step_ms: of(run, "step_time_ms").or_else(|| of(run, "gpu_ms_per_step")),
    })
}

/// Puts the newest profile beside every collective calculator's results.
pub fn beside_calculators(steps: &mut [Step], measurements: &[StoredMeasurement]) {
    let Some(measured) = newest(measurements) else { return };
    for step in steps.iter_mut() {
        let StepBody::Calculator(calculator @ CalculatorBody::Collective(_)) = &step.body else { continue };
        if step.results.is_none() {
            step.results = calculator.results();
        }
        if let Some(CalculatorResults::Collective(r)) = &mut step.results {
            r.measured = Some(measured.clone());
        }
    }
}
