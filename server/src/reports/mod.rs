//! The field's report files, read into measurements and per-request samples.
//!
//! A run's artifacts (and nothing else: its printout goes through
//! `crate::metrics`) are offered to every reader; each recognises its own
//! format by what is in the file, never by its name. Every value gets a metric
//! name, a unit and a key (the request rate, concurrency, benchmark or kernel
//! category it belongs to), so one run can carry a whole rate sweep. A file a
//! reader recognises but cannot read to the end is a note naming the file and
//! where it broke, never a failed run.
//!
//! Memory stays bounded whatever the file's size: the big formats (PyTorch
//! traces, vLLM's detailed results) are parsed as a stream, keeping per-request
//! columns and reducing per-token ones as they go; the rest are small by nature
//! and read whole up to `WHOLE_BYTES`.

pub mod aiperf;
mod csv;
pub mod derive;
mod error;
pub mod guidellm;
mod json;
pub mod kernels;
pub mod llama_bench;
pub mod mlperf;
pub mod nsys;
mod report;
pub mod torch;
pub mod torch_table;
pub mod vllm;

pub use error::{ReadError, ReadResult};
pub use report::{Broken, Report, Reservoir, Samples};
use std::io::{BufRead, BufReader, Read};

/// What the stored output `key` (an artifact named `name`) holds, read as a
/// stream on a blocking thread: however big the file, only a few buffers of
/// it are in memory at once.
pub async fn of_output(
    outputs: &crate::output::Outputs,
    key: crate::output::OutputKey,
    name: &str,
) -> Option<Result<Report, Broken>> {
    use futures::StreamExt;
    let (tx, rx) = tokio::sync::mpsc::channel::<std::io::Result<bytes::Bytes>>(4);
    let mut stream = Box::pin(outputs.whole(key));
    let feeder = tokio::spawn(async move {
        while let Some(chunk) = stream.next().await {
            if tx.send(chunk).await.is_err() {
                break;
            }
        }
    });
    let name = name.to_string();
    let name_of_it = name.clone();
    let read = tokio::task::spawn_blocking(move || read(&name, Channel { rx, buf: bytes::Bytes::new() })).await;
    feeder.abort();
    read.unwrap_or_else(|e| Some(Err(ReadError::in_file(&name_of_it, e.into()))))
}

/// The bytes a channel brings, as `Read` (on a blocking thread).
struct Channel {
    rx: tokio::sync::mpsc::Receiver<std::io::Result<bytes::Bytes>>,
    buf: bytes::Bytes,
}

impl Read for Channel {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.buf.is_empty() {
            match self.rx.blocking_recv() {
                Some(chunk) => self.buf = chunk?,
                None => return Ok(0),
            }
        }
        let n = out.len().min(self.buf.len());
        out[..n].copy_from_slice(&self.buf[..n]);
        self.buf = self.buf.slice(n..);
        Ok(n)
    }
}

/// Files read whole (formats that are small by nature) up to this size.
pub const WHOLE_BYTES: usize = 64 * 1024 * 1024;
/// What is looked at to recognise a format.
const HEAD_BYTES: usize = 64 * 1024;

/// What `input` (the file `name`) holds, if a reader knows its format.
pub fn read(name: &str, input: impl Read + Send) -> Option<Result<Report, Broken>> {
    let mut input = BufReader::with_capacity(256 * 1024, input);
    let gzip = matches!(input.fill_buf(), Ok([0x1f, 0x8b, ..]));
    if gzip {
        let inner = BufReader::with_capacity(256 * 1024, flate2::read::GzDecoder::new(input));
        return read_plain(name, inner);
    }
    read_plain(name, input)
}

