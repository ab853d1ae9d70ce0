//! Host facts: GPUs, their links, CPU/NUMA and the serving stack's versions,
//! captured in one shell round trip and kept with the time they were taken.

pub mod differ;
pub mod parse;

use crate::db::Store;
use crate::error::{Context, Result};
use crate::hosts::Hosts;
use crate::policy::{FactsPermit, HostUse};
use crate::ssh::{self, Pool, Target, quote::quote};
use crate::time::timestamp;
use domain::error::{ApiError, ErrorCode};
use domain::hosts::HostFacts;
use std::time::Duration;

/// Capturing and reading host facts.
#[derive(Clone)]
pub struct Facts {
    store: Store,
    hosts: Hosts,
}

/// Packages whose versions matter for serving performance.
const PACKAGES: &[&str] =
    &["vllm", "sglang", "torch", "transformers", "flashinfer-python", "triton", "nvidia-nccl-cu12", "nvidia-nccl-cu13"];

fn python_program() -> String {
    format!(
        "import sys, importlib.metadata as m\nprint('python', sys.version.split()[0])\n\
         for p in {PACKAGES:?}:\n    try:\n        print(p, m.version(p))\n    except Exception:\n        pass"
    )
}

/// The line the ACS section ends with once lspci ran.
const ACS_READ: &str = "lspci-read";

/// The script: each command's output after a `NONCE name` marker line.
fn script(marker: &str, python: &str) -> String {
    let sections = [
        ("gpus", "nvidia-smi --query-gpu=index,name,memory.total,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv".to_string()),
        ("topo", "nvidia-smi topo -m".to_string()),
        ("p2p", "nvidia-smi topo -p2p r".to_string()),
        // The ACS control of every bridge, where lspci may read it (root).
        ("acs", format!("command -v lspci >/dev/null && {{ lspci -vvv 2>/dev/null | grep -E 'ACSCtl:|access denied' | head -n 512; echo {ACS_READ}; }}")),
        ("smi", "nvidia-smi | head -n 6".to_string()),
        ("cpu", "lscpu".to_string()),
        ("python", format!("{} -c {}", quote(python), quote(&python_program()))),
    ];
    sections.iter().map(|(name, command)| format!("echo '{marker} {name}'; {command} 2>&1\n")).collect()
}

fn section<'a>(out: &'a str, marker: &str, name: &str) -> &'a str {
    let start = format!("{marker} {name}\n");
    let Some(at) = out.find(&start) else { return "" };
    let rest = &out[at + start.len()..];
    rest.find(&format!("{marker} ")).map_or(rest, |end| &rest[..end])
}

pub fn from_output(out: &str, marker: &str, python: &str) -> HostFacts {
    let mut facts = HostFacts::default();
    let (gpus, driver) = parse::gpu_csv(section(out, marker, "gpus"));
    if gpus.is_empty() {
        facts.notes.push("nvidia-smi gave no GPUs (not installed, or no driver): no GPU facts.".into());
    }
    facts.gpus = gpus;
    facts.driver = driver;
    facts.topology = parse::topology(section(out, marker, "topo"));
    facts.interconnect = facts.topology.as_ref().and_then(parse::interconnect);
    facts.p2p = parse::topology(section(out, marker, "p2p"));
    facts.acs_redirecting = parse::acs_redirecting(section(out, marker, "acs"), ACS_READ);
    facts.cuda = parse::cuda_version(section(out, marker, "smi"));
    let (model, sockets, numa) = parse::lscpu(section(out, marker, "cpu"));
    (facts.cpu_model, facts.sockets, facts.numa_nodes) = (model, sockets, numa);
    for line in section(out, marker, "python").lines() {
        match line.split_once(' ') {
            Some(("python", version)) => facts.python = Some(format!("{python} ({version})")),
            Some((name, version)) if PACKAGES.contains(&name) => {
                facts.packages.push((name.into(), version.trim().into()))
            }
            _ => {}
        }
    }
    facts.python_command = Some(python.to_string());
    if facts.python.is_none() {
        facts.notes.push(format!("{python} did not run on the host: no package versions."));
    }
    facts
}

