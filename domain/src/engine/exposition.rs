//! The engine's own signals (vLLM's and SGLang's Prometheus `/metrics`):
//! reading the text exposition format, and what a run's scrapes say about
//! it — its queue, KV-cache use, preemptions, prefix-cache hits, speculative
//! decoding acceptance, tokens generated and the server's own TTFT.
//!
//! Counters are cumulative since the server started, so a run's share is the
//! difference between the scrape at (or just before) its start and its last
//! one: a server kept across runs does not count earlier runs' work. A counter
//! that goes down was reset (the server restarted): what it counted after is
//! added to what it had counted before.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What kind a metric family is (`# TYPE`); untyped when not said.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
    Summary,
    Untyped,
}

impl Kind {
    /// As `# TYPE` and the stored chunks write it (and serde: `snake_case`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
            Kind::Summary => "summary",
            Kind::Untyped => "untyped",
        }
    }

    /// The inverse of [`Kind::name`]; a kind this reader does not know is untyped.
    pub fn from_name(name: &str) -> Kind {
        [Kind::Counter, Kind::Gauge, Kind::Histogram, Kind::Summary]
            .into_iter()
            .find(|k| k.name() == name)
            .unwrap_or(Kind::Untyped)
    }
}

/// One sample line: `name{labels} value [timestamp]`.
#[derive(Clone, Debug, PartialEq)]
pub struct PromSample {
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub value: f64,
    pub timestamp_ms: Option<i64>,
}

/// One scrape, read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Exposition {
    pub samples: Vec<PromSample>,
    /// `# TYPE` of each family, by its name.
    pub kinds: BTreeMap<String, Kind>,
    /// Lines that were not the format, by number (1-based), at most a few.
    pub unread: Vec<usize>,
}

impl Exposition {
    /// The sum over every label set of `name` (a gauge per engine, per model);
    /// none when it is not there.
    pub fn total(&self, name: &str) -> Option<f64> {
        let values: Vec<f64> = self.samples.iter().filter(|s| s.name == name).map(|s| s.value).collect();
        (!values.is_empty()).then(|| values.iter().sum())
    }
}

/// Lines a scrape may leave unread before it is no exposition at all.
const UNREAD_KEPT: usize = 5;

/// Reads the Prometheus text exposition format (0.0.4): `# HELP`, `# TYPE`,
/// samples with labels (escaped `\\`, `\"`, `\n`), `+Inf`, `-Inf`, `NaN`, and
/// timestamps. A line that is not the format is skipped and counted.
pub fn parse(text: &str) -> Exposition {
    let mut out = Exposition::default();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            let mut words = comment.split_whitespace();
            if words.next() == Some("TYPE")
                && let (Some(name), Some(kind)) = (words.next(), words.next())
            {
                out.kinds.insert(name.to_string(), Kind::from_name(kind));
            }
            continue;
        }
        match sample(line) {
            Some(s) => out.samples.push(s),
            None if out.unread.len() < UNREAD_KEPT => out.unread.push(i + 1),
            None => {}
        }
    }
    out
}

fn number(text: &str) -> Option<f64> {
    match text {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ => text.parse().ok(),
    }
}

fn sample(line: &str) -> Option<PromSample> {
    let name_end = line.find(|c: char| c == '{' || c.is_whitespace()).unwrap_or(line.len());
    let name = &line[..name_end];
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    if name.is_empty() || !name.chars().all(valid) || name.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(inner) = rest.strip_prefix('{') {
        let (parsed, after) = label_set(inner)?;
        labels = parsed;
        rest = after;
    }
    let mut words = rest.split_whitespace();
    let value = number(words.next()?)?;
    let timestamp_ms = match words.next() {
        Some(t) => Some(t.parse().ok()?),
        None => None,
    };
    words.next().is_none().then(|| PromSample { name: name.to_string(), labels, value, timestamp_ms })
}

/// `a="x",b="y\"z"}` → the labels, and what follows the `}`.
fn label_set(text: &str) -> Option<(Vec<(String, String)>, &str)> {
    let mut labels = Vec::new();
    let mut rest = text.trim_start();
    loop {
        if let Some(after) = rest.strip_prefix('}') {
            return Some((labels, after));
        }
        let eq = rest.find('=')?;
        let key = rest[..eq].trim().to_string();
        let mut chars = rest[eq + 1..].trim_start().char_indices();
        let start = rest.len() - rest[eq + 1..].trim_start().len();
        if chars.next()?.1 != '"' {
            return None;
        }
        let mut value = String::new();
        let mut end = None;
        let mut escaped = false;
        for (at, c) in chars {
            match (escaped, c) {
                (true, c) => {
                    value.push(if c == 'n' { '\n' } else { c });
                    escaped = false;
                }
                (false, '\\') => escaped = true,
                (false, '"') => {
                    end = Some(start + at + 1);
                    break;
                }
                (false, c) => value.push(c),
            }
        }
        labels.push((key, value));
        rest = rest[end?..].trim_start();
        rest = rest.strip_prefix(',').unwrap_or(rest).trim_start();
    }
}

