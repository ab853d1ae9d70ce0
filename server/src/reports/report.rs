//! What a reader makes of a file: measurements, per-request samples, the
//! fields it does not know, and notes (a leaf: the readers and `mod.rs` use it).

use crate::metrics::measurement;
use domain::metrics::Measurement;
use domain::runs::ReportFormat;

/// Per-request values of one metric, in request order (so columns of one key
/// line up request by request: a goodput counts requests meeting every bound).
#[derive(Clone, Debug, PartialEq)]
pub struct Samples {
    /// `ttft_ms`, `tpot_ms`, `itl_ms`, `e2el_ms`.
    pub metric: String,
    pub unit: String,
    pub key: Option<String>,
    pub values: Vec<f64>,
    /// Whether the values are one per request, in the same order as the other
    /// columns of the key (ITLs are per token, and only a sample of them).
    pub per_request: bool,
}

/// What a reader made of one file.
#[derive(Debug)]
pub struct Report {
    /// Which reader.
    pub format: ReportFormat,
    pub measurements: Vec<Measurement>,
    pub samples: Vec<Samples>,
    /// Fields no reader knows, kept as they were (`gpu`, `deployment`…).
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// What was skipped or could not be read, in words.
    pub notes: Vec<String>,
    /// Each request's start (seconds after the first's) and TTFT (ms), in
    /// request order, where the tool kept start times (`--save-detailed`).
    pub requests: Vec<(f64, f64)>,
}

impl Report {
    pub fn new(format: ReportFormat) -> Self {
        Self {
            format,
            measurements: Vec::new(),
            samples: Vec::new(),
            metadata: serde_json::Map::new(),
            notes: Vec::new(),
            requests: Vec::new(),
        }
    }

    pub fn add(&mut self, metric: impl Into<String>, value: f64, unit: &str, key: Option<&str>) {
        if value.is_finite() {
            let mut m = measurement(metric, value, unit, self.format.as_str());
            m.key = key.map(str::to_string);
            self.measurements.push(m);
        }
    }

    pub fn samples(&mut self, metric: &str, unit: &str, key: Option<&str>, values: Vec<f64>, per_request: bool) {
        if !values.is_empty() {
            let key = key.map(str::to_string);
            self.samples.push(Samples { metric: metric.into(), unit: unit.into(), key, values, per_request });
        }
    }
}

/// A recognised file that could not be read: a note on the run.
pub type Broken = super::error::ReadError;

/// Up to `cap` values of a stream too long to keep, each equally likely to be
/// kept (reservoir sampling, seeded: the same file keeps the same values).
pub struct Reservoir {
    pub seen: u64,
    pub kept: Vec<f64>,
    cap: usize,
    state: u64,
}

impl Reservoir {
    pub fn new(cap: usize) -> Self {
        Self { seen: 0, kept: Vec::new(), cap, state: 0x5EED }
    }

    pub fn push(&mut self, value: f64) {
        if !value.is_finite() {
            return;
        }
        self.seen += 1;
        if self.kept.len() < self.cap {
            self.kept.push(value);
            return;
        }
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        let at = (z ^ (z >> 31)) % self.seen;
        if let Some(slot) = self.kept.get_mut(at as usize) {
            *slot = value;
        }
    }
}
