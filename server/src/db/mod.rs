//! The store: every query Sleuth makes is in this module, and nothing outside it
//! names SQL or sqlx types.
//!
//! Design notes
//! - SQLite in WAL mode with foreign keys on, in `DATA_DIR/sleuth.db`; migrations
//!   are embedded in the binary and applied at open, so a new binary upgrades an
//!   old data dir by itself.
//! - Rows come out as plain structs (`*Row`); turning them into API types and
//!   checking input is the job of [`crate::notebook`], not of the store.
//! - Writes that touch several rows (moving a step, deleting one) run in one
//!   `BEGIN IMMEDIATE` transaction, so concurrent writers queue on SQLite's lock
//!   (busy timeout 5 s) instead of failing half way.
//! - Postgres (for team clusters) is meant to arrive as a second implementation of
//!   this same surface: the queries are plain SQL, times are integers, ids are
//!   text or 64-bit integers, and nothing relies on SQLite-only behaviour except
//!   `STRICT` tables and `json_valid` checks in the migrations.

mod access;
mod accounts;
mod annotations;
mod audit;
mod comments;
mod facts;
mod hosts;
mod hypotheses;
mod measurements;
mod rows;
mod runs;
mod searches;
mod shares;
mod snapshots;

pub use access::OwnedBy;
pub use accounts::{TokenRow, UserRow};
pub use annotations::AnnotationRow;
pub use audit::{AuditRow, NewAudit};
pub use comments::{CommentRow, MentionRow, NewCommentRow};
pub use facts::FactsRow;
pub use hypotheses::HypothesisRow;
pub use measurements::{ExtractorRow, MeasurementRow};
pub use rows::{HostRow, InvestigationRow, NewRun, RunEnd, RunRow, StepRow};
pub use searches::SearchRow;
pub use shares::ShareRow;
pub use snapshots::SnapshotRow;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};
use std::path::Path;
use std::time::Duration;

pub type StoreResult<T> = Result<T, StoreError>;

/// A store operation that failed. Its cause is for the log: users see one
/// sentence ([`ApiError::internal`](app::error::ApiError::internal)), and a
/// handler or service passes it on with `?`.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct StoreError(#[from] sqlx::Error);

impl From<StoreError> for app::error::ApiError {
    fn from(e: StoreError) -> Self {
        tracing::error!("store: {e}");
        app::error::ApiError::internal()
    }
}

#[derive(Clone)]
pub struct Store {
    pool: SqlitePool,
}

/// Current time as stored: Unix milliseconds.
pub fn now_ms() -> i64 {
    let now = time::OffsetDateTime::now_utc();
    (now.unix_timestamp_nanos() / 1_000_000) as i64
}

