//! Watching a step (`POST /api/v1/steps/{id}/watch`): it runs on a schedule,
//! its history is judged after each run, and a new change point is told to a
//! webhook and shown on the investigation.

use serde::{Deserialize, Serialize};

/// What to watch and how often: `every_s` or a `cron` line (minute hour
/// day-of-month month day-of-week, UTC).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct WatchRequest {
    #[serde(default)]
    pub every_s: Option<u64>,
    #[serde(default)]
    pub cron: Option<String>,
    /// Default `output_throughput`.
    #[serde(default)]
    pub metric: Option<String>,
    /// A sweep's configuration to run and judge (`NCCL_PROTO=LL`).
    #[serde(default)]
    pub config: Option<String>,
    /// Told of each new change (a JSON POST with a Slack-compatible `text`).
    #[serde(default)]
    pub webhook: Option<String>,
    /// Runs failing in a row before the watch stops (default 5).
    #[serde(default)]
    pub max_failures: Option<u32>,
}

pub const MIN_EVERY_S: u64 = 1;
pub const MAX_EVERY_S: u64 = 30 * 86_400;
pub const DEFAULT_MAX_FAILURES: u32 = 5;

/// A watch as the API shows it (the webhook's path, which is its secret, left out).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Watch {
    pub id: i64,
    pub step_id: i64,
    pub investigation_id: String,
    pub metric: String,
    pub config: Option<String>,
    pub every_s: Option<u64>,
    pub cron: Option<String>,
    /// `https://hooks.example.com/…`: where it posts, not the secret path.
    pub webhook: Option<String>,
    pub created_by: Option<String>,
    pub created_at: String,
    /// When it runs next (none once stopped).
    pub next_at: Option<String>,
    pub runs: u64,
    pub failures_in_row: u32,
    pub max_failures: u32,
    pub last_run: Option<i64>,
    /// The newest change it found, and what the webhook answered.
    pub last_change: Option<crate::history::Change>,
    pub last_told: Option<String>,
    /// Why it stopped, as a sentence (failures in a row, its step changed by
    /// someone else, its creator's rights gone); none while it runs.
    pub stopped: Option<String>,
    /// The same as one of a closed set, for a program to act on.
    pub stop_reason: Option<StopReason>,
    /// Its history page, the configuration it judges in the link.
    pub url: String,
}

/// The address a request was made to, as a base for links sent elsewhere (a
/// webhook's message): `X-Forwarded-Proto` (or http) and `Host`; none without
/// a plausible host (`name`, `name:port`, `[v6]:port`).
pub fn asked_origin(host: Option<&str>, forwarded_proto: Option<&str>) -> Option<String> {
    let host = host?.trim();
    let plausible = !host.is_empty()
        && host.len() <= 255
        && host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'));
    if !plausible {
        return None;
    }
    let scheme = if forwarded_proto.map(str::trim) == Some("https") { "https" } else { "http" };
    Some(format!("{scheme}://{host}"))
}

/// `https://hooks.slack.com/services/T0/B0/xyz` → `https://hooks.slack.com/…`.
pub fn webhook_shown(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = host.rsplit('@').next().unwrap_or(host);
    format!("{scheme}://{host}/…")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_based_on_the_address_asked() {
        assert_eq!(
            asked_origin(Some("sleuth.example.com"), Some("https")).as_deref(),
            Some("https://sleuth.example.com")
        );
        assert_eq!(asked_origin(Some("127.0.0.1:3000"), None).as_deref(), Some("http://127.0.0.1:3000"));
        assert_eq!(asked_origin(Some("evil.com/\"<x>"), None), None);
        assert_eq!(asked_origin(None, None), None);
    }

    #[test]
    fn the_webhooks_secret_path_is_not_shown() {
        assert_eq!(webhook_shown("https://hooks.slack.com/services/T0/B0/xyz"), "https://hooks.slack.com/…");
        assert_eq!(webhook_shown("http://user:pw@127.0.0.1:9000/hook?k=1"), "http://127.0.0.1:9000/…");
    }
}

/// Why a watch stopped: it runs no more until someone starts it again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Its creator has no account here any more.
    CreatorGone,
    /// Its step was deleted.
    StepDeleted,
    /// Someone other than its creator changed its step (it runs only what they approved).
    StepChanged,
    /// Its step can no longer be run as watched (no command, configuration gone, refused).
    Unrunnable,
    /// Its last runs in a row did not succeed.
    Failing,
}

impl StopReason {
    pub const ALL: [StopReason; 5] =
        [Self::CreatorGone, Self::StepDeleted, Self::StepChanged, Self::Unrunnable, Self::Failing];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::CreatorGone => "creator_gone",
            Self::StepDeleted => "step_deleted",
            Self::StepChanged => "step_changed",
            Self::Unrunnable => "unrunnable",
            Self::Failing => "failing",
        }
    }
}

closed_set_words!(StopReason, UnknownStopReason);

/// A stored reason that is none of [`StopReason`].
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not a reason a watch stops for")]
pub struct UnknownStopReason(pub String);
