//! `llama-bench -o json` (an array of results), `-o jsonl` (one per line) and
//! `-o csv` (a header, then every cell quoted; no repetitions in this form):
//! each result a test — `n_prompt` tokens of prompt processing (`pp512`),
//! `n_gen` of generation (`tg128`), both (`pp512+tg128`), at a context depth
//! (`@ d4096`) — with its mean and stddev in tokens per second and every
//! repetition's (`samples_ts`). Named and keyed as the markdown table
//! (`crate::metrics::llama_bench`) names them: the test, keyed by model, so a
//! run's JSON and its printout are the same measurements.

use super::error::{ReadError, ReadResult};
use super::json::LineReader;
use super::report::Report;
use domain::runs::ReportFormat;
use serde_json::{Map, Value};

const FORMAT: ReportFormat = ReportFormat::LlamaBench;

fn is_result(object: &Map<String, Value>) -> bool {
    object.contains_key("n_prompt") && object.contains_key("n_gen") && object.contains_key("avg_ts")
}

/// `pp512`, `tg128`, `pp512+tg128`, with `@ d4096` at a depth.
fn test_name(object: &Map<String, Value>) -> Option<String> {
    let count = |f: &str| object.get(f).and_then(Value::as_u64).unwrap_or(0);
    let (prompt, generated, depth) = (count("n_prompt"), count("n_gen"), count("n_depth"));
    let name = match (prompt, generated) {
        (0, 0) => return None,
        (p, 0) => format!("pp{p}"),
        (0, g) => format!("tg{g}"),
        (p, g) => format!("pp{p}+tg{g}"),
    };
    Some(if depth > 0 { format!("{name} @ d{depth}") } else { name })
}

fn add(report: &mut Report, object: &Map<String, Value>) {
    let (Some(test), Some(mean)) = (test_name(object), object.get("avg_ts").and_then(Value::as_f64)) else { return };
    let model = object.get("model_type").and_then(Value::as_str).map(|m| m.chars().take(120).collect::<String>());
    let key = model.as_deref().filter(|m| !m.is_empty());
    let before = report.measurements.len();
    report.add(test.clone(), mean, "tok/s", key);
    if report.measurements.len() > before {
        report.measurements[before].stddev = object.get("stddev_ts").and_then(Value::as_f64).filter(|s| s.is_finite());
    }
    if let Some(Value::Array(samples)) = object.get("samples_ts") {
        let values = samples.iter().filter_map(Value::as_f64).filter(|v| v.is_finite()).collect();
        report.samples(&test, "tok/s", key, values, false);
    }
    for field in
        ["build_commit", "backends", "gpu_info", "cpu_info", "n_gpu_layers", "flash_attn", "n_batch", "n_ubatch"]
    {
        if let Some(v) = object.get(field) {
            report.metadata.entry(field.to_string()).or_insert_with(|| v.clone());
        }
    }
}

/// `-o json`: an array of results.
pub fn from_value(value: &Value) -> Option<ReadResult<Report>> {
    let results = value.as_array()?;
    let objects: Vec<&Map<String, Value>> = results.iter().filter_map(Value::as_object).collect();
    if objects.is_empty() || !objects.iter().all(|o| is_result(o)) {
        return None;
    }
    let mut report = Report::new(FORMAT);
    for object in objects {
        add(&mut report, object);
    }
    Some(Ok(report))
}

/// `-o jsonl`: a result per line.
pub fn line_reader(first: &Map<String, Value>) -> Option<Box<dyn LineReader>> {
    is_result(first).then(|| Box::new(Lines(Report::new(FORMAT))) as Box<dyn LineReader>)
}

struct Lines(Report);

impl LineReader for Lines {
    fn line(&mut self, object: Map<String, Value>) -> ReadResult<()> {
        if !is_result(&object) {
            return Err(ReadError::NotA("llama-bench"));
        }
        add(&mut self.0, &object);
        Ok(())
    }

    fn finish(self: Box<Self>) -> Report {
        self.0
    }
}

/// `-o csv`: the header names the same fields the JSON has.
pub fn is_csv(head: &str) -> bool {
    let header = head.lines().next().unwrap_or("");
    header.starts_with("build_commit,") && header.split(',').any(|c| c == "avg_ts")
}