impl Scrape {
    /// The first of `names` this scrape has, summed over its label sets.
    pub fn signal(&self, names: &[&str]) -> Option<f64> {
        names.iter().find_map(|n| self.exposition.total(n))
    }
}

/// A scrape at `t_ms` (from the run's start; negative: before it).
#[derive(Clone, Debug)]
pub struct Scrape {
    pub t_ms: i64,
    pub exposition: Exposition,
}

/// Names a signal goes by: vLLM's (new and old) and SGLang's.
pub const WAITING: [&str; 2] = ["vllm:num_requests_waiting", "sglang:num_queue_reqs"];
pub const RUNNING: [&str; 2] = ["vllm:num_requests_running", "sglang:num_running_reqs"];
/// KV-cache use as a fraction of 1.
pub const KV_USAGE: [&str; 3] = ["vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage"];
const PREEMPTIONS: [&str; 1] = ["vllm:num_preemptions_total"];
const PREFIX_QUERIES: [&str; 1] = ["vllm:prefix_cache_queries_total"];
const PREFIX_HITS: [&str; 1] = ["vllm:prefix_cache_hits_total"];
const SPEC_DRAFT: [&str; 1] = ["vllm:spec_decode_num_draft_tokens_total"];
const SPEC_ACCEPTED: [&str; 1] = ["vllm:spec_decode_num_accepted_tokens_total"];
const GENERATED: [&str; 2] = ["vllm:generation_tokens_total", "sglang:generation_tokens_total"];
const TTFT: [&str; 2] = ["vllm:time_to_first_token_seconds", "sglang:time_to_first_token_seconds"];
/// SGLang's own rolling rate (0–1), used where vLLM's counters are absent.
const SGLANG_HIT_RATE: &str = "sglang:cache_hit_rate";

/// Every name [`measurements`] reads at each scrape (histograms only at the
/// run's first and last, so they are not here).
pub fn is_signal(name: &str) -> bool {
    [
        &WAITING[..],
        &RUNNING,
        &KV_USAGE,
        &PREEMPTIONS,
        &PREFIX_QUERIES,
        &PREFIX_HITS,
        &SPEC_DRAFT,
        &SPEC_ACCEPTED,
        &GENERATED,
    ]
    .iter()
    .any(|names| names.contains(&name))
        || name == SGLANG_HIT_RATE
}

