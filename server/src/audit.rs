//! Recording remote actions (see migration 0013 for what an entry holds). An
//! entry that cannot be written is logged loudly but does not undo the action,
//! which has already happened on the host.

use crate::db::{NewAudit, Store};

/// Who the current request is for: the signed-in user's name, or `sleuth` for
/// work Sleuth does by itself (the daily facts capture, a run's end).
pub fn actor_name() -> String {
    crate::auth::actor().map_or_else(|| "sleuth".to_string(), |a| a.user.name)
}

pub async fn record(store: &Store, entry: NewAudit) {
    if let Err(e) = store.append_audit(&entry).await {
        tracing::error!(action = entry.action, host = ?entry.host, "cannot write the audit log: {e}");
    }
}

/// "ok", or the error's message.
pub fn outcome<T>(result: &Result<T, app::error::ApiError>) -> Option<String> {
    Some(match result {
        Ok(_) => "ok".to_string(),
        Err(e) => format!("error: {}", e.message),
    })
}
