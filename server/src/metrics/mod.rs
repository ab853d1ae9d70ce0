//! Measurements in benchmark output.
//!
//! Every finished run's output goes through every built-in extractor (each one
//! recognizes its own format, so there is nothing to configure) and the user's
//! extractors of its investigation. Extractors match labels case-insensitively and
//! by words, never by column position, so the padding and spelling changes between
//! tool versions (`Total Token throughput`, `reqeuest`, `pp 512`) do not matter.
//! They never panic on arbitrary text (a property test holds them to it).

pub mod collectives;
pub mod command;
pub mod cost;
pub mod custom;
pub mod derived;
mod found;
pub mod frontier;
pub mod history;
pub mod llama_bench;
pub mod overview;
pub mod profiles;
pub mod rates;
pub mod record;
mod service;
pub mod serving;
pub mod stats;
pub mod vllm;

pub use found::{measurement, number, slug};
pub use service::{Metrics, guard_bounds_of, measurement_of, measurements_of, value_of};

use domain::metrics::Measurement;

/// All measurements the built-in extractors find in `text`, in output order per
/// extractor.
pub fn extract(text: &str) -> Vec<Measurement> {
    let mut found = serving::extract(text);
    found.extend(vllm::throughput(text));
    found.extend(vllm::latency(text));
    found.extend(llama_bench::extract(text));
    found.extend(collectives::extract(text));
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn slugs_and_numbers() {
        assert_eq!(slug("Peak concurrent requests"), "peak_concurrent_requests");
        assert_eq!(slug(" E2E Latency "), "e2e_latency");
        assert_eq!(number(" 1,049.39 "), Some(1049.39));
        assert_eq!(number("inf"), None);
        assert_eq!(number("abc"), None);
    }

    fn fragments() -> Vec<String> {
        let mut lines: Vec<String> = Vec::new();
        for file in [
            "bench-outputs/vllm_bench_serve_pr36559.txt",
            "bench-outputs/llama_bench_issue3869.txt",
            "gpu-host-h200x2/decode.log",
            "gpu-host-h200x2/allreduce-LL.log",
        ] {
            lines.extend(crate::fixtures::read(file).lines().map(str::to_string));
        }
        lines.extend(
            [
                "Throughput: 4.05 requests/s, 1234.5 total tokens/s, 600 output tokens/s",
                "Avg latency: 1.5 seconds",
                "99% percentile latency: 2.0 seconds",
                "| model | test | t/s |",
                "| --- | --- | --- |",
                "| x | tg128 | 1 ± |",
                "============ Serving Benchmark Result ============",
                "==================================================",
                "P99.9 TTFT (ms): 3",
                "Mean TTFT (ms):",
                ":",
                "±",
                "|",
            ]
            .map(String::from),
        );
        lines
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        /// Arbitrary text, and real output cut, shuffled and spliced with noise,
        /// never panics any extractor and gives only finite numbers.
        #[test]
        fn arbitrary_text_never_panics(
            noise in ".{0,400}",
            picks in proptest::collection::vec((0usize..1000, 0usize..200, ".{0,8}"), 0..40),
        ) {
            let fragments = fragments();
            let mut text = noise.clone();
            for (i, cut, junk) in picks {
                let line = &fragments[i % fragments.len()];
                let cut = line.char_indices().nth(cut).map_or(line.len(), |(at, _)| at);
                text.push_str(&line[..cut]);
                text.push_str(&junk);
                text.push('\n');
            }
            for m in extract(&text) {
                prop_assert!(m.value.is_finite());
            }
            let user = custom::Extractor::new("x", r"([\d.]+) tok/s", "tok/s").expect("valid");
            for m in user.extract(&text) {
                prop_assert!(m.value.is_finite());
            }
        }
    }
}
