//! Time as Sleuth stores and shows it: Unix milliseconds in the store, RFC 3339
//! (UTC, milliseconds) in the API.

/// Now, as stored: Unix milliseconds.
pub fn now_ms() -> i64 {
    let now = time::OffsetDateTime::now_utc();
    i64::try_from(now.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

/// Unix milliseconds → RFC 3339 with milliseconds, UTC.
pub fn timestamp(ms: i64) -> String {
    let format =
        time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&format).ok())
        .unwrap_or_default()
}

/// RFC 3339 (any offset) → Unix milliseconds; none for anything else.
pub fn parse_timestamp(text: &str) -> Option<i64> {
    let at = time::OffsetDateTime::parse(text.trim(), &time::format_description::well_known::Rfc3339).ok()?;
    i64::try_from(at.unix_timestamp_nanos() / 1_000_000).ok()
}

/// Unix milliseconds → the UTC day, `2026-11-30`.
pub fn day(ms: i64) -> String {
    timestamp(ms).chars().take(10).collect()
}

/// Whether two epoch-millisecond times fall on the same UTC day.
pub fn same_day(a_ms: i64, b_ms: i64) -> bool {
    a_ms.div_euclid(86_400_000) == b_ms.div_euclid(86_400_000)
}

/// `future`'s output, or never for `None`: a `select!` branch for a deadline
/// (or an event) that is only sometimes set.
pub async fn or_never<F: std::future::Future>(future: Option<F>) -> F::Output {
    match future {
        Some(future) => future.await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_utc_with_millis() {
        assert_eq!(timestamp(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(timestamp(1_796_023_293_123), "2026-11-30T07:21:33.123Z");
        assert_eq!(day(1_796_023_293_123), "2026-11-30");
        assert!(same_day(1_796_023_293_123, 1_796_023_293_123 + 3_600_000));
        assert!(!same_day(0, 86_400_000));
        assert_eq!(parse_timestamp("2026-11-30T07:21:33.123Z"), Some(1_796_023_293_123));
        assert_eq!(parse_timestamp("2026-11-30T08:21:33.123+01:00"), Some(1_796_023_293_123));
        assert_eq!(parse_timestamp("yesterday"), None);
    }
}
