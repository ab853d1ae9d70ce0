//! Share links, looked up by the SHA-256 of their token.

use super::{Store, StoreResult};
use crate::time::now_ms;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ShareRow {
    pub id: i64,
    pub investigation_id: String,
    pub label: String,
    pub hide_hosts: i64,
    pub created_by: String,
    pub created_at: i64,
    pub expires_at: Option<i64>,
    pub revoked_at: Option<i64>,
}

const COLUMNS: &str = "id, investigation_id, label, hide_hosts, created_by, created_at, expires_at, revoked_at";

impl Store {
    pub async fn insert_share(
        &self,
        investigation: &str,
        token_hash: &str,
        label: &str,
        hide_hosts: bool,
        created_by: &str,
        expires_at: Option<i64>,
    ) -> StoreResult<ShareRow> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "INSERT INTO share_links (investigation_id, token_hash, label, hide_hosts, created_by, created_at, expires_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING {COLUMNS}"
        )))
        .bind(investigation)
        .bind(token_hash)
        .bind(label)
        .bind(i64::from(hide_hosts))
        .bind(created_by)
        .bind(now_ms())
        .bind(expires_at)
        .fetch_all(&self.pool)
        .await?
        .into_iter()
        .next()
        .ok_or(sqlx::Error::RowNotFound)?)
    }

    pub async fn shares_of(&self, investigation: &str) -> StoreResult<Vec<ShareRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM share_links WHERE investigation_id = $1 ORDER BY id"
        )))
        .bind(investigation)
        .fetch_all(&self.pool)
        .await?)
    }

    pub async fn share_by_hash(&self, token_hash: &str) -> StoreResult<Option<ShareRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM share_links WHERE token_hash = $1")))
            .bind(token_hash)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// The link as revoked; `None` if there is no such link. Revoking twice keeps
    /// the first time.
    pub async fn revoke_share(&self, id: i64) -> StoreResult<Option<ShareRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "UPDATE share_links SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2 RETURNING {COLUMNS}"
        )))
        .bind(now_ms())
        .bind(id)
        .fetch_all(&self.pool)
        .await?
        .into_iter()
        .next())
    }
}
