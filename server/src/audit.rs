//! Recording remote actions (see migration 0013 for what an entry holds). An
//! entry that cannot be written is logged loudly but does not undo the action,
//! which has already happened on the host.

use crate::db::{NewAudit, Store};

/// Who the audit log names for work Sleuth does by itself (the facts capture
/// before a day's first run, a run's end); everything else names its actor.
pub const SLEUTH: &str = "sleuth";

pub async fn record(store: &Store, entry: NewAudit) {
    if let Err(e) = store.append_audit(&entry).await {
        tracing::error!(action = entry.action, host = ?entry.host, "cannot write the audit log: {}", crate::error::chain(&e));
    }
}

/// "ok", or what the user was told (an internal error's cause is in the server log).
pub fn outcome<T>(result: &crate::error::Result<T>) -> Option<String> {
    Some(match result {
        Ok(_) => "ok".to_string(),
        Err(crate::error::Error::User(e)) => format!("error: {}", e.message),
        Err(crate::error::Error::Internal(_)) => format!("error: {}", domain::error::ApiError::internal().message),
    })
}
