//! Measurements and user-defined extractors.

use super::{Store, StoreResult};
use crate::time::now_ms;
use app::metrics::Measurement;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct MeasurementRow {
    pub id: i64,
    pub investigation_id: String,
    pub run_id: Option<i64>,
    pub metric: String,
    pub value: f64,
    pub unit: String,
    pub extractor: String,
    pub stddev: Option<f64>,
    pub key: Option<String>,
    pub note: Option<String>,
    pub label: Option<String>,
    pub created_at: i64,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ExtractorRow {
    pub id: i64,
    pub investigation_id: String,
    pub name: String,
    pub pattern: String,
    pub unit: String,
    pub created_at: i64,
}

const MEASUREMENT_COLUMNS: &str =
    "id, investigation_id, run_id, metric, value, unit, extractor, stddev, key, note, label, created_at";

impl Store {
    /// Replaces what was extracted from `run` with `found`, in one transaction.
    pub async fn replace_run_measurements(
        &self,
        investigation: &str,
        run: i64,
        found: &[Measurement],
    ) -> StoreResult<()> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("DELETE FROM measurements WHERE run_id = $1").bind(run).execute(&mut *tx).await?;
        let now = now_ms();
        for m in found {
            sqlx::query(
                "INSERT INTO measurements (investigation_id, run_id, metric, value, unit, extractor, stddev, key, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            )
            .bind(investigation)
            .bind(run)
            .bind(&m.metric)
            .bind(m.value)
            .bind(&m.unit)
            .bind(&m.extractor)
            .bind(m.stddev)
            .bind(&m.key)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        }
        Ok(tx.commit().await?)
    }

    pub async fn insert_manual_measurement(
        &self,
        investigation: &str,
        m: &Measurement,
        note: Option<&str>,
        label: Option<&str>,
    ) -> StoreResult<i64> {
        let (id,): (i64,) = sqlx::query_as(
            "INSERT INTO measurements (investigation_id, run_id, metric, value, unit, extractor, stddev, key, note, label, created_at)
             VALUES ($1, NULL, $2, $3, $4, 'manual', $5, NULL, $6, $7, $8)
             RETURNING id",
        )
        .bind(investigation)
        .bind(&m.metric)
        .bind(m.value)
        .bind(&m.unit)
        .bind(m.stddev)
        .bind(note)
        .bind(label)
        .bind(now_ms())
        .fetch_one(&self.pool)
        .await?;
        Ok(id)
    }

    pub async fn measurements_of_investigation(&self, investigation: &str) -> StoreResult<Vec<MeasurementRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {MEASUREMENT_COLUMNS} FROM measurements WHERE investigation_id = $1 ORDER BY id"
        )))
        .bind(investigation)
        .fetch_all(&self.pool)
        .await?)
    }

    pub async fn measurement(&self, id: i64) -> StoreResult<Option<MeasurementRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {MEASUREMENT_COLUMNS} FROM measurements WHERE id = $1")))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?)
    }

    pub async fn measurements_of_runs(&self, runs: &[i64]) -> StoreResult<Vec<MeasurementRow>> {
        if runs.is_empty() {
            return Ok(Vec::new());
        }
        let marks = (1..=runs.len()).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ");
        let sql = format!("SELECT {MEASUREMENT_COLUMNS} FROM measurements WHERE run_id IN ({marks}) ORDER BY id");
        let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql));
        for run in runs {
            query = query.bind(run);
        }
        Ok(query.fetch_all(&self.pool).await?)
    }

    pub async fn delete_measurement(&self, id: i64) -> StoreResult<bool> {
        let done = sqlx::query("DELETE FROM measurements WHERE id = $1 AND run_id IS NULL")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// `None` when the investigation already has an extractor of that name.
    pub async fn insert_extractor(
        &self,
        investigation: &str,
        name: &str,
        pattern: &str,
        unit: &str,
    ) -> StoreResult<Option<i64>> {
        let id: Option<(i64,)> = sqlx::query_as(
            "INSERT INTO extractors (investigation_id, name, pattern, unit, created_at) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (investigation_id, name) DO NOTHING
             RETURNING id",
        )
        .bind(investigation)
        .bind(name)
        .bind(pattern)
        .bind(unit)
        .bind(now_ms())
        .fetch_optional(&self.pool)
        .await?;
        Ok(id.map(|(id,)| id))
    }

    pub async fn extractors(&self, investigation: &str) -> StoreResult<Vec<ExtractorRow>> {
        Ok(sqlx::query_as(
            "SELECT id, investigation_id, name, pattern, unit, created_at FROM extractors WHERE investigation_id = $1 ORDER BY id",
        )
        .bind(investigation)
        .fetch_all(&self.pool)
        .await?)
    }

    pub async fn delete_extractor(&self, investigation: &str, name: &str) -> StoreResult<bool> {
        let done = sqlx::query("DELETE FROM extractors WHERE investigation_id = $1 AND name = $2")
            .bind(investigation)
            .bind(name)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// `false` when the investigation already has a derived metric of that name.
    pub async fn insert_derived(
        &self,
        investigation: &str,
        name: &str,
        unit: &str,
        formula: &str,
        constants: &str,
    ) -> StoreResult<bool> {
        let done = sqlx::query(
            "INSERT INTO derived_metrics (investigation_id, name, unit, formula, constants, created_at)
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (investigation_id, name) DO NOTHING",
        )
        .bind(investigation)
        .bind(name)
        .bind(unit)
        .bind(formula)
        .bind(constants)
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// `(name, unit, formula, constants JSON)`, oldest first.
    pub async fn derived(&self, investigation: &str) -> StoreResult<Vec<(String, String, String, String)>> {
        Ok(sqlx::query_as(
            "SELECT name, unit, formula, constants FROM derived_metrics WHERE investigation_id = $1 ORDER BY created_at, name",
        )
        .bind(investigation)
        .fetch_all(&self.pool)
        .await?)
    }

    pub async fn delete_derived(&self, investigation: &str, name: &str) -> StoreResult<bool> {
        let done = sqlx::query("DELETE FROM derived_metrics WHERE investigation_id = $1 AND name = $2")
            .bind(investigation)
            .bind(name)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }
}
