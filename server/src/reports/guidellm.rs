//! GuideLLM reports (`guidellm benchmark --output-path X.json|.yaml`): one
//! entry per benchmark of a sweep, each with its strategy (synchronous,
//! throughput, constant or poisson at a rate, concurrent at a number of
//! streams) and `metrics.<name>.{successful,errored,incomplete,total}` holding
//! mean, median and `percentiles{p001…p999}`. The legacy schema keeps the
//! strategy under `args`, the current one (`metadata.version` 2) under
//! `config`; both are read. Units: `request_latency` in **seconds**, token
//! latencies in ms. Per-request records (`requests.successful[]`) become samples.

use super::error::{ReadError, ReadResult};
use super::report::Report;
use domain::runs::ReportFormat;
use serde_json::{Map, Value};

const FORMAT: ReportFormat = ReportFormat::Guidellm;

/// GuideLLM's metric, Sleuth's name, and the factor to its unit.
const METRICS: [(&str, &str, &str, f64); 9] = [
    ("time_to_first_token_ms", "ttft_ms", "ms", 1.0),
    ("time_per_output_token_ms", "tpot_ms", "ms", 1.0),
    ("inter_token_latency_ms", "itl_ms", "ms", 1.0),
    ("request_latency", "e2el_ms", "ms", 1e3),
    ("requests_per_second", "request_throughput", "req/s", 1.0),
    ("output_tokens_per_second", "output_throughput", "tok/s", 1.0),
    ("tokens_per_second", "total_throughput", "tok/s", 1.0),
    ("request_concurrency", "concurrency", "requests", 1.0),
    ("output_token_count", "output_tokens", "tokens", 1.0),
];

/// Metrics that are distributions over requests (their percentiles are kept);
/// the others are rates and counts, of which the mean is the measurement.
fn is_latency(name: &str) -> bool {
    name.ends_with("_ms") && name != "output_tokens"
}

/// `p001` → 0.1, `p01` → 1, `p999` → 99.9, `p50` → 50.
fn percentile_of(key: &str) -> Option<f64> {
    let digits = key.strip_prefix('p')?;
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let text = if digits.len() > 2 { format!("{}.{}", &digits[..2], &digits[2..]) } else { digits.to_string() };
    text.parse().ok().filter(|p| *p > 0.0 && *p < 100.0)
}

pub fn is_yaml(head: &str) -> bool {
    let head = head.trim_start_matches("---").trim_start();
    head.starts_with("benchmarks:") || head.starts_with("metadata:") && head.contains("\nbenchmarks:")
}

/// A benchmark's label: `synchronous`, `throughput`, `constant@4`, `concurrent@16`.
fn strategy_of(benchmark: &Map<String, Value>, index: usize) -> String {
    let strategy = ["args", "config"]
        .iter()
        .find_map(|at| benchmark.get(*at).and_then(|v| v.get("strategy")))
        .and_then(Value::as_object);
    let Some(strategy) = strategy else { return format!("benchmark={}", index + 1) };
    let kind = strategy.get("type_").and_then(Value::as_str).unwrap_or("benchmark");
    let kind: String = kind.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '_').take(40).collect();
    let at = ["rate", "streams", "max_concurrency"]
        .iter()
        .find_map(|f| strategy.get(*f).and_then(super::json::rate_text).filter(|r| r != "-1"));
    match at {
        Some(at) => format!("{kind}@{at}"),
        None => kind,
    }
}

