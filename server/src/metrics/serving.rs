//! The "Serving Benchmark Result" block of `vllm bench serve` (and the older
//! `benchmark_serving.py`) and of SGLang's `bench_serving`: `Label (unit): value`
//! lines between `=== Serving Benchmark Result ===` and the closing `=====` rule.

use super::found::{measurement, number, slug};
use domain::metrics::Measurement;
use regex::Regex;
use std::sync::LazyLock;

static LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(?P<label>[A-Za-z][^:]*?)\s*(?:\((?P<unit>[^)]*)\))?\s*:\s*(?P<value>\S+)\s*$")
        .expect("valid regex")
});
/// `Mean TTFT`, `P99 ITL`, `Median E2E Latency`, `P99.9 TPOT`, `Max ITL`.
static STAT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(?P<stat>mean|median|std|min|max|p\d+(?:\.\d+)?)\s+(?P<what>.+)$").expect("valid regex")
});

/// The metric name and unit of a label, by its words.
fn name(label: &str, unit: Option<&str>) -> (String, String) {
    let lower = label.to_lowercase().replace("reqeuest", "request");
    let unit = unit.map(str::trim).unwrap_or("");
    let known = match lower.as_str() {
        "successful requests" => Some(("successful_requests", "requests")),
        "failed requests" => Some(("failed_requests", "requests")),
        "benchmark duration" => Some(("duration_s", "s")),
        "total input tokens" => Some(("total_input_tokens", "tokens")),
        "total generated tokens" => Some(("total_output_tokens", "tokens")),
        "total generated tokens (retokenized)" => Some(("total_output_tokens_retokenized", "tokens")),
        "request throughput" => Some(("request_throughput", "req/s")),
        "request goodput" => Some(("request_goodput", "req/s")),
        "output token throughput" => Some(("output_throughput", "tok/s")),
        "peak output token throughput" => Some(("peak_output_throughput", "tok/s")),
        "total token throughput" => Some(("total_throughput", "tok/s")),
        "input token throughput" => Some(("input_throughput", "tok/s")),
        "maximum request concurrency" | "max request concurrency" => Some(("max_concurrency", "requests")),
        "peak concurrent requests" => Some(("peak_concurrent_requests", "requests")),
        "concurrency" => Some(("concurrency", "requests")),
        "traffic request rate" => Some(("request_rate", "req/s")),
        _ => None,
    };
    if let Some((metric, unit)) = known {
        return (metric.to_string(), unit.to_string());
    }
    if let Some(c) = STAT.captures(&lower) {
        let stat = slug(&c["stat"].replace('.', "_"));
        let what = match slug(&c["what"]).as_str() {
            "e2e_latency" | "e2el" => "e2el".to_string(),
            other => other.to_string(),
        };
        let unit = if unit.is_empty() { "ms" } else { unit };
        return (format!("{what}_{}_{stat}", slug(unit)), unit.to_string());
    }
    (slug(&lower), unit.to_string())
}