/// The links (P2P, ACS) of the captures `ids` names, by id: the guards read
/// a run's host as it was. Each capture is read once, however many runs
/// name it.
pub async fn links_by_ids(
    store: &Store,
    ids: impl IntoIterator<Item = i64>,
) -> Result<std::collections::HashMap<i64, domain::guards::Links>> {
    let mut found = std::collections::HashMap::new();
    for id in ids.into_iter().collect::<std::collections::BTreeSet<i64>>() {
        if let Some(row) = store.facts(id).await? {
            found.insert(id, of_row(row)?.links());
        }
    }
    Ok(found)
}

/// [`links_by_ids`] of the captures of those `runs` that are collective-bound:
/// the only runs whose host the topology guard reads.
pub async fn links_of_runs<'a>(
    store: &Store,
    runs: impl IntoIterator<Item = &'a domain::runs::Run>,
) -> Result<std::collections::HashMap<i64, domain::guards::Links>> {
    let bound = runs.into_iter().filter(|r| domain::guards::collective(&r.command, &r.env));
    links_by_ids(store, bound.filter_map(|r| r.facts_id).collect::<Vec<_>>()).await
}

/// A capture as stored: facts that do not parse are unreadable, never empty.
pub fn of_row(row: crate::db::FactsRow) -> Result<HostFacts> {
    let mut facts: HostFacts = crate::error::stored(&row.facts, || format!("host facts {}", row.id))?;
    facts.captured_at = timestamp(row.captured_at);
    Ok(facts)
}

/// Captures `target`'s facts now (one channel on the pooled connection) and keeps them.
pub async fn capture(
    store: &Store,
    pool: &Pool,
    target: &Target,
    python: &str,
    limit: Duration,
    who: &str,
) -> Result<HostFacts> {
    let marker = format!("__sleuth_facts_{:x}", rand::random::<u64>());
    let captured =
        tokio::time::timeout(limit, ssh::exec::capture(pool, target, &script(&marker, python), 1024 * 1024)).await;
    let entry = crate::db::NewAudit {
        who: who.to_string(),
        action: "facts.capture",
        host: Some(target.name.clone()),
        target: format!("nvidia-smi, lscpu, {python} (package versions)"),
        outcome: Some(match &captured {
            Ok(Ok(_)) => "ok".into(),
            Ok(Err(e)) => format!("error: {e}"),
            Err(_) => "error: timed out".into(),
        }),
        ..Default::default()
    };
    crate::audit::record(store, entry).await;
    let captured = captured.map_err(|_| {
        ApiError::new(
            ErrorCode::HostUnreachable,
            format!("Capturing the host's facts took over {} s.", limit.as_secs()),
        )
    })??;
    let facts = from_output(&String::from_utf8_lossy(&captured.stdout), &marker, python);
    let json = serde_json::to_string(&facts).context("host facts as JSON")?;
    let row = store.insert_facts(&target.name, &json).await?;
    tracing::info!(host = %target.name, gpus = facts.gpus.len(), "captured host facts");
    of_row(row)
}

/// The python the last capture used (`python3` before any): what captures use
/// unless an admin names another.
fn last_python(latest: Option<crate::db::FactsRow>) -> Result<String> {
    Ok(latest.map(of_row).transpose()?.and_then(|f| f.python_command).unwrap_or_else(|| "python3".into()))
}

/// Before a host's first run of a (UTC) day: captures its facts unless some were
/// captured today, with the python the last capture used. Failing to capture
/// never stops the run; the run then points at older facts, or none.
pub async fn capture_if_stale(store: &Store, pool: &Pool, target: &Target) {
    let latest = match store.latest_facts(&target.name).await {
        Ok(Some(row)) if crate::time::same_day(row.captured_at, crate::time::now_ms()) => return,
        Ok(latest) => latest,
        Err(e) => return tracing::error!(host = %target.name, "reading facts: {}", crate::error::chain(&e)),
    };
    let python = match last_python(latest) {
        Ok(python) => python,
        Err(e) => return tracing::error!(host = %target.name, "facts before the day's first run: {e}"),
    };
    if let Err(e) = capture(store, pool, target, &python, Duration::from_secs(30), crate::audit::SLEUTH).await {
        tracing::warn!(host = %target.name, "facts before the day's first run: {e}");
    }
}