pub fn from_value(value: &Value) -> Option<ReadResult<Report>> {
    let benchmarks = value.get("benchmarks")?.as_array()?;
    let looks_like =
        benchmarks.iter().any(|b| b.get("metrics").is_some_and(|m| m.get("requests_per_second").is_some()));
    if !looks_like {
        return None;
    }
    let mut report = Report::new(FORMAT);
    if let Some(version) = value.pointer("/metadata/version") {
        report.metadata.insert("guidellm_schema".into(), version.clone());
    }
    let several = benchmarks.len() > 1;
    for (i, benchmark) in benchmarks.iter().enumerate() {
        let Some(benchmark) = benchmark.as_object() else {
            report.notes.push(format!("benchmark {} is not an object; skipped", i + 1));
            continue;
        };
        let label = strategy_of(benchmark, i);
        // Every benchmark is keyed when there are several; the strategy is
        // what a sweep's chart names it by.
        let key = several.then(|| label.clone());
        let key = key.as_deref();
        let Some(metrics) = benchmark.get("metrics").and_then(Value::as_object) else { continue };
        for (theirs, ours, unit, factor) in METRICS {
            let Some(stats) = metrics.get(theirs).and_then(|m| m.get("successful")).and_then(Value::as_object) else {
                continue;
            };
            let number = |f: &str| stats.get(f).and_then(Value::as_f64).map(|v| v * factor);
            if is_latency(ours) {
                for (stat, suffix) in [("mean", "mean"), ("median", "median"), ("std_dev", "std"), ("max", "max")] {
                    if let Some(v) = number(stat) {
                        report.add(format!("{ours}_{suffix}"), v, unit, key);
                    }
                }
                if let Some(Value::Object(percentiles)) = stats.get("percentiles") {
                    for (p, v) in percentiles {
                        if let (Some(p), Some(v)) = (percentile_of(p), v.as_f64()) {
                            report.add(domain::distributions::percentile_name(ours, p), v * factor, unit, key);
                        }
                    }
                }
            } else if let Some(v) = number("mean") {
                report.add(ours, v, unit, key);
            }
        }
        if let Some(totals) = benchmark.get("request_totals").or_else(|| benchmark.get("request_totals_")) {
            for (field, metric) in [
                ("successful", "successful_requests"),
                ("errored", "failed_requests"),
                ("incomplete", "incomplete_requests"),
            ] {
                if let Some(v) = totals.get(field).and_then(Value::as_f64) {
                    report.add(metric, v, "requests", key);
                }
            }
        }
        if let Some(Value::Array(requests)) = benchmark.get("requests").and_then(|r| r.get("successful")) {
            for (theirs, ours, unit, factor) in METRICS.iter().filter(|m| is_latency(m.1)) {
                let values: Vec<f64> =
                    requests.iter().filter_map(|r| r.get(*theirs)?.as_f64()).map(|v| v * factor).collect();
                // A column is per request only if every request has it.
                let whole = values.len() == requests.len();
                report.samples(ours, unit, key, values, whole);
            }
        }
    }
    Some(Ok(report))
}

/// A YAML report as the same JSON document.
pub fn yaml_to_json(text: &str) -> ReadResult<Value> {
    let docs = yaml_rust2::YamlLoader::load_from_str(text)?;
    let doc = docs.into_iter().next().ok_or(ReadError::Missing("an empty YAML document"))?;
    Ok(convert(doc, 0))
}

