//! Reading what `nvidia-smi` prints while it samples: the CSV of `--query-gpu …
//! --format=csv[,nounits] -lms N` (a header once, then a line per GPU per
//! sample) and the table of `nvidia-smi dmon` (`#` header lines, repeated now
//! and then, then whitespace-separated columns). Both are read by their
//! headers, not by position, so other field selections and driver versions
//! that add columns still parse; values that a GPU does not report (`[N/A]`,
//! `[Not Supported]`, dmon's `-`) are `None`, never 0.

use domain::telemetry::ClockReasons;
use std::collections::HashMap;

/// One GPU's reading from a line of either format.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reading {
    pub gpu: u32,
    pub name: Option<String>,
    pub gpu_util: Option<f64>,
    pub mem_util: Option<f64>,
    pub mem_used_mib: Option<f64>,
    pub power_w: Option<f64>,
    pub sm_clock_mhz: Option<f64>,
    pub mem_clock_mhz: Option<f64>,
    pub temp_c: Option<f64>,
    pub pcie_rx_mbs: Option<f64>,
    pub pcie_tx_mbs: Option<f64>,
    /// The GPU's highest SM clock (`clocks.max.sm`).
    pub sm_clock_max_mhz: Option<f64>,
    /// Why its clocks are held where they are (`clocks_event_reasons.active`,
    /// once `clocks_throttle_reasons.active`).
    pub clock_reasons: Option<ClockReasons>,
}

