//! GPU hosts as the UI and the API see them. Key material never appears here:
//! only the path of a key file on the Sleuth server, and fingerprints.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Host {
    /// The alias used everywhere in Sleuth, e.g. `h200-box`.
    pub name: String,
    pub hostname: String,
    pub port: u16,
    pub user: String,
    /// A private key file on the Sleuth server; `None` means the ssh-agent.
    pub identity_file: Option<String>,
    /// Another host to connect through.
    pub proxy_jump: Option<String>,
    /// SHA256 fingerprints Sleuth trusts for this host.
    pub trusted_keys: Vec<String>,
    /// A key the host offered that waits for confirmation.
    pub pending_key: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    /// What an hour of the host costs, in any currency: each run on it with a
    /// throughput gets `cost_per_mtok` (`PATCH /api/v1/hosts/{name}`).
    #[serde(default)]
    pub price_per_hour: Option<f64>,
    /// How long its run directories are kept, and what the last sweep did.
    #[serde(default)]
    pub run_dirs: RunDirs,
    /// The caller may change the host and trust its keys (admins).
    #[serde(default)]
    pub can_manage: bool,
    /// The caller may test it, capture its facts and run on it (its list).
    #[serde(default)]
    pub can_use: bool,
    /// Patches runs left on it, shown to who may use it: dirty ones refuse
    /// new runs until an admin restores or accepts them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patches: Vec<crate::steps::patch::PatchOnHost>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NewHost {
    pub name: String,
    pub hostname: String,
    #[serde(default)]
    pub port: Option<u16>,
    pub user: String,
    #[serde(default)]
    pub identity_file: Option<String>,
    #[serde(default)]
    pub proxy_jump: Option<String>,
}

/// `PATCH /api/v1/hosts/{name}`: the fields given change, the rest stay.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct HostPatch {
    /// `null` removes the price; left out, it stays.
    #[serde(default, deserialize_with = "present")]
    pub price_per_hour: Option<Option<f64>>,
    /// Days its run directories are kept; `null`: the default (7).
    #[serde(default, deserialize_with = "present")]
    pub run_dirs_keep_days: Option<Option<u32>>,
    /// A cap on its run directories, MB; `null` removes it.
    #[serde(default, deserialize_with = "present")]
    pub run_dirs_max_mb: Option<Option<u64>>,
}

/// A field that is there, even as `null` (`Some(None)`), against one left out (`None`).
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// How long a host keeps run directories (`~/.sleuth/runs/<id>-<tag>`), and
/// what the last sweep of them did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct RunDirs {
    /// A run's directory is removed this many days after its last change.
    pub keep_days: u32,
    /// All of them together are kept under this many MB, oldest removed
    /// first (`None`: no cap).
    pub max_mb: Option<u64>,
    /// The last sweep since this Sleuth started (`None`: none yet).
    pub last_sweep: Option<Sweep>,
}

impl Default for RunDirs {
    fn default() -> Self {
        Self { keep_days: DEFAULT_KEEP_RUN_DIRS_DAYS, max_mb: None, last_sweep: None }
    }
}

/// Run directories are kept a week unless a host says otherwise.
pub const DEFAULT_KEEP_RUN_DIRS_DAYS: u32 = 7;
/// The longest a host may keep them: ten years is "for ever".
pub const MAX_KEEP_RUN_DIRS_DAYS: u32 = 3650;

/// One sweep of a host's run directories.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Sweep {
    pub at: String,
    /// Directories left, and their size.
    pub kept: u64,
    pub kept_bytes: u64,
    /// Directories removed, and what that freed.
    pub removed: u64,
    pub removed_bytes: u64,
    /// Why the sweep did not finish, if it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What is wrong with a retention setting.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum RetentionError {
    #[error("Run directories are kept 1 to {MAX_KEEP_RUN_DIRS_DAYS} days, not {0}.")]
    Days(u32),
    #[error("The cap on run directories is at least 1 MB.")]
    Cap,
    #[error("{0:?} is not a whole number.")]
    NotANumber(String),
}

impl From<RetentionError> for crate::error::ApiError {
    fn from(error: RetentionError) -> Self {
        Self::invalid(error.to_string())
    }
}

