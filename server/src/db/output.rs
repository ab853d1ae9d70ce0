//! Run output in the database (PostgreSQL only: SQLite's server keeps it in
//! files, `crate::runs::output`). Every replica reads what any replica's runs
//! printed from here, by byte offset, as it reads the files on SQLite.
//!
//! A run's output is a sequence of blocks, each the bytes `[start, stop)` and
//! its part of the chunk index (13-byte records, as in the `.idx` files). A
//! writer appends a block per flush (at most about a megabyte), so a gigabyte is
//! a thousand rows, and a range read touches only the blocks it overlaps.

use super::{Store, StoreResult};

/// Whose output: a run's own (stdout and stderr as they arrived), or one of
/// the logs kept with a run (its server's log, an artifact; `run_logs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputKey {
    Run(i64),
    Log(i64),
}

impl From<i64> for OutputKey {
    /// A bare id is a run's.
    fn from(run: i64) -> Self {
        Self::Run(run)
    }
}

impl OutputKey {
    /// The table of its blocks, its key column, and the key.
    pub(super) fn table(self) -> (&'static str, &'static str, i64) {
        match self {
            Self::Run(id) => ("run_output", "run_id", id),
            Self::Log(id) => ("log_output", "log_id", id),
        }
    }
}

/// One block of a run's output as stored.
pub struct OutputBlock {
    pub start: u64,
    pub data: Vec<u8>,
    pub chunks: Vec<u8>,
}

fn offset(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl Store {
    /// Appends the block that starts at `start` (the output's length so far).
    pub async fn append_output(&self, key: OutputKey, start: u64, data: &[u8], chunks: &[u8]) -> StoreResult<()> {
        let (table, column, id) = key.table();
        // A block written again (its first commit's answer was lost with the
        // connection, or a spill file replayed twice) is the same block.
        let sql = format!(
            "INSERT INTO {table} ({column}, start, stop, data, chunks) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT ({column}, start) DO NOTHING"
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(id)
            .bind(offset(start))
            .bind(offset(start + data.len() as u64))
            .bind(data)
            .bind(chunks)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// How many bytes of the run's output are stored.
    pub async fn output_len(&self, key: OutputKey) -> StoreResult<u64> {
        let _slot = self.read_slot().await;
        let (table, column, id) = key.table();
        let sql = format!("SELECT stop FROM {table} WHERE {column} = $1 ORDER BY start DESC LIMIT 1");
        let row: Option<(i64,)> = sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(id).fetch_optional(&self.pool).await?;
        Ok(row.map_or(0, |(stop,)| u64::try_from(stop).unwrap_or(0)))
    }

    /// Bytes `[from, to)` of the run's output (fewer if it is shorter). Each
    /// overlapping block gives only its part (`substring` of a TOASTed value
    /// reads and decompresses only up to the part's end).
    pub async fn output_range(&self, key: OutputKey, from: u64, to: u64) -> StoreResult<Vec<u8>> {
        if to <= from {
            return Ok(Vec::new());
        }
        let _slot = self.read_slot().await;
        let (table, column, id) = key.table();
        let sql = format!(
            "SELECT substring(data FROM (GREATEST($2, start) - start + 1)::int
                                  FOR (LEAST($3, stop) - GREATEST($2, start))::int)
             FROM {table}
             WHERE {column} = $1
               AND start >= COALESCE((SELECT MAX(start) FROM {table} WHERE {column} = $1 AND start <= $2), 0)
               AND start < $3 AND stop > $2
             ORDER BY start"
        );
        let parts: Vec<(Vec<u8>,)> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(id)
            .bind(offset(from))
            .bind(offset(to))
            .fetch_all(&self.pool)
            .await?;
        let mut bytes = Vec::with_capacity(parts.iter().map(|(p,)| p.len()).sum());
        for (part,) in parts {
            bytes.extend_from_slice(&part);
        }
        Ok(bytes)
    }

    /// Up to `limit` whole blocks from the one starting at `from` on, for
    /// readers that walk the whole output (downloads, per-stream reads, copies).
    pub async fn output_blocks(&self, key: OutputKey, from: u64, limit: i64) -> StoreResult<Vec<OutputBlock>> {
        let _slot = self.read_slot().await;
        let (table, column, id) = key.table();
        let sql = format!(
            "SELECT start, data, chunks FROM {table} WHERE {column} = $1 AND start >= $2 ORDER BY start LIMIT $3"
        );
        let rows: Vec<(i64, Vec<u8>, Vec<u8>)> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(id)
            .bind(offset(from))
            .bind(limit)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows
            .into_iter()
            .map(|(start, data, chunks)| OutputBlock { start: u64::try_from(start).unwrap_or(0), data, chunks })
            .collect())
    }

    pub async fn delete_output(&self, key: OutputKey) -> StoreResult<()> {
        let (table, column, id) = key.table();
        let sql = format!("DELETE FROM {table} WHERE {column} = $1");
        sqlx::query(sqlx::AssertSqlSafe(sql)).bind(id).execute(&self.pool).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::output::OutputKey;
    use std::time::Duration;

    /// Output reads waiting for a place never hold up a write: the pool keeps
    /// connections for writes that reads cannot take (PostgreSQL, where run
    /// output is in the store; `./dev test` runs the lib tests there too).
    #[tokio::test]
    async fn reads_of_output_wait_their_turn_and_writes_go_on() {
        for (_dir, _db, store) in crate::db::test_stores().await {
            if store.backend() != crate::db::Backend::Postgres {
                continue; // SQLite keeps run output in files, not in the store.
            }
            let run = crate::db::tests_support::a_run(&store).await;
            store.append_output(OutputKey::Run(run), 0, b"hello\n", &[]).await.unwrap();
            let readers = store.reads.available_permits();
            assert!(readers >= 1, "some reads at once");
            assert!(readers + 4 <= crate::db::POOL.0 as usize, "{readers} reads leave connections for writes");
            // Every place taken, as a crowd of viewers would.
            let crowd = store.reads.acquire_many(readers as u32).await.unwrap();
            let waiting = tokio::spawn({
                let store = store.clone();
                async move { store.output_len(OutputKey::Run(run)).await }
            });
            tokio::time::sleep(Duration::from_millis(300)).await;
            assert!(!waiting.is_finished(), "a read waits for a place");
            // Writes meanwhile: a run stored, its output appended.
            let wrote = tokio::time::timeout(Duration::from_secs(5), async {
                let other = crate::db::tests_support::a_run(&store).await;
                store.append_output(OutputKey::Run(other), 0, b"written\n", &[]).await.unwrap();
            })
            .await;
            assert!(wrote.is_ok(), "writes are not held up by the reads");
            drop(crowd);
            let len = tokio::time::timeout(Duration::from_secs(5), waiting).await.unwrap().unwrap().unwrap();
            assert_eq!(len, 6);
        }
    }
}
