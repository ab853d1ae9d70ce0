//! What a run keeps besides its output (migrations 0024 / 0007): its directory
//! on the host, the server beside it, and its logs — the server's log and the
//! artifacts fetched from its directory — whose bytes are kept like output
//! (`crate::output`, by [`super::OutputKey::Log`]).

use super::{Store, StoreResult};
use crate::time::now_ms;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct LogRow {
    pub id: i64,
    pub run_id: i64,
    #[sqlx(try_from = "String")]
    pub kind: LogKind,
    /// An artifact's path relative to the run's directory; `server` for the server's log.
    pub name: String,
    pub size: i64,
    pub sha256: Option<String>,
    pub created_at: i64,
}

/// What a run's log holds: its server's log, or a file fetched from its directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogKind {
    Server,
    Artifact,
}

impl LogKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Server => "server",
            Self::Artifact => "artifact",
        }
    }
}

/// A stored log kind that is none of [`LogKind`] (the schema's CHECK keeps them out).
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not a log kind")]
pub struct UnknownLogKind(String);

impl TryFrom<String> for LogKind {
    type Error = UnknownLogKind;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        match text.as_str() {
            "server" => Ok(Self::Server),
            "artifact" => Ok(Self::Artifact),
            _ => Err(UnknownLogKind(text)),
        }
    }
}

const COLUMNS: &str = "id, run_id, kind, name, size, sha256, created_at";

impl Store {
    pub async fn insert_log(&self, run: i64, kind: LogKind, name: &str) -> StoreResult<i64> {
        let (id,): (i64,) = sqlx::query_as(
            "INSERT INTO run_logs (run_id, kind, name, created_at) VALUES ($1, $2, $3, $4) RETURNING id",
        )
        .bind(run)
        .bind(kind.as_str())
        .bind(name)
        .bind(now_ms())
        .fetch_all(&self.pool)
        .await?
        .into_iter()
        .next()
        .ok_or(sqlx::Error::RowNotFound)?;
        Ok(id)
    }

    /// A log's size and sha256, once it is whole.
    pub async fn finish_log(&self, id: i64, size: u64, sha256: Option<&str>) -> StoreResult<()> {
        sqlx::query("UPDATE run_logs SET size = $1, sha256 = $2 WHERE id = $3")
            .bind(i64::try_from(size).unwrap_or(i64::MAX))
            .bind(sha256)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    pub async fn delete_log(&self, id: i64) -> StoreResult<()> {
        sqlx::query("DELETE FROM run_logs WHERE id = $1").bind(id).execute(&self.pool).await?;
        Ok(())
    }

    pub async fn log(&self, id: i64) -> StoreResult<Option<LogRow>> {
        let sql = format!("SELECT {COLUMNS} FROM run_logs WHERE id = $1");
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(id).fetch_optional(&self.pool).await?)
    }

    /// The logs of these runs, oldest first.
    pub async fn logs_of_runs(&self, runs: &[i64]) -> StoreResult<Vec<LogRow>> {
        if runs.is_empty() {
            return Ok(Vec::new());
        }
        let list = runs.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
        let sql = format!("SELECT {COLUMNS} FROM run_logs WHERE run_id IN ({list}) ORDER BY id");
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(sql)).fetch_all(&self.pool).await?)
    }

    /// The logs of the runs of a step (deleting it removes their bytes too).
    pub async fn logs_of_step(&self, step: i64) -> StoreResult<Vec<i64>> {
        let rows: Vec<(i64,)> = sqlx::query_as(
            "SELECT l.id FROM run_logs l JOIN runs r ON r.id = l.run_id WHERE r.step_id = $1 ORDER BY l.id",
        )
        .bind(step)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }

    /// The server beside the run as its page shows it (JSON).
    pub async fn set_server_state(&self, run: i64, state: &str) -> StoreResult<()> {
        sqlx::query("UPDATE runs SET server = $1 WHERE id = $2").bind(state).bind(run).execute(&self.pool).await?;
        Ok(())
    }

    /// How to find and stop the run's server (JSON), while one may be running; `None` once it is stopped.
    pub async fn set_server_handle(&self, run: i64, handle: Option<&str>) -> StoreResult<()> {
        sqlx::query("UPDATE runs SET server_handle = $1 WHERE id = $2")
            .bind(handle)
            .bind(run)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// `(run, host, handle)` of servers that may still be running for runs that
    /// are over (their replica died, or this one was killed): to be stopped.
    /// Not those of a replica that is alive: it may be keeping one between two
    /// runs of a configuration (on SQLite, nothing else runs when this is asked).
    pub async fn servers_left(&self) -> StoreResult<Vec<(i64, String, String)>> {
        let alive_since = now_ms() - i64::try_from(super::LEASE_EXPIRY.as_millis()).unwrap_or(i64::MAX);
        Ok(sqlx::query_as(
            "SELECT id, host, server_handle FROM runs
             WHERE server_handle IS NOT NULL AND status NOT IN ('queued', 'running')
               AND (replica IS NULL OR replica NOT IN (SELECT id FROM replicas WHERE seen_at > $1))
             ORDER BY id",
        )
        .bind(alive_since)
        .fetch_all(&self.pool)
        .await?)
    }

    pub async fn set_artifact_notes(&self, run: i64, notes: &str) -> StoreResult<()> {
        sqlx::query("UPDATE runs SET artifact_notes = $1 WHERE id = $2")
            .bind(notes)
            .bind(run)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