/// What a run's scrapes say, as `(metric, value, unit, key)`: gauges over the
/// run's scrapes, counters as the run's share, the engine's TTFT percentiles
/// from its histogram's share (keyed `source=engine`).
pub fn measurements(scrapes: &[Scrape]) -> Vec<(String, f64, &'static str, Option<String>)> {
    let during: Vec<&Scrape> = scrapes.iter().filter(|s| s.t_ms >= 0).collect();
    // The counters' starting point: the last scrape before the run, else its first.
    let before = scrapes.iter().filter(|s| s.t_ms < 0).max_by_key(|s| s.t_ms).or(during.first().copied());
    let mut out = Vec::new();
    let mut push = |metric: &str, value: f64, unit: &'static str| {
        if value.is_finite() {
            out.push((metric.to_string(), value, unit, None));
        }
    };
    let gauge = |names: &[&str]| -> Vec<f64> {
        during.iter().filter_map(|s| names.iter().find_map(|n| s.exposition.total(n))).collect()
    };
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let max = |v: &[f64]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let waiting = gauge(&WAITING);
    if !waiting.is_empty() {
        push("requests_waiting_max", max(&waiting), "requests");
        push("requests_waiting_mean", mean(&waiting), "requests");
        // A queue that grows through the run (the `oversaturated` guard):
        // its last third's mean less its first third's.
        if waiting.len() >= 3 {
            let third = waiting.len() / 3;
            let growth = mean(&waiting[waiting.len() - third..]) - mean(&waiting[..third]);
            push("requests_waiting_growth", growth, "requests");
        }
    }
    let running = gauge(&RUNNING);
    if !running.is_empty() {
        push("requests_running_mean", mean(&running), "requests");
    }
    let kv = gauge(&KV_USAGE);
    if !kv.is_empty() {
        push("kv_cache_usage_pct_max", max(&kv) * 100.0, "%");
    }
    let share = |names: &[&str]| -> Option<f64> {
        let series: Vec<f64> = before
            .into_iter()
            .chain(during.iter().copied())
            .filter_map(|s| names.iter().find_map(|n| s.exposition.total(n)))
            .collect();
        (series.len() >= 2).then(|| increase(&series))
    };
    if let Some(p) = share(&PREEMPTIONS) {
        push("preemptions", p, "preemptions");
    }
    match (share(&PREFIX_HITS), share(&PREFIX_QUERIES)) {
        (Some(hits), Some(queries)) if queries > 0.0 => push("prefix_cache_hit_pct", hits / queries * 100.0, "%"),
        _ => {
            let rate = gauge(&[SGLANG_HIT_RATE]);
            if !rate.is_empty() {
                push("prefix_cache_hit_pct", mean(&rate) * 100.0, "%");
            }
        }
    }
    if let (Some(accepted), Some(draft)) = (share(&SPEC_ACCEPTED), share(&SPEC_DRAFT))
        && draft > 0.0
    {
        push("spec_decode_acceptance_pct", accepted / draft * 100.0, "%");
    }
    if let Some(tokens) = share(&GENERATED) {
        push("generation_tokens", tokens, "tokens");
    }
    if let (Some(first), Some(last)) = (before, during.last()) {
        for name in TTFT {
            let bucket = format!("{name}_bucket");
            let (a, b) = (buckets(&first.exposition, &bucket), buckets(&last.exposition, &bucket));
            if b.is_empty() {
                continue;
            }
            // The run's requests: the last scrape's counts less the first's (per bound).
            let counts: Vec<(f64, f64)> =
                b.iter().map(|(le, n)| (*le, n - a.iter().find(|(l, _)| l == le).map_or(0.0, |(_, m)| *m))).collect();
            for (p, metric) in [(50.0, "ttft_ms_p50"), (99.0, "ttft_ms_p99")] {
                if let Some(seconds) = histogram_quantile(&counts, p / 100.0) {
                    out.push((metric.to_string(), seconds * 1000.0, "ms", Some("source=engine".into())));
                }
            }
            break;
        }
    }
    out
}

/// What a counter counted over `series` (in order), resets included.
pub fn increase(series: &[f64]) -> f64 {
    series.windows(2).map(|w| if w[1] >= w[0] { w[1] - w[0] } else { w[1] }).sum()
}

/// A histogram's cumulative counts by upper bound (`le`), summed over its
/// other labels, in bound order.
fn buckets(e: &Exposition, name: &str) -> Vec<(f64, f64)> {
    let mut by_le: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
    for s in e.samples.iter().filter(|s| s.name == name) {
        let Some(le) = s.labels.iter().find(|(k, _)| k == "le").and_then(|(_, v)| number(v)) else { continue };
        // Ordered by the bound's bits: bounds are positive, so the order holds (+Inf last).
        let entry = by_le.entry(le.to_bits()).or_insert((le, 0.0));
        entry.1 += s.value;
    }
    by_le.into_values().collect()
}