fn read_plain<R: Read + Send>(name: &str, mut input: BufReader<R>) -> Option<Result<Report, Broken>> {
    let mut head = Vec::with_capacity(HEAD_BYTES);
    if let Err(e) = (&mut input).take(HEAD_BYTES as u64).read_to_end(&mut head) {
        return looks_known(&head).then(|| Err(ReadError::in_file(name, e.into())));
    }
    let whole = std::io::Cursor::new(head.clone()).chain(input);
    let text = String::from_utf8_lossy(&head);
    let start = text.trim_start_matches('\u{feff}').trim_start();
    let broken = |e: ReadError| ReadError::in_file(name, e);
    if start.starts_with('{') || start.starts_with('[') {
        if torch::is_trace(start) {
            return Some(torch::read_trace(whole).map_err(broken));
        }
        // JSON Lines: one object per line (vLLM --append-result, SGLang,
        // AIPerf's per-request export).
        let first = start.lines().next().unwrap_or("");
        if json::object_line(first).is_some() && start.lines().filter(|l| !l.trim().is_empty()).nth(1).is_some() {
            if let Some(found) = read_lines(whole) {
                return Some(found.map_err(broken));
            }
            return None;
        }
        if vllm::is_detailed(start) {
            return match vllm::read_streaming(whole) {
                Ok(vllm::Streamed::Report(report)) => Some(Ok(report)),
                // A `backend` field alone is not vLLM's: read like any JSON.
                Ok(vllm::Streamed::Other(value)) => from_value(&value).map(|r| r.map_err(broken)),
                Err(e) => Some(Err(broken(e))),
            };
        }
        let bytes = match read_whole(whole) {
            Ok(bytes) => bytes,
            Err(e) => return looks_known(&head).then(|| Err(broken(e))),
        };
        let value = match json::parse(&bytes) {
            Ok(value) => value,
            Err(e) => return looks_known(&head).then(|| Err(broken(e.into()))),
        };
        return from_value(&value).map(|r| r.map_err(broken));
    }
    if nsys::is_console(start) {
        return Some(read_text(whole, nsys::read_console).map_err(broken));
    }
    if let Some(reader) = nsys::recognise(start) {
        return Some(read_text(whole, reader).map_err(broken));
    }
    if llama_bench::is_csv(start) {
        return Some(read_text(whole, llama_bench::read_csv).map_err(broken));
    }
    if mlperf::recognise(start) {
        return Some(read_text(whole, mlperf::read).map_err(broken));
    }
    if torch_table::recognise(start) {
        return Some(read_text(whole, torch_table::read).map_err(broken));
    }
    if aiperf::is_csv(start) {
        return Some(read_text(whole, aiperf::read_csv).map_err(broken));
    }
    if guidellm::is_yaml(start) {
        let bytes = match read_whole(whole) {
            Ok(bytes) => bytes,
            Err(e) => return Some(Err(broken(e))),
        };
        return match guidellm::yaml_to_json(&String::from_utf8_lossy(&bytes)) {
            Ok(value) => from_value(&value).map(|r| r.map_err(broken)),
            Err(e) => Some(Err(broken(e))),
        };
    }
    None
}

/// A file too broken to parse is still named in a note when its start says
/// which tool wrote it.
fn looks_known(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    ["\"backend\"", "\"traceEvents\"", "\"benchmarks\"", "\"records\"", "\"time_to_first_token\""]
        .iter()
        .any(|k| text.contains(k))
}

/// A text format read whole.
fn read_text(input: impl Read, reader: fn(&str) -> ReadResult<Report>) -> ReadResult<Report> {
    reader(&String::from_utf8_lossy(&read_whole(input)?))
}

fn read_whole(input: impl Read) -> ReadResult<Vec<u8>> {
    let mut bytes = Vec::new();
    input.take(WHOLE_BYTES as u64 + 1).read_to_end(&mut bytes)?;
    if bytes.len() > WHOLE_BYTES {
        return Err(ReadError::TooBig(WHOLE_BYTES));
    }
    Ok(bytes)
}

/// A JSON document of a format that is read whole.
fn from_value(value: &serde_json::Value) -> Option<ReadResult<Report>> {
    vllm::from_value(value)
        .or_else(|| guidellm::from_value(value))
        .or_else(|| aiperf::from_value(value))
        .or_else(|| llama_bench::from_value(value))
}

