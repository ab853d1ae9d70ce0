//! Pinned host keys and keys waiting for confirmation (`crate::ssh::known_hosts`
//! is the logic). Patterns are OpenSSH's: `name` for port 22, `[name]:port`
//! otherwise; keys are `algorithm base64` as in a known_hosts line.

use super::{Store, StoreResult};
use crate::time::now_ms;

impl Store {
    /// The keys pinned for `pattern`, as `(algorithm, "algorithm base64")`.
    pub async fn host_keys(&self, pattern: &str) -> StoreResult<Vec<(String, String)>> {
        Ok(sqlx::query_as("SELECT algorithm, key FROM host_keys WHERE pattern = $1 ORDER BY algorithm")
            .bind(pattern)
            .fetch_all(&self.pool)
            .await?)
    }

    /// Every pinned key as `(pattern, key)`, for the known_hosts export.
    pub async fn all_host_keys(&self) -> StoreResult<Vec<(String, String)>> {
        Ok(sqlx::query_as("SELECT pattern, key FROM host_keys ORDER BY pattern, algorithm")
            .fetch_all(&self.pool)
            .await?)
    }

    /// Pins `key` for `pattern`, replacing the key of the same algorithm, and
    /// withdraws the pattern's pending offer: one statement each, in one
    /// transaction, so two replicas confirming at once leave one key.
    pub async fn pin_host_key(&self, pattern: &str, algorithm: &str, key: &str) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        sqlx::query(
            "INSERT INTO host_keys (pattern, algorithm, key, added_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT (pattern, algorithm) DO UPDATE SET key = excluded.key, added_at = excluded.added_at",
        )
        .bind(pattern)
        .bind(algorithm)
        .bind(key)
        .bind(now_ms())
        .execute(&mut *tx)
        .await?;
        sqlx::query("DELETE FROM host_key_offers WHERE pattern = $1").bind(pattern).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Records the key a host offered (replacing an older offer).
    pub async fn offer_host_key(&self, pattern: &str, key: &str) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO host_key_offers (pattern, key, offered_at) VALUES ($1, $2, $3)
             ON CONFLICT (pattern) DO UPDATE SET key = excluded.key, offered_at = excluded.offered_at",
        )
        .bind(pattern)
        .bind(key)
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub async fn host_key_offer(&self, pattern: &str) -> StoreResult<Option<String>> {
        let row: Option<(String,)> = sqlx::query_as("SELECT key FROM host_key_offers WHERE pattern = $1")
            .bind(pattern)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|(key,)| key))
    }
}
