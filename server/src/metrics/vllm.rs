//! `vllm bench throughput` and `vllm bench latency` summary lines. They are found
//! anywhere in a line, so log prefixes (`INFO 03-22 18:40:47 [...]`) and quoting
//! around them do not matter.

use super::found::{measurement, number};
use domain::metrics::Measurement;
use regex::Regex;
use std::sync::LazyLock;

/// `Throughput: 4.05 requests/s, 1234.56 total tokens/s, 617.28 output tokens/s`,
/// or the older `Throughput: 4.05 requests/s, 1234.56 tokens/s`.
static THROUGHPUT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)throughput:\s*(?P<req>[\d.,]+)\s*requests/s,\s*(?P<total>[\d.,]+)\s*(?:total\s+)?tokens/s(?:,\s*(?P<out>[\d.,]+)\s*output\s+tokens/s)?",
    )
    .expect("valid regex")
});
static AVG_LATENCY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)avg latency:\s*(?P<v>[\d.eE+-]+)\s*seconds").expect("valid regex"));
static PERCENTILE_LATENCY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?P<p>\d+(?:\.\d+)?)%\s*percentile latency:\s*(?P<v>[\d.eE+-]+)\s*seconds").expect("valid regex")
});

pub fn throughput(text: &str) -> Vec<Measurement> {
    let mut found = Vec::new();
    for c in THROUGHPUT.captures_iter(text) {
        const X: &str = "vllm-bench-throughput";
        if let Some(v) = number(&c["req"]) {
            found.push(measurement("request_throughput", v, "req/s", X));
        }
        if let Some(v) = number(&c["total"]) {
            found.push(measurement("total_throughput", v, "tok/s", X));
        }
        if let Some(v) = c.name("out").and_then(|m| number(m.as_str())) {
            found.push(measurement("output_throughput", v, "tok/s", X));
        }
    }
    found
}

pub fn latency(text: &str) -> Vec<Measurement> {
    const X: &str = "vllm-bench-latency";
    let mut found = Vec::new();
    for c in AVG_LATENCY.captures_iter(text) {
        if let Some(v) = number(&c["v"]) {
            found.push(measurement("latency_s_avg", v, "s", X));
        }
    }
    for c in PERCENTILE_LATENCY.captures_iter(text) {
        if let Some(v) = number(&c["v"]) {
            found.push(measurement(format!("latency_s_p{}", c["p"].replace('.', "_")), v, "s", X));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(found: Vec<Measurement>) -> Vec<(String, f64)> {
        found.into_iter().map(|m| (m.metric, m.value)).collect()
    }

    #[test]
    fn throughput_new_old_prefixed_and_quoted() {
        let new = "INFO 11-30 05:57:02 [throughput.py:512] Throughput: 4.05 requests/s, 1234.56 total tokens/s, 617.28 output tokens/s";
        assert_eq!(
            pairs(throughput(new)),
            [
                ("request_throughput".into(), 4.05),
                ("total_throughput".into(), 1234.56),
                ("output_throughput".into(), 617.28)
            ]
        );
        let old = "\"Throughput: 12.50 requests/s, 6400.00 tokens/s\"";
        assert_eq!(pairs(throughput(old)), [("request_throughput".into(), 12.5), ("total_throughput".into(), 6400.0)]);
        assert!(throughput("Throughput: fast").is_empty());
    }

    #[test]
    fn latency_average_and_percentiles() {
        let text = "Avg latency: 1.9371638283319772 seconds\n\
                    10% percentile latency: 1.89 seconds\n\
                    50% percentile latency: 1.93 seconds\n\
                    99% percentile latency: 2.07 seconds\n";
        assert_eq!(
            pairs(latency(text)),
            [
                ("latency_s_avg".into(), 1.9371638283319772),
                ("latency_s_p10".into(), 1.89),
                ("latency_s_p50".into(), 1.93),
                ("latency_s_p99".into(), 2.07)
            ]
        );
    }
}
