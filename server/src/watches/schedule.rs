//! A watch's cron line: POSIX/Vixie cron's five fields (minute hour day month
//! weekday), in UTC, read by `croner`; either day field matching is enough
//! when both are restricted, as cron does.

use chrono::{DateTime, Utc};
use domain::error::ApiError;
use std::str::FromStr;

pub struct Schedule(croner::Cron);

impl Schedule {
    /// `*/15 * * * *`, `0 3 * * 1-5`, `5,35 9-17 * * *`.
    pub fn parse(line: &str) -> Result<Self, ApiError> {
        // Five fields only: croner would also take seconds, and a watch fires at most each minute.
        if line.split_whitespace().count() != 5 {
            return Err(ApiError::invalid(format!(
                "{line:?}: a cron line has 5 fields (minute hour day month weekday), e.g. \"0 3 * * 1-5\"."
            )));
        }
        croner::Cron::from_str(line).map(Self).map_err(|e| {
            let said = e.to_string();
            ApiError::invalid(format!(
                "{line:?} is not a cron line ({}): minute 0–59, hour 0–23, day 1–31, month 1–12, \
                     weekday 0–7 (0 and 7 are Sunday); lists 5,35, ranges 9-17, steps */15.",
                said.trim_end_matches('.')
            ))
        })
    }

    /// The first minute after `after_s` (Unix seconds) that matches, in Unix
    /// seconds; `None` for a line that never does (`0 0 31 2 *`).
    pub fn next_after(&self, after_s: i64) -> Option<i64> {
        let after = DateTime::<Utc>::from_timestamp(after_s, 0)?;
        self.0.find_next_occurrence(&after, false).ok().map(|at| at.timestamp())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> i64 {
        DateTime::parse_from_rfc3339(text).unwrap().timestamp()
    }

    #[test]
    fn cron_lines_as_cron_reads_them() {
        // A Friday.
        let now = at("2026-12-04T15:31:10Z");
        let next = |line: &str| Schedule::parse(line).unwrap().next_after(now);
        assert_eq!(next("*/15 * * * *"), Some(at("2026-12-04T15:45:00Z")));
        assert_eq!(next("0 3 * * 1-5"), Some(at("2026-12-07T03:00:00Z")), "Friday 15:31 → Monday 03:00");
        assert_eq!(next("5,35 9-17 * * *"), Some(at("2026-12-04T15:35:00Z")));
        assert_eq!(next("0 0 1 * 1"), Some(at("2026-12-07T00:00:00Z")), "either day field: Monday 7th");
        assert_eq!(next("0 0 * * 7"), Some(at("2026-12-06T00:00:00Z")), "7 is Sunday too");
        for bad in ["* * * *", "61 * * * *", "*/0 * * * *", "5-1 * * * *", "a * * * *", "0 * * * * *"] {
            let refused = Schedule::parse(bad).err().map(|e| e.message).unwrap_or_default();
            assert!(refused.contains(bad), "{bad}: {refused}");
        }
        assert_eq!(next("0 0 31 2 *"), None, "February has no 31st");
    }
}
