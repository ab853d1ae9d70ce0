//! Hypotheses and their experiments.

use super::{Maybe, Store, StoreResult};
use crate::time::now_ms;
use domain::hypotheses::{Direction, HypothesisStatus};

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct HypothesisRow {
    pub id: i64,
    pub investigation_id: String,
    pub statement: String,
    pub rationale: String,
    pub metric: Option<String>,
    #[sqlx(try_from = "Option<String>")]
    pub direction: Maybe<Direction>,
    pub expected_pct: Option<f64>,
    /// What a person set, or (with `status_auto`) what the verdict last said.
    #[sqlx(try_from = "String")]
    pub status: HypothesisStatus,
    /// 1 while the status follows the verdict (0033).
    pub status_auto: i64,
    /// JSON `{"runs":[…],"steps":[…]}`.
    pub baseline: String,
    pub treatment: String,
    /// JSON array of step ids.
    pub evidence: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub version: i64,
    pub updated_by: Option<String>,
}

const COLUMNS: &str = "id, investigation_id, statement, rationale, metric, direction, expected_pct, status, status_auto, \
                       baseline, treatment, evidence, created_at, updated_at, version, updated_by";

/// A verdict a hypothesis showed (0033): the runs each arm rested on, as JSON arrays.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct VerdictRow {
    pub id: i64,
    pub hypothesis_id: i64,
    pub at: i64,
    pub baseline_runs: String,
    pub treatment_runs: String,
    pub delta_pct: Option<f64>,
    pub outcome: Option<String>,
    pub verdict: Option<String>,
}

impl Store {
    pub async fn insert_hypothesis(&self, row: &HypothesisRow) -> StoreResult<i64> {
        insert_hypothesis_in(&mut *self.pool.acquire().await?, row, now_ms()).await
    }

    /// Writes every field but the id, investigation and creation time.
    /// Saves `row` and bumps its version; `false` if there is no such hypothesis,
    /// or (with `expected`) its version is no longer that one.
    pub async fn update_hypothesis(&self, row: &HypothesisRow, by: &str, expected: Option<i64>) -> StoreResult<bool> {
        let done = sqlx::query(
            "UPDATE hypotheses SET statement = $1, rationale = $2, metric = $3, direction = $4, expected_pct = $5, status = $6,
                                   baseline = $7, treatment = $8, evidence = $9, updated_at = $10,
                                   version = version + 1, updated_by = $11, status_auto = $15
             WHERE id = $12 AND ($13 IS NULL OR version = $14)",
        )
        .bind(&row.statement)
        .bind(&row.rationale)
        .bind(&row.metric)
        .bind(row.direction.0.map(Direction::as_str))
        .bind(super::float::Float(row.expected_pct))
        .bind(row.status.as_str())
        .bind(&row.baseline)
        .bind(&row.treatment)
        .bind(&row.evidence)
        .bind(now_ms())
        .bind(by)
        .bind(row.id)
        .bind(expected)
        .bind(expected)
        .bind(row.status_auto)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// The verdict a status that follows it now says; no version bump (nobody
    /// edited the hypothesis), and only while it still follows the verdict.
    pub async fn follow_verdict(&self, id: i64, status: HypothesisStatus) -> StoreResult<()> {
        sqlx::query("UPDATE hypotheses SET status = $1 WHERE id = $2 AND status_auto = 1 AND status <> $1")
            .bind(status.as_str())
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The two newest verdicts of each hypothesis of an investigation, newest first.
    pub async fn recent_verdicts(&self, investigation: &str) -> StoreResult<Vec<VerdictRow>> {
        Ok(sqlx::query_as(
            "SELECT v.id, v.hypothesis_id, v.at, v.baseline_runs, v.treatment_runs, v.delta_pct, v.outcome, v.verdict
             FROM hypothesis_verdicts v JOIN hypotheses h ON h.id = v.hypothesis_id
             WHERE h.investigation_id = $1
               AND (SELECT count(*) FROM hypothesis_verdicts w WHERE w.hypothesis_id = v.hypothesis_id AND w.id > v.id) < 2
             ORDER BY v.hypothesis_id, v.id DESC",
        )
        .bind(investigation)
        .fetch_all(&self.pool)
        .await?)
    }

    pub async fn insert_verdict(&self, row: &VerdictRow) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO hypothesis_verdicts (hypothesis_id, at, baseline_runs, treatment_runs, delta_pct, outcome, verdict)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(row.hypothesis_id)
        .bind(row.at)
        .bind(&row.baseline_runs)
        .bind(&row.treatment_runs)
        .bind(super::float::Float(row.delta_pct))
        .bind(&row.outcome)
        .bind(&row.verdict)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub async fn hypothesis(&self, id: i64) -> StoreResult<Option<HypothesisRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM hypotheses WHERE id = $1")))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?)
    }

    pub async fn hypotheses(&self, investigation: &str) -> StoreResult<Vec<HypothesisRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM hypotheses WHERE investigation_id = $1 ORDER BY id"
        )))
        .bind(investigation)
        .fetch_all(&self.pool)
        .await?)
    }

    pub async fn delete_hypothesis(&self, id: i64) -> StoreResult<bool> {
        let done = sqlx::query("DELETE FROM hypotheses WHERE id = $1").bind(id).execute(&self.pool).await?;
        Ok(done.rows_affected() == 1)
    }
}

/// A new hypothesis on `conn` (its id, investigation and fields from `row`).
pub(super) async fn insert_hypothesis_in(
    conn: &mut sqlx::AnyConnection,
    row: &HypothesisRow,
    now: i64,
) -> StoreResult<i64> {
    let (id,): (i64,) = sqlx::query_as(
        "INSERT INTO hypotheses (investigation_id, statement, rationale, metric, direction, expected_pct, status,
                                 status_auto, baseline, treatment, evidence, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
         RETURNING id",
    )
    .bind(&row.investigation_id)
    .bind(&row.statement)
    .bind(&row.rationale)
    .bind(&row.metric)
    .bind(row.direction.0.map(Direction::as_str))
    .bind(super::float::Float(row.expected_pct))
    .bind(row.status.as_str())
    .bind(row.status_auto)
    .bind(&row.baseline)
    .bind(&row.treatment)
    .bind(&row.evidence)
    .bind(now)
    .bind(now)
    .fetch_all(conn)
    .await?
    .into_iter()
    .next()
    .ok_or(sqlx::Error::RowNotFound)?;
    Ok(id)
}
