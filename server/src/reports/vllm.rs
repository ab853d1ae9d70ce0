//! vLLM's result files, and SGLang's (`sglang.bench_serving` began as a copy
//! of vLLM's benchmark and keeps its field names, spelling the end-to-end
//! latency `e2e_latency` and writing `Infinity` for an unbounded rate).
//!
//! - `vllm bench serve --save-result`: one JSON object; `--append-result`: one
//!   per line. Summary fields are in ms (`mean_ttft_ms`), named here as the
//!   console block names them (`ttft_ms_mean`), so a run's file and its
//!   printout are the same measurements. Percentile fields exist only for the
//!   percentiles asked for. With `--save-detailed`, per-request arrays in
//!   **seconds**: `ttfts`, `itls` (one list per request), `input_lens`,
//!   `output_lens`, `errors` — read as a stream (a 100 000-request file does
//!   not fit the memory a whole parse would take).
//! - `vllm bench throughput --output-json`: `requests_per_second`,
//!   `tokens_per_second` (prompt **and** output tokens).
//! - `vllm bench latency --output-json`: `avg_latency`, `latencies[]`,
//!   `percentiles{"10"…"99"}`, in seconds.

use super::error::{ReadError, ReadResult};
use super::json::{self, LineReader, Literals};
use super::report::{Report, Reservoir};
use domain::runs::ReportFormat;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;

const FORMAT: ReportFormat = ReportFormat::VllmSaveResult;
const SGLANG: ReportFormat = ReportFormat::SglangBenchServing;
/// ITLs kept per file (per token, so a big run has millions).
const ITL_SAMPLES: usize = 100_000;

fn format_of(object: &Map<String, Value>) -> ReportFormat {
    let sglang = object.get("backend").and_then(Value::as_str).is_some_and(|b| b.starts_with("sglang"))
        || object.contains_key("mean_e2e_latency_ms")
        || object.contains_key("total_output_tokens_retokenized");
    if sglang { SGLANG } else { FORMAT }
}

fn is_result(object: &Map<String, Value>) -> bool {
    object.contains_key("backend")
        && ["request_throughput", "output_throughput", "mean_ttft_ms", "completed"]
            .iter()
            .any(|k| object.contains_key(*k))
}

/// Whether a file's start is a single vLLM result (read as a stream).
pub fn is_detailed(head: &str) -> bool {
    head.starts_with('{') && head.contains("\"backend\"") && !head.contains("\"traceEvents\"")
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
        "input_throughput" => Some(("input_throughput", "tok/s")),
        "total_throughput" => Some(("total_throughput", "tok/s")),
        "concurrency" => Some(("concurrency", "requests")),
        _ => None,
    };
    if let Some((metric, unit)) = known {
        return Some((metric.to_string(), unit));
    }
    // `{stat}_{what}_ms`: mean_ttft_ms, p99_itl_ms, p99.9_tpot_ms, median_e2el_ms.
    let rest = field.strip_suffix("_ms")?;
    let (stat, what) = rest.split_once('_')?;
    let stat_ok = matches!(stat, "mean" | "median" | "std" | "min" | "max")
        || (stat.len() > 1 && stat.starts_with('p') && stat[1..].chars().all(|c| c.is_ascii_digit() || c == '.'));
    let what = match what {
        "ttft" | "tpot" | "itl" | "e2el" => what,
        "e2e_latency" => "e2el",
        _ => return None,
    };
    if !stat_ok {
        return None;
    }
    Some((format!("{what}_ms_{}", stat.replace('.', "_")), "ms"))
}

/// Fields that say what was run rather than what was measured.
const SETTINGS: [&str; 6] = ["request_rate", "burstiness", "max_concurrency", "num_prompts", "date", "backend"];

