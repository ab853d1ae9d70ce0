//! What a run's throughput costs: money per million generated tokens, from
//! its host's price per hour, and generated tokens per joule, from its GPUs'
//! power while it ran (a leaf: both follow from measurements the run has).

use domain::metrics::Measurement;

pub const EXTRACTOR: &str = "cost";

/// Tokens-per-second measurements that are not generated tokens.
const NOT_GENERATED: [&str; 3] = ["input_throughput", "total_throughput", "peak_output_throughput"];

/// The run's rate of generated tokens, per key: `output_throughput` (serving
/// benchmarks) where it has one, else any other tokens-per-second measurement
/// of generated tokens (`llama-bench`'s, an extractor's `decode_throughput`).
/// One value per key: the first, when two readers found the same.
fn generation_rates(found: &[Measurement]) -> Vec<(Option<&str>, f64)> {
    let tok_s = |m: &&Measurement| m.unit == "tok/s" && m.value.is_finite() && m.value > 0.0;
    let serving: Vec<&Measurement> = found.iter().filter(tok_s).filter(|m| m.metric == "output_throughput").collect();
    let chosen: Vec<&Measurement> = if serving.is_empty() {
        found.iter().filter(tok_s).filter(|m| !NOT_GENERATED.contains(&m.metric.as_str())).collect()
    } else {
        serving
    };
    let mut rates: Vec<(Option<&str>, f64)> = Vec::new();
    for m in chosen {
        if !rates.iter().any(|(key, _)| *key == m.key.as_deref()) {
            rates.push((m.key.as_deref(), m.value));
        }
    }
    rates
}

/// The GPUs' summed mean power while the run ran (telemetry's per-GPU means).
fn board_watts(found: &[Measurement]) -> Option<f64> {
    let per_gpu = found.iter().filter(|m| {
        m.metric == "power_w_mean"
            && m.extractor == crate::telemetry::summary::EXTRACTOR
            && m.key.as_deref().is_some_and(|k| k.starts_with("gpu "))
    });
    let watts: f64 = per_gpu.map(|m| m.value).sum();
    (watts > 0.0).then_some(watts)
}

fn rounded(value: f64) -> f64 {
    // Six significant digits: enough for a price, and stable across runs of the arithmetic.
    if value == 0.0 {
        return 0.0;
    }
    let scale = 10f64.powi(5 - value.abs().log10().floor() as i32);
    (value * scale).round() / scale
}

/// `cost_per_mtok` (price / (tok/s × 3600) × 10⁶, in the price's currency)
/// for a host with a price, and `tokens_per_joule` for a run with GPU power.
pub fn of_run(found: &[Measurement], price_per_hour: Option<f64>) -> Vec<Measurement> {
    let watts = board_watts(found);
    let mut out = Vec::new();
    for (key, rate) in generation_rates(found) {
        let with = |metric: &str, value: f64, unit: &str| Measurement {
            key: key.map(str::to_string),
            ..super::measurement(metric, rounded(value), unit, EXTRACTOR)
        };
        if let Some(price) = price_per_hour {
            out.push(with("cost_per_mtok", price / (rate * 3600.0) * 1e6, "per Mtok"));
        }
        if let Some(watts) = watts {
            out.push(with("tokens_per_joule", rate / watts, "tok/J"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(metric: &str, value: f64, unit: &str, extractor: &str, key: Option<&str>) -> Measurement {
        Measurement {
            key: key.map(str::to_string),
            ..crate::metrics::found::measurement(metric, value, unit, extractor)
        }
    }

    #[test]
    fn a_price_per_hour_is_a_cost_per_million_generated_tokens() {
        let found = [
            m("output_throughput", 1000.0, "tok/s", "vllm-bench-serve", None),
            m("output_throughput", 1000.0, "tok/s", "vllm-save-result", None),
            m("total_throughput", 1800.0, "tok/s", "vllm-bench-serve", None),
            m("input_throughput", 800.0, "tok/s", "vllm-bench-serve", None),
        ];
        let cost = of_run(&found, Some(3.6));
        // 3.6 an hour at 1000 tok/s: 3.6 for 3.6 M tokens, 1 per million.
        assert_eq!(cost.len(), 1, "one per key, from output tokens only: {cost:?}");
        assert_eq!((cost[0].metric.as_str(), cost[0].value, cost[0].unit.as_str()), ("cost_per_mtok", 1.0, "per Mtok"));
        assert!(of_run(&found, None).is_empty(), "no price, no power: nothing");
    }

    #[test]
    fn a_rate_sweep_is_priced_per_rate_and_power_gives_tokens_per_joule() {
        let found = [
            m("output_throughput", 500.0, "tok/s", "vllm-save-result", Some("request_rate=1")),
            m("output_throughput", 2000.0, "tok/s", "vllm-save-result", Some("request_rate=8")),
            m("power_w_mean", 250.0, "W", "telemetry", None),
            m("power_w_mean", 300.0, "W", "telemetry", Some("gpu 0")),
            m("power_w_mean", 200.0, "W", "telemetry", Some("gpu 1")),
        ];
        let out = of_run(&found, Some(2.0));
        let get = |metric: &str, key: &str| {
            out.iter().find(|x| x.metric == metric && x.key.as_deref() == Some(key)).map(|x| x.value)
        };
        assert_eq!(get("cost_per_mtok", "request_rate=1"), Some(1.11111));
        assert_eq!(get("cost_per_mtok", "request_rate=8"), Some(0.277778));
        // Both GPUs' power: 500 W.
        assert_eq!(get("tokens_per_joule", "request_rate=8"), Some(4.0));
        assert_eq!(get("tokens_per_joule", "request_rate=1"), Some(1.0));
    }

    #[test]
    fn without_a_serving_throughput_any_generated_rate_counts() {
        let found = [
            m("tg128", 95.5, "tok/s", "llama-bench", Some("model")),
            m("input_throughput", 900.0, "tok/s", "x", None),
            m("latency", 5.0, "ms", "x", None),
        ];
        let out = of_run(&found, Some(1.0));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].key.as_deref(), Some("model"));
        assert!((out[0].value - 1.0 / (95.5 * 3600.0) * 1e6).abs() < 1e-3);
        assert!(of_run(&[m("output_throughput", 0.0, "tok/s", "x", None)], Some(1.0)).is_empty(), "no rate, no cost");
    }
}
