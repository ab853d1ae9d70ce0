//! The store: every query Sleuth makes is in this module, and nothing outside it
//! names SQL or sqlx types.
//!
//! Design notes
//! - Two backends behind one [`Store`]: SQLite in `DATA_DIR/sleuth.db` (the
//!   default: one process, nothing to set up) and PostgreSQL (`--database
//!   postgres://…`: a team server, several replicas). Both go through sqlx's
//!   `Any` driver, so each query is written once: `$1` placeholders (SQLite
//!   reads them too), `RETURNING`, `ON CONFLICT`, integers for times and flags,
//!   JSON as text. The two schemas keep the same names and kinds of values
//!   (`migrations/postgres/0001_schema.sql` says how); where the dialects differ,
//!   [`Backend`] picks the SQL (today only how a serialised write begins).
//! - Migrations are embedded per backend and applied at open, so a new binary
//!   upgrades an old database by itself; a database migrated by a newer binary
//!   is refused with [`OpenError::TooNew`] rather than half understood.
//! - Rows come out as plain structs (`*Row`); turning them into API types and
//!   checking input is the job of [`crate::notebook`], not of the store.
//! - A statement that writes and returns rows (`… RETURNING`) outside a
//!   transaction is read with `fetch_all`, never `fetch_one`/`fetch_optional`:
//!   SQLite commits it only when it is stepped to its end, and sqlx drops the
//!   error of a statement left after its first row — on a full disk the insert
//!   answered with its row and was gone (found by the full-disk test).
//! - Writes that renumber steps run in one serialised transaction
//!   ([`Store::begin_serialised`]), so concurrent writers queue instead of
//!   failing half way or handing out one position twice.

mod access;
mod accounts;
mod annotations;
mod audit;
mod comments;
mod copy;
mod edited;
mod engine;
mod facts;
mod float;
mod guards;
mod host_keys;
mod hosts;
mod hypotheses;
mod kept;
mod logs;
mod measurements;
mod output;
mod patches;
mod replays;
mod replicas;
mod reports;
mod rows;
mod runs;
mod search;
mod searches;
mod shares;
mod sign_in;
mod snapshots;
mod sweeps;
mod telemetry;
mod watches;

pub use access::OwnedBy;
pub use accounts::{ListedUserRow, NO_PASSWORD, TokenRow, UserRow};
pub use annotations::AnnotationRow;
pub use audit::{AuditRow, NewAudit};
pub use comments::{CommentRow, MentionRow, NewCommentRow};
pub use copy::{Copy, CopyError};
pub use facts::FactsRow;
pub use hypotheses::{HypothesisRow, VerdictRow};
pub use logs::{LogKind, LogRow};
pub use measurements::ExtractorRow;
pub use measurements::HistoryRow;
pub use output::{OutputBlock, OutputKey};
pub use patches::RunPatchRow;
pub use replays::{Copied, ReplayCopy, ReplayRow};
pub use replicas::{EXPIRY as LEASE_EXPIRY, HostClaim, LeaseJudge, Notices, RENEW as LEASE_RENEW};
pub use reports::{NewReport, ReportRow, SamplesRow, encode as encode_samples};
pub use rows::{HostRow, InvestigationRow, Maybe, MeasurementRow, NewRun, RunEnd, RunRow, StepRow};
pub use search::{DocQuery, DocRow, Found, NewDoc, RANK_AT_MOST};
pub use searches::SearchRow;
pub use shares::ShareRow;
pub use snapshots::SnapshotRow;
pub use sweeps::{NewSweep, SweepRow};
pub use watches::WatchRow;

use crate::time::now_ms;
use sqlx::AnyPool;
use sqlx::any::AnyPoolOptions;
use sqlx::{Any, Executor, Transaction};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

pub type StoreResult<T> = Result<T, StoreError>;

