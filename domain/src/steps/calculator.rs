//! Calculator steps: the back-of-the-envelope numbers that decide where to look.
//! - bandwidth roofline: is decode limited by reading the weights from HBM?
//! - collective budget: how much of a token's time goes to allreduces?
//!
//! The arithmetic is here (shared), so the server renders results and the page
//! shows them without JavaScript.

use crate::error::ApiError;
use serde::{Deserialize, Serialize};

/// Peak HBM bandwidth per GPU, TB/s, from the vendors' data sheets.
pub const GPU_PRESETS: [(&str, f64); 5] =
    [("H200", 4.8), ("H100 SXM", 3.35), ("A100 80GB", 2.0), ("RTX PRO 6000 Blackwell", 1.79), ("MI300X", 5.3)];

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(tag = "calculator", rename_all = "snake_case")]
pub enum CalculatorBody {
    Bandwidth(Bandwidth),
    Collective(Collective),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Bandwidth {
    /// A preset's name, or `custom` with `peak_tb_s`.
    pub gpu: String,
    #[serde(default)]
    pub peak_tb_s: Option<f64>,
    /// GPUs the weights are split over (tensor parallel size).
    pub gpus: u32,
    /// Bytes read per token, as the weights' size in GB…
    #[serde(default)]
    pub weights_gb: Option<f64>,
    /// …or, for MoE, active parameters (billions) × bytes per parameter.
    #[serde(default)]
    pub active_params_b: Option<f64>,
    #[serde(default)]
    pub bytes_per_param: Option<f64>,
    /// Measured decode speed (copied from `tok_s_from` when that is given).
    #[serde(default)]
    pub tok_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tok_s_from: Option<MeasuredFrom>,
    /// What nvidia-smi said of the memory while the run went (`mem_util_mean`
    /// of its telemetry: the share of time memory was read or written), shown
    /// beside the estimate; copied from `mem_util_from` when that is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_util_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_util_from: Option<MeasuredFrom>,
}

/// A calculator input taken from a measurement of the investigation. The value
/// is copied into the step when it is saved, so the step reads the same later
/// even if the run's output is extracted again; this keeps where it came from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct MeasuredFrom {
    /// The measurement's id when the step was saved (the only field a client sends).
    pub measurement: i64,
    /// Filled in by the server:
    #[serde(default)]
    pub metric: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<i64>,
    /// The value and unit as measured (before conversion to the input's unit).
    #[serde(default)]
    pub value: f64,
    #[serde(default)]
    pub unit: String,
}

impl CalculatorBody {
    /// The same inputs, without saying which measurements they came from (a
    /// copy in another investigation, whose measurements those are not).
    pub fn without_sources(mut self) -> Self {
        match &mut self {
            Self::Bandwidth(b) => {
                b.tok_s_from = None;
                b.mem_util_from = None;
            }
            Self::Collective(c) => {
                c.latency_from = None;
                c.tok_s_from = None;
            }
        }
        self
    }
}

impl MeasuredFrom {
    /// "output_throughput of run #12", for the step's input table.
    pub fn describe(&self) -> String {
        let key = self.key.as_ref().map(|k| format!(" at {k}")).unwrap_or_default();
        match self.run {
            Some(run) => format!("{}{key} of run #{run}", self.metric),
            None => format!("{}{key} (entered by hand)", self.metric),
        }
    }