fn convert(yaml: yaml_rust2::Yaml, depth: usize) -> Value {
    use yaml_rust2::Yaml;
    if depth > 64 {
        return Value::Null;
    }
    match yaml {
        Yaml::Real(text) => {
            text.parse::<f64>().ok().and_then(serde_json::Number::from_f64).map_or(Value::Null, Value::Number)
        }
        Yaml::Integer(i) => Value::from(i),
        Yaml::String(s) => Value::String(s),
        Yaml::Boolean(b) => Value::Bool(b),
        Yaml::Array(items) => Value::Array(items.into_iter().map(|y| convert(y, depth + 1)).collect()),
        Yaml::Hash(map) => Value::Object(
            map.into_iter()
                .filter_map(|(k, v)| {
                    let key = match k {
                        Yaml::String(s) => s,
                        Yaml::Integer(i) => i.to_string(),
                        Yaml::Real(r) => r,
                        _ => return None,
                    };
                    Some((key, convert(v, depth + 1)))
                })
                .collect(),
        ),
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(path: &str) -> Report {
        let bytes = std::fs::read(crate::fixtures::dir().join(path)).expect("fixture");
        super::super::read("x", &bytes[..]).expect("recognised").expect("read")
    }

    fn value(r: &Report, metric: &str) -> Option<f64> {
        r.measurements.iter().find(|m| m.metric == metric).map(|m| m.value)
    }

    /// The console table GuideLLM printed from this file
    /// (`benchmarks_stripped_output.txt`): Req Latency 0.64 / 0.64 / 0.69 s
    /// (mean, median, p99), TTFT 16.8 / 16.4 / 21.3 ms, ITL 4.9 / 4.9 / 5.3 ms,
    /// TPOT 4.9 / 4.9 / 5.2 ms, 1.55 req/s, 198.1 output tok/s.
    #[test]
    fn the_legacy_report_matches_guidellms_own_console_table() {
        for path in ["reports/guidellm/benchmarks_stripped.json", "reports/guidellm/benchmarks_stripped.yaml"] {
            let r = report(path);
            let near = |metric: &str, printed: f64, digits: i32| {
                let v = value(&r, metric).unwrap_or_else(|| panic!("{path}: no {metric}"));
                let scale = 10f64.powi(digits);
                assert_eq!((v * scale).round() / scale, printed, "{path}: {metric} = {v}");
            };
            near("e2el_ms_mean", 640.0, -1);
            near("e2el_ms_p99", 690.0, -1);
            near("ttft_ms_mean", 16.8, 1);
            near("ttft_ms_median", 16.4, 1);
            near("ttft_ms_p99", 21.3, 1);
            near("itl_ms_p99", 5.3, 1);
            near("tpot_ms_p99", 5.2, 1);
            near("request_throughput", 1.55, 2);
            near("output_throughput", 198.1, 1);
            assert_eq!(value(&r, "successful_requests"), Some(46.0));
            assert_eq!(value(&r, "incomplete_requests"), Some(1.0));
            // p999 is the 99.9th percentile, p001 the 0.1th.
            assert!(value(&r, "ttft_ms_p99_9").is_some() && value(&r, "ttft_ms_p0_1").is_some(), "{path}");
            let ttft = r.samples.iter().find(|s| s.metric == "ttft_ms").expect("per-request samples");
            // The fixture keeps one of its 46 request records (the rest were stripped).
            assert_eq!((ttft.values.len(), ttft.values[0]), (1, 21.281957626342773));
            assert!(ttft.per_request);
            let latency = r.samples.iter().find(|s| s.metric == "e2el_ms").expect("latency samples");
            assert!((latency.values[0] - 689.1846656799316).abs() < 1e-9, "seconds made ms");
        }
    }

    #[test]
    fn current_schema_benchmarks_are_keyed_by_strategy() {
        let stats = |mean: f64, p99: f64| serde_json::json!({"successful": {"mean": mean, "median": mean, "percentiles": {"p99": p99}}});
        let doc = serde_json::json!({
            "metadata": {"version": 2},
            "benchmarks": [
                {"config": {"strategy": {"type_": "constant", "rate": 2.0}},
                 "metrics": {"requests_per_second": stats(1.98, 2.0), "time_to_first_token_ms": stats(50.0, 80.0)}},
                {"config": {"strategy": {"type_": "concurrent", "streams": 16}},
                 "metrics": {"requests_per_second": stats(7.5, 8.0), "time_to_first_token_ms": stats(150.0, 400.0)}}
            ]
        });
        let r = from_value(&doc).expect("recognised").expect("read");
        let of = |metric: &str, key: &str| {
            r.measurements.iter().find(|m| m.metric == metric && m.key.as_deref() == Some(key)).map(|m| m.value)
        };
        assert_eq!(of("ttft_ms_p99", "constant@2"), Some(80.0));
        assert_eq!(of("request_throughput", "concurrent@16"), Some(7.5));
        assert_eq!(percentile_of("p001"), Some(0.1));
        assert_eq!(percentile_of("p05"), Some(5.0));
        assert_eq!(percentile_of("p999"), Some(99.9));
    }
}
