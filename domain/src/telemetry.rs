//! GPU telemetry sampled while a run goes (`nvidia-smi` on the run's host, on a
//! second channel of the same connection): the series per GPU, as
//! `GET /api/v1/runs/{id}/telemetry` answers and the run's charts draw.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Telemetry {
    pub gpus: Vec<GpuSeries>,
    /// Why there is less than expected: no `nvidia-smi` on the host, a sampler
    /// that failed, sampling turned off for the step.
    pub notes: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct GpuSeries {
    pub index: u32,
    pub name: String,
    pub samples: Vec<Sample>,
}

/// One reading of one GPU. `t_ms` counts from the run's start, as the output's
/// chunk times do; a field the GPU or driver does not report is absent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Sample {
    pub t_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_util: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_util: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_used_mib: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_w: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_clock_mhz: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_clock_mhz: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temp_c: Option<f64>,
    /// PCIe throughput (`nvidia-smi dmon`), MB/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie_rx_mbs: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie_tx_mbs: Option<f64>,
}