    /// Where it links: the run's step.
    pub fn href(&self) -> Option<String> {
        self.step.map(|s| format!("#step-{s}"))
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Collective {
    pub layers: u32,
    /// 2 for attention + MLP/MoE.
    pub per_layer: u32,
    /// Latency of one collective, µs (e.g. from an all-reduce sweep at the message size).
    #[serde(default)]
    pub latency_us: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_from: Option<MeasuredFrom>,
    /// Measured decode speed, for the share of a token's time.
    #[serde(default)]
    pub tok_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tok_s_from: Option<MeasuredFrom>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct BandwidthResult {
    pub peak_gb_s: f64,
    pub bytes_per_token_per_gpu: f64,
    pub ms_per_token: f64,
    pub achieved_gb_s: f64,
    pub pct_of_peak: f64,
    pub ceiling_tok_s: f64,
    /// The measured memory utilisation beside the estimate, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_mem_util_pct: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct CollectiveResult {
    pub calls_per_token: u32,
    pub ms_per_token: f64,
    /// Share of the token time, percent, when the speed is known.
    pub share_pct: Option<f64>,
    /// What a profile of a run measured (an nsys kernel summary or a PyTorch
    /// trace among its artifacts), beside the prediction: the investigation's newest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<ProfileMeasured>,
}

/// Collectives per decode step as a profile measured them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct ProfileMeasured {
    pub run: i64,
    pub calls_per_step: f64,
    /// Share of a step's time (or of GPU time, without step times) in collectives.
    pub share_pct: Option<f64>,
    pub step_ms: Option<f64>,
}

impl Bandwidth {
    pub fn peak_tb_s(&self) -> Option<f64> {
        GPU_PRESETS.iter().find(|(name, _)| *name == self.gpu).map(|(_, tb)| *tb).or(self.peak_tb_s)
    }

    /// Bytes each GPU reads per token.
    pub fn bytes_per_token_per_gpu(&self) -> Option<f64> {
        let total = match (self.weights_gb, self.active_params_b, self.bytes_per_param) {
            (Some(gb), _, _) => gb * 1e9,
            (None, Some(params), Some(bytes)) => params * 1e9 * bytes,
            _ => return None,
        };
        Some(total / f64::from(self.gpus.max(1)))
    }

    pub fn check(&self) -> Result<(), ApiError> {
        let positive = |x: Option<f64>| x.is_none_or(|x| x.is_finite() && x > 0.0);
        if self.peak_tb_s().is_none_or(|p| !(p.is_finite() && p > 0.0)) {
            return Err(ApiError::invalid("Choose a GPU, or `custom` with its peak bandwidth in TB/s."));
        }
        if self.gpus == 0 || self.gpus > 1024 {
            return Err(ApiError::invalid("The GPU count is 1–1024."));
        }
        if ![self.weights_gb, self.active_params_b, self.bytes_per_param].into_iter().all(positive) {
            return Err(ApiError::invalid("Sizes must be positive numbers."));
        }
        if self.bytes_per_token_per_gpu().is_none() {
            return Err(ApiError::invalid(
                "Give the bytes read per token: the weights in GB, or active parameters and bytes per parameter.",
            ));
        }
        if !(self.tok_s.is_finite() && self.tok_s > 0.0) {
            return Err(ApiError::invalid(
                "The measured speed must be a positive number of tok/s (type it, or choose a measurement).",
            ));
        }
        if self.mem_util_pct.is_some_and(|p| !(p.is_finite() && (0.0..=100.0).contains(&p))) {
            return Err(ApiError::invalid("The measured memory utilisation is a percentage, 0 to 100."));
        }
        Ok(())
    }

    pub fn result(&self) -> Option<BandwidthResult> {
        let peak_gb_s = self.peak_tb_s()? * 1000.0;
        let bytes = self.bytes_per_token_per_gpu()?;
        let achieved_gb_s = bytes * self.tok_s / 1e9;
        Some(BandwidthResult {
            peak_gb_s,
            bytes_per_token_per_gpu: bytes,
            ms_per_token: 1000.0 / self.tok_s,
            achieved_gb_s,
            pct_of_peak: achieved_gb_s / peak_gb_s * 100.0,
            ceiling_tok_s: peak_gb_s * 1e9 / bytes,
            measured_mem_util_pct: self.mem_util_pct,
        })
    }
}

impl Collective {
    pub fn check(&self) -> Result<(), ApiError> {
        if self.layers == 0 || self.layers > 10_000 || self.per_layer == 0 || self.per_layer > 100 {
            return Err(ApiError::invalid("Layers are 1–10 000 and collectives per layer 1–100."));
        }
        if !(self.latency_us.is_finite() && self.latency_us > 0.0) {
            return Err(ApiError::invalid(
                "The latency of one collective must be a positive number of µs (type it, or choose a measurement).",
            ));
        }
        if self.tok_s.is_some_and(|t| !(t.is_finite() && t > 0.0)) {
            return Err(ApiError::invalid("The measured speed must be a positive number of tok/s."));
        }
        Ok(())
    }

    pub fn result(&self) -> CollectiveResult {
        let calls_per_token = self.layers * self.per_layer;
        let ms_per_token = f64::from(calls_per_token) * self.latency_us / 1000.0;
        CollectiveResult {
            calls_per_token,
            ms_per_token,
            share_pct: self.tok_s.map(|t| ms_per_token / (1000.0 / t) * 100.0),
            measured: None,
        }
    }
}

/// A calculator step's results, as its JSON carries them (`results`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum CalculatorResults {
    Bandwidth(BandwidthResult),
    Collective(CollectiveResult),
}

impl CalculatorBody {
    /// Its results (`None` for a roofline whose inputs do not add up).
    pub fn results(&self) -> Option<CalculatorResults> {
        match self {
            Self::Bandwidth(b) => b.result().map(CalculatorResults::Bandwidth),
            Self::Collective(c) => Some(CalculatorResults::Collective(c.result())),
        }
    }

