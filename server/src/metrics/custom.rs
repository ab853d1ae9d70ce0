//! Extractors people define for their own output: a name, a regex with one
//! capture group (the number) and a unit. Each match is a measurement.

use super::found::number;
use domain::error::ApiError;
use domain::metrics::Measurement;
use regex::Regex;

/// Longest pattern accepted; regex's own size limits bound the compiled form.

#[derive(Debug)]
pub struct Extractor {
    name: String,
    regex: Regex,
    unit: String,
}

impl Extractor {
    pub fn new(name: &str, pattern: &str, unit: &str) -> Result<Self, ApiError> {
        let name = name.trim();
        if name.is_empty()
            || name.len() > 80
            || !name.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
        {
            return Err(ApiError::invalid("An extractor name is 1–80 letters, digits, `_`, `-` or `.`."));
        }
        let regex = crate::user_regex::compile(pattern, true)
            .map_err(|e| ApiError::invalid(format!("The pattern is not a valid regex: {e}")))?;
        if regex.captures_len() != 2 {
            return Err(ApiError::invalid(
                "The pattern needs exactly one capture group: the number, e.g. `decode throughput: ([\\d.]+) tok/s`.",
            ));
        }
        Ok(Self { name: name.to_string(), regex, unit: unit.trim().to_string() })
    }

    pub fn extract(&self, text: &str) -> Vec<Measurement> {
        let values: Vec<f64> =
            self.regex.captures_iter(text).filter_map(|c| c.get(1)).filter_map(|m| number(m.as_str())).collect();
        let several = values.len() > 1;
        values
            .into_iter()
            .enumerate()
            .map(|(i, value)| Measurement {
                metric: self.name.clone(),
                value,
                unit: self.unit.clone(),
                extractor: format!("custom:{}", self.name),
                stddev: None,
                key: several.then(|| format!("#{}", i + 1)),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_real_decode_log_gives_one_value_per_batch() {
        let decode = Extractor::new("decode_throughput", r"decode throughput: ([\d.]+) tok/s", "tok/s").unwrap();
        let found = decode.extract(&crate::fixtures::read("gpu-host-h200x2/decode.log"));
        let values: Vec<f64> = found.iter().map(|m| m.value).collect();
        assert_eq!(values, [18.15, 156.37, 625.35]);
        assert_eq!(found[2].key.as_deref(), Some("#3"));
        assert_eq!(found[0].extractor, "custom:decode_throughput");
    }

    #[test]
    fn bad_definitions_say_why() {
        assert!(Extractor::new("x", "(unclosed", "s").unwrap_err().message.contains("not a valid regex"));
        assert!(Extractor::new("x", r"\d+", "s").unwrap_err().message.contains("one capture group"));
        assert!(Extractor::new("x y", r"(\d+)", "s").is_err());
        assert!(Extractor::new("x", r"(\d+) (\d+)", "s").is_err());
    }
}
