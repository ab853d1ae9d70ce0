//! PyTorch profiler traces (Kineto's chrome trace, `.json` or `.json.gz`):
//! `traceEvents` of `"ph": "X"` events with `ts`/`dur` in µs. GPU kernels
//! (`cat: kernel`) go into categories by name; steps are the
//! `ProfilerStep#N` annotations `torch.profiler.schedule` makes, and each
//! kernel belongs to the last step begun before it ran (GPU work lags the
//! CPU's step by at most about a step, so kernels up to one step's length past
//! the last step's end still count). Parsed as a stream: a 200 MB trace needs
//! only its kernels' times and categories in memory.

use super::error::ReadResult;
use super::json::Literals;
use super::kernels::{Breakdown, CATEGORIES, category};
use super::report::Report;
use domain::runs::ReportFormat;
use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;

pub fn is_trace(head: &str) -> bool {
    head.contains("\"traceEvents\"") || (head.starts_with('[') && head.contains("\"ph\"") && head.contains("\"ts\""))
}

#[derive(Deserialize)]
struct Event {
    #[serde(default)]
    ph: String,
    #[serde(default)]
    cat: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    ts: Option<f64>,
    #[serde(default)]
    dur: Option<f64>,
}

/// What is kept of the events.
#[derive(Default)]
struct Seen {
    /// (start µs, duration µs, category index, name in `names`).
    kernels: Vec<(f64, f32, u8, u32)>,
    /// Kernel names, each once with its category, and where each is.
    names: Vec<(String, u8)>,
    named: std::collections::HashMap<String, u32>,
    /// (start µs, duration µs) of each `ProfilerStep#N`.
    steps: Vec<(f64, f64)>,
    /// Start (µs) of each `nccl:*` annotation PyTorch makes per collective
    /// call: the calls, even where NCCL launches no kernel (one rank).
    calls: Vec<f64>,
    events: u64,
    metadata: serde_json::Map<String, serde_json::Value>,
}

impl Seen {
    fn event(&mut self, e: Event) {
        self.events += 1;
        if e.ph != "X" {
            return;
        }
        let (Some(ts), Some(dur)) =
            (e.ts.filter(|t| t.is_finite()), e.dur.filter(|d| d.is_finite() && *d >= 0.0 && *d < 1e12))
        else {
            return;
        };
        if e.cat.eq_ignore_ascii_case("kernel") {
            let id = match self.named.get(&e.name) {
                Some(id) => *id,
                None => {
                    let id = self.names.len() as u32;
                    let at = CATEGORIES.iter().position(|c| *c == category(&e.name)).unwrap_or(4);
                    self.named.insert(e.name.clone(), id);
                    self.names.push((e.name, at as u8));
                    id
                }
            };
            self.kernels.push((ts, dur as f32, self.names[id as usize].1, id));
        } else if e.cat == "user_annotation" && e.name.starts_with("nccl:") {
            self.calls.push(ts);
        } else if e.name.starts_with("ProfilerStep#") && e.cat != "gpu_user_annotation" {
            self.steps.push((ts, dur));
        }
    }
}