/// A result's summary fields into `report`, keyed by `key`; the rest kept as metadata.
fn summary(report: &mut Report, object: &Map<String, Value>, key: Option<&str>) {
    // Older SGLang files have no request rate achieved; it is what both tools
    // compute it as: completed requests over the duration.
    if !object.contains_key("request_throughput")
        && let (Some(done), Some(secs)) = (json::number(object, "completed"), json::number(object, "duration"))
        && secs > 0.0
    {
        report.add("request_throughput", done / secs, "req/s", key);
    }
    // The rate asked for (a setting, also kept as metadata): what the
    // `oversaturated` guard holds the run's duration against. `inf` is none.
    if let Some(rate) = object.get("request_rate").and_then(Value::as_f64).filter(|r| r.is_finite() && *r > 0.0) {
        report.add("request_rate_asked", rate, "req/s", key);
    }
    for (field, value) in object {
        match (name(field), value.as_f64()) {
            (Some((metric, unit)), Some(v)) => report.add(metric, v, unit, key),
            (Some(_), None) => {}
            (None, _) if !SETTINGS.contains(&field.as_str()) || key.is_none() => {
                report.metadata.entry(field.clone()).or_insert_with(|| value.clone());
            }
            _ => {}
        }
    }
}

/// `request_rate=10`, `request_rate=inf`, or the result's place in the file.
fn key_of(object: &Map<String, Value>, index: usize) -> String {
    match (object.get("max_concurrency").filter(|v| !v.is_null()), object.get("request_rate").and_then(json::rate_text))
    {
        (Some(c), _) if object.get("request_rate").and_then(json::rate_text).as_deref() == Some("inf") => {
            format!("max_concurrency={}", json::rate_text(c).unwrap_or_default())
        }
        (_, Some(rate)) => format!("request_rate={rate}"),
        _ => format!("result={}", index + 1),
    }
}

/// A document read whole: a single result, or `bench throughput/latency` JSON.
pub fn from_value(value: &Value) -> Option<ReadResult<Report>> {
    let object = value.as_object()?;
    if is_result(object) {
        let mut report = Report::new(format_of(object));
        summary(&mut report, object, None);
        return Some(Ok(report));
    }
    if object.contains_key("avg_latency") && object.contains_key("percentiles") {
        let mut report = Report::new(ReportFormat::VllmBenchLatency);
        if let Some(avg) = json::number(object, "avg_latency") {
            report.add("latency_s_mean", avg, "s", None);
        }
        if let Some(Value::Object(percentiles)) = object.get("percentiles") {
            for (p, v) in percentiles {
                if let (Ok(p), Some(v)) = (p.parse::<f64>(), v.as_f64()) {
                    report.add(domain::distributions::percentile_name("latency_s", p), v, "s", None);
                }
            }
        }
        if let Some(Value::Array(latencies)) = object.get("latencies") {
            let values = latencies.iter().filter_map(Value::as_f64).map(|s| s * 1e3).collect();
            report.samples("e2el_ms", "ms", None, values, true);
        }
        return Some(Ok(report));
    }
    if object.contains_key("requests_per_second") && object.contains_key("tokens_per_second") {
        let mut report = Report::new(ReportFormat::VllmBenchThroughput);
        for (field, metric, unit) in [
            ("requests_per_second", "request_throughput", "req/s"),
            // Prompt and output tokens together, as vLLM counts them.
            ("tokens_per_second", "total_throughput", "tok/s"),
            ("elapsed_time", "duration_s", "s"),
            ("num_requests", "requests", "requests"),
            ("total_num_tokens", "total_tokens", "tokens"),
        ] {
            if let Some(v) = json::number(object, field) {
                report.add(metric, v, unit, None);
            }
        }
        return Some(Ok(report));
    }
    None
}

/// `--append-result` JSON Lines: each result keyed by its rate.
pub fn line_reader(first: &Map<String, Value>) -> Option<Box<dyn LineReader>> {
    is_result(first)
        .then(|| Box::new(Lines { report: Report::new(format_of(first)), results: Vec::new() }) as Box<dyn LineReader>)
}

struct Lines {
    report: Report,
    results: Vec<Map<String, Value>>,
}

impl LineReader for Lines {
    fn line(&mut self, object: Map<String, Value>) -> ReadResult<()> {
        if !is_result(&object) {
            return Err(ReadError::NotA("vLLM"));
        }
        self.results.push(object);
        Ok(())
    }