    pub fn check(&self) -> Result<(), ApiError> {
        match self {
            Self::Bandwidth(b) => b.check(),
            Self::Collective(c) => c.check(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The story's numbers: 57.5 tok/s is 17.4 ms per token; ~200 of 1500 GB/s is 13 %.
    #[test]
    fn the_story_checks_out() {
        let b = Bandwidth {
            gpu: "custom".into(),
            peak_tb_s: Some(1.5),
            gpus: 8,
            weights_gb: Some(27.83),
            active_params_b: None,
            bytes_per_param: None,
            tok_s: 57.5,
            tok_s_from: None,
            mem_util_pct: None,
            mem_util_from: None,
        };
        b.check().unwrap();
        let r = b.result().unwrap();
        assert!((r.ms_per_token - 17.39).abs() < 0.01, "{r:?}");
        assert!((r.achieved_gb_s - 200.0).abs() < 0.1, "{r:?}");
        assert_eq!(format!("{:.0}", r.pct_of_peak), "13");
        assert!((r.ceiling_tok_s - 431.2).abs() < 0.1, "{r:?}");

        let c = Collective {
            layers: 78,
            per_layer: 2,
            latency_us: 40.0,
            latency_from: None,
            tok_s: Some(57.5),
            tok_s_from: None,
        };
        let r = c.result();
        assert_eq!(r.calls_per_token, 156);
        assert!((r.ms_per_token - 6.24).abs() < 1e-9);
        assert!((r.share_pct.unwrap() - 35.88).abs() < 0.01, "{r:?}");
    }

    #[test]
    fn moe_bytes_and_presets() {
        let b = Bandwidth {
            gpu: "H200".into(),
            peak_tb_s: None,
            gpus: 8,
            weights_gb: None,
            active_params_b: Some(37.0),
            bytes_per_param: Some(1.0),
            tok_s: 100.0,
            tok_s_from: None,
            mem_util_pct: None,
            mem_util_from: None,
        };
        assert_eq!(b.peak_tb_s(), Some(4.8));
        assert_eq!(b.bytes_per_token_per_gpu(), Some(37e9 / 8.0));
        let mut bad = b.clone();
        bad.active_params_b = None;
        assert!(bad.check().is_err());
        bad.gpu = "custom".into();
        assert!(bad.check().unwrap_err().message.contains("custom"));
    }
}