pub fn read_csv(text: &str) -> ReadResult<Report> {
    let mut lines = text.lines();
    let header = super::csv::split(lines.next().unwrap_or(""));
    let mut report = Report::new(FORMAT);
    for (at, line) in lines.enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let cells = super::csv::split(line);
        if cells.len() != header.len() {
            let why = ReadError::at(at + 2, ReadError::Cells { found: cells.len(), expected: header.len() });
            if report.measurements.is_empty() {
                return Err(why);
            }
            report.notes.push(why.to_string());
            break;
        }
        // Cells become what the JSON form has: numbers where they are numbers.
        let object: Map<String, Value> = header
            .iter()
            .zip(cells)
            .map(|(field, cell)| {
                let value = match (cell.parse::<u64>(), cell.parse::<f64>()) {
                    (Ok(n), _) => Value::from(n),
                    (_, Ok(x)) if x.is_finite() => Value::from(x),
                    _ => Value::from(cell),
                };
                (field.clone(), value)
            })
            .collect();
        if !is_result(&object) {
            return Err(ReadError::at(at + 2, ReadError::NotA("llama-bench")));
        }
        add(&mut report, &object);
    }
    if report.measurements.is_empty() {
        return Err(ReadError::Missing("no results"));
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first result's numbers are from a public repository's committed
    /// `llama-bench -o json` output (build 8cf427ff; fields abridged); the second,
    /// a generation test at a depth, is written here in the same shape.
    const JSON: &str = r#"[
  {"build_commit": "8cf427ff", "build_number": 5163, "backends": "CUDA", "gpu_info": "NVIDIA GeForce RTX 4080",
   "model_type": "qwen2 7B Q4_K - Medium", "n_prompt": 512, "n_gen": 0, "n_depth": 0,
   "avg_ns": 72135640, "stddev_ns": 1453752, "avg_ts": 7100.002165, "stddev_ts": 140.341520,
   "samples_ns": [ 74601900, 71632900, 71745200, 71952700, 70745500 ],
   "samples_ts": [ 6863.1, 7147.55, 7136.37, 7115.79, 7237.21 ]},
  {"build_commit": "8cf427ff", "build_number": 5163, "backends": "CUDA", "gpu_info": "NVIDIA GeForce RTX 4080",
   "model_type": "qwen2 7B Q4_K - Medium", "n_prompt": 0, "n_gen": 128, "n_depth": 4096,
   "avg_ts": 120.5, "stddev_ts": 0.4, "samples_ts": [120.1, 120.9]}
]"#;

    fn value(r: &Report, metric: &str) -> Option<(f64, Option<f64>)> {
        r.measurements.iter().find(|m| m.metric == metric).map(|m| (m.value, m.stddev))
    }

    #[test]
    fn json_and_jsonl_name_tests_as_the_table_does() {
        let r = crate::reports::read("bench.json", JSON.as_bytes()).expect("recognised").expect("read");
        assert_eq!(r.format.as_str(), FORMAT.as_str());
        assert_eq!(value(&r, "pp512"), Some((7100.002165, Some(140.341520))));
        assert_eq!(value(&r, "tg128 @ d4096"), Some((120.5, Some(0.4))));
        assert_eq!(r.measurements[0].key.as_deref(), Some("qwen2 7B Q4_K - Medium"));
        let pp = r.samples.iter().find(|s| s.metric == "pp512").expect("the repetitions");
        assert_eq!(pp.values, vec![6863.1, 7147.55, 7136.37, 7115.79, 7237.21]);
        assert_eq!(r.metadata.get("gpu_info").and_then(Value::as_str), Some("NVIDIA GeForce RTX 4080"));
        // The same results as JSON Lines.
        let doc: Value = serde_json::from_str(JSON).unwrap();
        let lines: String = doc.as_array().unwrap().iter().map(|o| format!("{o}\n")).collect();
        let l = crate::reports::read("bench.jsonl", lines.as_bytes()).expect("recognised").expect("read");
        assert_eq!(value(&l, "pp512"), value(&r, "pp512"));
        assert_eq!(l.measurements.len(), r.measurements.len());
    }

    #[test]
    fn csv_as_llama_cpp_documents_it() {
        let csv = include_str!("testdata/llama-bench.csv");
        let r = crate::reports::read("bench.csv", csv.as_bytes()).expect("recognised").expect("read");
        assert_eq!(r.format.as_str(), FORMAT.as_str());
        assert_eq!(value(&r, "pp512"), Some((7285.676949, Some(100.064434))));
        assert_eq!(value(&r, "tg128"), Some((119.915244, Some(0.430617))));
        assert_eq!(r.measurements[0].key.as_deref(), Some("qwen2 7B Q4_K - Medium"));
        assert!(r.samples.is_empty(), "the CSV form has no repetitions");
        assert_eq!(r.metadata.get("n_gpu_layers"), Some(&Value::from(99u64)));
        let cut = &csv[..csv.len() - 30];
        let r = crate::reports::read("bench.csv", cut.as_bytes()).expect("recognised").expect("the whole row stays");
        assert_eq!(value(&r, "tg128"), None);
        assert!(r.notes[0].contains("cut short"), "{:?}", r.notes);
    }
}