    fn finish(self: Box<Self>) -> Report {
        let Lines { mut report, results } = *self;
        let several = results.len() > 1;
        let mut seen: Vec<String> = Vec::new();
        for (i, object) in results.iter().enumerate() {
            // A file appended to by two sweeps has a rate twice: the second is `#2`.
            let key = several.then(|| {
                let key = key_of(object, i);
                let again = seen.iter().filter(|k| **k == key).count();
                seen.push(key.clone());
                if again > 0 { format!("{key} #{}", again + 1) } else { key }
            });
            summary(&mut report, object, key.as_deref());
        }
        report
    }
}

/// Per-request columns of a detailed result, reduced as they stream by.
#[derive(Default)]
struct Detailed {
    summary: Map<String, Value>,
    ttfts: Vec<f64>,
    /// Per request: (sum of its ITLs, how many).
    itl_sums: Vec<(f64, u32)>,
    itls: Option<Reservoir>,
    errors: Vec<bool>,
    output_lens: Vec<f64>,
    /// Each request's start (`time.perf_counter()`, seconds).
    start_times: Vec<f64>,
}

/// What a stream that began like a vLLM result was.
pub enum Streamed {
    Report(Report),
    /// An object with a `backend` that is not vLLM's (its summary fields).
    Other(Value),
}

/// A single vLLM result, summary and per-request arrays, from a stream.
pub fn read_streaming(input: impl std::io::Read) -> ReadResult<Streamed> {
    let mut de =
        serde_json::Deserializer::from_reader(std::io::BufReader::with_capacity(64 * 1024, Literals::new(input)));
    let detailed = (&mut de).deserialize_map(DetailedVisitor)?;
    if !is_result(&detailed.summary) {
        return Ok(Streamed::Other(Value::Object(detailed.summary)));
    }
    let mut report = Report::new(format_of(&detailed.summary));
    summary(&mut report, &detailed.summary, None);
    let n = detailed.ttfts.len();
    // Failed requests (an error text) have no latencies: vLLM's own summary leaves them out.
    let ok = |i: usize| !detailed.errors.get(i).copied().unwrap_or(false);
    let ttft: Vec<f64> = (0..n).filter(|&i| ok(i)).map(|i| detailed.ttfts[i] * 1e3).collect();
    if detailed.itl_sums.len() == n && n > 0 {
        let tpot: Vec<f64> = (0..n)
            .filter(|&i| ok(i))
            .map(|i| {
                let (sum, count) = detailed.itl_sums[i];
                if count > 0 { sum / f64::from(count) * 1e3 } else { 0.0 }
            })
            .collect();
        let e2el: Vec<f64> =
            (0..n).filter(|&i| ok(i)).map(|i| (detailed.ttfts[i] + detailed.itl_sums[i].0) * 1e3).collect();
        report.samples("tpot_ms", "ms", None, tpot, true);
        report.samples("e2el_ms", "ms", None, e2el, true);
    }
    report.samples("ttft_ms", "ms", None, ttft, true);
    // The rate the client actually sent at (the `client_saturated` guard
    // holds it against the rate asked).
    if detailed.start_times.len() >= 3 {
        let (first, last) = detailed
            .start_times
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), t| (lo.min(*t), hi.max(*t)));
        if last > first {
            report.add("send_rate", (detailed.start_times.len() - 1) as f64 / (last - first), "req/s", None);
        }
    }
    if detailed.start_times.len() == n && n > 0 {
        let first = detailed.start_times.iter().copied().fold(f64::INFINITY, f64::min);
        report.requests =
            (0..n).filter(|&i| ok(i)).map(|i| (detailed.start_times[i] - first, detailed.ttfts[i] * 1e3)).collect();
    }
    if let Some(itls) = detailed.itls {
        if itls.seen > itls.kept.len() as u64 {
            report.notes.push(format!("{} of {} ITLs kept as a uniform sample", itls.kept.len(), itls.seen));
        }
        report.samples("itl_ms", "ms", None, itls.kept.into_iter().map(|s| s * 1e3).collect(), false);
    }
    if !detailed.output_lens.is_empty() {
        report.metadata.insert("requests_in_detail".into(), Value::from(detailed.output_lens.len()));
    }
    Ok(Streamed::Report(report))
}

