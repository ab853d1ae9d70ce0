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

/// NVML's clock event reasons (`nvmlClocksEventReasons`), as bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClockReasons(pub u64);

impl ClockReasons {
    const NAMES: [(u64, &'static str); 9] = [
        (0x1, "idle"),
        (0x2, "applications clocks setting"),
        (0x4, "SW power cap"),
        (0x8, "HW slowdown"),
        (0x10, "sync boost"),
        (0x20, "SW thermal slowdown"),
        (0x40, "HW thermal slowdown"),
        (0x80, "HW power brake"),
        (0x100, "display clock setting"),
    ];
    /// The reasons that hold a busy GPU below its clock: power and heat, and
    /// clocks set lower by hand. Idle, sync boost and display are not a hazard.
    const HOLDING: u64 = 0x2 | 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

    /// `0x0000000000000004` as nvidia-smi prints it (`[N/A]` is `None`).
    pub fn parse(field: &str) -> Option<ClockReasons> {
        let field = field.trim();
        let hex = field.strip_prefix("0x").or_else(|| field.strip_prefix("0X"))?;
        u64::from_str_radix(hex, 16).ok().map(ClockReasons)
    }

    /// Whether any of them holds the clocks of a GPU at work down.
    pub fn holding(self) -> bool {
        self.0 & Self::HOLDING != 0
    }

    /// Held by the power cap alone: a GPU at full load does that by design;
    /// it is a hazard only where one arm hits it and the other does not.
    pub fn power_cap_only(self) -> bool {
        self.0 & Self::HOLDING == 0x4
    }

    /// "SW power cap, HW thermal slowdown" (those that hold clocks down).
    pub fn describe(self) -> String {
        let named: Vec<&str> =
            Self::NAMES.iter().filter(|(bit, _)| self.0 & bit & Self::HOLDING != 0).map(|(_, n)| *n).collect();
        named.join(", ")
    }
}