pub fn check_keep_days(days: u32) -> Result<u32, RetentionError> {
    if (1..=MAX_KEEP_RUN_DIRS_DAYS).contains(&days) { Ok(days) } else { Err(RetentionError::Days(days)) }
}

pub fn check_max_mb(mb: u64) -> Result<u64, RetentionError> {
    if mb >= 1 { Ok(mb) } else { Err(RetentionError::Cap) }
}

/// The most an hour of a host may cost (in any currency): past it, a typo.
pub const MAX_PRICE_PER_HOUR: f64 = 1e6;

/// What is wrong with a host's price.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PriceError {
    #[error("The price per hour is a number from 0 to 1000000 (in any currency), not {0}.")]
    OutOfRange(f64),
    #[error("The price per hour: {0:?} is not a number.")]
    NotANumber(String),
}

impl From<PriceError> for crate::error::ApiError {
    fn from(error: PriceError) -> Self {
        Self::invalid(error.to_string())
    }
}

/// A price as the API takes it: finite, 0 to [`MAX_PRICE_PER_HOUR`].
pub fn check_price(price: f64) -> Result<f64, PriceError> {
    if price.is_finite() && (0.0..=MAX_PRICE_PER_HOUR).contains(&price) {
        Ok(price)
    } else {
        Err(PriceError::OutOfRange(price))
    }
}

/// A price as a form gives it: blank removes it.
pub fn price_from_form(text: &str) -> Result<Option<f64>, PriceError> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let price: f64 = text.parse().map_err(|_| PriceError::NotANumber(text.to_string()))?;
    check_price(price).map(Some)
}

/// What "Test connection" found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct ConnectionReport {
    /// Round trip of a `true` on the pooled connection.
    pub latency_ms: f64,
    pub uname: String,
    /// First line of `nvidia-smi -L`, if the host has nvidia-smi.
    pub nvidia_smi: Option<String>,
}

/// `POST /api/v1/hosts/import`: an ssh_config file on the Sleuth server, or its text.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct HostImport {
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub text: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct ImportReport {
    pub imported: Vec<Host>,
    /// What was left out, and why.
    pub skipped: Vec<String>,
}

/// Limits for host fields.
pub const NAME_CHARS: usize = 64;

/// A price per hour as pages show it: `2.5 per hour`.
pub fn price_text(price: f64) -> String {
    let rounded = (price * 100.0).round() / 100.0;
    format!("{rounded} per hour")
}

/// A host's retention and last sweep as pages show it.
pub fn run_dirs_text(dirs: &RunDirs) -> String {
    let mut text = format!("Run directories kept {} days", dirs.keep_days);
    if let Some(mb) = dirs.max_mb {
        text.push_str(&format!(", under {}", crate::runs::human_bytes(mb.saturating_mul(1 << 20))));
    }
    match &dirs.last_sweep {
        Some(Sweep { error: Some(error), at, .. }) => text.push_str(&format!(". The sweep at {at} failed: {error}")),
        Some(sweep) => text.push_str(&format!(
            ". Swept at {}: {} kept ({}), {} removed ({}).",
            sweep.at,
            sweep.kept,
            crate::runs::human_bytes(sweep.kept_bytes),
            sweep.removed,
            crate::runs::human_bytes(sweep.removed_bytes)
        )),
        None => text.push_str("; not swept since Sleuth started (after the next run)."),
    }
    text
}

/// Retention as a form gives it: days (blank: the default) and a cap in MB (blank: none).
pub fn run_dirs_from_form(days: &str, max_mb: &str) -> Result<(Option<u32>, Option<u64>), RetentionError> {
    let whole = |text: &str| text.parse::<u64>().map_err(|_| RetentionError::NotANumber(text.to_string()));
    let days = match days.trim() {
        "" => None,
        d => Some(check_keep_days(u32::try_from(whole(d)?).unwrap_or(u32::MAX))?),
    };
    let max_mb = match max_mb.trim() {
        "" => None,
        m => Some(check_max_mb(whole(m)?)?),
    };
    Ok((days, max_mb))
}