impl Store {
    /// Opens (creating if needed) the database in `data_dir` and migrates it.
    pub async fn open(data_dir: &Path) -> Result<Self, OpenError> {
        std::fs::create_dir_all(data_dir)
            .map_err(|source| OpenError::DataDir { path: data_dir.display().to_string(), source })?;
        let options = SqliteConnectOptions::new()
            .filename(data_dir.join("sleuth.db"))
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(5));
        let pool =
            SqlitePoolOptions::new().max_connections(8).connect_with(options).await.map_err(OpenError::Connect)?;
        sqlx::migrate!("./migrations").run(&pool).await.map_err(OpenError::Migrate)?;
        Ok(Self { pool })
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }

    // ---- investigations ------------------------------------------------------

    pub async fn list_investigations(&self) -> StoreResult<Vec<InvestigationRow>> {
        Ok(sqlx::query_as(
            "SELECT i.id, i.title, i.question, i.status, i.created_at, i.updated_at,
                    (SELECT COUNT(*) FROM steps s WHERE s.investigation_id = i.id) AS step_count
             FROM investigations i
             ORDER BY i.created_at DESC, i.rowid DESC",
        )
        .fetch_all(&self.pool)
        .await?)
    }

    pub async fn investigation(&self, id: &str) -> StoreResult<Option<InvestigationRow>> {
        Ok(sqlx::query_as(
            "SELECT i.id, i.title, i.question, i.status, i.created_at, i.updated_at,
                    (SELECT COUNT(*) FROM steps s WHERE s.investigation_id = i.id) AS step_count
             FROM investigations i WHERE i.id = ?",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// Inserts a new investigation; `false` if `id` is taken.
    pub async fn insert_investigation(&self, id: &str, title: &str, question: &str) -> StoreResult<bool> {
        let now = now_ms();
        let done = sqlx::query(
            "INSERT INTO investigations (id, title, question, status, created_at, updated_at)
             VALUES (?, ?, ?, 'open', ?, ?) ON CONFLICT (id) DO NOTHING",
        )
        .bind(id)
        .bind(title)
        .bind(question)
        .bind(now)
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Sets the given fields; `false` if there is no such investigation.
    pub async fn update_investigation(
        &self,
        id: &str,
        title: Option<&str>,
        question: Option<&str>,
        status: Option<&str>,
    ) -> StoreResult<bool> {
        let done = sqlx::query(
            "UPDATE investigations SET
                 title = COALESCE(?, title),
                 question = COALESCE(?, question),
                 status = COALESCE(?, status),
                 updated_at = ?
             WHERE id = ?",
        )
        .bind(title)
        .bind(question)
        .bind(status)
        .bind(now_ms())
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Deletes the investigation and (by cascade) its steps.
    pub async fn delete_investigation(&self, id: &str) -> StoreResult<bool> {
        let done = sqlx::query("DELETE FROM investigations WHERE id = ?").bind(id).execute(&self.pool).await?;
        Ok(done.rows_affected() == 1)
    }

    // ---- steps ---------------------------------------------------------------

    pub async fn steps(&self, investigation: &str) -> StoreResult<Vec<StepRow>> {
        Ok(sqlx::query_as(
            "SELECT id, investigation_id, position, kind, body, created_at, updated_at, version, updated_by
             FROM steps WHERE investigation_id = ? ORDER BY position, id",
        )
        .bind(investigation)
        .fetch_all(&self.pool)
        .await?)
    }

    pub async fn step(&self, id: i64) -> StoreResult<Option<StepRow>> {
        Ok(sqlx::query_as(
            "SELECT id, investigation_id, position, kind, body, created_at, updated_at, version, updated_by
             FROM steps WHERE id = ?",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// Appends a step to the end of the timeline; `None` if there is no such investigation.
    pub async fn insert_step(&self, investigation: &str, kind: &str, body: &str) -> StoreResult<Option<StepRow>> {
        let now = now_ms();
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let touched = touch_investigation(&mut tx, investigation, now).await?;
        if !touched {
            return Ok(None);
        }
        let row = sqlx::query_as(
            "INSERT INTO steps (investigation_id, position, kind, body, created_at, updated_at)
             VALUES (?, (SELECT COALESCE(MAX(position), 0) + 1 FROM steps WHERE investigation_id = ?), ?, ?, ?, ?)
             RETURNING id, investigation_id, position, kind, body, created_at, updated_at, version, updated_by",
        )
        .bind(investigation)
        .bind(investigation)
        .bind(kind)
        .bind(body)
        .bind(now)
        .bind(now)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Some(row))
    }

    /// Replaces a step's body and bumps its version; `None` if there is no such
    /// step, or (with `expected`) its version is no longer that one.
    pub async fn update_step_body(
        &self,
        id: i64,
        body: &str,
        who: &str,
        expected: Option<i64>,
    ) -> StoreResult<Option<StepRow>> {
        let now = now_ms();
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let row: Option<StepRow> = sqlx::query_as(
            "UPDATE steps SET body = ?, updated_at = ?, version = version + 1, updated_by = ?
             WHERE id = ? AND (? IS NULL OR version = ?)
             RETURNING id, investigation_id, position, kind, body, created_at, updated_at, version, updated_by",
        )
        .bind(body)
        .bind(now)
        .bind(who)
        .bind(id)
        .bind(expected)
        .bind(expected)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(row) = &row {
            touch_investigation(&mut tx, &row.investigation_id, now).await?;
        }
        tx.commit().await?;
        Ok(row)
    }

    /// Moves a step to `position` (1-based, clamped to the timeline), shifting the
    /// steps in between; `None` if there is no such step.
    pub async fn move_step(&self, id: i64, position: i64) -> StoreResult<Option<StepRow>> {
        let now = now_ms();
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let Some((investigation, from)): Option<(String, i64)> =
            sqlx::query_as("SELECT investigation_id, position FROM steps WHERE id = ?")
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?
        else {
            return Ok(None);
        };
        let (count,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM steps WHERE investigation_id = ?")
            .bind(&investigation)
            .fetch_one(&mut *tx)
            .await?;
        let to = position.clamp(1, count.max(1));
        if to != from {
            let (lo, hi, shift) = if to < from { (to, from - 1, 1) } else { (from + 1, to, -1) };
            sqlx::query(
                "UPDATE steps SET position = position + ?
                 WHERE investigation_id = ? AND position BETWEEN ? AND ?",
            )
            .bind(shift)
            .bind(&investigation)
            .bind(lo)
            .bind(hi)
            .execute(&mut *tx)
            .await?;
            sqlx::query("UPDATE steps SET position = ?, updated_at = ? WHERE id = ?")
                .bind(to)
                .bind(now)
                .bind(id)
                .execute(&mut *tx)
                .await?;
            touch_investigation(&mut tx, &investigation, now).await?;
        }
        let row = sqlx::query_as(
            "SELECT id, investigation_id, position, kind, body, created_at, updated_at, version, updated_by
             FROM steps WHERE id = ?",
        )
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(row)
    }

    /// Deletes a step and closes the gap it leaves; `false` if there is no such step.
    pub async fn delete_step(&self, id: i64) -> StoreResult<bool> {
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let Some((investigation, position)): Option<(String, i64)> =
            sqlx::query_as("DELETE FROM steps WHERE id = ? RETURNING investigation_id, position")
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?
        else {
            return Ok(false);
        };
        sqlx::query("UPDATE steps SET position = position - 1 WHERE investigation_id = ? AND position > ?")
            .bind(&investigation)
            .bind(position)
            .execute(&mut *tx)
            .await?;
        touch_investigation(&mut tx, &investigation, now_ms()).await?;
        tx.commit().await?;
        Ok(true)
    }
}

async fn touch_investigation(
    tx: &mut sqlx::Transaction<'static, sqlx::Sqlite>,
    id: &str,
    now: i64,
) -> StoreResult<bool> {
    let done = sqlx::query("UPDATE investigations SET updated_at = ? WHERE id = ?")
        .bind(now)
        .bind(id)
        .execute(&mut **tx)
        .await?;
    Ok(done.rows_affected() == 1)
}

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot create the data directory {path}: {source}")]
    DataDir { path: String, source: std::io::Error },
    #[error("cannot open the database: {0}")]
    Connect(sqlx::Error),
    #[error("cannot migrate the database: {0}")]
    Migrate(sqlx::migrate::MigrateError),
}
