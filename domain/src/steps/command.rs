//! Command steps: a command run on a GPU host over SSH, with its runs.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const MAX_COMMAND_BYTES: usize = 64 * 1024;
pub const MAX_ENV_VARS: usize = 64;
pub const MAX_TIMEOUT_S: u64 = 7 * 24 * 3600;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
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
    /// A server started on the host before the command runs and stopped after
    /// (`vllm serve …` beside `vllm bench serve …`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerSpec>,
    /// Files the run leaves in its directory (`$SLEUTH_RUN_DIR`) to keep as
    /// evidence: globs relative to it (`result.json`, `profiles/*.json.gz`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<String>,
    /// How much of them to keep; the defaults when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_limits: Option<ArtifactLimits>,
    /// Output kept per run, in bytes; past it the rest is not stored (the
    /// run says so) while the command goes on. `DEFAULT_OUTPUT_BYTES` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_limit_bytes: Option<u64>,
    /// A patch step (of the same investigation and host) applied on the host
    /// for each run and put back after; a matrix's `@patch` sweeps it instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<i64>,
}

impl CommandBody {
    /// The order its sweep runs in when none is asked: grouped when its server
    /// is kept across a configuration's runs (interleaved would restart it at
    /// every run), else interleaved.
    pub fn default_order(&self) -> crate::sweeps::Order {
        match &self.server {
            Some(server) if server.reuse == Reuse::Config => crate::sweeps::Order::Grouped,
            _ => crate::sweeps::Order::Interleaved,
        }
    }
}

/// Output kept per run unless a step says otherwise: benchmarks print
/// megabytes; a runaway loop printing for hours stops filling the disk here.
pub const DEFAULT_OUTPUT_BYTES: u64 = 10 << 30;

fn on() -> bool {
    true
}

/// Most artifact globs a step may list.
pub const MAX_ARTIFACT_GLOBS: usize = 32;

/// A server beside each run: started in a session of its own with the run's
/// environment and configuration, its log kept as a second stream of the run,
/// waited for until `ready`, and stopped (its whole process group) after.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ServerSpec {
    /// Run by the host's shell; a sweep's `{placeholders}` apply here too.
    pub command: String,
    pub ready: Ready,
    /// How long the server may take to become ready before the run fails.
    #[serde(default = "default_ready_timeout_s")]
    pub ready_timeout_s: u64,
    /// Between SIGTERM to the server's process group and SIGKILL.
    #[serde(default = "default_stop_grace_s")]
    pub stop_grace_s: u64,
    /// `run`: a server per run. `config`: one kept across a configuration's
    /// warm-ups and repeats while they run back to back.
    #[serde(default)]
    pub reuse: Reuse,
    /// The engine's own Prometheus `/metrics`, scraped on the host while each
    /// run goes (`domain::engine`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<MetricsSpec>,
}

/// Where the engine says how it is doing, and how often to ask.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct MetricsSpec {
    /// Asked on the host (`http://127.0.0.1:8000/metrics`), like readiness.
    pub url: String,
    #[serde(default = "default_metrics_interval_ms")]
    pub interval_ms: u64,
}

pub const DEFAULT_METRICS_INTERVAL_MS: u64 = 1000;
/// AIPerf scrapes every 333 ms; faster only loads the server being measured.
pub const MIN_METRICS_INTERVAL_MS: u64 = 100;
pub const MAX_METRICS_INTERVAL_MS: u64 = 60_000;

fn default_metrics_interval_ms() -> u64 {
    DEFAULT_METRICS_INTERVAL_MS
}

/// A URL the host's own tools can ask: http(s), one token, no controls.
pub fn is_host_url(url: &str) -> bool {
    (url.starts_with("http://") || url.starts_with("https://"))
        && url.len() <= 2000
        && !url.chars().any(|c| c.is_whitespace() || c.is_control())
}

impl ServerSpec {
    /// "ready when GET … answers 200 (within 600 s) · a server per run".
    pub fn how(&self) -> String {
        let kept = match self.reuse {
            Reuse::Run => "a server per run",
            Reuse::Config => "one server per configuration, kept across its repeats",
        };
        let scraped = match &self.metrics {
            Some(m) => format!(" · engine metrics from {} every {} ms", m.url, m.interval_ms),
            None => String::new(),
        };
        format!("ready when {} (within {} s) · {kept}{scraped}", self.ready.describe(), self.ready_timeout_s)
    }
}

pub const DEFAULT_READY_TIMEOUT_S: u64 = 600;
pub const MAX_READY_TIMEOUT_S: u64 = 6 * 3600;
pub const DEFAULT_STOP_GRACE_S: u64 = 10;
pub const MAX_STOP_GRACE_S: u64 = 600;

fn default_ready_timeout_s() -> u64 {
    DEFAULT_READY_TIMEOUT_S
}

fn default_stop_grace_s() -> u64 {
    DEFAULT_STOP_GRACE_S
}