/// A trace's measurements, read from a stream.
pub fn read_trace(input: impl std::io::Read) -> ReadResult<Report> {
    let mut de =
        serde_json::Deserializer::from_reader(std::io::BufReader::with_capacity(64 * 1024, Literals::new(input)));
    let mut seen = Seen::default();
    (&mut de).deserialize_any(TraceVisitor(&mut seen))?;
    let mut report = Report::new(ReportFormat::TorchTrace);
    report.metadata = std::mem::take(&mut seen.metadata);
    if seen.kernels.is_empty() {
        report.notes.push(format!("{} events and no GPU kernels (was CUDA activity profiled?)", seen.events));
        return Ok(report);
    }
    seen.steps.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut breakdown = Breakdown::default();
    let in_steps = !seen.steps.is_empty();
    if in_steps {
        let last_end = seen.steps.iter().map(|(ts, dur)| ts + dur).fold(f64::MIN, f64::max);
        let slack = seen.steps.iter().map(|(_, dur)| *dur).fold(0.0, f64::max);
        let first = seen.steps[0].0;
        let mut outside = 0u64;
        for (ts, dur, at, id) in &seen.kernels {
            if *ts < first || *ts > last_end + slack {
                outside += 1;
                continue;
            }
            breakdown.add_in(usize::from(*at), &seen.names[*id as usize].0, f64::from(*dur) * 1e3, 1);
        }
        // Collective calls: their kernels, or their annotations when they ran
        // none (NCCL with one rank returns without a kernel).
        let annotated =
            seen.calls.iter().filter(|ts| seen.steps.iter().any(|(s, d)| **ts >= *s && **ts <= s + d)).count() as u64;
        breakdown.calls_from_annotations(annotated, &mut report);
        let steps = seen.steps.len() as u64;
        breakdown.steps = Some(steps);
        breakdown.step_ns = Some(seen.steps.iter().map(|(_, d)| d).sum::<f64>() / steps as f64 * 1e3);
        breakdown.steps_from = Some("the trace's ProfilerStep#N annotations".into());
        if outside > 0 {
            report.notes.push(format!("{outside} kernels ran outside the profiled steps and are not counted"));
        }
    } else {
        for (_, dur, at, id) in &seen.kernels {
            breakdown.add_in(usize::from(*at), &seen.names[*id as usize].0, f64::from(*dur) * 1e3, 1);
        }
        report.notes.push("no ProfilerStep#N in the trace: per-step figures need torch.profiler.schedule".into());
    }
    breakdown.measure(&mut report);
    Ok(report)
}

struct TraceVisitor<'a>(&'a mut Seen);

impl<'de> Visitor<'de> for TraceVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a chrome trace")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(field) = map.next_key::<String>()? {
            match field.as_str() {
                "traceEvents" => map.next_value_seed(Events(&mut *self.0))?,
                // Small and telling: which GPUs, which ranks.
                "distributedInfo" | "schemaVersion" | "displayTimeUnit" => {
                    let value: serde_json::Value = map.next_value()?;
                    self.0.metadata.insert(field, value);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        Events(self.0).visit_seq(seq)
    }
}

struct Events<'a>(&'a mut Seen);

