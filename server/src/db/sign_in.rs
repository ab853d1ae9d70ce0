//! The sign-in limiter's memory (`crate::auth::limiter` has the rules), in the
//! store so that every replica counts the same failures: guessing through
//! several replicas is no faster than through one.

use super::{Queue, Store, StoreResult};

impl Store {
    /// Counts the failures of each `(key, limit)` since `since` and, if none has
    /// reached its limit, records one more for every key — in one serialised
    /// transaction, so parallel attempts cannot all pass the check. `Ok(ids)` of
    /// the recorded rows, or `Err(oldest)`: the time of the oldest failure that
    /// still counts against the first key over its limit.
    pub async fn reserve_sign_in(
        &self,
        keys: &[(String, usize)],
        since: i64,
        now: i64,
    ) -> StoreResult<Result<Vec<i64>, i64>> {
        let mut tx = self.begin_serialised(Queue::SignIn).await?;
        for (key, limit) in keys {
            let (count, oldest): (i64, Option<i64>) =
                sqlx::query_as("SELECT COUNT(*), MIN(at) FROM sign_in_failures WHERE key = $1 AND at > $2")
                    .bind(key)
                    .bind(since)
                    .fetch_one(&mut *tx)
                    .await?;
            if usize::try_from(count).unwrap_or(usize::MAX) >= *limit {
                return Ok(Err(oldest.unwrap_or(now)));
            }
        }
        let mut ids = Vec::with_capacity(keys.len());
        for (key, _) in keys {
            let (id,): (i64,) = sqlx::query_as("INSERT INTO sign_in_failures (key, at) VALUES ($1, $2) RETURNING id")
                .bind(key)
                .bind(now)
                .fetch_one(&mut *tx)
                .await?;
            ids.push(id);
        }
        tx.commit().await?;
        Ok(Ok(ids))
    }

    /// Takes back recorded attempts (a success, or one that never got checked).
    pub async fn delete_sign_in_failures(&self, ids: &[i64]) -> StoreResult<()> {
        for id in ids {
            sqlx::query("DELETE FROM sign_in_failures WHERE id = $1").bind(id).execute(&self.pool).await?;
        }
        Ok(())
    }

    /// Forgets every failure of `key` (a pair whose password was right).
    pub async fn forget_sign_in_failures(&self, key: &str) -> StoreResult<()> {
        sqlx::query("DELETE FROM sign_in_failures WHERE key = $1").bind(key).execute(&self.pool).await?;
        Ok(())
    }

    /// Deletes failures older than `before`, which no longer count.
    pub async fn sweep_sign_in_failures(&self, before: i64) -> StoreResult<()> {
        sqlx::query("DELETE FROM sign_in_failures WHERE at <= $1").bind(before).execute(&self.pool).await?;
        Ok(())
    }

    /// How many keys have failures recorded (for tests of the sweep and bursts).
    pub async fn sign_in_failure_keys(&self) -> StoreResult<i64> {
        let (n,): (i64,) =
            sqlx::query_as("SELECT COUNT(DISTINCT key) FROM sign_in_failures").fetch_one(&self.pool).await?;
        Ok(n)
    }
}
