//! Watches of steps (`crate::watches`). Every change to a firing is a
//! compare-and-set on the value read, so replicas sharing the database never
//! fire or judge one twice.

use super::{Maybe, Store, StoreResult};
use domain::watches::StopReason;

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct WatchRow {
    pub id: i64,
    pub step_id: i64,
    pub investigation_id: String,
    pub metric: String,
    pub config: Option<String>,
    pub every_s: Option<i64>,
    pub cron: Option<String>,
    pub webhook: Option<String>,
    pub max_failures: i64,
    pub created_by: Option<String>,
    pub created_at: i64,
    pub next_at: Option<i64>,
    pub runs: i64,
    pub failures: i64,
    pub last_run: Option<i64>,
    pub judged_run: Option<i64>,
    pub told_run: Option<i64>,
    pub last_change: Option<String>,
    pub last_told: Option<String>,
    pub stopped: Option<String>,
    #[sqlx(try_from = "Option<String>")]
    pub stop_reason: Maybe<StopReason>,
    /// The step's version and body its creator approved (0033): an edit by
    /// anyone else stops the watch.
    pub step_version: Option<i64>,
    pub approved: Option<String>,
    /// Where its links point: `--public-url`, else the address it was made through.
    pub base_url: Option<String>,
}

const COLUMNS: &str = "id, step_id, investigation_id, metric, config, every_s, cron, webhook, max_failures, created_by, \
                       created_at, next_at, runs, failures, last_run, judged_run, told_run, last_change, last_told, stopped, stop_reason, \
                       step_version, approved, base_url";

impl Store {
    pub async fn insert_watch(&self, w: &WatchRow) -> StoreResult<i64> {
        let ids: Vec<(i64,)> = sqlx::query_as(
            "INSERT INTO watches (step_id, investigation_id, metric, config, every_s, cron, webhook, max_failures,
                                  created_by, created_at, next_at, step_version, approved, base_url)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING id",
        )
        .bind(w.step_id)
        .bind(&w.investigation_id)
        .bind(&w.metric)
        .bind(&w.config)
        .bind(w.every_s)
        .bind(&w.cron)
        .bind(&w.webhook)
        .bind(w.max_failures)
        .bind(&w.created_by)
        .bind(w.created_at)
        .bind(w.next_at)
        .bind(w.step_version)
        .bind(&w.approved)
        .bind(&w.base_url)
        .fetch_all(&self.pool)
        .await?;
        Ok(ids.first().map_or(0, |(id,)| *id))
    }

    pub async fn watch(&self, id: i64) -> StoreResult<Option<WatchRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM watches WHERE id = $1")))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// Every watch, oldest first (for the actor's list, filtered by access above).
    pub async fn watches(&self) -> StoreResult<Vec<WatchRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM watches ORDER BY id")))
            .fetch_all(&self.pool)
            .await?)
    }

    pub async fn watches_of(&self, investigation: &str) -> StoreResult<Vec<WatchRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM watches WHERE investigation_id = $1 ORDER BY id"
        )))
        .bind(investigation)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Watches that are due, or have a run to judge.
    pub async fn watches_to_do(&self, now: i64) -> StoreResult<Vec<WatchRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM watches WHERE stopped IS NULL AND (next_at <= $1
                 OR (last_run IS NOT NULL AND (judged_run IS NULL OR judged_run < last_run))) ORDER BY id"
        )))
        .bind(now)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Takes the firing due at `was`: true for the one caller that moved it to `next`.
    pub async fn claim_watch(&self, id: i64, was: i64, next: Option<i64>) -> StoreResult<bool> {
        let done = sqlx::query("UPDATE watches SET next_at = $1 WHERE id = $2 AND next_at = $3 AND stopped IS NULL")
            .bind(next)
            .bind(id)
            .bind(was)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    pub async fn watch_ran(&self, id: i64, run: i64) -> StoreResult<()> {
        sqlx::query("UPDATE watches SET last_run = $1, runs = runs + 1 WHERE id = $2")
            .bind(run)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Takes the judging of `run`: true for the one caller that marked it judged.
    pub async fn claim_judging(&self, id: i64, was: Option<i64>, run: i64) -> StoreResult<bool> {
        let done = match was {
            Some(was) => {
                sqlx::query("UPDATE watches SET judged_run = $1 WHERE id = $2 AND judged_run = $3")
                    .bind(run)
                    .bind(id)
                    .bind(was)
                    .execute(&self.pool)
                    .await?
            }
            None => {
                sqlx::query("UPDATE watches SET judged_run = $1 WHERE id = $2 AND judged_run IS NULL")
                    .bind(run)
                    .bind(id)
                    .execute(&self.pool)
                    .await?
            }
        };
        Ok(done.rows_affected() == 1)
    }

    /// After a judged run: failures in a row.
    pub async fn watch_judged(&self, id: i64, failures: i64) -> StoreResult<()> {
        sqlx::query("UPDATE watches SET failures = $1 WHERE id = $2")
            .bind(failures)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The watch stops, and says why: it runs no more.
    pub async fn stop_watch(&self, id: i64, reason: StopReason, why: &str) -> StoreResult<()> {
        sqlx::query("UPDATE watches SET stopped = $1, stop_reason = $2, next_at = NULL WHERE id = $3")
            .bind(why)
            .bind(reason.as_str())
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// A new change, and what telling it got.
    pub async fn watch_told(&self, id: i64, told_run: i64, change: &str, told: &str) -> StoreResult<()> {
        sqlx::query("UPDATE watches SET told_run = $1, last_change = $2, last_told = $3 WHERE id = $4")
            .bind(told_run)
            .bind(change)
            .bind(told)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Its creator changed the step: the watch runs the new version.
    pub async fn rebind_watch(&self, id: i64, version: i64, approved: &str) -> StoreResult<()> {
        sqlx::query("UPDATE watches SET step_version = $1, approved = $2 WHERE id = $3")
            .bind(version)
            .bind(approved)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Watches of a step, and of a user, that still run (the limits count them).
    pub async fn running_watches(&self, step: i64, user: &str) -> StoreResult<(i64, i64)> {
        let (of_step, of_user): (i64, i64) = sqlx::query_as(
            "SELECT (SELECT count(*) FROM watches WHERE step_id = $1 AND stopped IS NULL),
                    (SELECT count(*) FROM watches WHERE created_by = $2 AND stopped IS NULL)",
        )
        .bind(step)
        .bind(user)
        .fetch_one(&self.pool)
        .await?;
        Ok((of_step, of_user))
    }

    pub async fn delete_watch(&self, id: i64) -> StoreResult<bool> {
        let done = sqlx::query("DELETE FROM watches WHERE id = $1").bind(id).execute(&self.pool).await?;
        Ok(done.rows_affected() == 1)
    }
}
