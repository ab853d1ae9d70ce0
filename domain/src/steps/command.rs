//! Command steps: a command run on a GPU host over SSH, with its runs.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const MAX_COMMAND_BYTES: usize = 64 * 1024;
pub const MAX_ENV_VARS: usize = 64;
pub const MAX_TIMEOUT_S: u64 = 7 * 24 * 3600;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandBody {
    /// Host name (alias).
    pub host: String,
    pub command: String,
    /// Environment for the command; shown as the run's config label.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub cwd: Option<String>,
    /// Seconds before the run is stopped and recorded as `timed_out`; none by default.
    #[serde(default)]
    pub timeout_s: Option<u64>,
    /// A sweep's settings: environment variables and `{placeholders}` in the
    /// command, each with its values (`null`: unset). Empty: a plain command.
    #[serde(
        default,
        deserialize_with = "crate::sweeps::deserialize_matrix",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub matrix: crate::sweeps::Matrix,
    /// Sample the host's GPUs (`nvidia-smi`) while a run goes; on by default.
    #[serde(default = "on")]
    pub telemetry: bool,
}

fn on() -> bool {
    true
}

/// `NAME=value` lines (blank lines and `#` comments skipped) → env. The value
/// is everything after the first `=`, kept as typed.
pub fn parse_env(text: &str) -> Result<BTreeMap<String, String>, String> {
    let mut env = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let Some((name, value)) = line.split_once('=') else {
            return Err(format!("Line {} of the environment is not NAME=value: {line:?}", n + 1));
        };
        env.insert(name.trim().to_string(), value.to_string());
    }
    Ok(env)
}

/// The env as the form shows it.
pub fn env_text(env: &BTreeMap<String, String>) -> String {
    env.iter().map(|(k, v)| format!("{k}={v}\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_lines_parse_and_round_trip() {
        let env = parse_env("NCCL_PROTO=LL\n\n# a comment\nNCCL_DEBUG=INFO\r\nX=a=b c \n").unwrap();
        assert_eq!(env["NCCL_PROTO"], "LL");
        assert_eq!(env["NCCL_DEBUG"], "INFO");
        assert_eq!(env["X"], "a=b c ", "the value is everything after the first =, as typed");
        assert_eq!(parse_env(&env_text(&env)).unwrap(), env);
        assert!(parse_env("JUSTANAME").unwrap_err().contains("Line 1"));
    }
}