/// When a server is ready.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Ready {
    /// An HTTP GET of this URL, made on the host, answers 200.
    Http(String),
    /// A line of the server's log matches this regular expression.
    Log(String),
    /// A TCP port on the host (127.0.0.1) accepts a connection.
    Tcp(u16),
}

impl Ready {
    /// In words: "`GET http://…/health` answers 200".
    pub fn describe(&self) -> String {
        match self {
            Self::Http(url) => format!("GET {url} answers 200"),
            Self::Log(pattern) => format!("its log matches /{pattern}/"),
            Self::Tcp(port) => format!("port {port} accepts connections"),
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Reuse {
    #[default]
    Run,
    Config,
}

/// Bytes of artifacts kept per file and per run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ArtifactLimits {
    #[serde(default = "default_file_bytes")]
    pub file_bytes: u64,
    #[serde(default = "default_run_bytes")]
    pub run_bytes: u64,
}

pub const DEFAULT_ARTIFACT_FILE_BYTES: u64 = 2 << 30;
pub const DEFAULT_ARTIFACT_RUN_BYTES: u64 = 8 << 30;

fn default_file_bytes() -> u64 {
    DEFAULT_ARTIFACT_FILE_BYTES
}

fn default_run_bytes() -> u64 {
    DEFAULT_ARTIFACT_RUN_BYTES
}

impl Default for ArtifactLimits {
    fn default() -> Self {
        Self { file_bytes: DEFAULT_ARTIFACT_FILE_BYTES, run_bytes: DEFAULT_ARTIFACT_RUN_BYTES }
    }
}

/// The command form's server fields, as typed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerFields<'a> {
    pub command: &'a str,
    /// `http`, `log` or `tcp`.
    pub ready: &'a str,
    /// The URL, the pattern or the port.
    pub ready_value: &'a str,
    pub ready_timeout_s: &'a str,
    pub stop_grace_s: &'a str,
    /// `run` or `config`.
    pub reuse: &'a str,
    /// The engine's `/metrics` URL; blank: not scraped.
    pub metrics_url: &'a str,
    /// Blank: [`DEFAULT_METRICS_INTERVAL_MS`].
    pub metrics_interval_ms: &'a str,
}

/// What is wrong with a command step's form (its server, artifacts or
/// environment): the sentence the page and the API show.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum StepFormError {
    #[error("Say when the server is ready: a URL that answers 200, a log line's pattern, or a port.")]
    NoReadiness,
    #[error("The server's port: {0:?} is not a port number.")]
    Port(String),
    #[error("The server is ready by http, log or tcp, not {0:?}.")]
    ReadyKind(String),
    #[error("{what}: {text:?} is not a whole number of seconds.")]
    Seconds { what: &'static str, text: String },
    #[error("How often to ask for engine metrics: {0:?} is not a whole number of milliseconds.")]
    Millis(String),
    #[error("A server is kept per run or per config, not {0:?}.")]
    Reuse(String),
    #[error("At most {MAX_ARTIFACT_GLOBS} artifact globs.")]
    TooManyGlobs,
    #[error("{0:?} is not an artifact glob (one line, 1–500 characters).")]
    NotAGlob(String),
    #[error("{0:?}: artifact globs are relative to the run's directory ($SLEUTH_RUN_DIR).")]
    AbsoluteGlob(String),
    #[error("{0:?}: `..` would leave the run's directory.")]
    GlobLeaves(String),
    #[error("Line {line} of the environment is not NAME=value: {text:?}")]
    NotAnAssignment { line: usize, text: String },
}

impl From<StepFormError> for crate::error::ApiError {
    fn from(error: StepFormError) -> Self {
        Self::invalid(error.to_string())
    }
}

/// The server a form describes: none when its command is blank. Blank numbers
/// are the defaults.
pub fn server_from_fields(fields: &ServerFields<'_>) -> Result<Option<ServerSpec>, StepFormError> {
    let command = fields.command.trim();
    if command.is_empty() {
        return Ok(None);
    }
    let value = fields.ready_value.trim();
    if value.is_empty() {
        return Err(StepFormError::NoReadiness);
    }
    let ready = match fields.ready {
        "http" => Ready::Http(value.to_string()),
        "log" => Ready::Log(value.to_string()),
        "tcp" => Ready::Tcp(value.parse().map_err(|_| StepFormError::Port(value.to_string()))?),
        other => return Err(StepFormError::ReadyKind(other.to_string())),
    };
    let seconds = |what: &'static str, text: &str, default: u64| -> Result<u64, StepFormError> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(default);
        }
        text.parse().map_err(|_| StepFormError::Seconds { what, text: text.to_string() })
    };
    let reuse = match fields.reuse {
        "" | "run" => Reuse::Run,
        "config" => Reuse::Config,
        other => return Err(StepFormError::Reuse(other.to_string())),
    };
    Ok(Some(ServerSpec {
        command: command.to_string(),
        ready,
        ready_timeout_s: seconds(
            "The time the server may take to be ready",
            fields.ready_timeout_s,
            DEFAULT_READY_TIMEOUT_S,
        )?,
        stop_grace_s: seconds("The grace between SIGTERM and SIGKILL", fields.stop_grace_s, DEFAULT_STOP_GRACE_S)?,
        reuse,
        metrics: match fields.metrics_url.trim() {
            "" => None,
            url => Some(MetricsSpec {
                url: url.to_string(),
                interval_ms: match fields.metrics_interval_ms.trim() {
                    "" => DEFAULT_METRICS_INTERVAL_MS,
                    text => text.parse().map_err(|_| StepFormError::Millis(text.to_string()))?,
                },
            }),
        },
    }))
}