/// A number as nvidia-smi prints it: `71 %`, `247.87 W`, `7087 MiB`, `71`; the
/// unavailable markers are `None`.
fn number(field: &str) -> Option<f64> {
    let field = field.trim();
    let digits = field.split_whitespace().next()?;
    digits.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// The field name of a CSV header cell: `utilization.gpu [%]` → `utilization.gpu`.
fn header_name(cell: &str) -> String {
    cell.split(" [").next().unwrap_or(cell).trim().to_ascii_lowercase()
}

/// The query CSV's columns, from its header line.
#[derive(Clone, Debug, Default)]
pub struct QueryColumns(HashMap<String, usize>);

impl QueryColumns {
    /// `Some` when `line` is the header (it names `index`).
    pub fn from_header(line: &str) -> Option<Self> {
        let names: Vec<String> = line.split(',').map(header_name).collect();
        names.iter().any(|n| n == "index").then(|| Self(names.into_iter().enumerate().map(|(i, n)| (n, i)).collect()))
    }

    fn find(&self, names: &[&str]) -> Option<usize> {
        names.iter().find_map(|n| self.0.get(*n).copied())
    }

    /// One data line. `name` is read as the rest of the line when it is the last
    /// column (GPU names could hold commas).
    pub fn reading(&self, line: &str) -> Option<Reading> {
        let count = self.0.len();
        let fields: Vec<&str> = line.splitn(count, ',').map(str::trim).collect();
        if fields.len() < count {
            return None;
        }
        let get = |names: &[&str]| self.find(names).and_then(|i| fields.get(i)).copied();
        let value = |names: &[&str]| get(names).and_then(number);
        let gpu = get(&["index"]).and_then(|i| i.parse().ok())?;
        Some(Reading {
            gpu,
            name: get(&["name", "gpu_name"]).map(str::to_string),
            gpu_util: value(&["utilization.gpu"]),
            mem_util: value(&["utilization.memory"]),
            mem_used_mib: value(&["memory.used"]),
            power_w: value(&["power.draw", "power.draw.instant"]),
            sm_clock_mhz: value(&["clocks.sm", "clocks.current.sm"]),
            mem_clock_mhz: value(&["clocks.mem", "clocks.current.memory"]),
            temp_c: value(&["temperature.gpu"]),
            sm_clock_max_mhz: value(&["clocks.max.sm", "clocks.max.sm_clock"]),
            clock_reasons: get(&["clocks_event_reasons.active", "clocks_throttle_reasons.active"])
                .and_then(ClockReasons::parse),
            ..Reading::default()
        })
    }
}

/// dmon's columns, from its first `#` header line (`# gpu pwr gtemp … rxpci txpci`).
#[derive(Clone, Debug, Default)]
pub struct DmonColumns(HashMap<String, usize>);

impl DmonColumns {
    pub fn from_header(line: &str) -> Option<Self> {
        let rest = line.trim_start().strip_prefix('#')?;
        let names: Vec<String> = rest.split_whitespace().map(str::to_ascii_lowercase).collect();
        (names.first().map(String::as_str) == Some("gpu"))
            .then(|| Self(names.into_iter().enumerate().map(|(i, n)| (n, i)).collect()))
    }

    pub fn reading(&self, line: &str) -> Option<Reading> {
        if line.trim_start().starts_with('#') {
            return None;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < self.0.len() {
            return None;
        }
        let value = |name: &str| self.0.get(name).and_then(|i| fields.get(*i)).and_then(|f| number(f));
        let gpu = fields.first()?.parse().ok()?;
        Some(Reading {
            gpu,
            gpu_util: value("sm"),
            mem_util: value("mem"),
            // dmon's `fb` is framebuffer memory in use, MB.
            mem_used_mib: value("fb"),
            power_w: value("pwr"),
            sm_clock_mhz: value("pclk"),
            mem_clock_mhz: value("mclk"),
            temp_c: value("gtemp"),
            pcie_rx_mbs: value("rxpci"),
            pcie_tx_mbs: value("txpci"),
            ..Reading::default()
        })
    }
}

/// Reads a whole text of either format (fixtures, tests): every reading in order.
pub fn readings(text: &str) -> Vec<Reading> {
    let (mut query, mut dmon) = (None::<QueryColumns>, None::<DmonColumns>);
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        if let Some(columns) = DmonColumns::from_header(line) {
            dmon = Some(columns);
        } else if line.trim_start().starts_with('#') {
            continue;
        } else if let Some(columns) = QueryColumns::from_header(line) {
            query = Some(columns);
        } else if let Some(reading) = query.as_ref().and_then(|q| q.reading(line)) {
            out.push(reading);
        } else if let Some(reading) = dmon.as_ref().and_then(|d| d.reading(line)) {
            out.push(reading);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    #[test]
    fn the_query_loop_of_an_h200_idle_then_loaded() {
        let all = readings(&fixtures::read("gpu-host-h200/nvidia-smi-query-loop.csv"));
        let lines = fixtures::read("gpu-host-h200/nvidia-smi-query-loop.csv").lines().count() - 1;
        assert_eq!(all.len(), lines, "every data line read");
        let idle = &all[0];
        assert_eq!((idle.gpu, idle.gpu_util, idle.mem_util), (0, Some(0.0), Some(0.0)));
        assert_eq!((idle.power_w, idle.sm_clock_mhz, idle.mem_clock_mhz), (Some(114.11), Some(375.0), Some(3201.0)));
        assert_eq!((idle.mem_used_mib, idle.temp_c), (Some(0.0), Some(37.0)));
        let loaded = all.iter().find(|r| r.gpu_util == Some(71.0)).expect("a loaded sample");
        assert_eq!((loaded.mem_util, loaded.mem_used_mib), (Some(59.0), Some(7087.0)));
        assert_eq!(loaded.power_w, Some(247.87));
        assert!(all.iter().all(|r| r.pcie_rx_mbs.is_none()), "the query loop has no PCIe throughput");
    }

    #[test]
    fn dmon_by_its_header() {
        let all = readings(&fixtures::read("gpu-host-h200/nvidia-smi-dmon.txt"));
        assert!(all.len() >= 10, "{}", all.len());
        let loaded = all.iter().find(|r| r.gpu_util == Some(71.0)).expect("a loaded line");
        assert_eq!((loaded.power_w, loaded.mem_util, loaded.mem_used_mib), (Some(340.0), Some(60.0), Some(7087.0)));
        assert_eq!((loaded.pcie_rx_mbs, loaded.pcie_tx_mbs), (Some(162.0), Some(24.0)));
        assert_eq!(
            (loaded.sm_clock_mhz, loaded.mem_clock_mhz, loaded.temp_c),
            (Some(1980.0), Some(3201.0), Some(42.0))
        );
    }

    #[test]
    fn what_a_gpu_does_not_report_is_absent_not_zero() {
        let text = "index, name, utilization.gpu [%], power.draw [W], clocks.sm [MHz]\n\
                    0, NVIDIA A100-SXM4-80GB, 12, [N/A], [Not Supported]\n\
                    1, Tesla T4, junk, 70.1 W, 1590 MHz\n\
                    2, too, few\n";
        let all = readings(text);
        assert_eq!(all.len(), 2, "a cut line is skipped: {all:?}");
        assert_eq!(all[0].name.as_deref(), Some("NVIDIA A100-SXM4-80GB"));
        assert_eq!((all[0].gpu_util, all[0].power_w, all[0].sm_clock_mhz), (Some(12.0), None, None));
        assert_eq!((all[1].gpu_util, all[1].power_w, all[1].sm_clock_mhz), (None, Some(70.1), Some(1590.0)));
        let held = "index, clocks.sm [MHz], clocks.max.sm [MHz], clocks_throttle_reasons.active\n\
                    0, 1410, 1980, 0x0000000000000044\n1, 345, 1980, 0x0000000000000001\n2, 1980, 1980, [N/A]\n";
        let all = readings(held);
        assert_eq!(
            all.iter().map(|r| r.clock_reasons).collect::<Vec<_>>(),
            [Some(ClockReasons(0x44)), Some(ClockReasons(0x1)), None]
        );
        assert_eq!(all[0].sm_clock_max_mhz, Some(1980.0));
        assert!(ClockReasons(0x44).holding() && !ClockReasons(0x1).holding() && !ClockReasons(0x10).holding());
        assert_eq!(ClockReasons(0x45).describe(), "SW power cap, HW thermal slowdown");
        assert!(ClockReasons(0x4).power_cap_only() && !ClockReasons(0x44).power_cap_only());
        let dmon = "# gpu  rxpci  txpci\n# Idx   MB/s   MB/s\n    0      -     12\n    1     33\n";
        let all = readings(dmon);
        assert_eq!(all.len(), 1, "{all:?}");
        assert_eq!((all[0].pcie_rx_mbs, all[0].pcie_tx_mbs), (None, Some(12.0)));
    }
}