/// A store operation that failed. Its cause is for the log: users see one
/// sentence; services pass it on with `?` as a `crate::error::Error`, which
/// names where it happened (`error.rs`).
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct StoreError(#[from] sqlx::Error);

/// Why a store operation failed, as far as whoever asked can act on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trouble {
    /// The disk under the store is full: writes fail, reads still work.
    Full,
    /// The database cannot be reached now (restarting, failing over).
    Unavailable,
    /// Anything else: ours to fix.
    Other,
}

impl StoreError {
    pub fn trouble(&self) -> Trouble {
        if let Some(db) = self.0.as_database_error() {
            let code = db.code().unwrap_or_default();
            return match code.as_ref() {
                // SQLITE_FULL; PostgreSQL's disk_full and out_of_memory class 53.
                "13" | "53100" => Trouble::Full,
                // PostgreSQL: admin_shutdown, crash_shutdown, cannot_connect_now,
                // and the connection exceptions (class 08).
                c if c.starts_with("57P") || c.starts_with("08") => Trouble::Unavailable,
                _ if db.message().contains("database or disk is full") => Trouble::Full,
                _ => Trouble::Other,
            };
        }
        match &self.0 {
            sqlx::Error::Io(e) if e.raw_os_error() == Some(28) => Trouble::Full,
            // A connection cut during its handshake reads as a protocol error
            // ("unexpected response from SSLRequest: 0x00" when a proxy in
            // front of a failing-over primary closes it): the peer is going
            // away, not speaking another protocol.
            sqlx::Error::Io(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Tls(_)
            | sqlx::Error::Protocol(_)
            | sqlx::Error::WorkerCrashed => Trouble::Unavailable,
            _ => Trouble::Other,
        }
    }

    /// Text PostgreSQL cannot hold: a NUL character (SQLite stores it). It comes
    /// from what someone typed or sent, so it is their error to fix, not ours.
    pub(crate) fn is_unstorable_text(&self) -> bool {
        // 22021 character_not_in_repertoire, 22P05 untranslatable_character.
        self.0.as_database_error().and_then(|e| e.code()).is_some_and(|code| code == "22021" || code == "22P05")
    }
}

/// Where the store lives.
#[derive(Clone)]
pub enum Database {
    /// `sleuth.db` in this directory, created if missing.
    Sqlite(PathBuf),
    /// A `postgres://` (or `postgresql://`) URL; the database must exist.
    Postgres(String),
}

impl Database {
    /// `--database` as given (or `SLEUTH_DATABASE`); without it, SQLite in `data_dir`.
    pub fn from_flag(flag: Option<&str>, data_dir: &Path) -> Result<Self, OpenError> {
        match flag.map(str::trim).filter(|f| !f.is_empty()) {
            None => Ok(Database::Sqlite(data_dir.to_path_buf())),
            Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
                Ok(Database::Postgres(url.to_string()))
            }
            Some(other) => Err(OpenError::Url(format!(
                "--database takes a postgres://user@host/db URL (got \"{}\"); without it Sleuth keeps SQLite in --data",
                redact(other)
            ))),
        }
    }

    /// The sqlx connection URL (for SQLite: the file, created if missing).
    pub fn url(&self) -> String {
        match self {
            Database::Sqlite(dir) => {
                format!("sqlite://{}?mode=rwc", percent_encode_path(&dir.join("sleuth.db").to_string_lossy()))
            }
            Database::Postgres(url) => url.clone(),
        }
    }

