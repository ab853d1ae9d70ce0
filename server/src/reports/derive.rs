//! What follows from a run's reports beyond the numbers they hold: the
//! percentiles of their per-request samples (when the tool did not print
//! them), goodput under the investigation's SLO, and the knee of a rate sweep.

use super::report::{Report, Samples};
use domain::distributions::{RatePoint, STANDARD_PERCENTILES, Slo, compact, knee, percentile, percentile_name};
use domain::metrics::Measurement;

/// Samples kept per metric and key; more are thinned to evenly spaced
/// quantiles (percentiles stay within 1/CAP of the whole's).
pub const CAP: usize = 100_000;

/// Samples to store: (metric, unit, key, how many there were, sorted f32 bytes).
pub type Stored = (String, String, Option<String>, i64, Vec<u8>);

const EXTRACTOR: &str = "samples";

fn found(metric: String, value: f64, unit: &str, key: Option<&str>) -> Measurement {
    let mut m = crate::metrics::measurement(metric, value, unit, EXTRACTOR);
    m.key = key.map(str::to_string);
    m
}

/// Measurements and samples to store for `reports`, with `slo` applied.
pub fn derive(reports: &[Report], slo: Option<&Slo>) -> (Vec<Measurement>, Vec<Stored>) {
    let mut measurements: Vec<Measurement> = Vec::new();
    let mut stored = Vec::new();
    let present = |m: &[Measurement], metric: &str, key: Option<&str>| {
        m.iter().any(|x| x.metric == metric && x.key.as_deref() == key)
    };
    for report in reports {
        let from_samples = measurements.len();
        for s in &report.samples {
            let sorted = compact(s.values.clone(), CAP);
            if sorted.is_empty() {
                continue;
            }
            let key = s.key.as_deref();
            for p in STANDARD_PERCENTILES {
                let name = percentile_name(&s.metric, p);
                if !present(&report.measurements, &name, key)
                    && let Some(v) = percentile(&sorted, p)
                {
                    measurements.push(found(name, v, &s.unit, key));
                }
            }
            stored.push((
                s.metric.clone(),
                s.unit.clone(),
                s.key.clone(),
                s.values.len() as i64,
                crate::db::encode_samples(&sorted),
            ));
        }
        if let Some(slo) = slo {
            measurements.extend(goodput(report, slo));
            let knee = knee_of(report, &measurements[from_samples..], slo);
            measurements.extend(knee);
        }
    }
    (measurements, stored)
}

/// Per key: the share of requests meeting every bound, and that share of the
/// request throughput.
fn goodput(report: &Report, slo: &Slo) -> Vec<Measurement> {
    let mut keys: Vec<Option<&str>> = report.samples.iter().map(|s| s.key.as_deref()).collect();
    keys.dedup();
    let mut out = Vec::new();
    for key in keys {
        let columns: Vec<(&str, &[f64])> = report
            .samples
            .iter()
            .filter(|s: &&Samples| s.per_request && s.key.as_deref() == key)
            .map(|s| (s.metric.as_str(), s.values.as_slice()))
            .collect();
        let Some((good, n)) = slo.meeting(&columns) else { continue };
        if n == 0 {
            continue;
        }
        let share = good as f64 / n as f64 * 100.0;
        out.push(found("goodput_pct".into(), share, "%", key));
        let throughput = report
            .measurements
            .iter()
            .find(|m| m.metric == "request_throughput" && m.key.as_deref() == key)
            .map(|m| m.value);
        if let Some(rps) = throughput {
            out.push(found("goodput_req_s".into(), rps * share / 100.0, "req/s", key));
        }
    }
    out
}

/// The points of a report's rate sweep: each key's achieved request rate and
/// its measurements (a report of one benchmark is a sweep of one point).
pub fn rate_points(measurements: &[Measurement]) -> Vec<RatePoint> {
    let mut keys: Vec<Option<&str>> = measurements.iter().map(|m| m.key.as_deref()).collect();
    keys.sort_unstable();
    keys.dedup();
    keys.into_iter()
        .filter_map(|key| {
            let of_key: Vec<&Measurement> = measurements.iter().filter(|m| m.key.as_deref() == key).collect();
            let rate = of_key.iter().find(|m| m.metric == "request_throughput")?.value;
            Some(RatePoint { rate, values: of_key.iter().map(|m| (m.metric.clone(), m.value)).collect() })
        })
        .collect()
}

