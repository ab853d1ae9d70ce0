//! Snapshot rows of snippet steps.

use super::{Store, StoreResult};
use crate::time::now_ms;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SnapshotRow {
    pub id: i64,
    pub step_id: i64,
    pub path: String,
    pub start_line: i64,
    pub end_line: i64,
    /// JSON array of strings.
    pub lines: String,
    pub total_lines: Option<i64>,
    pub size: i64,
    pub mtime: Option<i64>,
    pub sha256: Option<String>,
    /// JSON array of strings.
    pub notes: String,
    pub fetched_at: i64,
    /// JSON array of highlighted lines, when computed at fetch.
    pub html_lines: Option<String>,
}

const COLUMNS: &str =
    "id, step_id, path, start_line, end_line, lines, total_lines, size, mtime, sha256, notes, fetched_at, html_lines";

impl Store {
    pub async fn insert_snapshot(&self, row: &SnapshotRow) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO snapshots (step_id, path, start_line, end_line, lines, total_lines, size, mtime, sha256, notes, fetched_at, html_lines)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
        )
        .bind(row.step_id)
        .bind(&row.path)
        .bind(row.start_line)
        .bind(row.end_line)
        .bind(&row.lines)
        .bind(row.total_lines)
        .bind(row.size)
        .bind(row.mtime)
        .bind(&row.sha256)
        .bind(&row.notes)
        .bind(now_ms())
        .bind(&row.html_lines)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub async fn snapshots_of_investigation(&self, investigation: &str) -> StoreResult<Vec<SnapshotRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM snapshots WHERE step_id IN (SELECT id FROM steps WHERE investigation_id = $1) ORDER BY id"
        )))
        .bind(investigation)
        .fetch_all(&self.pool)
        .await?)
    }

    pub async fn snapshots_of_step(&self, step_id: i64) -> StoreResult<Vec<SnapshotRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM snapshots WHERE step_id = $1 ORDER BY id"
        )))
        .bind(step_id)
        .fetch_all(&self.pool)
        .await?)
    }
}
