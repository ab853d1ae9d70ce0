//! The audit log: appended to, read by admins, never changed (see migration 0013).

use super::{Store, StoreResult};
use crate::time::now_ms;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AuditRow {
    pub id: i64,
    pub at: i64,
    pub who: String,
    pub action: String,
    pub host: Option<String>,
    pub target: String,
    pub env: String,
    pub outcome: Option<String>,
    pub run_id: Option<i64>,
}

/// What an entry says; the time is added when it is written.
#[derive(Debug, Clone, Default)]
pub struct NewAudit {
    pub who: String,
    pub action: &'static str,
    pub host: Option<String>,
    pub target: String,
    /// JSON array of [name, value].
    pub env: Option<String>,
    pub outcome: Option<String>,
    pub run_id: Option<i64>,
}

impl Store {
    pub async fn append_audit(&self, entry: &NewAudit) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO audit_log (at, who, action, host, target, env, outcome, run_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(now_ms())
        .bind(&entry.who)
        .bind(entry.action)
        .bind(&entry.host)
        .bind(&entry.target)
        .bind(entry.env.as_deref().unwrap_or("[]"))
        .bind(&entry.outcome)
        .bind(entry.run_id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The newest `limit` entries, newest first.
    pub async fn audit_entries(&self, limit: i64) -> StoreResult<Vec<AuditRow>> {
        Ok(sqlx::query_as(
            "SELECT id, at, who, action, host, target, env, outcome, run_id FROM audit_log ORDER BY id DESC LIMIT $1",
        )
        .bind(limit)
        .fetch_all(&self.pool)
        .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_audit_log_refuses_changes_and_deletes() {
        for (_dir, _database, store) in crate::db::test_stores().await {
            let entry = NewAudit { who: "ada".into(), action: "grep", target: "x".into(), ..Default::default() };
            store.append_audit(&entry).await.unwrap();
            for sql in ["UPDATE audit_log SET who = 'eve'", "DELETE FROM audit_log"] {
                let refused = sqlx::query(sql).execute(&store.pool).await.unwrap_err();
                assert!(refused.to_string().contains("append-only"), "{:?} {sql}: {refused}", store.backend());
            }
            assert_eq!(store.audit_entries(10).await.unwrap()[0].who, "ada");
        }
    }
}