/// The highest achieved request rate whose percentiles meet the SLO, of a
/// report that swept rates (two points or more: one benchmark at one rate has
/// no knee to speak of; a sweep over runs gets its knees on the rate chart).
/// `from_samples`: the percentiles `derive` computed from its samples, which
/// count as the tool's own.
fn knee_of(report: &Report, from_samples: &[Measurement], slo: &Slo) -> Option<Measurement> {
    let mut all = report.measurements.clone();
    all.extend(from_samples.iter().cloned());
    let points = rate_points(&all);
    if points.len() < 2 {
        return None;
    }
    knee(&points, slo).map(|rate| found("knee_request_rate".into(), rate, "req/s", None))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The knee `derive` finds for one report.
    fn knee_of(report: &Report, slo: &Slo) -> Option<Measurement> {
        let (found, _) = derive(std::slice::from_ref(report), Some(slo));
        found.into_iter().find(|m| m.metric == "knee_request_rate")
    }

    fn samples(metric: &str, key: Option<&str>, values: &[f64]) -> Samples {
        Samples {
            metric: metric.into(),
            unit: "ms".into(),
            key: key.map(String::from),
            values: values.to_vec(),
            per_request: true,
        }
    }

    #[test]
    fn goodput_is_a_hand_count() {
        let mut report = Report::new(domain::runs::ReportFormat::VllmSaveResult);
        // Requests 1 and 3 meet TTFT ≤ 200 and TPOT ≤ 50; 2 misses TTFT, 4 misses TPOT.
        report.samples.push(samples("ttft_ms", None, &[120.0, 250.0, 199.0, 80.0]));
        report.samples.push(samples("tpot_ms", None, &[30.0, 20.0, 50.0, 51.0]));
        report.add("request_throughput", 8.0, "req/s", None);
        let slo = Slo::parse("TTFT <= 200 ms and TPOT <= 50 ms").unwrap();
        let (found, stored) = derive(&[report], Some(&slo));
        let value = |metric: &str| found.iter().find(|m| m.metric == metric).map(|m| m.value);
        assert_eq!(value("goodput_pct"), Some(50.0));
        assert_eq!(value("goodput_req_s"), Some(4.0));
        // numpy.percentile([80, 120, 199, 250], 99) = 248.47
        assert!((value("ttft_ms_p99").unwrap() - 248.47).abs() < 1e-9);
        assert_eq!(stored.len(), 2);
        assert_eq!(stored[0].3, 4);
    }

    /// GuideLLM's fixture is one synchronous benchmark of a sweep (the others
    /// were not kept): one rate, so no knee, though it meets the SLO (a run
    /// that did not sweep rates says nothing about where latency turns).
    #[test]
    fn one_rate_has_no_knee() {
        let bytes = std::fs::read(crate::fixtures::dir().join("reports/guidellm/benchmarks_stripped.json")).unwrap();
        let report = super::super::read("x", &bytes[..]).expect("recognised").expect("read");
        let doc: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        let metrics = &doc["benchmarks"][0]["metrics"];
        let rate = metrics["requests_per_second"]["successful"]["mean"].as_f64().unwrap();
        let p99 = metrics["time_to_first_token_ms"]["successful"]["percentiles"]["p99"].as_f64().unwrap();
        assert!(p99 < 25.0);
        let (found, _) = derive(std::slice::from_ref(&report), Some(&Slo::parse("TTFT <= 25 ms").unwrap()));
        assert!(found.iter().any(|m| m.metric == "goodput_pct" || m.metric == "ttft_ms_p99"), "{found:?}");
        assert!(rate > 0.0 && knee_of(&report, &Slo::parse("TTFT <= 25 ms").unwrap()).is_none(), "p99 is {p99}");
    }

    /// The SGLang fixture is a rate sweep whose points have only medians, so an
    /// SLO at p50 has a knee and one at p99 has none (no p99 to hold it to).
    #[test]
    fn the_knee_of_a_real_sweep() {
        let bytes = crate::fixtures::read("reports/sglang-bench-serving/llama_3_3_70b_online_output.jsonl");
        let report = super::super::read("x", bytes.as_bytes()).expect("recognised").expect("read");
        // SGLang's old field set has no request_throughput: completed / duration stands in.
        let with_rates = report;
        let slo = Slo::parse("TTFT <= 100 ms at p50").unwrap();
        let knee = knee_of(&with_rates, &slo).expect("a knee");
        // By hand from the file: the medians of TTFT per rate, and completed / duration.
        let mut by_hand: Option<f64> = None;
        for line in bytes.lines().filter(|l| !l.trim().is_empty()) {
            let v: serde_json::Value = super::super::json::parse(line.as_bytes()).unwrap();
            if v["median_ttft_ms"].as_f64().unwrap() <= 100.0 {
                let rate = v["completed"].as_f64().unwrap() / v["duration"].as_f64().unwrap();
                by_hand = Some(by_hand.map_or(rate, |b: f64| b.max(rate)));
            }
        }
        assert_eq!(Some(knee.value), by_hand);
        assert!(knee_of(&with_rates, &Slo::parse("TTFT <= 100 ms").unwrap()).is_none());
    }
}
