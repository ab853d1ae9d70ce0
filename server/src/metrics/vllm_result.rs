//! vLLM's result files: `vllm bench serve --save-result` writes one JSON
//! object, `--append-result` one per line (JSONL). Recognised by what is in
//! them (a `backend` and vLLM's summary fields), not by their name. Summary
//! fields are in ms (`mean_ttft_ms`), throughputs per second; the names are
//! those the console block gives (`ttft_ms_mean`, `output_throughput`), so a
//! run's JSON and its printout are the same measurements. With several
//! results in one file, each is keyed by its request rate (or its place).

use super::found::measurement;
use app::metrics::Measurement;
use serde_json::{Map, Value};

const EXTRACTOR: &str = "vllm-save-result";

/// The measurements of a vLLM result file; `None` if `text` is not one.
pub fn read(text: &str) -> Option<Vec<Measurement>> {
    let trimmed = text.trim_start();
    if !trimmed.starts_with('{') {
        return None;
    }
    let objects: Vec<Map<String, Value>> = match serde_json::from_str::<Value>(trimmed) {
        Ok(Value::Object(object)) => vec![object],
        Ok(_) => return None,
        // JSONL: one object per line.
        Err(_) => trimmed
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| match serde_json::from_str::<Value>(l) {
                Ok(Value::Object(object)) => Some(object),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()?,
    };
    if objects.is_empty() || !objects.iter().all(is_vllm_result) {
        return None;
    }
    let several = objects.len() > 1;
    let mut found = Vec::new();
    for (i, object) in objects.iter().enumerate() {
        let key = several.then(|| match object.get("request_rate") {
            Some(Value::Number(rate)) => format!("request_rate={rate}"),
            Some(Value::String(rate)) => format!("request_rate={rate}"),
            _ => format!("result={}", i + 1),
        });
        for (field, value) in object {
            let Some(value) = value.as_f64().filter(|v| v.is_finite()) else { continue };
            let Some((metric, unit)) = name(field) else { continue };
            let mut m = measurement(metric, value, unit, EXTRACTOR);
            m.key = key.clone();
            found.push(m);
        }
    }
    Some(found)
}

fn is_vllm_result(object: &Map<String, Value>) -> bool {
    object.contains_key("backend")
        && ["request_throughput", "output_throughput", "mean_ttft_ms", "completed"]
            .iter()
            .any(|k| object.contains_key(*k))
}

/// A field's metric name and unit, as the console block names it.
fn name(field: &str) -> Option<(String, &'static str)> {
    let field = field.trim_end_matches(':');
    let known = match field {
        "completed" => Some(("successful_requests", "requests")),
        "failed" => Some(("failed_requests", "requests")),
        "duration" => Some(("duration_s", "s")),
        "total_input_tokens" => Some(("total_input_tokens", "tokens")),
        "total_output_tokens" => Some(("total_output_tokens", "tokens")),
        "request_throughput" => Some(("request_throughput", "req/s")),
        "request_goodput" => Some(("request_goodput", "req/s")),
        "output_throughput" => Some(("output_throughput", "tok/s")),
        "total_token_throughput" => Some(("total_throughput", "tok/s")),
        "max_output_tokens_per_s" => Some(("peak_output_throughput", "tok/s")),
        "max_concurrent_requests" => Some(("peak_concurrent_requests", "requests")),
        _ => None,
    };
    if let Some((metric, unit)) = known {
        return Some((metric.to_string(), unit));
    }
    // `{stat}_{what}_ms`: mean_ttft_ms, p99_itl_ms, p99.9_tpot_ms, median_e2el_ms.
    let rest = field.strip_suffix("_ms")?;
    let (stat, what) = rest.split_once('_')?;
    let stat_ok = matches!(stat, "mean" | "median" | "std" | "min" | "max")
        || (stat.starts_with('p') && stat[1..].chars().all(|c| c.is_ascii_digit() || c == '.') && stat.len() > 1);
    if !stat_ok || !matches!(what, "ttft" | "tpot" | "itl" | "e2el") {
        return None;
    }
    Some((format!("{what}_ms_{}", stat.replace('.', "_")), "ms"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of<'a>(found: &'a [Measurement], metric: &str, key: Option<&str>) -> Option<&'a Measurement> {
        found.iter().find(|m| m.metric == metric && m.key.as_deref() == key)
    }

    #[test]
    fn the_fixtures_results_are_read_per_request_rate() {
        let text = crate::fixtures::read("reports/vllm-bench-serve/nerdalert_results.json");
        let found = read(&text).expect("a vLLM result file");
        // The first line: request_rate 10.0, numbers as the file has them.
        let first = Some("request_rate=10.0");
        assert_eq!(of(&found, "output_throughput", first).map(|m| m.value), Some(2258.212337970085));
        assert_eq!(
            of(&found, "ttft_ms_p99", first).map(|m| (m.value, m.unit.as_str())),
            Some((98.69780922984769, "ms"))
        );
        assert_eq!(of(&found, "successful_requests", first).map(|m| m.value), Some(300.0));
        // `"request_goodput:": null` is no measurement.
        assert!(of(&found, "request_goodput", first).is_none());
        let rates: std::collections::BTreeSet<&str> = found.iter().filter_map(|m| m.key.as_deref()).collect();
        assert!(rates.len() >= 2, "{rates:?}");
    }

    #[test]
    fn a_single_result_has_no_key_and_other_json_is_not_one() {
        let one = r#"{"backend": "vllm", "output_throughput": 57.5, "mean_ttft_ms": 120.0, "p99.9_itl_ms": 3.5}"#;
        let found = read(one).expect("one result");
        assert_eq!(of(&found, "output_throughput", None).map(|m| m.value), Some(57.5));
        assert_eq!(of(&found, "itl_ms_p99_9", None).map(|m| m.value), Some(3.5));
        assert!(read(r#"{"traceEvents": []}"#).is_none());
        assert!(read("not json").is_none());
        assert!(read(r#"{"backend": "vllm", "output_throughput": "#).is_none(), "truncated");
    }
}
