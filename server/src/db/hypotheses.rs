//! Hypotheses and their experiments.

use super::{Store, StoreResult};
use crate::time::now_ms;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct HypothesisRow {
    pub id: i64,
    pub investigation_id: String,
    pub statement: String,
    pub rationale: String,
    pub metric: Option<String>,
    pub direction: Option<String>,
    pub expected_pct: Option<f64>,
    pub status: String,
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

const COLUMNS: &str = "id, investigation_id, statement, rationale, metric, direction, expected_pct, status, \
                       baseline, treatment, evidence, created_at, updated_at, version, updated_by";

impl Store {
    pub async fn insert_hypothesis(&self, row: &HypothesisRow) -> StoreResult<i64> {
        let now = now_ms();
        let (id,): (i64,) = sqlx::query_as(
            "INSERT INTO hypotheses (investigation_id, statement, rationale, metric, direction, expected_pct, status,
                                     baseline, treatment, evidence, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
             RETURNING id",
        )
        .bind(&row.investigation_id)
        .bind(&row.statement)
        .bind(&row.rationale)
        .bind(&row.metric)
        .bind(&row.direction)
        .bind(super::float::Float(row.expected_pct))
        .bind(&row.status)
        .bind(&row.baseline)
        .bind(&row.treatment)
        .bind(&row.evidence)
        .bind(now)
        .bind(now)
        .fetch_all(&self.pool)
        .await?
        .into_iter()
        .next()
        .ok_or(sqlx::Error::RowNotFound)?;
        Ok(id)
    }

    /// Writes every field but the id, investigation and creation time.
    /// Saves `row` and bumps its version; `false` if there is no such hypothesis,
    /// or (with `expected`) its version is no longer that one.
    pub async fn update_hypothesis(&self, row: &HypothesisRow, by: &str, expected: Option<i64>) -> StoreResult<bool> {
        let done = sqlx::query(
            "UPDATE hypotheses SET statement = $1, rationale = $2, metric = $3, direction = $4, expected_pct = $5, status = $6,
                                   baseline = $7, treatment = $8, evidence = $9, updated_at = $10,
                                   version = version + 1, updated_by = $11
             WHERE id = $12 AND ($13 IS NULL OR version = $14)",
        )
        .bind(&row.statement)
        .bind(&row.rationale)
        .bind(&row.metric)
        .bind(&row.direction)
        .bind(super::float::Float(row.expected_pct))
        .bind(&row.status)
        .bind(&row.baseline)
        .bind(&row.treatment)
        .bind(&row.evidence)
        .bind(now_ms())
        .bind(by)
        .bind(row.id)
        .bind(expected)
        .bind(expected)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
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