pub fn extract(text: &str) -> Vec<Measurement> {
    let mut found = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if !line.to_lowercase().contains("serving benchmark result") {
            continue;
        }
        let mut block = Vec::new();
        let mut extractor = "vllm-bench-serve";
        for line in lines.by_ref() {
            let trimmed = line.trim();
            if trimmed.len() >= 10 && trimmed.chars().all(|c| c == '=') {
                break;
            }
            let Some(c) = LINE.captures(line) else { continue };
            let label = c["label"].trim();
            if label.eq_ignore_ascii_case("backend") {
                if c["value"].to_lowercase().contains("sglang") {
                    extractor = "sglang-bench-serving";
                }
                continue;
            }
            // Old SGLang prints the label in the unit slot: `Total generated tokens (retokenized):`.
            let unit = c.name("unit").map(|u| u.as_str());
            let (label, unit) = match unit {
                Some(u) if !u.contains('/') && !matches!(u, "ms" | "s") => (format!("{label} ({u})"), None),
                _ => (label.to_string(), unit),
            };
            let Some(value) = number(&c["value"]) else { continue };
            block.push((label, unit.map(str::to_string), value));
        }
        for (label, unit, value) in block {
            let (metric, unit) = name(&label, unit.as_deref());
            if !metric.is_empty() {
                found.push(measurement(metric, value, &unit, extractor));
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get<'a>(found: &'a [Measurement], metric: &str) -> &'a Measurement {
        found.iter().find(|m| m.metric == metric).unwrap_or_else(|| panic!("no {metric} in {found:#?}"))
    }

    #[test]
    fn the_real_vllm_bench_serve_output() {
        let found = extract(&crate::fixtures::read("bench-outputs/vllm_bench_serve_pr36559.txt"));
        let expect = [
            ("output_throughput", 1049.39, "tok/s"),
            ("total_throughput", 1847.88, "tok/s"),
            ("peak_output_throughput", 1297.00, "tok/s"),
            ("request_throughput", 3.50, "req/s"),
            ("successful_requests", 960.0, "requests"),
            ("failed_requests", 0.0, "requests"),
            ("max_concurrency", 16.0, "requests"),
            ("duration_s", 274.44, "s"),
            ("ttft_ms_mean", 233.84, "ms"),
            ("ttft_ms_median", 229.53, "ms"),
            ("ttft_ms_p99", 375.31, "ms"),
            ("tpot_ms_mean", 14.51, "ms"),
            ("tpot_ms_p99", 16.22, "ms"),
            ("itl_ms_median", 14.56, "ms"),
            ("itl_ms_p99", 17.07, "ms"),
        ];
        for (metric, value, unit) in expect {
            let m = get(&found, metric);
            assert_eq!((m.value, m.unit.as_str(), m.extractor.as_str()), (value, unit, "vllm-bench-serve"), "{metric}");
        }
        assert_eq!(found.len(), 20, "{found:#?}");
    }

    #[test]
    fn older_vllm_spells_total_token_throughput_and_has_input_and_p90() {
        // benchmark_serving.py, vLLM 0.6: capital T in "Token", an input throughput
        // line, Std and P90 lines, no trailing rule spaces.
        let text = "============ Serving Benchmark Result ============\n\
            Successful requests:                     1000\n\
            Benchmark duration (s):                  60.12\n\
            Total input tokens:                      215196\n\
            Total generated tokens:                  198343\n\
            Request throughput (req/s):              16.63\n\
            Input token throughput (tok/s):          3579.33\n\
            Output token throughput (tok/s):         3299.12\n\
            Total Token throughput (tok/s):          6878.45\n\
            ---------------Time to First Token----------------\n\
            Mean TTFT (ms):                          1209.82\n\
            Std TTFT (ms):                           801.10\n\
            P90 TTFT (ms):                           2290.01\n\
            P99.9 TTFT (ms):                         3388.00\n\
            ----------------End-to-end Latency----------------\n\
            Mean E2EL (ms):                          25123.40\n\
            ==================================================\n\
            Throughput line after the block: 1 (ms): 2\n";
        let found = extract(text);
        assert_eq!(get(&found, "total_throughput").value, 6878.45);
        assert_eq!(get(&found, "input_throughput").value, 3579.33);
        assert_eq!(get(&found, "ttft_ms_std").value, 801.10);
        assert_eq!(get(&found, "ttft_ms_p90").value, 2290.01);
        assert_eq!(get(&found, "ttft_ms_p99_9").value, 3388.0);
        assert_eq!(get(&found, "e2el_ms_mean").value, 25123.40);
        assert_eq!(found.len(), 13, "nothing after the closing rule: {found:#?}");
    }

    #[test]
    fn sglang_bench_serving_old_and_new() {
        let text = "\n============ Serving Benchmark Result ============\n\
            Backend:                                 sglang    \n\
            Traffic request rate:                    inf       \n\
            Max reqeuest concurrency:                64        \n\
            Successful requests:                     500       \n\
            Benchmark duration (s):                  41.06     \n\
            Total input tokens:                      103456    \n\
            Total generated tokens:                  98765     \n\
            Total generated tokens (retokenized):    98700     \n\
            Request throughput (req/s):              12.18     \n\
            Input token throughput (tok/s):          2519.62   \n\
            Output token throughput (tok/s):         2405.38   \n\
            Total token throughput (tok/s):          4925.00   \n\
            Concurrency:                             61.87     \n\
            ----------------End-to-End Latency----------------\n\
            Mean E2E Latency (ms):                   5079.36   \n\
            Median E2E Latency (ms):                 4890.12   \n\
            ---------------Time to First Token----------------\n\
            Mean TTFT (ms):                          310.25    \n\
            P99 TTFT (ms):                           1201.00   \n\
            ---------------Inter-Token Latency----------------\n\
            Mean ITL (ms):                           24.31     \n\
            P95 ITL (ms):                            40.01     \n\
            Max ITL (ms):                            512.77    \n\
            ==================================================\n";
        let found = extract(text);
        assert!(found.iter().all(|m| m.extractor == "sglang-bench-serving"), "{found:#?}");
        assert_eq!(get(&found, "max_concurrency").value, 64.0, "misspelled reqeuest");
        assert_eq!(get(&found, "output_throughput").value, 2405.38);
        assert_eq!(get(&found, "total_output_tokens_retokenized").value, 98700.0);
        assert_eq!(get(&found, "concurrency").value, 61.87);
        assert_eq!(get(&found, "e2el_ms_mean").value, 5079.36);
        assert_eq!(get(&found, "itl_ms_p95").value, 40.01);
        assert_eq!(get(&found, "itl_ms_max").value, 512.77);
        assert!(found.iter().all(|m| m.metric != "request_rate"), "inf is not a number");
    }
}