struct DetailedVisitor;

impl<'de> Visitor<'de> for DetailedVisitor {
    type Value = Detailed;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a vLLM result object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Detailed, A::Error> {
        let mut d = Detailed::default();
        while let Some(field) = map.next_key::<String>()? {
            match field.as_str() {
                "ttfts" => d.ttfts = map.next_value_seed(Numbers)?,
                "output_lens" => d.output_lens = map.next_value_seed(Numbers)?,
                "itls" => {
                    let mut reservoir = Reservoir::new(ITL_SAMPLES);
                    d.itl_sums = map.next_value_seed(Itls(&mut reservoir))?;
                    d.itls = Some(reservoir);
                }
                "errors" => d.errors = map.next_value_seed(Errors)?,
                // Texts and anything else big and per request: not kept.
                "start_times" => d.start_times = map.next_value_seed(Numbers)?,
                "generated_texts" | "input_lens" => {
                    map.next_value::<IgnoredAny>()?;
                }
                _ => {
                    let value: Value = map.next_value()?;
                    d.summary.insert(field, value);
                }
            }
        }
        Ok(d)
    }
}

/// An array of numbers (a null or text counts as 0: vLLM's failed requests).
struct Numbers;

impl<'de> DeserializeSeed<'de> for Numbers {
    type Value = Vec<f64>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<f64>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Numbers {
    type Value = Vec<f64>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of numbers")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<f64>, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 20));
        while let Some(v) = seq.next_element::<Value>()? {
            out.push(v.as_f64().unwrap_or(0.0));
        }
        Ok(out)
    }
}

/// Each request's ITLs: their sum and count kept, the values sampled.
struct Itls<'a>(&'a mut Reservoir);

impl<'de> DeserializeSeed<'de> for Itls<'_> {
    type Value = Vec<(f64, u32)>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Itls<'_> {
    type Value = Vec<(f64, u32)>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of arrays of numbers")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(sum) = seq.next_element_seed(OneRequest(&mut *self.0))? {
            out.push(sum);
        }
        Ok(out)
    }
}

struct OneRequest<'a>(&'a mut Reservoir);

impl<'de> DeserializeSeed<'de> for OneRequest<'_> {
    type Value = (f64, u32);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for OneRequest<'_> {
    type Value = (f64, u32);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of numbers")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let (mut sum, mut count) = (0.0, 0u32);
        while let Some(v) = seq.next_element::<Value>()? {
            if let Some(v) = v.as_f64().filter(|v| v.is_finite()) {
                sum += v;
                count += 1;
                self.0.push(v);
            }
        }
        Ok((sum, count))
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok((0.0, 0))
    }
}

/// Whether each request failed (a non-empty error text).
struct Errors;