/// Prometheus' `histogram_quantile`: the bucket the `q`-th request falls in,
/// linearly within it (the lowest bucket from 0; the `+Inf` bucket gives the
/// highest finite bound). None without requests.
pub fn histogram_quantile(cumulative: &[(f64, f64)], q: f64) -> Option<f64> {
    let total = cumulative.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let rank = q * total;
    let mut previous = (0.0, 0.0);
    for &(le, count) in cumulative {
        if count >= rank {
            if le.is_infinite() {
                return Some(previous.0);
            }
            let within = count - previous.1;
            let share = if within > 0.0 { (rank - previous.1) / within } else { 0.0 };
            return Some(previous.0 + (le - previous.0) * share);
        }
        previous = (le, count);
    }
    Some(previous.0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_kinds_name_is_serdes_and_reads_back() {
        for kind in [Kind::Counter, Kind::Gauge, Kind::Histogram, Kind::Summary, Kind::Untyped] {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.name());
            assert_eq!(Kind::from_name(kind.name()), kind);
        }
        assert_eq!(Kind::from_name("stateset"), Kind::Untyped);
    }

    use super::*;

    /// vLLM's exposition as its docs name the metrics (v0.10 `/metrics`).
    #[allow(clippy::too_many_arguments)]
    fn vllm(
        waiting: f64,
        running: f64,
        kv: f64,
        preempted: f64,
        queries: f64,
        hits: f64,
        generated: f64,
        ttft: [f64; 4],
    ) -> String {
        format!(
            "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.\n\
             # TYPE vllm:num_requests_waiting gauge\n\
             vllm:num_requests_waiting{{engine=\"0\",model_name=\"meta-llama/Llama-3.1-8B-Instruct\"}} {waiting}\n\
             # TYPE vllm:num_requests_running gauge\n\
             vllm:num_requests_running{{engine=\"0\",model_name=\"m\"}} {running}\n\
             # TYPE vllm:kv_cache_usage_perc gauge\n\
             vllm:kv_cache_usage_perc{{engine=\"0\",model_name=\"m\"}} {kv}\n\
             # TYPE vllm:num_preemptions counter\n\
             vllm:num_preemptions_total{{engine=\"0\",model_name=\"m\"}} {preempted}\n\
             # TYPE vllm:prefix_cache_queries counter\n\
             vllm:prefix_cache_queries_total{{engine=\"0\",model_name=\"m\"}} {queries}\n\
             # TYPE vllm:prefix_cache_hits counter\n\
             vllm:prefix_cache_hits_total{{engine=\"0\",model_name=\"m\"}} {hits}\n\
             # TYPE vllm:generation_tokens counter\n\
             vllm:generation_tokens_total{{engine=\"0\",model_name=\"m\"}} {generated}\n\
             # TYPE vllm:time_to_first_token_seconds histogram\n\
             vllm:time_to_first_token_seconds_bucket{{engine=\"0\",le=\"0.1\",model_name=\"m\"}} {}\n\
             vllm:time_to_first_token_seconds_bucket{{engine=\"0\",le=\"0.5\",model_name=\"m\"}} {}\n\
             vllm:time_to_first_token_seconds_bucket{{engine=\"0\",le=\"1.0\",model_name=\"m\"}} {}\n\
             vllm:time_to_first_token_seconds_bucket{{engine=\"0\",le=\"+Inf\",model_name=\"m\"}} {}\n\
             vllm:time_to_first_token_seconds_count{{engine=\"0\",model_name=\"m\"}} {}\n\
             vllm:time_to_first_token_seconds_sum{{engine=\"0\",model_name=\"m\"}} NaN\n",
            ttft[0], ttft[1], ttft[2], ttft[3], ttft[3]
        )
    }

    #[test]
    fn the_text_format_whole() {
        let e = parse(
            "# HELP x_total A \"quoted\" help\n# TYPE x counter\nx_total{path=\"/a\\\\b\",msg=\"say \\\"hi\\\"\\n\"} 3 1700000000000\n\
             y +Inf\nz{} -Inf\nnot a sample line\nw{a=\"1\",} NaN\n",
        );
        assert_eq!(e.samples.len(), 4, "{e:?}");
        assert_eq!(e.samples[0].labels, [("path".into(), "/a\\b".into()), ("msg".into(), "say \"hi\"\n".into())]);
        assert_eq!(e.samples[0].timestamp_ms, Some(1_700_000_000_000));
        assert_eq!(e.kinds.get("x"), Some(&Kind::Counter));
        assert_eq!(e.samples[1].value, f64::INFINITY);
        assert_eq!(e.samples[2].value, f64::NEG_INFINITY);
        assert!(e.samples[3].value.is_nan(), "a trailing comma in the labels is allowed");
        assert_eq!(e.unread, [6], "the line that is not the format, counted");
    }

    #[test]
    fn a_runs_share_of_a_kept_servers_counters() {
        // A kept server: before this run it had generated 5 000 tokens and served 100 TTFTs.
        let scrapes = vec![
            Scrape {
                t_ms: -500,
                exposition: parse(&vllm(0.0, 0.0, 0.0, 2.0, 1000.0, 100.0, 5000.0, [50.0, 90.0, 100.0, 100.0])),
            },
            Scrape {
                t_ms: 0,
                exposition: parse(&vllm(6.0, 2.0, 0.40, 2.0, 1000.0, 100.0, 5000.0, [50.0, 90.0, 100.0, 100.0])),
            },
            Scrape {
                t_ms: 1000,
                exposition: parse(&vllm(3.0, 4.0, 0.90, 5.0, 1400.0, 400.0, 6200.0, [60.0, 180.0, 200.0, 200.0])),
            },
            Scrape {
                t_ms: 2000,
                exposition: parse(&vllm(0.0, 0.0, 0.20, 5.0, 1500.0, 475.0, 7000.0, [60.0, 190.0, 200.0, 200.0])),
            },
        ];
        let found = measurements(&scrapes);
        let value = |m: &str| found.iter().find(|f| f.0 == m).map(|f| f.1);
        assert_eq!(value("requests_waiting_max"), Some(6.0));
        assert_eq!(value("requests_waiting_mean"), Some(3.0));
        assert_eq!(value("requests_running_mean"), Some(2.0));
        assert!((value("kv_cache_usage_pct_max").unwrap() - 90.0).abs() < 1e-9);
        assert_eq!(value("preemptions"), Some(3.0));
        assert_eq!(value("prefix_cache_hit_pct"), Some(75.0), "375 hits of 500 queries during the run");
        assert_eq!(value("generation_tokens"), Some(2000.0), "not the server's 7 000");
        // The run's 100 TTFTs: 10 under 0.1 s, 90 in 0.1–0.5 s, none above.
        let ttft = found.iter().find(|f| f.0 == "ttft_ms_p50").unwrap();
        assert_eq!(ttft.3.as_deref(), Some("source=engine"));
        assert!((ttft.1 - (100.0 + 400.0 * (50.0 - 10.0) / 90.0)).abs() < 1e-9, "{ttft:?}");
    }

    #[test]
    fn speculative_decoding_acceptance_over_the_run() {
        let at = |t_ms: i64, draft: f64, accepted: f64| Scrape {
            t_ms,
            exposition: parse(&format!(
                "# TYPE vllm:spec_decode_num_draft_tokens counter\n\
                 vllm:spec_decode_num_draft_tokens_total{{engine=\"0\"}} {draft}\n\
                 # TYPE vllm:spec_decode_num_accepted_tokens counter\n\
                 vllm:spec_decode_num_accepted_tokens_total{{engine=\"0\"}} {accepted}\n"
            )),
        };
        // 1 000 drafted before the run (900 accepted): the run drafted 400 and 100 were accepted.
        let found = measurements(&[at(-200, 1000.0, 900.0), at(500, 1200.0, 950.0), at(1500, 1400.0, 1000.0)]);
        let acceptance = found.iter().find(|f| f.0 == "spec_decode_acceptance_pct").map(|f| f.1);
        assert_eq!(acceptance, Some(25.0), "{found:?}");
        assert!(measurements(&[]).is_empty(), "no scrapes, no numbers");
    }

    #[test]
    fn a_counter_reset_counts_what_came_after() {
        assert_eq!(increase(&[100.0, 150.0, 20.0, 50.0]), 50.0 + 20.0 + 30.0);
    }

    #[test]
    fn quantiles_as_prometheus_computes_them() {
        // histogram_quantile(0.5, …) with 10 ≤ 0.1 and 100 ≤ 0.5: 0.1 + 0.4 × (50 − 10) / 90.
        let counts = [(0.1, 10.0), (0.5, 100.0), (f64::INFINITY, 100.0)];
        assert!((histogram_quantile(&counts, 0.5).unwrap() - (0.1 + 0.4 * 40.0 / 90.0)).abs() < 1e-12);
        assert_eq!(histogram_quantile(&[(0.1, 0.0), (f64::INFINITY, 5.0)], 0.99), Some(0.1), "+Inf: the last bound");
        assert_eq!(histogram_quantile(&[(0.1, 0.0)], 0.5), None);
    }

    #[test]
    fn sglang_names_are_read_too() {
        let text = "# TYPE sglang:num_queue_reqs gauge\nsglang:num_queue_reqs{model_name=\"m\"} 4\n\
                    # TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs{model_name=\"m\"} 8\n\
                    # TYPE sglang:token_usage gauge\nsglang:token_usage{model_name=\"m\"} 0.5\n\
                    # TYPE sglang:cache_hit_rate gauge\nsglang:cache_hit_rate{model_name=\"m\"} 0.25\n";
        let found = measurements(&[Scrape { t_ms: 0, exposition: parse(text) }]);
        let value = |m: &str| found.iter().find(|f| f.0 == m).map(|f| f.1);
        assert_eq!(value("requests_waiting_max"), Some(4.0));
        assert_eq!(value("requests_running_mean"), Some(8.0));
        assert_eq!(value("kv_cache_usage_pct_max"), Some(50.0));
        assert_eq!(value("prefix_cache_hit_pct"), Some(25.0));
    }
}
