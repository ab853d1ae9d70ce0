//! Numbers measured in run output: what the extractors find, and what people
//! enter by hand. Plain data shared by the server, the API and the pages.

use serde::{Deserialize, Serialize};

/// One number, with where it came from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// `output_throughput`, `ttft_ms_p99`, `tg128`, or a user extractor's name.
    pub metric: String,
    pub value: f64,
    /// `tok/s`, `req/s`, `ms`, `s`, `requests`, `tokens`…
    pub unit: String,
    /// `vllm-bench-serve`, `vllm-bench-throughput`, `vllm-bench-latency`,
    /// `sglang-bench-serving`, `llama-bench`, `custom:NAME`, or `manual`.
    pub extractor: String,
    /// When the tool reports a spread itself (llama-bench's `± 0.16`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stddev: Option<f64>,
    /// What the number is about when one output holds several of the same metric
    /// (llama-bench's model; the n-th match of a user extractor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}