impl<'de> DeserializeSeed<'de> for Errors {
    type Value = Vec<bool>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<bool>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Errors {
    type Value = Vec<bool>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of error texts")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<bool>, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element::<Value>()? {
            out.push(match v {
                Value::String(s) => !s.is_empty(),
                Value::Null => false,
                _ => true,
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::metrics::Measurement;

    fn of<'a>(found: &'a [Measurement], metric: &str, key: Option<&str>) -> Option<&'a Measurement> {
        found.iter().find(|m| m.metric == metric && m.key.as_deref() == key)
    }

    fn read(text: &str) -> Report {
        super::super::read("r.json", text.as_bytes()).expect("recognised").expect("read")
    }

    #[test]
    fn the_fixtures_results_are_read_per_request_rate() {
        let report = read(&crate::fixtures::read("reports/vllm-bench-serve/nerdalert_results.json"));
        let found = &report.measurements;
        // The first line: request_rate 10.0, numbers as the file has them.
        let first = Some("request_rate=10");
        assert_eq!(of(found, "output_throughput", first).map(|m| m.value), Some(2258.212337970085));
        assert_eq!(
            of(found, "ttft_ms_p99", first).map(|m| (m.value, m.unit.as_str())),
            Some((98.69780922984769, "ms"))
        );
        assert_eq!(of(found, "successful_requests", first).map(|m| m.value), Some(300.0));
        // `"request_goodput:": null` is no measurement.
        assert!(of(found, "request_goodput", first).is_none());
        let rates: std::collections::BTreeSet<&str> = found.iter().filter_map(|m| m.key.as_deref()).collect();
        assert!(rates.len() >= 2, "{rates:?}");
        // What no reader names stays as metadata.
        assert_eq!(report.metadata.get("gpu").and_then(Value::as_str), Some("4xNVIDIA_L40S"));
    }

    /// The `oversaturated` guard on real results: runs at 10 and 30 req/s kept
    /// to their schedule; `inf` asked no rate (judged by nothing here); the
    /// same result stretched half as long again is flagged.
    #[test]
    fn the_fixtures_runs_at_a_rate_kept_their_schedule_and_a_stretched_one_did_not() {
        use domain::guards::{Bounds, GuardName, Level, RunFacts, of_run};
        let fixture = crate::fixtures::read("reports/vllm-bench-serve/nerdalert_results.json");
        let judge = |line: &str| {
            let found = read(line).measurements;
            let run = RunFacts { id: 1, measurements: &found, ..RunFacts::default() };
            let guard = of_run(&run, std::slice::from_ref(&run), &Bounds::default()).remove(2);
            assert_eq!(guard.name, GuardName::Oversaturated);
            (guard.level, guard.text)
        };
        for line in fixture.lines() {
            let object: Value = serde_json::from_str(line).unwrap();
            let (level, text) = judge(line);
            match object["request_rate"].as_f64() {
                Some(_) => assert_eq!(level, Level::Ok, "{line}: {text}"),
                None => assert_eq!(level, Level::Unknown, "inf: no schedule ({text})"),
            }
        }
        let first = fixture.lines().next().unwrap();
        let mut stretched: Value = serde_json::from_str(first).unwrap();
        stretched["duration"] = Value::from(stretched["duration"].as_f64().unwrap() * 1.5);
        let (level, text) = judge(&stretched.to_string());
        assert_eq!(level, Level::Warn, "{text}");
        assert!(text.contains("took 1.59×") && text.contains("over-saturated"), "{text}");
    }

    /// `client_saturated` from a detailed result's send times: 100 requests
    /// asked at 10 req/s, sent over 9.9 s (on schedule) or over 20 s (late).
    #[test]
    fn a_client_that_sent_late_is_flagged_one_on_schedule_is_not() {
        use domain::guards::{Bounds, GuardName, Level, RunFacts, of_run};
        let judge = |span: f64, rate: &str| {
            let starts: Vec<f64> = (0..100).map(|i| 1000.0 + span * f64::from(i) / 99.0).collect();
            let text = format!(
                r#"{{"backend": "vllm", "request_rate": {rate}, "completed": 100, "duration": {}, "output_throughput": 50.0,
                    "ttfts": {}, "start_times": {}}}"#,
                span + 1.0,
                serde_json::to_string(&vec![0.05; 100]).unwrap(),
                serde_json::to_string(&starts).unwrap()
            );
            let found = read(&text).measurements;
            let run = RunFacts { id: 7, measurements: &found, ..RunFacts::default() };
            let guard = of_run(&run, std::slice::from_ref(&run), &Bounds::default()).remove(3);
            assert_eq!(guard.name, GuardName::ClientSaturated);
            (guard.level, guard.text)
        };
        assert_eq!(judge(9.9, "10.0").0, Level::Ok);
        let (level, text) = judge(20.0, "10.0");
        assert_eq!(level, Level::Warn, "{text}");
        assert!(text.contains("as little as 50 % of the rate asked"), "{text}");
        let (level, text) = judge(20.0, "\"inf\"");
        assert_eq!(level, Level::Unknown, "{text}");
        assert!(text.contains("No rate was asked"), "{text}");
    }

    #[test]
    fn a_single_result_has_no_key_and_other_json_is_not_one() {
        let one = r#"{"backend": "vllm", "output_throughput": 57.5, "mean_ttft_ms": 120.0, "p99.9_itl_ms": 3.5}"#;
        let found = read(one).measurements;
        assert_eq!(of(&found, "output_throughput", None).map(|m| m.value), Some(57.5));
        assert_eq!(of(&found, "itl_ms_p99_9", None).map(|m| m.value), Some(3.5));
        assert!(super::super::read("x", r#"{"some": "json"}"#.as_bytes()).is_none());
        let cut = super::super::read("x", r#"{"backend": "vllm", "output_throughput": "#.as_bytes());
        assert!(cut.expect("recognised").is_err(), "truncated");
    }

    #[test]
    fn detailed_results_give_per_request_samples_in_ms() {
        // Three requests, the second failed; ttfts and itls in seconds.
        let text = r#"{"backend": "vllm", "completed": 2, "failed": 1, "mean_ttft_ms": 150.0,
            "ttfts": [0.1, 0.0, 0.2], "itls": [[0.01, 0.03], [], [0.02, 0.02, 0.02]],
            "generated_texts": ["a", "", "c"], "errors": ["", "Traceback: <b>boom</b>", ""], "output_lens": [3, 0, 4]}"#;
        let report = read(text);
        let column = |m: &str| report.samples.iter().find(|s| s.metric == m).map(|s| s.values.clone());
        let close = |a: Vec<f64>, b: &[f64]| a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-9);
        assert!(close(column("ttft_ms").unwrap(), &[100.0, 200.0]));
        assert!(close(column("tpot_ms").unwrap(), &[20.0, 20.0]));
        assert!(close(column("e2el_ms").unwrap(), &[140.0, 260.0]));
        assert_eq!(column("itl_ms").unwrap().len(), 5);
        assert_eq!(of(&report.measurements, "failed_requests", None).map(|m| m.value), Some(1.0));
    }

    #[test]
    fn sglang_sweeps_are_keyed_by_rate() {
        let report = read(&crate::fixtures::read("reports/sglang-bench-serving/llama_3_3_70b_online_output.jsonl"));
        assert_eq!(report.format.as_str(), SGLANG.as_str());
        // The line of request rate 1.0, as the file has it.
        let one = Some("request_rate=1");
        assert_eq!(of(&report.measurements, "output_throughput", one).map(|m| m.value), Some(537.4142851849319));
        assert_eq!(of(&report.measurements, "e2el_ms_mean", one).map(|m| m.value), Some(7840.616212638561));
        assert_eq!(of(&report.measurements, "ttft_ms_median", one).map(|m| m.value), Some(85.74514742940664));
        assert!(of(&report.measurements, "ttft_ms_p99", one).is_none(), "this SGLang printed no p99");
        // The file holds two sweeps; rates 4 and 8 come twice.
        assert_eq!(
            of(&report.measurements, "ttft_ms_median", Some("request_rate=4 #2")).map(|m| m.value),
            Some(68.27884959056973)
        );
        // One line, `Infinity` for its rate: a single result, read all the same.
        let single = read(&crate::fixtures::read("reports/sglang-bench-serving/deepseek_dp_mla_output.jsonl"));
        assert_eq!(single.format.as_str(), SGLANG.as_str());
        assert_eq!(of(&single.measurements, "output_throughput", None).map(|m| m.value), Some(12412.394674113431));
        assert_eq!(single.metadata.get("request_rate").and_then(Value::as_str), Some("inf"));
    }

    #[test]
    fn throughput_and_latency_json() {
        let t = read(
            r#"{"elapsed_time": 10.0, "num_requests": 100, "total_num_tokens": 51200, "requests_per_second": 10.0, "tokens_per_second": 5120.0}"#,
        );
        assert_eq!(t.format.as_str(), "vllm-bench-throughput");
        assert_eq!(of(&t.measurements, "total_throughput", None).map(|m| m.value), Some(5120.0));
        let l = read(
            r#"{"avg_latency": 1.5, "latencies": [1.4, 1.5, 1.6], "percentiles": {"10": 1.42, "50": 1.5, "99": 1.598}}"#,
        );
        assert_eq!(l.format.as_str(), "vllm-bench-latency");
        assert_eq!(of(&l.measurements, "latency_s_p99", None).map(|m| (m.value, m.unit.as_str())), Some((1.598, "s")));
        assert_eq!(l.samples[0].values, vec![1400.0, 1500.0, 1600.0]);
    }
}