    /// For logs and messages: never the password.
    pub fn describe(&self) -> String {
        match self {
            Database::Sqlite(dir) => format!("SQLite in {}", dir.join("sleuth.db").display()),
            Database::Postgres(url) => format!("PostgreSQL at {}", redact(url)),
        }
    }
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

/// `scheme://user:secret@host/db?password=x` → `scheme://user:***@host/db?…`.
fn redact(url: &str) -> String {
    let (head, query) = match url.split_once('?') {
        Some((head, _)) => (head, "?…"),
        None => (url, ""),
    };
    let Some((scheme, rest)) = head.split_once("://") else { return format!("{head}{query}") };
    let rest = match rest.rsplit_once('@') {
        Some((credentials, host)) => match credentials.split_once(':') {
            Some((user, _)) => format!("{user}:***@{host}"),
            None => format!("{credentials}@{host}"),
        },
        None => rest.to_string(),
    };
    format!("{scheme}://{rest}{query}")
}

/// Which SQL dialect a [`Store`] speaks, where the two differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// Writers that must not interleave, each queue apart (PostgreSQL advisory
/// lock keys; SQLite has one write lock for everything).
#[derive(Debug, Clone, Copy)]
enum Queue {
    /// Renumbering a timeline's steps.
    Steps = 7_355_608,
    /// Counting and recording sign-in attempts.
    SignIn = 7_355_609,
    /// Writing the search index (SQLite: the one write lock anyway).
    Search = 7_355_610,
    /// Replacing a run's measurements, which reads them first: the runner and a
    /// re-extraction may do it at once. (On SQLite a transaction that reads and
    /// then writes fails at once with "database is locked" when another
    /// connection wrote in between; the busy timeout does not apply.)
    Measurements = 7_355_611,
}

#[derive(Clone)]
pub struct Store {
    pool: AnyPool,
    backend: Backend,
    /// See [`Store::replica`].
    replica: std::sync::Arc<str>,
    /// PostgreSQL's URL, for the connection that listens (`Store::listen`).
    url: Option<std::sync::Arc<str>>,
    /// See [`Store::measurements_of_investigation`].
    measurements: std::sync::Arc<kept::Kept<rows::MeasurementRow>>,
    /// See [`Store::runs_of_investigation`].
    runs: std::sync::Arc<kept::Kept<RunRow>>,
    /// See [`Store::reachable_now`].
    away: std::sync::Arc<Away>,
    /// See [`Store::read_slot`].
    reads: std::sync::Arc<tokio::sync::Semaphore>,
}

/// Pooled connections (PostgreSQL, SQLite) and those of them kept for writes:
/// reads of run output — every viewer of a live run, every download — take at
/// most the rest, so a crowd of viewers cannot keep a run's output, a note or a
/// sign-in from being stored.
pub(crate) const POOL: (u32, u32) = (16, 8);
const KEPT_FOR_WRITES: (u32, u32) = (4, 2);

/// Whether the database is known to be away ([`Store::reachable_now`]).
#[derive(Default)]
struct Away {
    /// Since when (Unix ms; 0: it is not).
    since_ms: AtomicI64,
    /// When a caller last asked it (Unix ms).
    asked_ms: AtomicI64,
}

impl Away {
    const ASK_EVERY_MS: i64 = 1_000;
    const ASK_WAIT: Duration = Duration::from_secs(1);

