//! Sweeps (`domain::sweeps`): the row that groups a sweep's runs and keeps how
//! they were ordered.

use super::{Store, StoreResult};
use crate::time::now_ms;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SweepRow {
    pub id: i64,
    pub step_id: i64,
    pub configs: i64,
    pub repeat: i64,
    pub warmup: i64,
    pub run_order: String,
    pub seed: Option<i64>,
    pub keep_going: i64,
    pub runs: i64,
    pub who: Option<String>,
    pub created_at: i64,
}

/// What a new sweep records.
pub struct NewSweep<'a> {
    pub step_id: i64,
    pub configs: i64,
    pub repeat: i64,
    pub warmup: i64,
    pub order: &'a str,
    pub seed: Option<i64>,
    pub keep_going: bool,
    pub runs: i64,
    pub who: Option<&'a str>,
}

const COLUMNS: &str = "id, step_id, configs, repeat, warmup, run_order, seed, keep_going, runs, who, created_at";

impl Store {
    pub async fn insert_sweep(&self, new: &NewSweep<'_>) -> StoreResult<SweepRow> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "INSERT INTO sweeps (step_id, configs, repeat, warmup, run_order, seed, keep_going, runs, who, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING {COLUMNS}"
        )))
        .bind(new.step_id)
        .bind(new.configs)
        .bind(new.repeat)
        .bind(new.warmup)
        .bind(new.order)
        .bind(new.seed)
        .bind(i64::from(new.keep_going))
        .bind(new.runs)
        .bind(new.who)
        .bind(now_ms())
        .fetch_all(&self.pool)
        .await?
        .into_iter()
        .next()
        .ok_or(sqlx::Error::RowNotFound)?)
    }

    pub async fn sweep(&self, id: i64) -> StoreResult<Option<SweepRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM sweeps WHERE id = $1")))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// The sweep's runs in their order.
    pub async fn runs_of_sweep(&self, id: i64) -> StoreResult<Vec<super::RunRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {} FROM runs WHERE sweep_id = $1 ORDER BY sweep_index, id",
            super::runs::COLUMNS
        )))
        .bind(id)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Cancels a queued run with the reason given; `false` if it had started.
    pub async fn cancel_queued_run_because(&self, id: i64, reason: &str) -> StoreResult<bool> {
        let done = sqlx::query(
            "UPDATE runs SET status = 'cancelled', error = $1, finished_at = $2 WHERE id = $3 AND status = 'queued'",
        )
        .bind(reason)
        .bind(now_ms())
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }
}
