//! GPU hosts as the UI and the API see them. Key material never appears here:
//! only the path of a key file on the Sleuth server, and fingerprints.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
    /// The caller may change the host and trust its keys (admins).
    #[serde(default)]
    pub can_manage: bool,
    /// The caller may test it, capture its facts and run on it (its list).
    #[serde(default)]
    pub can_use: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
#[serde(deny_unknown_fields)]
pub struct HostPatch {
    /// `null` removes the price; left out, it stays.
    #[serde(default, deserialize_with = "present")]
    pub price_per_hour: Option<Option<f64>>,
}

/// A field that is there, even as `null` (`Some(None)`), against one left out (`None`).
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
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
pub struct ConnectionReport {
    /// Round trip of a `true` on the pooled connection.
    pub latency_ms: f64,
    pub uname: String,
    /// First line of `nvidia-smi -L`, if the host has nvidia-smi.
    pub nvidia_smi: Option<String>,
}

/// `POST /api/v1/hosts/import`: an ssh_config file on the Sleuth server, or its text.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostImport {
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub text: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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

/// Host aliases are short, and safe in URLs and logs.
pub fn is_host_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= NAME_CHARS
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// What a host is, captured on demand: the provenance of its runs' numbers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostFacts {
    pub gpus: Vec<GpuFact>,
    pub driver: Option<String>,
    pub cuda: Option<String>,
    /// `nvidia-smi topo -m`: device names and the link between each pair
    /// (`X`, `NV18`, `PIX`, `SYS`…), row by row.
    pub topology: Option<Topology>,
    /// "NVLink between all GPUs (NV18)", "PCIe only (PHB, SYS)", …
    pub interconnect: Option<String>,
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

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuFact {
    pub index: u32,
    pub name: String,
    pub memory_mib: Option<u64>,
    pub pcie_gen: Option<u32>,
    pub pcie_width: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Topology {
    pub devices: Vec<String>,
    pub links: Vec<Vec<String>>,
}

/// How this server stands (`GET /api/v1/status`): what every page's banner
/// says to everyone, and for admins the detail behind it (the hosts page).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerStatus {
    /// While writes or new runs are refused: why, in a sentence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusing: Option<String>,
    /// Admins only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<ServerDetail>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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
    fn prices_are_checked_as_typed() {
        assert_eq!(price_from_form(" 3.20 "), Ok(Some(3.2)));
        assert_eq!(price_from_form(""), Ok(None));
        assert!(matches!(price_from_form("$3"), Err(PriceError::NotANumber(_))));
        assert!(matches!(price_from_form("-1"), Err(PriceError::OutOfRange(_))));
        assert!(check_price(f64::NAN).is_err() && check_price(2e6).is_err() && check_price(0.0).is_ok());
        assert_eq!(price_text(2.499), "2.5 per hour");
    }
}
