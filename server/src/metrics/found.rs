//! What extractors make of text: numbers as tools print them, labels as metric
//! names, and measurements.

use domain::metrics::Measurement;

/// A label as a metric name: `Peak concurrent requests` → `peak_concurrent_requests`.
pub fn slug(label: &str) -> String {
    let mut out = String::with_capacity(label.len());
    for c in label.trim().chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('_') && !out.is_empty() {
            out.push('_');
        }
    }
    out.trim_end_matches('_').to_string()
}

/// A number as tools print it (`1049.39`, `3.50`, `1e-3`, `1,234.5`).
pub fn number(text: &str) -> Option<f64> {
    let cleaned: String = text.trim().chars().filter(|c| *c != ',').collect();
    cleaned.parse::<f64>().ok().filter(|v| v.is_finite())
}

pub fn measurement(metric: impl Into<String>, value: f64, unit: &str, extractor: &str) -> Measurement {
    Measurement {
        metric: metric.into(),
        value,
        unit: unit.into(),
        extractor: extractor.into(),
        stddev: None,
        key: None,
    }
}
