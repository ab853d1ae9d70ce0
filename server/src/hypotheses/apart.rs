//! What told a hypothesis's two arms apart besides the metric: hosts, the host
//! facts each run started under, commands and env (the hypothesis's
//! `provenance` field; not a replay's manifest, `domain::replays::Manifest`). The point is the sentence
//! "same host, same driver, only NCCL_PROTO differs" — or a warning when that
//! is not so.

use crate::facts::differ::{describe, differences};
use domain::hosts::HostFacts;
use domain::hypotheses::Provenance;
use std::collections::{BTreeSet, HashMap};

/// What a run recorded about how it ran.
pub struct RunContext<'a> {
    pub host: &'a str,
    pub command: &'a str,
    pub env: Vec<(String, String)>,
    pub facts: Option<&'a HostFacts>,
}

fn distinct<T: Ord + Clone>(items: impl Iterator<Item = T>) -> Vec<T> {
    items.collect::<BTreeSet<T>>().into_iter().collect()
}

/// The same capture content regardless of when it was taken.
fn content(facts: &HostFacts) -> String {
    let mut f = facts.clone();
    f.captured_at.clear();
    serde_json::to_string(&f).unwrap_or_default()
}

pub fn between_arms(baseline: &[RunContext], treatment: &[RunContext]) -> Option<Provenance> {
    if baseline.is_empty() || treatment.is_empty() {
        return None;
    }
    let all = || baseline.iter().chain(treatment);
    let mut warnings = Vec::new();
    let mut sentence = Vec::new();

    let (b_hosts, t_hosts) = (distinct(baseline.iter().map(|r| r.host)), distinct(treatment.iter().map(|r| r.host)));
    let hosts = distinct(all().map(|r| r.host));
    if hosts.len() == 1 {
        sentence.push(format!("Same host ({})", hosts[0]));
    } else {
        sentence.push(format!("Hosts {} vs {}", b_hosts.join(", "), t_hosts.join(", ")));
        warnings.push(format!(
            "The groups ran on different hosts (baseline: {}; treatment: {}).",
            b_hosts.join(", "),
            t_hosts.join(", ")
        ));
    }

    let facts_of = |group: &[RunContext]| -> Vec<(String, HostFacts)> {
        let mut seen: Vec<(String, HostFacts)> = Vec::new();
        for f in group.iter().filter_map(|r| r.facts) {
            let c = content(f);
            if !seen.iter().any(|(s, _)| *s == c) {
                seen.push((c, f.clone()));
            }
        }
        seen
    };
    let (b_facts, t_facts) = (facts_of(baseline), facts_of(treatment));
    let unknown = all().filter(|r| r.facts.is_none()).count();
    match (b_facts.as_slice(), t_facts.as_slice()) {
        ([], []) => sentence.push("no host facts recorded".into()),
        ([(b, facts)], [(t, _)]) if b == t => sentence.push(format!("the same host facts ({})", describe(facts))),
        (b, t) => {
            for (side, group) in [("baseline", b), ("treatment", t)] {
                if group.len() > 1 {
                    warnings.push(format!(
                        "The {side} runs started under {} different host facts: {}.",
                        group.len(),
                        differences(&group[0].1, &group[group.len() - 1].1).join("; ")
                    ));
                }
            }
            if let (Some((_, first)), Some((_, last))) = (b.first(), t.last()) {
                let diff = differences(first, last);
                if diff.is_empty() {
                    sentence.push(format!("the same host facts ({})", describe(first)));
                } else {
                    sentence.push("different host facts".into());
                    warnings
                        .push(format!("Baseline and treatment ran under different host facts: {}.", diff.join("; ")));
                }
            }
        }
    }
    if unknown > 0 && unknown < baseline.len() + treatment.len() {
        warnings.push(format!("{unknown} of the runs have no host facts recorded, so they cannot be compared."));
    }

    // Env: for each name, the values each side ran with (unset counts).
    let env_maps = |group: &[RunContext]| -> Vec<HashMap<String, String>> {
        group.iter().map(|r| r.env.iter().cloned().collect()).collect()
    };
    let (b_env, t_env) = (env_maps(baseline), env_maps(treatment));
    let names: BTreeSet<&String> = b_env.iter().chain(&t_env).flat_map(|m| m.keys()).collect();
    let values = |maps: &[HashMap<String, String>], name: &String| {
        distinct(maps.iter().map(|m| m.get(name).cloned().unwrap_or_else(|| "(unset)".into()))).join(" / ")
    };
    // (what, how): `("NCCL_PROTO", "(unset) → LL")`.
    let mut changes: Vec<(String, Option<String>)> = names
        .into_iter()
        .filter_map(|name| {
            let (b, t) = (values(&b_env, name), values(&t_env, name));
            (b != t).then(|| (name.clone(), Some(format!("{b} → {t}"))))
        })
        .collect();
    if distinct(baseline.iter().map(|r| r.command)) != distinct(treatment.iter().map(|r| r.command)) {
        changes.push(("the command".into(), None));
    }
    let head = sentence.join(" and ");
    let summary = match changes.as_slice() {
        [] => format!("{head}; same command and env on both sides."),
        [(what, Some(how))] => format!("{head}; only {what} differs: {how}."),
        [(what, None)] => format!("{head}; only {what} differs."),
        many => {
            let many: Vec<String> =
                many.iter().map(|(what, how)| how.as_ref().map_or(what.clone(), |h| format!("{what} {h}"))).collect();
            format!("{head}; differs: {}.", many.join("; "))
        }
    };
    Some(Provenance { summary, warnings })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h200(driver: &str) -> HostFacts {
        HostFacts {
            gpus: (0..2)
                .map(|index| domain::hosts::GpuFact {
                    index,
                    name: "NVIDIA H200".into(),
                    memory_mib: Some(143_771),
                    pcie_gen: None,
                    pcie_width: None,
                })
                .collect(),
            driver: Some(driver.into()),
            cuda: Some("13.0".into()),
            packages: vec![("torch".into(), "2.11.0".into())],
            ..Default::default()
        }
    }

    fn run<'a>(env: &[(&str, &str)], facts: Option<&'a HostFacts>) -> RunContext<'a> {
        RunContext {
            host: "h200",
            command: "python decode.py",
            env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            facts,
        }
    }

    #[test]
    fn same_host_same_facts_only_the_env_differs() {
        let (morning, noon) = (h200("580.159.04"), {
            let mut f = h200("580.159.04");
            f.captured_at = "later".into();
            f
        });
        let b = [run(&[], Some(&morning)), run(&[], Some(&noon))];
        let t = [run(&[("NCCL_PROTO", "LL")], Some(&noon))];
        let p = between_arms(&b, &t).unwrap();
        assert_eq!(
            p.summary,
            "Same host (h200) and the same host facts (2 × NVIDIA H200, driver 580.159.04, CUDA 13.0); \
             only NCCL_PROTO differs: (unset) → LL."
        );
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    }

    #[test]
    fn a_driver_upgrade_between_the_groups_is_a_warning() {
        let (old, new) = (h200("570.86.15"), h200("580.159.04"));
        let mut newer_torch = new.clone();
        newer_torch.packages = vec![("torch".into(), "2.12.0".into())];
        let b = [run(&[("NCCL_PROTO", "SIMPLE")], Some(&old))];
        let t = [run(&[("NCCL_PROTO", "LL")], Some(&newer_torch)), run(&[("NCCL_PROTO", "LL")], None)];
        let p = between_arms(&b, &t).unwrap();
        assert!(p.summary.contains("different host facts"), "{}", p.summary);
        assert!(p.summary.contains("only NCCL_PROTO differs: SIMPLE → LL"), "{}", p.summary);
        let all = p.warnings.join("\n");
        assert!(all.contains("driver 570.86.15 → 580.159.04"), "{all}");
        assert!(all.contains("torch 2.11.0 → 2.12.0"), "{all}");
        assert!(all.contains("1 of the runs have no host facts"), "{all}");
    }

    #[test]
    fn other_hosts_and_commands() {
        let mut other = run(&[], None);
        other.host = "a100";
        other.command = "python decode.py --tp 4";
        let p = between_arms(&[run(&[], None)], &[other]).unwrap();
        assert!(p.warnings[0].contains("different hosts"), "{:?}", p.warnings);
        assert!(p.summary.contains("no host facts recorded; only the command differs"), "{}", p.summary);
        assert!(between_arms(&[], &[run(&[], None)]).is_none());
    }
}