/// JSON Lines, each line an object, read one at a time.
fn read_lines(input: impl Read) -> Option<ReadResult<Report>> {
    let lines = BufReader::new(input).lines();
    let mut reader: Option<Box<dyn json::LineReader>> = None;
    for (at, line) in (1usize..).zip(lines) {
        let line = match line {
            Ok(line) => line,
            Err(e) => return reader.map(|r| Ok(r.finish_with(ReadError::at(at, e.into())))),
        };
        if line.trim().is_empty() {
            continue;
        }
        let Some(object) = json::object_line(&line) else {
            return reader.map(|r| Ok(r.finish_with(ReadError::at(at, ReadError::NotAnObject))));
        };
        let current = match &mut reader {
            Some(current) => current,
            None => {
                let found: Box<dyn json::LineReader> = if let Some(r) = vllm::line_reader(&object) {
                    r
                } else if let Some(r) = aiperf::line_reader(&object) {
                    r
                } else {
                    llama_bench::line_reader(&object)?
                };
                reader.insert(found)
            }
        };
        if let Err(e) = current.line(object) {
            return reader.take().map(|r| Ok(r.finish_with(ReadError::at(at, e))));
        }
    }
    reader.map(|r| Ok(r.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(path: &str) -> Vec<u8> {
        std::fs::read(crate::fixtures::dir().join(path)).expect("fixture")
    }

    #[test]
    fn every_fixture_is_recognised_by_content() {
        for (path, format) in [
            ("reports/vllm-bench-serve/nerdalert_results.json", "vllm-save-result"),
            ("reports/sglang-bench-serving/llama_3_3_70b_online_output.jsonl", "sglang-bench-serving"),
            ("reports/sglang-bench-serving/deepseek_dp_mla_output.jsonl", "sglang-bench-serving"),
            ("reports/guidellm/benchmarks_stripped.json", "guidellm"),
            ("reports/guidellm/benchmarks_stripped.yaml", "guidellm"),
            ("reports/genai-perf-aiperf/profile_export_aiperf.json", "aiperf"),
            ("reports/genai-perf-aiperf/profile_export_aiperf.csv", "aiperf"),
            ("reports/genai-perf-aiperf/profile_export.jsonl", "aiperf-requests"),
            ("reports/nsys/llm-perf-opt_per-stage_decode_cuda_gpu_kern_sum.csv", "nsys-kernels"),
            ("reports/pytorch-profiler/hta_nccl_data.json.gz", "torch-trace"),
        ] {
            // Under a name that says nothing: recognition is by content.
            let report = read("artifact.bin", &fixture(path)[..]).unwrap_or_else(|| panic!("{path}: not recognised"));
            let report = report.unwrap_or_else(|e| panic!("{path}: {e}"));
            assert_eq!(report.format.as_str(), format, "{path}");
            assert!(!report.measurements.is_empty(), "{path}: no measurements");
        }
        for other in ["bench-outputs/vllm_bench_serve_pr36559.txt", "gpu-host-h200x2/decode.log", "reports/README.md"] {
            assert!(read("x", &fixture(other)[..]).is_none(), "{other} is no report");
        }
    }

    #[test]
    fn text_formats_are_recognised_by_content_too() {
        let h200 = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tools/gpu-check/results/decode_trace.txt");
        let table = std::fs::read(h200).expect("the H200 table");
        let console = crate::fixtures::read("reports/nsys/nsight-systems-deep-dive_README_stats_text.md");
        let console = console.split("sudo $(which nsys) profile").nth(1).expect("a run").to_string();
        for (bytes, format) in [
            (include_bytes!("testdata/mlperf_log_summary_server.txt").to_vec(), "mlperf-loadgen"),
            (include_bytes!("testdata/llama-bench.csv").to_vec(), "llama-bench"),
            (table, "torch-table"),
            (console.into_bytes(), "nsys-stats"),
        ] {
            let report = read("artifact.bin", &bytes[..]).unwrap_or_else(|| panic!("{format}: not recognised"));
            assert_eq!(report.unwrap_or_else(|e| panic!("{format}: {e}")).format.as_str(), format);
        }
    }

    #[test]
    fn a_truncated_report_is_a_note_naming_the_file() {
        let whole = fixture("reports/guidellm/benchmarks_stripped.json");
        let cut = &whole[..whole.len() / 2];
        let note = read("out/benchmarks.json", cut).expect("recognised").expect_err("broken");
        assert!(matches!(&note, ReadError::In { error, .. } if matches!(**error, ReadError::Json(_))), "{note:?}");
        let note = note.to_string();
        assert!(note.starts_with("out/benchmarks.json: not valid JSON"), "{note}");
        assert!(note.contains("line"), "says where: {note}");
        let trace = fixture("reports/pytorch-profiler/hta_nccl_data.json.gz");
        let mut plain = Vec::new();
        flate2::read::GzDecoder::new(&trace[..]).read_to_end(&mut plain).expect("gunzip");
        let note = read("trace.json", &plain[..plain.len() / 3]).expect("recognised").expect_err("broken").to_string();
        assert!(note.starts_with("trace.json: "), "{note}");
    }

    #[test]
    fn hostile_values_are_kept_out() {
        let deep = format!("{}1{}", "{\"a\":".repeat(10), "}".repeat(10));
        let text = format!(
            r#"{{"backend": "<script>alert(1)</script>", "model_id": "<img src=x onerror=alert(1)>", "output_throughput": 1e308,
               "mean_ttft_ms": NaN, "p99_ttft_ms": 12.5, "median_ttft_ms": "fast", "deep": {deep}}}"#
        );
        let report = read("r.json", text.as_bytes()).expect("recognised").expect("read");
        let metric = |name: &str| report.measurements.iter().find(|m| m.metric == name).map(|m| m.value);
        assert_eq!(metric("ttft_ms_p99"), Some(12.5));
        assert_eq!(metric("ttft_ms_mean"), None, "NaN is no measurement");
        assert_eq!(metric("ttft_ms_median"), None, "text is no number");
        assert_eq!(metric("output_throughput"), Some(1e308), "large but finite: kept as the file says");
        assert!(report.metadata.contains_key("deep") && report.metadata.contains_key("model_id"));
    }

    #[test]
    fn a_reservoir_keeps_a_fair_bounded_sample() {
        let mut r = Reservoir::new(1_000);
        for i in 0..100_000 {
            r.push(f64::from(i));
        }
        assert_eq!((r.seen, r.kept.len()), (100_000, 1_000));
        let mean = r.kept.iter().sum::<f64>() / 1_000.0;
        assert!((mean - 50_000.0).abs() < 3_000.0, "{mean}");
    }
}