/// Host aliases are short, and safe in URLs and logs.
pub fn is_host_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= NAME_CHARS
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// What a host is, captured on demand: the provenance of its runs' numbers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct HostFacts {
    pub gpus: Vec<GpuFact>,
    pub driver: Option<String>,
    pub cuda: Option<String>,
    /// `nvidia-smi topo -m`: device names and the link between each pair
    /// (`X`, `NV18`, `PIX`, `SYS`…), row by row.
    pub topology: Option<Topology>,
    /// "NVLink between all GPUs (NV18)", "PCIe only (PHB, SYS)", …
    pub interconnect: Option<String>,
    /// `nvidia-smi topo -p2p r`: whether each pair of GPUs can read each
    /// other's memory (`OK`; `CNS`, `GNS`, `TNS`, `NS`, `DR`: why not).
    /// Absent in facts captured before Sleuth read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p2p: Option<Topology>,
    /// PCI bridges whose ACS redirects peer-to-peer requests up to the root
    /// complex (`lspci -vvv`: `ACSCtl: … ReqRedir+`); absent where it could
    /// not be read (no lspci, or not root: the capability is hidden).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acs_redirecting: Option<u32>,
    pub cpu_model: Option<String>,
    pub sockets: Option<u32>,
    pub numa_nodes: Option<u32>,
    /// The interpreter asked about packages, and what it reported.
    pub python: Option<String>,
    /// The interpreter as asked (`/root/venv/bin/python`); automatic captures reuse it.
    #[serde(default)]
    pub python_command: Option<String>,
    pub packages: Vec<(String, String)>,
    /// What could not be captured, in words (no nvidia-smi, no such python…).
    pub notes: Vec<String>,
    pub captured_at: String,
}

impl HostFacts {
    /// The GPU pairs that cannot reach each other's memory (P2P), as
    /// `("GPU0", "GPU1", "GNS")`; `None` where P2P was not read.
    pub fn pairs_without_p2p(&self) -> Option<Vec<(String, String, String)>> {
        let p2p = self.p2p.as_ref()?;
        Some(
            p2p.gpu_pairs()
                .into_iter()
                .filter(|(_, _, status)| *status != Some("OK"))
                .map(|(a, b, status)| (a.to_string(), b.to_string(), status.unwrap_or("U").to_string()))
                .collect(),
        )
    }

    /// What the topology guard reads of these facts.
    pub fn links(&self) -> crate::guards::Links {
        let nvlinked = self
            .topology
            .as_ref()
            .is_some_and(|t| t.gpu_pairs().into_iter().all(|(_, _, link)| link.is_some_and(|l| l.starts_with("NV"))));
        crate::guards::Links {
            gpus: self.gpus.len(),
            without_p2p: self.pairs_without_p2p(),
            acs_redirecting: self.acs_redirecting,
            nvlinked,
        }
    }

    /// "P2P between all 8 GPUs · ACS not read (lspci shows it to root)", for
    /// the hosts page; `None` where neither was read.
    pub fn peer_access(&self) -> Option<String> {
        let p2p = self.pairs_without_p2p().map(|missing| match missing.as_slice() {
            [] => format!("P2P between all {} GPUs", self.gpus.len()),
            some => format!(
                "no P2P between {}",
                some.iter().map(|(a, b, why)| format!("{a}–{b} ({why})")).collect::<Vec<_>>().join(", ")
            ),
        });
        let acs = match self.acs_redirecting {
            Some(0) => Some("no ACS redirection".to_string()),
            Some(n) => Some(format!("ACS redirects peer requests on {n} PCI bridges")),
            None if p2p.is_some() => Some("ACS not read (lspci shows it to root)".to_string()),
            None => None,
        };
        let said: Vec<String> = p2p.into_iter().chain(acs).collect();
        (!said.is_empty()).then(|| said.join(" · "))
    }

