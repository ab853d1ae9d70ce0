//! A watch's row as the API shows it, its schedule and its line on the
//! investigations' list: plain functions of `db::WatchRow`, used by the
//! scheduler (`crate::watches`), the policy layer and the notebook alike.

use super::schedule::Schedule;
use crate::db::WatchRow;
use crate::error::Result;
use domain::watches::{Watch, webhook_shown};

/// The history page a watch judges, its configuration in the link (a sweep's
/// history is of one configuration): `/i/ID/history?step=N&metric=M&config=C`.
pub fn history_path(row: &WatchRow) -> String {
    let mut path = format!(
        "/i/{}/history?step={}&metric={}",
        row.investigation_id,
        row.step_id,
        domain::html::query_encode(&row.metric)
    );
    if let Some(config) = &row.config {
        path.push_str(&format!("&config={}", domain::html::query_encode(config)));
    }
    path
}

/// The first firing after `now_ms` (milliseconds), by its schedule.
pub fn next_at(every_s: Option<i64>, cron: Option<&str>, now_ms: i64) -> Option<i64> {
    match (every_s, cron) {
        (Some(every), _) => Some(now_ms + every.max(1) * 1000),
        (None, Some(line)) => Schedule::parse(line).ok()?.next_after(now_ms / 1000).map(|s| s * 1000),
        (None, None) => None,
    }
}

/// A watch as the API shows it.
pub fn view(row: &WatchRow) -> Result<Watch> {
    let last_change =
        crate::error::stored_opt(row.last_change.as_deref(), || format!("watch {}'s last change", row.id))?;
    Ok(Watch {
        url: history_path(row),
        id: row.id,
        step_id: row.step_id,
        investigation_id: row.investigation_id.clone(),
        metric: row.metric.clone(),
        config: row.config.clone(),
        every_s: row.every_s.and_then(|s| u64::try_from(s).ok()),
        cron: row.cron.clone(),
        webhook: row.webhook.as_deref().map(webhook_shown),
        created_by: row.created_by.clone(),
        created_at: crate::time::timestamp(row.created_at),
        next_at: row.next_at.map(crate::time::timestamp),
        runs: u64::try_from(row.runs).unwrap_or(0),
        failures_in_row: u32::try_from(row.failures).unwrap_or(0),
        max_failures: u32::try_from(row.max_failures).unwrap_or(0),
        last_run: row.last_run,
        last_change,
        last_told: row.last_told.clone(),
        stopped: row.stopped.clone(),
        stop_reason: row.stop_reason.0,
    })
}

/// What a watch has to say on the investigations' list: its newest change,
/// or why it stopped; nothing while all is quiet.
pub fn alert(w: &Watch) -> Option<String> {
    if let Some(why) = &w.stopped {
        return Some(format!("step {} watch stopped: {why}", w.step_id));
    }
    w.last_change.as_ref().map(|c| {
        format!("step {}: {} {:+.1} % in {} from run #{}", w.step_id, c.direction, c.delta_pct, w.metric, c.run_id)
    })
}