/// The readiness as the form's two fields: (`http`|`log`|`tcp`, value).
pub fn ready_fields(ready: &Ready) -> (&'static str, String) {
    match ready {
        Ready::Http(url) => ("http", url.clone()),
        Ready::Log(pattern) => ("log", pattern.clone()),
        Ready::Tcp(port) => ("tcp", port.to_string()),
    }
}

/// Checks a step's globs: relative, inside the run's directory, sane.
pub fn check_artifact_globs(globs: &[String]) -> Result<(), StepFormError> {
    if globs.len() > MAX_ARTIFACT_GLOBS {
        return Err(StepFormError::TooManyGlobs);
    }
    for glob in globs {
        let trimmed = glob.trim();
        if trimmed.is_empty() || trimmed.len() > 500 || trimmed.chars().any(char::is_control) {
            return Err(StepFormError::NotAGlob(glob.clone()));
        }
        if trimmed.starts_with('/') || trimmed.starts_with('~') {
            return Err(StepFormError::AbsoluteGlob(glob.clone()));
        }
        if trimmed.split('/').any(|part| part == "..") {
            return Err(StepFormError::GlobLeaves(glob.clone()));
        }
    }
    Ok(())
}

/// Artifact globs, one per line (blank lines skipped).
pub fn globs_from_text(text: &str) -> Vec<String> {
    text.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_string).collect()
}

/// `NAME=value` lines (blank lines and `#` comments skipped) → env. The value
/// is everything after the first `=`, kept as typed.
pub fn parse_env(text: &str) -> Result<BTreeMap<String, String>, StepFormError> {
    let mut env = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let Some((name, value)) = line.split_once('=') else {
            return Err(StepFormError::NotAnAssignment { line: n + 1, text: line.to_string() });
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
    fn globs_stay_inside_the_run_directory() {
        assert!(check_artifact_globs(&["result.json".into(), "profiles/*.gz".into()]).is_ok());
        for bad in ["../etc/passwd", "a/../../x", "/etc/passwd", "~/x", "", "a\nb"] {
            assert!(check_artifact_globs(&[bad.to_string()]).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_forms_server_fields_make_a_server_or_say_what_is_wrong() {
        let fields =
            ServerFields { command: " vllm serve m ", ready: "tcp", ready_value: "8000", ..Default::default() };
        let spec = server_from_fields(&fields).unwrap().unwrap();
        assert_eq!((spec.command.as_str(), &spec.ready), ("vllm serve m", &Ready::Tcp(8000)));
        assert_eq!((spec.ready_timeout_s, spec.stop_grace_s, spec.reuse), (600, 10, Reuse::Run), "the defaults");
        assert_eq!(ready_fields(&spec.ready), ("tcp", "8000".to_string()));
        assert_eq!(server_from_fields(&ServerFields { command: "  ", ..fields.clone() }), Ok(None), "no server");
        let bad = |f: ServerFields| server_from_fields(&f).unwrap_err().to_string();
        assert!(bad(ServerFields { ready_value: "http://x", ..fields.clone() }).contains("not a port"));
        assert!(bad(ServerFields { ready_value: "", ..fields.clone() }).contains("ready"));
        assert!(bad(ServerFields { ready_timeout_s: "1.5", ..fields.clone() }).contains("whole number"));
        assert!(bad(ServerFields { reuse: "forever", ..fields.clone() }).contains("per run or per config"));
        assert_eq!(globs_from_text("result.json\n\n  profiles/*.json.gz \n"), ["result.json", "profiles/*.json.gz"]);
    }

    #[test]
    fn env_lines_parse_and_round_trip() {
        let env = parse_env("NCCL_PROTO=LL\n\n# a comment\nNCCL_DEBUG=INFO\r\nX=a=b c \n").unwrap();
        assert_eq!(env["NCCL_PROTO"], "LL");
        assert_eq!(env["NCCL_DEBUG"], "INFO");
        assert_eq!(env["X"], "a=b c ", "the value is everything after the first =, as typed");
        assert_eq!(parse_env(&env_text(&env)).unwrap(), env);
        assert!(parse_env("JUSTANAME").unwrap_err().to_string().contains("Line 1"));
    }
}