    /// "8 × NVIDIA H200", "1 × NVIDIA A100, 1 × NVIDIA L4"; empty without GPUs.
    pub fn gpu_summary(&self) -> String {
        let mut counted: Vec<(&str, usize)> = Vec::new();
        for gpu in &self.gpus {
            match counted.iter_mut().find(|(name, _)| *name == gpu.name) {
                Some((_, n)) => *n += 1,
                None => counted.push((&gpu.name, 1)),
            }
        }
        counted.into_iter().map(|(name, n)| format!("{n} × {name}")).collect::<Vec<_>>().join(", ")
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct GpuFact {
    pub index: u32,
    pub name: String,
    pub memory_mib: Option<u64>,
    pub pcie_gen: Option<u32>,
    pub pcie_width: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Topology {
    pub devices: Vec<String>,
    pub links: Vec<Vec<String>>,
}

impl Topology {
    /// How many of its devices are GPUs (the others are NICs).
    pub fn gpu_count(&self) -> usize {
        self.devices.iter().filter(|d| d.starts_with("GPU")).count()
    }

    /// Each pair of GPUs once, as `(GPU0, GPU1, link)`; the link `None`
    /// where the matrix has no cell for it.
    pub fn gpu_pairs(&self) -> Vec<(&str, &str, Option<&str>)> {
        let gpus: Vec<usize> = (0..self.devices.len()).filter(|i| self.devices[*i].starts_with("GPU")).collect();
        let mut pairs = Vec::new();
        for (a, &i) in gpus.iter().enumerate() {
            for &j in &gpus[a + 1..] {
                let link = self.links.get(i).and_then(|row| row.get(j)).map(String::as_str);
                pairs.push((self.devices[i].as_str(), self.devices[j].as_str(), link));
            }
        }
        pairs
    }
}

/// How this server stands (`GET /api/v1/status`): what every page's banner
/// says to everyone, and for admins the detail behind it (the hosts page).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct ServerStatus {
    /// While writes or new runs are refused: why, in a sentence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusing: Option<String>,
    /// Admins only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<ServerDetail>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct ServerDetail {
    /// Where run output (and SQLite) is kept.
    pub data_dir: Option<String>,
    pub disk_free_bytes: Option<u64>,
    pub disk_size_bytes: Option<u64>,
    /// New runs need this much free (`--min-free`); `None` where output is
    /// kept in the database (PostgreSQL).
    pub min_free_bytes: Option<u64>,
    /// Store operations that failed since the server started, by why.
    pub store_errors_full: u64,
    pub store_errors_unavailable: u64,
    pub store_errors_other: u64,
    /// When a write was last refused because the disk was full.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_full_at: Option<String>,
    /// Each host's pooled SSH connection: whether it is open now.
    pub connections: Vec<(String, bool)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_tells_a_null_price_from_none_given() {
        let clear: HostPatch = serde_json::from_str(r#"{"price_per_hour": null}"#).unwrap();
        assert_eq!(clear.price_per_hour, Some(None));
        let set: HostPatch = serde_json::from_str(r#"{"price_per_hour": 2.5}"#).unwrap();
        assert_eq!(set.price_per_hour, Some(Some(2.5)));
        let none: HostPatch = serde_json::from_str("{}").unwrap();
        assert_eq!(none.price_per_hour, None);
        assert!(serde_json::from_str::<HostPatch>(r#"{"price": 1}"#).is_err(), "unknown fields are refused");
    }

    #[test]
    fn retention_is_checked_as_typed() {
        assert_eq!(run_dirs_from_form(" 30 ", ""), Ok((Some(30), None)));
        assert_eq!(run_dirs_from_form("", "5000"), Ok((None, Some(5000))));
        assert_eq!(run_dirs_from_form("0", ""), Err(RetentionError::Days(0)));
        assert_eq!(run_dirs_from_form("99999999999", ""), Err(RetentionError::Days(u32::MAX)));
        assert_eq!(run_dirs_from_form("", "0"), Err(RetentionError::Cap));
        let typed = run_dirs_from_form("<b>7</b>", "").unwrap_err().to_string();
        assert_eq!(typed, "\"<b>7</b>\" is not a whole number.");
    }

    #[test]
    fn prices_are_checked_as_typed() {
        assert_eq!(price_from_form(" 3.20 "), Ok(Some(3.2)));
        assert_eq!(price_from_form(""), Ok(None));
        assert!(matches!(price_from_form("$3"), Err(PriceError::NotANumber(_))));
        assert!(matches!(price_from_form("-1"), Err(PriceError::OutOfRange(_))));
        assert!(check_price(f64::NAN).is_err() && check_price(2e6).is_err() && check_price(0.0).is_ok());
        assert_eq!(price_text(2.499), "2.5 per hour");
    }
}