impl<'de> DeserializeSeed<'de> for Events<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Events<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of trace events")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(event) = seq.next_element::<Event>()? {
            self.0.event(event);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(r: &Report, metric: &str, key: Option<&str>) -> Option<f64> {
        r.measurements.iter().find(|m| m.metric == metric && m.key.as_deref() == key).map(|m| m.value)
    }

    /// The fixture's SOURCE, checked with Python: 2 700 kernels in 3 steps,
    /// 15 AllReduce kernels (5 per step) and 6 Broadcast ones (DDP's, 2 per
    /// step): 21 collectives, 46.876 ms of 162.532 ms kernel time (28.84 %).
    #[test]
    fn the_hta_trace_per_step() {
        let bytes = std::fs::read(crate::fixtures::dir().join("reports/pytorch-profiler/hta_nccl_data.json.gz"))
            .expect("fixture");
        let r = super::super::read("trace", &bytes[..]).expect("recognised").expect("read");
        assert_eq!(r.format.as_str(), "torch-trace");
        assert_eq!(value(&r, "decode_steps", None), Some(3.0));
        assert_eq!(value(&r, "collective_calls_per_step", None), Some(7.0));
        let share = value(&r, "gpu_time_share_pct", Some("category=collective")).unwrap();
        assert!((share - 28.841).abs() < 0.01, "{share}");
        let total = value(&r, "gpu_time_ms", None).unwrap();
        assert!((total - 162.532).abs() < 0.01, "{total}");
        let calls: f64 = r.measurements.iter().filter(|m| m.metric == "kernel_calls").map(|m| m.value).sum();
        assert_eq!(calls, 2700.0);
        // 46.876 ms / 3 steps of a 222.368 ms mean step.
        let step_share = value(&r, "collective_share_of_step_pct", None).unwrap();
        assert!((step_share - 46.876 / 3.0 / 222.368 * 100.0).abs() < 0.01, "{step_share}");
        assert_eq!(
            r.metadata.get("distributedInfo").and_then(|d| d.get("world_size")).and_then(|w| w.as_i64()),
            Some(2)
        );
    }

    /// A decode loop run on a lent H200 (`tools/gpu-check/decode_trace.py`:
    /// 24 layers, `torch.distributed.all_reduce` twice per layer, one rank,
    /// 5 profiled steps). NCCL with one rank runs no kernel; PyTorch still
    /// annotates each call (`nccl:all_reduce`).
    #[test]
    fn a_decode_trace_from_the_gpu_has_two_allreduces_per_layer() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/gpu-check/results/decode_trace.json.gz");
        let bytes = std::fs::read(path).expect("the trace made on the GPU");
        let r = super::super::read("decode_trace.json.gz", &bytes[..]).expect("recognised").expect("read");
        assert_eq!(value(&r, "decode_steps", None), Some(5.0));
        assert_eq!(value(&r, "collective_calls_per_step", None), Some(48.0));
        assert!(
            r.notes.iter().any(|n| n.contains("240 collective calls counted from their nccl:* annotations")),
            "{:?}",
            r.notes
        );
        // The attention kernel (cutlass fmha) and the GEMMs have their own shares.
        assert!(value(&r, "gpu_time_share_pct", Some("category=attention")).unwrap() > 30.0);
        assert!(value(&r, "gpu_time_share_pct", Some("category=gemm")).unwrap() > 10.0);
    }

    /// The same loop of 16 layers, two all-reduces per layer against one fused
    /// (`LAYERS=16 [FUSED=1] decode_trace.py`, the lent H200, 2026-12-04).
    #[test]
    fn fusing_the_all_reduces_halves_the_calls_and_adds_a_copy() {
        let read = |name: &str| {
            let path = format!("{}/../tools/gpu-check/results/{name}", env!("CARGO_MANIFEST_DIR"));
            let bytes = std::fs::read(path).expect("the trace made on the GPU");
            super::super::read(name, &bytes[..]).expect("recognised").expect("read")
        };
        let (two, fused) = (read("decode_16.json.gz"), read("decode_16_fused.json.gz"));
        assert_eq!(value(&two, "collective_calls_per_step", None), Some(32.0));
        assert_eq!(value(&fused, "collective_calls_per_step", None), Some(16.0));
        // Its short name is cut at 96 characters: found by what it starts with.
        let copy = |r: &Report| {
            let key = |m: &domain::metrics::Measurement| m.key.clone().unwrap_or_default();
            r.measurements
                .iter()
                .find(|m| {
                    m.metric == "kernel_calls_per_step" && key(m).starts_with("kernel=at::native::CatArrayBatchedCopy")
                })
                .map(|m| m.value)
        };
        assert_eq!(copy(&fused), Some(16.0));
        assert_eq!(copy(&two), None, "the unfused loop copies nothing");
    }

    #[test]
    fn a_bare_event_array_and_hostile_names() {
        let text = r#"[{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 0, "dur": 100},
            {"ph": "X", "cat": "kernel", "name": "<script>alert(1)</script>nccl", "ts": 10, "dur": 40},
            {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 60, "dur": NaN},
            {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 60, "dur": 1e308}]"#;
        let r = super::super::read("t.json", text.as_bytes()).expect("recognised").expect("read");
        assert_eq!(value(&r, "collective_calls_per_step", None), Some(1.0));
        assert!(r.measurements.iter().all(|m| m.value.is_finite()), "{:?}", r.measurements);
    }
}
