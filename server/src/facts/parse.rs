//! Parsers for what a GPU host says about itself: `nvidia-smi --query-gpu … --format=csv`,
//! `nvidia-smi topo -m` and `lscpu`. Labels are matched by name, never by position.

use domain::hosts::{GpuFact, Topology};

/// `index, name, memory.total [MiB], driver_version, pcie.link.gen.current, …` with a header.
pub fn gpu_csv(text: &str) -> (Vec<GpuFact>, Option<String>) {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let Some(header) = lines.next() else { return (Vec::new(), None) };
    let columns: Vec<String> =
        header.split(',').map(|c| c.trim().split(' ').next().unwrap_or("").to_lowercase()).collect();
    let at = |name: &str| columns.iter().position(|c| c == name);
    let (index, name, memory, driver, gen_, width) = (
        at("index"),
        at("name"),
        at("memory.total"),
        at("driver_version"),
        at("pcie.link.gen.current"),
        at("pcie.link.width.current"),
    );
    let mut gpus = Vec::new();
    let mut driver_version = None;
    for line in lines {
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        let cell = |i: Option<usize>| i.and_then(|i| cells.get(i)).copied();
        let number = |i: Option<usize>| cell(i).and_then(|c| c.split_whitespace().next()).and_then(|n| n.parse().ok());
        let (Some(i), Some(n)) = (number(index), cell(name)) else { continue };
        if driver_version.is_none() {
            driver_version = cell(driver).map(str::to_string);
        }
        gpus.push(GpuFact {
            index: u32::try_from(i).unwrap_or(0),
            name: n.to_string(),
            memory_mib: number(memory),
            pcie_gen: number(gen_).and_then(|g| u32::try_from(g).ok()),
            pcie_width: number(width).and_then(|w| u32::try_from(w).ok()),
        });
    }
    (gpus, driver_version)
}

fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ parameters final-byte
            if chars.peek() == Some(&'[') {
                chars.next();
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// The device-to-device part of `nvidia-smi topo -m` (GPUs and NICs).
pub fn topology(text: &str) -> Option<Topology> {
    let text = strip_ansi(text);
    let mut lines = text.lines();
    let header = lines.find(|l| l.contains("GPU0"))?;
    let devices: Vec<String> = header
        .split('\t')
        .map(str::trim)
        .filter(|c| {
            (c.starts_with("GPU") || c.starts_with("NIC")) && c[3..].chars().all(|d| d.is_ascii_digit()) && c.len() > 3
        })
        .map(str::to_string)
        .collect();
    let mut links = Vec::new();
    for line in lines {
        let cells: Vec<&str> = line.split('\t').map(str::trim).collect();
        match cells.first() {
            Some(name) if devices.iter().any(|d| d == name) => {
                links.push(cells.iter().skip(1).take(devices.len()).map(|c| c.to_string()).collect());
            }
            _ if !links.is_empty() => break,
            _ => {}
        }
    }
    (!devices.is_empty() && links.len() == devices.len()).then_some(Topology { devices, links })
}

/// In words, how the GPUs talk to each other — the crux for collectives.
pub fn interconnect(topology: &Topology) -> Option<String> {
    let mut kinds: Vec<String> = Vec::new();
    for (_, _, link) in topology.gpu_pairs() {
        let link = link?.to_string();
        if !kinds.contains(&link) {
            kinds.push(link);
        }
    }
    let gpus = topology.gpu_count();
    if kinds.is_empty() {
        return None;
    }
    let nvlink = kinds.iter().all(|k| k.starts_with("NV"));
    let none = kinds.iter().all(|k| !k.starts_with("NV"));
    Some(if nvlink {
        format!("NVLink between all {gpus} GPUs ({})", kinds.join(", "))
    } else if none {
        format!("PCIe only between {gpus} GPUs ({})", kinds.join(", "))
    } else {
        format!("mixed NVLink and PCIe between {gpus} GPUs ({})", kinds.join(", "))
    })
}

/// `lscpu`'s `Model name`, `Socket(s)` and `NUMA node(s)`.
pub fn lscpu(text: &str) -> (Option<String>, Option<u32>, Option<u32>) {
    let field = |name: &str| {
        text.lines().find_map(|l| {
            l.split_once(':').filter(|(k, _)| k.trim().eq_ignore_ascii_case(name)).map(|(_, v)| v.trim().to_string())
        })
    };
    (
        field("Model name"),
        field("Socket(s)").and_then(|s| s.parse().ok()),
        field("NUMA node(s)").and_then(|s| s.parse().ok()),
    )
}

/// How many bridges' ACS redirects peer requests (`ACSCtl: … ReqRedir+` or
/// `CmpltRedir+`), from `lspci -vvv`'s ACS lines ending with `done`; `None`
/// where lspci did not run or could not read the capabilities (not root).
pub fn acs_redirecting(text: &str, done: &str) -> Option<u32> {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    if !lines.contains(&done) {
        return None;
    }
    let controls: Vec<&&str> = lines.iter().filter(|l| l.starts_with("ACSCtl:")).collect();
    if controls.is_empty() && lines.iter().any(|l| l.contains("access denied")) {
        return None;
    }
    let redirecting = controls.iter().filter(|l| l.contains("ReqRedir+") || l.contains("CmpltRedir+")).count();
    u32::try_from(redirecting).ok()
}

/// `CUDA Version : 13.0` from `nvidia-smi` (or `-q`).
pub fn cuda_version(text: &str) -> Option<String> {
    let at = text.find("CUDA Version")?;
    let rest = &text[at + "CUDA Version".len()..];
    let rest = rest.trim_start_matches([' ', ':']);
    rest.split_whitespace().next().map(|v| v.trim_end_matches('|').to_string()).filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_real_h200_host() {
        let (gpus, driver) = gpu_csv(&crate::fixtures::read("gpu-host-h200x2/nvidia-smi-query.csv"));
        assert_eq!(gpus.len(), 2);
        assert_eq!(
            gpus[1],
            GpuFact {
                index: 1,
                name: "NVIDIA H200".into(),
                memory_mib: Some(143771),
                pcie_gen: Some(5),
                pcie_width: Some(16)
            }
        );
        assert_eq!(driver.as_deref(), Some("580.159.04"));
        let topo = topology(&crate::fixtures::read("gpu-host-h200x2/nvidia-smi-topo.txt")).unwrap();
        assert_eq!(topo.devices, ["GPU0", "GPU1"]);
        assert_eq!(topo.links, [vec!["X".to_string(), "NV18".into()], vec!["NV18".to_string(), "X".into()]]);
        assert_eq!(interconnect(&topo).as_deref(), Some("NVLink between all 2 GPUs (NV18)"));
        assert_eq!(cuda_version(&crate::fixtures::read("gpu-host-h200x2/nvidia-smi-q.txt")).as_deref(), Some("13.0"));
    }

    #[test]
    fn eight_pcie_gpus_say_so() {
        let mut text = String::from("\tGPU0\tGPU1\tGPU2\tCPU Affinity\tNUMA Affinity\n");
        text.push_str(
            "GPU0\t X \tPIX\tSYS\t0-31\t0\nGPU1\tPIX\t X \tSYS\t0-31\t0\nGPU2\tSYS\tSYS\t X \t32-63\t1\n\nLegend:\n",
        );
        let topo = topology(&text).unwrap();
        assert_eq!(interconnect(&topo).as_deref(), Some("PCIe only between 3 GPUs (PIX, SYS)"));
        assert!(topology("nvidia-smi: command not found").is_none());
        assert_eq!(gpu_csv("").0, vec![]);
    }

    #[test]
    fn peer_access_and_acs() {
        // `nvidia-smi topo -p2p rw` on 2 × RTX 5090 (noonghunna/club-3090 #1124), as printed.
        let text =
            " \tGPU0\tGPU1\t\n GPU0\tX\tGNS\t\n GPU1\tGNS\tX\t\n\nLegend:\n\n  X    = Self\n  OK   = Status Ok\n";
        let p2p = topology(text).unwrap();
        assert_eq!(p2p.devices, ["GPU0", "GPU1"]);
        assert_eq!(p2p.links[0], ["X", "GNS"]);
        let root = "ACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd- EgressCtrl- DirectTrans-\n\
                    ACSCtl:\tSrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-\ndone\n";
        assert_eq!(acs_redirecting(root, "done"), Some(1));
        assert_eq!(acs_redirecting("\tCapabilities: <access denied>\ndone\n", "done"), None, "not root");
        assert_eq!(acs_redirecting("", "done"), None, "no lspci");
        assert_eq!(acs_redirecting("done\n", "done"), Some(0), "root, and no bridge with ACS");
    }

    #[test]
    fn lscpu_fields() {
        let (model, sockets, numa) = lscpu(
            "Architecture: x86_64\nModel name:   AMD EPYC 9654 96-Core Processor\nSocket(s):  2\nNUMA node(s): 2\n",
        );
        assert_eq!((model.as_deref(), sockets, numa), (Some("AMD EPYC 9654 96-Core Processor"), Some(2), Some(2)));
    }
}
