//! What report files gave a run besides measurements: which artifact was read
//! as what (with the reader's notes and unknown fields), per-request samples,
//! and each investigation's SLO.

use super::{Store, StoreResult};
use crate::time::now_ms;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ReportRow {
    pub id: i64,
    pub run_id: i64,
    pub log_id: Option<i64>,
    pub name: String,
    /// The reader's name; none when the file was recognised but not read.
    pub format: Option<String>,
    /// JSON: the notes, as a list of sentences.
    pub notes: String,
    /// JSON: the fields no reader knows.
    pub metadata: String,
}

/// A report as the extraction found it, to store.
pub struct NewReport {
    pub log_id: Option<i64>,
    pub name: String,
    pub format: Option<String>,
    pub notes: Vec<String>,
    pub metadata: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SamplesRow {
    pub id: i64,
    pub run_id: i64,
    pub metric: String,
    pub unit: String,
    pub key: Option<String>,
    /// How many values there were (`data` keeps at most `CAP`).
    pub count: i64,
    /// Sorted little-endian f32.
    pub data: Vec<u8>,
}

impl SamplesRow {
    pub fn values(&self) -> Vec<f64> {
        self.data.chunks_exact(4).map(|b| f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))).collect()
    }
}

/// Samples as stored: sorted f32, little-endian (latencies need no more than
/// f32's 7 digits; 100 000 of them are 400 KB).
pub fn encode(values: &[f64]) -> Vec<u8> {
    values.iter().flat_map(|v| (*v as f32).to_le_bytes()).collect()
}

const SAMPLE_COLUMNS: &str = "id, run_id, metric, unit, key, count, data";
const REPORT_COLUMNS: &str = "id, run_id, log_id, name, format, notes, metadata";

/// A report's per-request samples as stored: metric, unit, key, count, and the values packed.
pub type NewSample = (String, String, Option<String>, i64, Vec<u8>);

impl Store {
    /// Replaces what report files gave `run` (reports read, samples), in one
    /// transaction, as `replace_run_measurements` does for its numbers.
    pub async fn replace_run_reports(&self, run: i64, reports: &[NewReport], samples: &[NewSample]) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        sqlx::query("DELETE FROM run_reports WHERE run_id = $1").bind(run).execute(&mut *tx).await?;
        sqlx::query("DELETE FROM run_samples WHERE run_id = $1").bind(run).execute(&mut *tx).await?;
        for r in reports {
            let notes = serde_json::to_string(&r.notes).unwrap_or_else(|_| "[]".into());
            let metadata = serde_json::to_string(&r.metadata).unwrap_or_else(|_| "{}".into());
            sqlx::query(
                "INSERT INTO run_reports (run_id, log_id, name, format, notes, metadata) VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(run)
            .bind(r.log_id)
            .bind(&r.name)
            .bind(r.format.as_deref())
            .bind(notes)
            .bind(metadata)
            .execute(&mut *tx)
            .await?;
        }
        for (metric, unit, key, count, data) in samples {
            sqlx::query(
                "INSERT INTO run_samples (run_id, metric, unit, key, count, data) VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(run)
            .bind(metric)
            .bind(unit)
            .bind(key.as_deref())
            .bind(*count)
            .bind(data.as_slice())
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    pub async fn reports_of_runs(&self, runs: &[i64]) -> StoreResult<Vec<ReportRow>> {
        if runs.is_empty() {
            return Ok(Vec::new());
        }
        let list = runs.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
        let sql = format!("SELECT {REPORT_COLUMNS} FROM run_reports WHERE run_id IN ({list}) ORDER BY id");
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(sql)).fetch_all(&self.pool).await?)
    }

    /// The samples of `metric` in these runs, oldest first.
    pub async fn samples_of_runs(&self, runs: &[i64], metric: &str) -> StoreResult<Vec<SamplesRow>> {
        if runs.is_empty() {
            return Ok(Vec::new());
        }
        let list = runs.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
        let sql =
            format!("SELECT {SAMPLE_COLUMNS} FROM run_samples WHERE run_id IN ({list}) AND metric = $1 ORDER BY id");
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(metric).fetch_all(&self.pool).await?)
    }

    /// Which rows of `metric` these runs have (id, run, key), without their
    /// bytes: enough to know whether what was computed from them still holds.
    pub async fn sample_rows_of_runs(
        &self,
        runs: &[i64],
        metric: &str,
    ) -> StoreResult<Vec<(i64, i64, Option<String>)>> {
        if runs.is_empty() {
            return Ok(Vec::new());
        }
        let list = runs.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
        let sql =
            format!("SELECT id, run_id, key FROM run_samples WHERE run_id IN ({list}) AND metric = $1 ORDER BY id");
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(metric).fetch_all(&self.pool).await?)
    }

    /// Which metrics have samples in these runs (without their bytes).
    pub async fn sampled_metrics(&self, runs: &[i64]) -> StoreResult<Vec<(i64, String, Option<String>, i64)>> {
        if runs.is_empty() {
            return Ok(Vec::new());
        }
        let list = runs.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
        let sql = format!("SELECT run_id, metric, key, count FROM run_samples WHERE run_id IN ({list}) ORDER BY id");
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(sql)).fetch_all(&self.pool).await?)
    }

    pub async fn slo(&self, investigation: &str) -> StoreResult<Option<String>> {
        let row: Option<(String,)> = sqlx::query_as("SELECT text FROM slos WHERE investigation_id = $1")
            .bind(investigation)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|(text,)| text))
    }

    /// Sets (or, with `None`, removes) the investigation's SLO.
    pub async fn set_slo(&self, investigation: &str, text: Option<&str>, by: &str) -> StoreResult<()> {
        match text {
            Some(text) => set_slo_in(&mut *self.pool.acquire().await?, investigation, text, by).await?,
            None => {
                sqlx::query("DELETE FROM slos WHERE investigation_id = $1")
                    .bind(investigation)
                    .execute(&self.pool)
                    .await?;
            }
        }
        Ok(())
    }
}

/// The investigation's SLO on `conn`, replacing any.
pub(super) async fn set_slo_in(
    conn: &mut sqlx::AnyConnection,
    investigation: &str,
    text: &str,
    by: &str,
) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO slos (investigation_id, text, updated_at, updated_by) VALUES ($1, $2, $3, $4)
         ON CONFLICT (investigation_id) DO UPDATE SET text = $2, updated_at = $3, updated_by = $4",
    )
    .bind(investigation)
    .bind(text)
    .bind(now_ms())
    .bind(by)
    .execute(conn)
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_round_trip_as_f32() {
        let values = [0.5, 12.25, 1e6];
        let row = SamplesRow {
            id: 1,
            run_id: 1,
            metric: "ttft_ms".into(),
            unit: "ms".into(),
            key: None,
            count: 3,
            data: encode(&values),
        };
        assert_eq!(row.values(), values.to_vec());
    }
}