    fn back(&self) {
        let since = self.since_ms.swap(0, Ordering::Relaxed);
        if since != 0 {
            let after = (crate::time::now_ms() - since) as f64 / 1000.0;
            tracing::warn!("the database answers again, after {after:.1} s away");
        }
    }
}

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

impl Store {
    /// Opens the database (for SQLite, creating it if needed) and migrates it.
    pub async fn open(database: &Database) -> Result<Self, OpenError> {
        sqlx::any::install_default_drivers();
        let (pool, backend) = match database {
            Database::Sqlite(dir) => (open_sqlite(dir).await?, Backend::Sqlite),
            Database::Postgres(url) => {
                let pool = AnyPoolOptions::new()
                    .max_connections(POOL.0)
                    .acquire_timeout(Duration::from_secs(10))
                    .before_acquire(|conn, _| Box::pin(async move { Ok(outside_a_transaction(conn)) }))
                    .connect(url)
                    .await
                    .map_err(|e| OpenError::Connect(database.describe(), e))?;
                (pool, Backend::Postgres)
            }
        };
        let migrator = match backend {
            Backend::Sqlite => &SQLITE_MIGRATIONS,
            Backend::Postgres => &POSTGRES_MIGRATIONS,
        };
        edited::catch_up(&pool, backend == Backend::Postgres, migrator)
            .await
            .map_err(|e| OpenError::Migrate(database.describe(), sqlx::migrate::MigrateError::Execute(e)))?;
        migrator.run(&pool).await.map_err(|e| match e {
            sqlx::migrate::MigrateError::VersionMissing(version) => OpenError::TooNew(database.describe(), version),
            other => OpenError::Migrate(database.describe(), other),
        })?;
        let host = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
        let host = host.trim();
        let replica = format!(
            "{}-{}-{:04x}",
            if host.is_empty() { "sleuth" } else { host },
            std::process::id(),
            rand::random::<u16>()
        );
        let url = match database {
            Database::Postgres(url) => Some(url.as_str().into()),
            Database::Sqlite(_) => None,
        };
        Ok(Self {
            pool,
            backend,
            replica: replica.into(),
            url,
            // ~200 bytes a measurement, ~1 KB a run (its command, env, plan).
            measurements: std::sync::Arc::new(kept::Kept::new(400_000)),
            runs: std::sync::Arc::new(kept::Kept::new(50_000)),
            away: std::sync::Arc::default(),
            reads: std::sync::Arc::new(tokio::sync::Semaphore::new(match backend {
                Backend::Postgres => (POOL.0 - KEPT_FOR_WRITES.0) as usize,
                Backend::Sqlite => (POOL.1 - KEPT_FOR_WRITES.1) as usize,
            })),
        })
    }