impl Facts {
    pub fn new(store: Store, hosts: Hosts) -> Self {
        Self { store, hosts }
    }

    /// Captures the host's facts now (one session on the host) and keeps them;
    /// with the python the last capture used unless `python` names one.
    pub async fn capture(&self, permit: &HostUse, python: Option<&str>) -> Result<HostFacts> {
        let host = permit.host();
        let named = python.map(str::trim).filter(|p| !p.is_empty()).map(str::to_string);
        let python = match named {
            Some(python) => python,
            None => last_python(self.store.latest_facts(host).await?)?,
        };
        let python = python.as_str();
        if python.len() > 500 || python.chars().any(char::is_control) {
            return Err(ApiError::invalid("The python is a path or command name on one line.").into());
        }
        let target = self.hosts.target(host).await?;
        let who = &permit.actor().name;
        capture(&self.store, self.hosts.pool(), &target, python, Duration::from_secs(60), who).await
    }

    /// One capture, as a run refers to it.
    pub async fn by_id(&self, permit: &FactsPermit) -> Result<HostFacts> {
        let id = permit.id();
        let row = self.store.facts(id).await?;
        row.map(of_row).transpose()?.ok_or_else(|| ApiError::not_found(format!("There are no host facts {id}.")).into())
    }

    /// The newest capture, if any.
    pub async fn latest(&self, permit: &HostUse) -> Result<Option<HostFacts>> {
        if !self.hosts.exists(permit.host()).await? {
            return Err(ApiError::not_found(format!(
                "There is no host {:?}; add it on the Hosts page.",
                permit.host()
            ))
            .into());
        }
        self.store.latest_facts(permit.host()).await?.map(of_row).transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capture_of_the_real_h200_host() {
        let m = "__sleuth_facts_1";
        let read = |f: &str| crate::fixtures::read(&format!("gpu-host-h200x2/{f}"));
        let out = format!(
            "{m} gpus\n{}{m} topo\n{}{m} smi\n{}{m} cpu\nModel name: Intel(R) Xeon(R) Platinum 8480+\nSocket(s): 2\nNUMA node(s): 2\n{m} python\npython 3.12.3\ntorch 2.11.0+cu130\nnvidia-nccl-cu13 2.28.9\n",
            read("nvidia-smi-query.csv"),
            read("nvidia-smi-topo.txt"),
            read("nvidia-smi-q.txt"),
        );
        let facts = from_output(&out, m, "/root/ml-env/bin/python");
        assert_eq!(facts.gpus.len(), 2);
        assert_eq!(facts.driver.as_deref(), Some("580.159.04"));
        assert_eq!(facts.cuda.as_deref(), Some("13.0"));
        assert_eq!(facts.interconnect.as_deref(), Some("NVLink between all 2 GPUs (NV18)"));
        assert_eq!(facts.sockets, Some(2));
        assert_eq!(facts.python.as_deref(), Some("/root/ml-env/bin/python (3.12.3)"));
        assert_eq!(
            facts.packages,
            [("torch".to_string(), "2.11.0+cu130".to_string()), ("nvidia-nccl-cu13".into(), "2.28.9".into())]
        );
        assert!(facts.notes.is_empty(), "{:?}", facts.notes);
    }

    #[test]
    fn a_host_without_nvidia_smi_just_has_fewer_facts() {
        let m = "__sleuth_facts_2";
        let out = format!(
            "{m} gpus\nsh: 1: nvidia-smi: not found\n{m} topo\nsh: 1: nvidia-smi: not found\n{m} smi\n{m} cpu\nSocket(s): 1\n{m} python\nsh: 1: nope: not found\n"
        );
        let facts = from_output(&out, m, "nope");
        assert!(facts.gpus.is_empty() && facts.topology.is_none() && facts.cuda.is_none());
        assert_eq!(facts.sockets, Some(1));
        assert_eq!(facts.notes.len(), 2, "{:?}", facts.notes);
    }
}
