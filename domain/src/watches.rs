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
    /// Why it stopped (failures in a row, its step changed by someone else,
    /// its creator's rights gone); none while it runs.
    pub stopped: Option<String>,
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

/// A cron line, read: which minutes, hours, days, months and weekdays match.
#[derive(Clone, Debug, PartialEq)]
pub struct Cron {
    fields: [Vec<bool>; 5],
    /// Both day fields restricted: either matching is enough (as cron does).
    either_day: bool,
}

impl Cron {
    /// `*/15 * * * *`, `0 3 * * 1-5`, `5,35 9-17 * * *`.
    pub fn parse(line: &str) -> Result<Self, String> {
        let parts: Vec<&str> = line.split_whitespace().collect();
        if parts.len() != 5 {
            return Err(format!("{line:?}: a cron line has 5 fields (minute hour day month weekday)."));
        }
        let ranges = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 7)];
        let mut fields: [Vec<bool>; 5] = Default::default();
        for (i, (part, (lo, hi))) in parts.iter().zip(ranges).enumerate() {
            let mut set = vec![false; hi + 1];
            for item in part.split(',') {
                let (range, step) = match item.split_once('/') {
                    Some((r, s)) => (
                        r,
                        s.parse::<usize>()
                            .ok()
                            .filter(|s| *s > 0)
                            .ok_or_else(|| format!("{item:?}: a step is a whole number above 0."))?,
                    ),
                    None => (item, 1),
                };
                let (from, to) = match range {
                    "*" => (lo, hi),
                    r => match r.split_once('-') {
                        Some((a, b)) => (number(a, lo, hi)?, number(b, lo, hi)?),
                        None => {
                            let n = number(r, lo, hi)?;
                            (n, if item.contains('/') { hi } else { n })
                        }
                    },
                };
                if from > to {
                    return Err(format!("{item:?}: the range runs backwards."));
                }
                for v in (from..=to).step_by(step) {
                    set[v] = true;
                }
            }
            if i == 4 && set[7] {
                set[0] = true; // 7 is Sunday too
            }
            fields[i] = set;
        }
        let either_day = parts[2] != "*" && parts[4] != "*";
        Ok(Self { fields, either_day })
    }

    /// The first minute after `after_s` (Unix seconds, UTC) that matches, in Unix seconds.
    pub fn next_after(&self, after_s: i64) -> Option<i64> {
        let mut t = (after_s / 60 + 1) * 60;
        // A year of minutes: a line like "0 0 31 2 *" never matches.
        for _ in 0..(366 * 24 * 60) {
            let (minute, hour, day, month, weekday) = civil(t);
            let day_ok = if self.either_day {
                self.fields[2][day] || self.fields[4][weekday]
            } else {
                self.fields[2][day] && self.fields[4][weekday]
            };
            if self.fields[0][minute] && self.fields[1][hour] && self.fields[3][month] && day_ok {
                return Some(t);
            }
            t += 60;
        }
        None
    }
}

fn number(text: &str, lo: usize, hi: usize) -> Result<usize, String> {
    text.parse::<usize>()
        .ok()
        .filter(|n| (lo..=hi).contains(n))
        .ok_or_else(|| format!("{text:?} is not a number from {lo} to {hi}."))
}

/// (minute, hour, day of month, month, weekday with Sunday 0) of Unix seconds, UTC.
fn civil(t: i64) -> (usize, usize, usize, usize, usize) {
    let days = t.div_euclid(86_400);
    let secs = t.rem_euclid(86_400);
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let weekday = (days + 4).rem_euclid(7); // 1970-01-01 was a Thursday
    ((secs / 60 % 60) as usize, (secs / 3600) as usize, day as usize, month as usize, weekday as usize)
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

    #[test]
    fn cron_lines_as_cron_reads_them() {
        // 2026-12-04 15:31:10 UTC is a Friday.
        let now = 1_796_398_270;
        assert_eq!(civil(now), (31, 15, 4, 12, 5));
        let every_15 = Cron::parse("*/15 * * * *").unwrap();
        assert_eq!(civil(every_15.next_after(now).unwrap()), (45, 15, 4, 12, 5));
        let weekdays_at_3 = Cron::parse("0 3 * * 1-5").unwrap();
        // Friday 15:31 → Monday 03:00.
        assert_eq!(civil(weekdays_at_3.next_after(now).unwrap()), (0, 3, 7, 12, 1));
        let list = Cron::parse("5,35 9-17 * * *").unwrap();
        assert_eq!(civil(list.next_after(now).unwrap()), (35, 15, 4, 12, 5));
        for bad in ["* * * *", "61 * * * *", "*/0 * * * *", "5-1 * * * *", "a * * * *"] {
            assert!(Cron::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Cron::parse("0 0 31 2 *").unwrap().next_after(now), None, "February has no 31st");
    }
}
