//! Latency against load: the investigation's rate sweeps on one chart.
//!
//! A sweep comes two ways: one run whose report holds several rates (GuideLLM,
//! SGLang's JSONL, vLLM's `--append-result`: measurements keyed by rate), or a
//! Sleuth sweep over a rate (`{rate}`, `--request-rate`), each run one point.
//! Either way a point is an achieved request rate (`request_throughput`) with
//! the p50 and p99 of a latency; each configuration is a line, and its knee is
//! the highest rate whose percentiles meet the investigation's SLO.

use domain::distributions::{RateChart, RateLineInfo, RatePoint, Slo, knee};
use domain::metrics::Measurement;
use domain::model::Step;

/// The latency drawn: the first of these any point has.
const LATENCIES: [&str; 3] = ["ttft_ms", "e2el_ms", "tpot_ms"];

/// A configuration's points.
struct Line {
    label: String,
    points: Vec<RatePoint>,
    /// While runs are gathered: each configuration's repeats.
    repeats: Vec<(String, Vec<RatePoint>)>,
}

fn value(values: &[(String, f64)], metric: &str) -> Option<f64> {
    values.iter().find(|(m, _)| m == metric).map(|(_, v)| *v)
}

/// The p50 of `base` (spelled `_p50` or `_median`) and its p99.
fn p50_p99(values: &[(String, f64)], base: &str) -> (Option<f64>, Option<f64>) {
    let p50 = value(values, &format!("{base}_p50")).or_else(|| value(values, &format!("{base}_median")));
    (p50, value(values, &format!("{base}_p99")))
}

fn point(measurements: &[&Measurement]) -> Option<RatePoint> {
    let rate = measurements.iter().find(|m| m.metric == "request_throughput")?.value;
    Some(RatePoint { rate, values: measurements.iter().map(|m| (m.metric.clone(), m.value)).collect() })
}

/// Lines from the runs of `steps`: per run with a keyed sweep, and per sweep
/// step's configuration without its rate.
fn lines(steps: &[Step]) -> Vec<Line> {
    let mut lines: Vec<Line> = Vec::new();
    for step in steps {
        let mut by_config: Vec<Line> = Vec::new();
        for run in step.runs.iter().filter(|r| !r.warmup) {
            let mut keys: Vec<&str> = run.measurements.iter().filter_map(|m| m.key.as_deref()).collect();
            keys.sort_unstable();
            keys.dedup();
            let keyed: Vec<RatePoint> = keys
                .iter()
                .filter_map(|key| {
                    point(&run.measurements.iter().filter(|m| m.key.as_deref() == Some(*key)).collect::<Vec<_>>())
                })
                .collect();
            if keyed.len() > 1 {
                lines.push(Line {
                    label: format!("#{} run {}", step.position, run.id),
                    points: keyed,
                    repeats: Vec::new(),
                });
                continue;
            }
            let Some(single) = point(&run.measurements.iter().filter(|m| m.key.is_none()).collect::<Vec<_>>()) else {
                continue;
            };
            // The configuration without what sets the load.
            let rest: domain::sweeps::Config = run
                .config
                .clone()
                .unwrap_or_default()
                .into_iter()
                .filter(|(k, _)| {
                    !k.to_ascii_lowercase().contains("rate") && !k.to_ascii_lowercase().contains("concurren")
                })
                .collect();
            let label = if rest.is_empty() {
                format!("#{}", step.position)
            } else {
                format!("#{} {}", step.position, domain::sweeps::config_label(&rest))
            };
            let at = run.config.as_ref().map(domain::sweeps::config_label).unwrap_or_default();
            match by_config.iter_mut().find(|l| l.label == label) {
                Some(line) => line.add(at, single),
                None => {
                    let mut line = Line { label, points: Vec::new(), repeats: Vec::new() };
                    line.add(at, single);
                    by_config.push(line);
                }
            }
        }
        lines.extend(by_config.into_iter().map(Line::averaged));
    }
    // A line is a sweep when its points are at different rates.
    lines.retain(|l| {
        let mut rates: Vec<i64> = l.points.iter().map(|p| (p.rate * 1000.0).round() as i64).collect();
        rates.sort_unstable();
        rates.dedup();
        rates.len() > 1
    });
    lines
}

impl Line {
    /// A run's point; repeats of one configuration (`at`) become one point.
    fn add(&mut self, at: String, point: RatePoint) {
        match self.repeats.iter().position(|(a, _)| *a == at) {
            Some(i) => self.repeats[i].1.push(point),
            None => self.repeats.push((at, vec![point])),
        }
    }

    /// Each configuration's repeats as their mean rate and mean values.
    fn averaged(mut self) -> Line {
        for (_, repeats) in std::mem::take(&mut self.repeats) {
            let n = repeats.len() as f64;
            let rate = repeats.iter().map(|p| p.rate).sum::<f64>() / n;
            let mut values: Vec<(String, f64)> = Vec::new();
            for (metric, _) in &repeats[0].values {
                let of: Vec<f64> = repeats.iter().filter_map(|p| value(&p.values, metric)).collect();
                values.push((metric.clone(), of.iter().sum::<f64>() / of.len().max(1) as f64));
            }
            self.points.push(RatePoint { rate, values });
        }
        self
    }
}

/// The chart, when some configuration was measured at two rates or more.
pub fn chart(steps: &[Step], slo: Option<&Slo>) -> Option<RateChart> {
    let lines = lines(steps);
    let all = || lines.iter().flat_map(|l| l.points.iter());
    let metric = LATENCIES.iter().find(|base| all().any(|p| p50_p99(&p.values, base) != (None, None)))?;
    let mut drawn = Vec::new();
    let mut infos = Vec::new();
    let mut knees = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let knee = slo.and_then(|slo| knee(&line.points, slo));
        if let Some(k) = knee {
            knees.push((i, k));
        }
        infos.push(RateLineInfo { label: line.label.clone(), points: line.points.len(), knee });
        drawn.push(crate::charts::RateLine {
            label: &line.label,
            points: line
                .points
                .iter()
                .map(|p| {
                    let (p50, p99) = p50_p99(&p.values, metric);
                    (p.rate, p50, p99)
                })
                .collect(),
        });
    }
    let bound = slo.and_then(|s| s.bounds.iter().find(|b| b.metric == *metric)).map(|b| b.at_most);
    let svg = crate::charts::rates(metric, "ms", &drawn, bound, &knees)
        .inspect_err(|e| tracing::error!("the rate chart: {e}"))
        .ok()?;
    Some(RateChart { metric: metric.to_string(), svg, lines: infos })
}