    /// A place among the run-output reads that may hold a connection at once
    /// (the pool less [`KEPT_FOR_WRITES`]); held for one query.
    pub(crate) async fn read_slot(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        // Never closed: `None` cannot happen, and would only mean no limit.
        self.reads.acquire().await.ok()
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// The database could not be reached (a request, a run's output, the lease).
    pub fn note_unreachable(&self) {
        let now = crate::time::now_ms();
        let _ = self.away.since_ms.compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// Whether to use the database now: yes unless it is known to be away.
    /// Then no, at once, and at most once a second it is asked in the
    /// background (waiting at most a second) whether it is back.
    pub fn reachable_now(&self) -> bool {
        let away = &self.away;
        if away.since_ms.load(Ordering::Relaxed) == 0 {
            return true;
        }
        let now = crate::time::now_ms();
        let last = away.asked_ms.load(Ordering::Relaxed);
        if now - last >= Away::ASK_EVERY_MS
            && away.asked_ms.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_ok()
        {
            let (pool, away) = (self.pool.clone(), self.away.clone());
            tokio::spawn(async move {
                let asked = sqlx::query("SELECT 1").execute(&pool);
                if matches!(tokio::time::timeout(Away::ASK_WAIT, asked).await, Ok(Ok(_))) {
                    away.back();
                }
            });
        }
        false
    }

    /// The database answered (the lease renewed): it is not away, even if
    /// no request has asked since.
    pub fn note_reachable(&self) {
        self.away.back();
    }

    /// A transaction that writes. SQLite takes its (one, database-wide) write
    /// lock up front (`BEGIN IMMEDIATE`), waiting `busy_timeout` for it: a
    /// plain `BEGIN` that reads first holds a snapshot, and its first write
    /// fails at once with "database is locked" if anyone committed since —
    /// which a run's output does many times a second.
    pub(crate) async fn begin_write(&self) -> StoreResult<Transaction<'static, Any>> {
        Ok(match self.backend {
            Backend::Sqlite => self.pool.begin_with("BEGIN IMMEDIATE").await?,
            Backend::Postgres => self.pool.begin().await?,
        })
    }

    /// A write transaction that waits for the other writers of its queue
    /// first: SQLite's write lock is one queue already; Postgres takes the
    /// queue's transaction-scoped advisory lock, the same across every replica.
    async fn begin_serialised(&self, queue: Queue) -> StoreResult<Transaction<'static, Any>> {
        let mut tx = self.begin_write().await?;
        if self.backend == Backend::Postgres {
            sqlx::query("SELECT pg_advisory_xact_lock($1)").bind(queue as i64).execute(&mut *tx).await?;
        }
        Ok(tx)
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
             FROM investigations i WHERE i.id = $1",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// Inserts a new investigation; `false` if `id` is taken.
    pub async fn insert_investigation(&self, id: &str, title: &str, question: &str) -> StoreResult<bool> {
        insert_investigation_in(&mut *self.pool.acquire().await?, id, title, question, now_ms()).await
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
                 title = COALESCE($1, title),
                 question = COALESCE($2, question),
                 status = COALESCE($3, status),
                 updated_at = $4
             WHERE id = $5",
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
        let done = sqlx::query("DELETE FROM investigations WHERE id = $1").bind(id).execute(&self.pool).await?;
        Ok(done.rows_affected() == 1)
    }

    // ---- steps ---------------------------------------------------------------

    pub async fn steps(&self, investigation: &str) -> StoreResult<Vec<StepRow>> {
        Ok(sqlx::query_as(
            "SELECT id, investigation_id, position, kind, body, created_at, updated_at, version, updated_by
             FROM steps WHERE investigation_id = $1 ORDER BY position, id",
        )
        .bind(investigation)
        .fetch_all(&self.pool)
        .await?)
    }

    pub async fn step(&self, id: i64) -> StoreResult<Option<StepRow>> {
        Ok(sqlx::query_as(
            "SELECT id, investigation_id, position, kind, body, created_at, updated_at, version, updated_by
             FROM steps WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// Appends a step to the end of the timeline; `None` if there is no such investigation.
    pub async fn insert_step(&self, investigation: &str, kind: &str, body: &str) -> StoreResult<Option<StepRow>> {
        let now = now_ms();
        let mut tx = self.begin_serialised(Queue::Steps).await?;
        let touched = touch_investigation(&mut tx, investigation, now).await?;
        if !touched {
            return Ok(None);
        }
        let row = append_step_in(&mut tx, investigation, kind, body, now).await?;
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
        let mut tx = self.begin_serialised(Queue::Steps).await?;
        let row: Option<StepRow> = sqlx::query_as(
            "UPDATE steps SET body = $1, updated_at = $2, version = version + 1, updated_by = $3
             WHERE id = $4 AND ($5 IS NULL OR version = $6)
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
        let mut tx = self.begin_serialised(Queue::Steps).await?;
        let Some((investigation, from)): Option<(String, i64)> =
            sqlx::query_as("SELECT investigation_id, position FROM steps WHERE id = $1")
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?
        else {
            return Ok(None);
        };
        let (count,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM steps WHERE investigation_id = $1")
            .bind(&investigation)
            .fetch_one(&mut *tx)
            .await?;
        let to = position.clamp(1, count.max(1));
        if to != from {
            let (lo, hi, shift) = if to < from { (to, from - 1, 1) } else { (from + 1, to, -1) };
            sqlx::query(
                "UPDATE steps SET position = position + $1
                 WHERE investigation_id = $2 AND position BETWEEN $3 AND $4",
            )
            .bind(shift)
            .bind(&investigation)
            .bind(lo)
            .bind(hi)
            .execute(&mut *tx)
            .await?;
            sqlx::query("UPDATE steps SET position = $1, updated_at = $2 WHERE id = $3")
                .bind(to)
                .bind(now)
                .bind(id)
                .execute(&mut *tx)
                .await?;
            touch_investigation(&mut tx, &investigation, now).await?;
        }
        let row = sqlx::query_as(
            "SELECT id, investigation_id, position, kind, body, created_at, updated_at, version, updated_by
             FROM steps WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(row)
    }

    /// Deletes a step and closes the gap it leaves; `false` if there is no such step.
    pub async fn delete_step(&self, id: i64) -> StoreResult<bool> {
        let mut tx = self.begin_serialised(Queue::Steps).await?;
        // Output rows in the index belong to runs, not to the step: they go
        // with them, or a search would find output no one can open.
        sqlx::query(
            "DELETE FROM search_docs WHERE run_id IN (SELECT id FROM runs WHERE step_id = $1)
                 AND kind IN ('output', 'server_log')",
        )
        .bind(id)
        .execute(&mut *tx)
        .await?;
        let Some((investigation, position)): Option<(String, i64)> =
            sqlx::query_as("DELETE FROM steps WHERE id = $1 RETURNING investigation_id, position")
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?
        else {
            return Ok(false);
        };
        sqlx::query("UPDATE steps SET position = position - 1 WHERE investigation_id = $1 AND position > $2")
            .bind(&investigation)
            .bind(position)
            .execute(&mut *tx)
            .await?;
        touch_investigation(&mut tx, &investigation, now_ms()).await?;
        tx.commit().await?;
        Ok(true)
    }
}

/// A new investigation on `conn` (a transaction's, or the pool's); `false` when the id is taken.
pub(super) async fn insert_investigation_in(
    conn: &mut sqlx::AnyConnection,
    id: &str,
    title: &str,
    question: &str,
    now: i64,
) -> StoreResult<bool> {
    let done = sqlx::query(
        "INSERT INTO investigations (id, title, question, status, created_at, updated_at)
         VALUES ($1, $2, $3, 'open', $4, $5) ON CONFLICT (id) DO NOTHING",
    )
    .bind(id)
    .bind(title)
    .bind(question)
    .bind(now)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// A step at the end of its investigation's timeline, on `conn` (in a
/// transaction that serialises the timeline's writers).
pub(super) async fn append_step_in(
    conn: &mut sqlx::AnyConnection,
    investigation: &str,
    kind: &str,
    body: &str,
    now: i64,
) -> StoreResult<StepRow> {
    Ok(sqlx::query_as(
        "INSERT INTO steps (investigation_id, position, kind, body, created_at, updated_at)
         VALUES ($1, (SELECT COALESCE(MAX(position), 0) + 1 FROM steps WHERE investigation_id = $2), $3, $4, $5, $6)
         RETURNING id, investigation_id, position, kind, body, created_at, updated_at, version, updated_by",
    )
    .bind(investigation)
    .bind(investigation)
    .bind(kind)
    .bind(body)
    .bind(now)
    .bind(now)
    .fetch_one(conn)
    .await?)
}

async fn touch_investigation(tx: &mut Transaction<'static, Any>, id: &str, now: i64) -> StoreResult<bool> {
    let done = sqlx::query("UPDATE investigations SET updated_at = $1 WHERE id = $2")
        .bind(now)
        .bind(id)
        .execute(&mut **tx)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// A new, empty database on the PostgreSQL server whose maintenance database
/// `admin_url` names (`postgres://postgres@127.0.0.1:5432/postgres`), for test
/// harnesses and benchmarks: each gets its own. Returns the new database's URL.
pub async fn scratch_postgres_database(admin_url: &str) -> StoreResult<String> {
    use sqlx::Connection;
    sqlx::any::install_default_drivers();
    let name = format!("sleuth_{:016x}", rand::random::<u64>());
    let mut admin = sqlx::AnyConnection::connect(admin_url).await?;
    admin.execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}"))).await?;
    admin.close().await?;
    let (base, query) = admin_url.split_once('?').map_or((admin_url, None), |(b, q)| (b, Some(q)));
    let server = base.rsplit_once('/').map_or(base, |(server, _)| server);
    Ok(format!("{server}/{name}{}", query.map(|q| format!("?{q}")).unwrap_or_default()))
}

/// The stores a store test runs against: SQLite always, and PostgreSQL when
/// `SLEUTH_TEST_POSTGRES` names a server (`./dev test` starts a scratch one).
#[cfg(test)]
pub(crate) async fn test_stores() -> Vec<(tempfile::TempDir, Database, Store)> {
    let sqlite_dir = tempfile::tempdir().expect("temp dir");
    let sqlite = Database::Sqlite(sqlite_dir.path().to_path_buf());
    let mut stores = vec![(sqlite_dir, sqlite.clone(), Store::open(&sqlite).await.expect("sqlite"))];
    if let Ok(admin) = std::env::var("SLEUTH_TEST_POSTGRES") {
        let postgres = Database::Postgres(scratch_postgres_database(&admin).await.expect("scratch database"));
        let store = Store::open(&postgres).await.expect("postgres");
        stores.push((tempfile::tempdir().expect("temp dir"), postgres, store));
    }
    stores
}

/// Rows other modules' tests need to exist.
#[cfg(test)]
pub(crate) mod tests_support {
    use super::{NewRun, Store};

    /// A queued run of a command step in a new investigation.
    pub async fn a_run(store: &Store) -> i64 {
        let id = format!("t{:09x}", rand::random::<u32>());
        assert!(store.insert_investigation(&id, "t", "").await.unwrap());
        let step = store.insert_step(&id, "command", "{}").await.unwrap().unwrap();
        a_run_of(store, step.id).await
    }

    /// A queued run of step `step_id`.
    pub async fn a_run_of(store: &Store, step_id: i64) -> i64 {
        let run = NewRun {
            step_id,
            host: "h".into(),
            command: "true".into(),
            env: "[]".into(),
            cwd: None,
            timeout_s: None,
            batch_index: 1,
            batch_size: 1,
            warmup: false,
            who: None,
            config: None,
            sweep_id: None,
            sweep_index: None,
            telemetry: false,
            plan: None,
            origin: domain::runs::RunOrigin::Person,
        };
        store.insert_run(&run, None).await.unwrap().id
    }
}

async fn open_sqlite(dir: &Path) -> Result<AnyPool, OpenError> {
    std::fs::create_dir_all(dir).map_err(|source| OpenError::DataDir { path: dir.display().to_string(), source })?;
    let file = dir.join("sleuth.db");
    let url = Database::Sqlite(dir.to_path_buf()).url();
    AnyPoolOptions::new()
        .max_connections(POOL.1)
        // Per connection: WAL lets readers run beside the writer; foreign keys
        // are off in SQLite unless asked for; writers wait for each other.
        .after_connect(|conn, _| {
            Box::pin(async move {
                for pragma in [
                    "PRAGMA journal_mode = WAL",
                    "PRAGMA synchronous = NORMAL",
                    "PRAGMA foreign_keys = ON",
                    "PRAGMA busy_timeout = 5000",
                ] {
                    conn.execute(pragma).await?;
                }
                Ok(())
            })
        })
        .before_acquire(|conn, _| Box::pin(async move { Ok(outside_a_transaction(conn)) }))
        .connect(&url)
        .await
        .map_err(|e| OpenError::Connect(format!("SQLite in {}", file.display()), e))
}

/// Whether a pooled connection may serve the next caller. A transaction
/// whose COMMIT failed for space is rolled back by SQLite itself; the
/// ROLLBACK sqlx then sends fails ("no transaction is active") and sqlx goes
/// on counting the connection as inside a transaction, so every later
/// `begin` on it failed ("begin_with at non-zero transaction depth": a 500,
/// and a run's measurements lost). Such a connection is closed instead, and
/// the pool opens a fresh one.
fn outside_a_transaction(conn: &mut sqlx::AnyConnection) -> bool {
    use sqlx::Connection;
    let clean = !conn.is_in_transaction();
    if !clean {
        tracing::warn!("a pooled database connection was left inside a transaction; it is closed");
    }
    clean
}

/// A file path as the path of a `sqlite://` URL (`?`, `#`, `%` and spaces are legal in paths).
fn percent_encode_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for byte in path.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'.' | b'_' | b'-' | b'~' => out.push(byte as char),
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("{0}")]
    Url(String),
    #[error("cannot create the data directory {path}: {source}")]
    DataDir { path: String, source: std::io::Error },
    #[error("cannot open {0}: {1}")]
    Connect(String, sqlx::Error),
    #[error("cannot migrate {0}: {1}")]
    Migrate(String, sqlx::migrate::MigrateError),
    #[error(
        "{0} was migrated by a newer Sleuth (it has migration {1}, which this binary does not know); \
         run that version or newer"
    )]
    TooNew(String, i64),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_flags() {
        let data = Path::new("/srv/sleuth");
        assert!(matches!(Database::from_flag(None, data), Ok(Database::Sqlite(d)) if d == data));
        assert!(matches!(Database::from_flag(Some("  "), data), Ok(Database::Sqlite(_))));
        assert!(matches!(Database::from_flag(Some("postgres://u@h/db"), data), Ok(Database::Postgres(_))));
        assert!(matches!(Database::from_flag(Some("postgresql://u@h/db"), data), Ok(Database::Postgres(_))));
        let wrong = Database::from_flag(Some("mysql://root:hunter2@h/db"), data).err().map(|e| e.to_string());
        let wrong = wrong.unwrap_or_default();
        assert!(wrong.contains("postgres://") && !wrong.contains("hunter2"), "{wrong}");
    }

    #[test]
    fn descriptions_hide_passwords() {
        let db = Database::Postgres("postgres://sleuth:s3cret@db.internal:5432/sleuth?password=also".into());
        let text = db.describe();
        assert_eq!(text, "PostgreSQL at postgres://sleuth:***@db.internal:5432/sleuth?…");
        assert!(!format!("{db:?}").contains("s3cret"));
        assert_eq!(redact("postgres://sleuth@h/db"), "postgres://sleuth@h/db");
        assert_eq!(redact("postgres://a:b:c@d@h/db"), "postgres://a:***@h/db");
    }

    #[tokio::test]
    async fn a_database_from_a_newer_sleuth_is_refused_with_a_reason() {
        for (_dir, database, store) in test_stores().await {
            let future = match store.backend() {
                Backend::Sqlite => {
                    "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time)
                     VALUES (99999, 'from the future', TRUE, X'00', 0)"
                }
                Backend::Postgres => {
                    "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time)
                     VALUES (99999, 'from the future', TRUE, '\\x00'::bytea, 0)"
                }
            };
            sqlx::query(future).execute(&store.pool).await.unwrap();
            store.close().await;
            let refused = Store::open(&database).await.err().map(|e| e.to_string()).unwrap_or_default();
            assert!(refused.contains("newer Sleuth") && refused.contains("99999"), "{refused}");
        }
    }

    #[test]
    fn a_store_going_away_is_unavailable_not_our_bug() {
        let trouble = |e: sqlx::Error| StoreError(e).trouble();
        let cut = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset");
        assert_eq!(trouble(sqlx::Error::Io(cut)), Trouble::Unavailable);
        assert_eq!(trouble(sqlx::Error::Io(std::io::Error::from_raw_os_error(28))), Trouble::Full);
        assert_eq!(trouble(sqlx::Error::PoolTimedOut), Trouble::Unavailable);
        let handshake = "unexpected response from SSLRequest: 0x00".to_string();
        assert_eq!(trouble(sqlx::Error::Protocol(handshake)), Trouble::Unavailable);
        assert_eq!(trouble(sqlx::Error::RowNotFound), Trouble::Other);
        assert_eq!(trouble(sqlx::Error::ColumnNotFound("x".into())), Trouble::Other);
    }

    #[test]
    fn sqlite_paths_survive_the_url() {
        assert_eq!(percent_encode_path("/tmp/a b/x?#%.db"), "/tmp/a%20b/x%3F%23%25.db");
    }
}
