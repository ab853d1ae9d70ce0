//! A run's telemetry as measurements, so hypotheses compare them and the chart
//! plots them like any other metric: per GPU (`key` = `gpu 0`) and over all
//! GPUs (no key) — the mean of the GPUs' means, and for `mem_used_mib_max` the
//! largest of any GPU. The unkeyed ones come first: they are what a run's
//! "first value of a metric" means.

use domain::metrics::Measurement;
use domain::telemetry::Sample;
use std::collections::BTreeMap;

pub const EXTRACTOR: &str = "telemetry";

/// (metric, unit, how one sample gives it, whether it is a max rather than a mean).
type Field = (&'static str, &'static str, fn(&Sample) -> Option<f64>, bool);

const FIELDS: [Field; 7] = [
    ("gpu_util_mean", "%", |s| s.gpu_util, false),
    ("mem_util_mean", "%", |s| s.mem_util, false),
    ("power_w_mean", "W", |s| s.power_w, false),
    ("mem_used_mib_max", "MiB", |s| s.mem_used_mib, true),
    ("sm_clock_mhz_mean", "MHz", |s| s.sm_clock_mhz, false),
    ("pcie_rx_mbs_mean", "MB/s", |s| s.pcie_rx_mbs, false),
    ("pcie_tx_mbs_mean", "MB/s", |s| s.pcie_tx_mbs, false),
];

fn measurement(metric: &str, unit: &str, value: f64, key: Option<String>) -> Measurement {
    Measurement {
        metric: metric.into(),
        value: (value * 100.0).round() / 100.0,
        unit: unit.into(),
        extractor: EXTRACTOR.into(),
        stddev: None,
        key,
    }
}

/// The summaries of `(gpu, sample)` readings.
pub fn summarize(samples: &[(u32, Sample)]) -> Vec<Measurement> {
    let mut by_gpu: BTreeMap<u32, Vec<&Sample>> = BTreeMap::new();
    for (gpu, sample) in samples {
        by_gpu.entry(*gpu).or_default().push(sample);
    }
    let mut all = Vec::new();
    let mut per_gpu = Vec::new();
    for (metric, unit, get, is_max) in FIELDS {
        let mut each = Vec::new();
        for (gpu, samples) in &by_gpu {
            let values: Vec<f64> = samples.iter().filter_map(|s| get(s)).collect();
            if values.is_empty() {
                continue;
            }
            let value = if is_max {
                values.iter().copied().fold(f64::NEG_INFINITY, f64::max)
            } else {
                values.iter().sum::<f64>() / values.len() as f64
            };
            each.push(value);
            per_gpu.push(measurement(metric, unit, value, Some(format!("gpu {gpu}"))));
        }
        if !each.is_empty() {
            let value = if is_max {
                each.iter().copied().fold(f64::NEG_INFINITY, f64::max)
            } else {
                each.iter().sum::<f64>() / each.len() as f64
            };
            all.push(measurement(metric, unit, value, None));
        }
    }
    all.extend(per_gpu);
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples_of(text: &str) -> Vec<(u32, Sample)> {
        crate::telemetry::parse::readings(text)
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                let sample = Sample {
                    t_ms: i as u64 * 500,
                    gpu_util: r.gpu_util,
                    mem_util: r.mem_util,
                    mem_used_mib: r.mem_used_mib,
                    power_w: r.power_w,
                    sm_clock_mhz: r.sm_clock_mhz,
                    ..Sample::default()
                };
                (r.gpu, sample)
            })
            .collect()
    }

    #[test]
    fn the_h200_query_loop_summarised() {
        let samples = samples_of(&crate::fixtures::read("gpu-host-h200/nvidia-smi-query-loop.csv"));
        let found = summarize(&samples);
        let get = |metric: &str, key: Option<&str>| {
            found.iter().find(|m| m.metric == metric && m.key.as_deref() == key).map(|m| m.value)
        };
        // One GPU: the average is that GPU's own value.
        assert_eq!(get("gpu_util_mean", None), get("gpu_util_mean", Some("gpu 0")));
        assert_eq!(get("mem_used_mib_max", None), Some(7089.0));
        let util = get("gpu_util_mean", None).unwrap();
        assert!(util > 10.0 && util < 71.0, "idle and loaded samples together: {util}");
        assert!(get("pcie_rx_mbs_mean", None).is_none(), "not in the query loop");
        assert_eq!(found[0].key, None, "the averages come first");
        assert!(found.iter().all(|m| m.extractor == EXTRACTOR));
    }

    #[test]
    fn over_gpus_the_mean_of_means_and_the_max_of_maxes() {
        let s = |gpu, util, used| (gpu, Sample { gpu_util: Some(util), mem_used_mib: Some(used), ..Sample::default() });
        let found = summarize(&[s(0, 10.0, 100.0), s(0, 30.0, 300.0), s(1, 90.0, 50.0)]);
        let get = |metric: &str, key: Option<&str>| {
            found.iter().find(|m| m.metric == metric && m.key.as_deref() == key).map(|m| m.value)
        };
        assert_eq!(get("gpu_util_mean", Some("gpu 0")), Some(20.0));
        assert_eq!(get("gpu_util_mean", Some("gpu 1")), Some(90.0));
        assert_eq!(get("gpu_util_mean", None), Some(55.0));
        assert_eq!(get("mem_used_mib_max", None), Some(300.0));
        assert!(summarize(&[]).is_empty());
    }
}
