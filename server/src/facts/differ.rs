//! How two captures of a host's facts differ, and one in a line: what a
//! hypothesis's arms and a step's history say when the host changed.

use domain::hosts::HostFacts;
use std::collections::{BTreeMap, BTreeSet};

/// "2 × NVIDIA H200, driver 580.159.04, CUDA 13.0, NVLink between all 2 GPUs (NV18)".
pub fn describe(facts: &HostFacts) -> String {
    let mut parts = Vec::new();
    if let Some(first) = facts.gpus.first() {
        parts.push(format!("{} × {}", facts.gpus.len(), first.name));
    }
    if let Some(d) = &facts.driver {
        parts.push(format!("driver {d}"));
    }
    if let Some(c) = &facts.cuda {
        parts.push(format!("CUDA {c}"));
    }
    if let Some(i) = &facts.interconnect {
        parts.push(i.clone());
    }
    if parts.is_empty() { "no GPU facts".into() } else { parts.join(", ") }
}

/// The fields that differ between two captures, as "driver 570.1 → 580.2".
pub fn differences(a: &HostFacts, b: &HostFacts) -> Vec<String> {
    let mut out = Vec::new();
    let show = |x: &Option<String>| x.clone().unwrap_or_else(|| "unknown".into());
    let gpus = |f: &HostFacts| f.gpus.iter().map(|g| g.name.clone()).collect::<Vec<_>>().join(", ");
    if gpus(a) != gpus(b) {
        out.push(format!("GPUs {} → {}", gpus(a), gpus(b)));
    }
    for (name, x, y) in [
        ("driver", &a.driver, &b.driver),
        ("CUDA", &a.cuda, &b.cuda),
        ("interconnect", &a.interconnect, &b.interconnect),
        ("python", &a.python, &b.python),
    ] {
        if x != y {
            out.push(format!("{name} {} → {}", show(x), show(y)));
        }
    }
    let (pa, pb): (BTreeMap<_, _>, BTreeMap<_, _>) =
        (a.packages.iter().cloned().collect(), b.packages.iter().cloned().collect());
    for name in pa.keys().chain(pb.keys()).collect::<BTreeSet<_>>() {
        if pa.get(name) != pb.get(name) {
            let v = |m: &BTreeMap<String, String>| m.get(name).cloned().unwrap_or_else(|| "absent".into());
            out.push(format!("{name} {} → {}", v(&pa), v(&pb)));
        }
    }
    out
}
