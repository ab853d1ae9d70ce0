//! Measurements and user-defined extractors.

use super::rows::MeasurementRow;
use super::{Store, StoreResult};
use crate::time::now_ms;
use domain::metrics::Measurement;
use std::sync::Arc;

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
    /// A measurement found again (the same metric, key and extractor) keeps its
    /// row and id, its value updated: calculators and links name measurements
    /// by id, and a run is read again after its end (its telemetry's
    /// summaries) and whenever an extractor is added.
    pub async fn replace_run_measurements(
        &self,
        investigation: &str,
        run: i64,
        found: &[Measurement],
    ) -> StoreResult<()> {
        let mut tx = self.begin_serialised(super::Queue::Measurements).await?;
        let mut old: Vec<(i64, String, Option<String>, String)> =
            sqlx::query_as("SELECT id, metric, key, extractor FROM measurements WHERE run_id = $1 ORDER BY id")
                .bind(run)
                .fetch_all(&mut *tx)
                .await?;
        let now = now_ms();
        for m in found {
            let same = old.iter().position(|(_, metric, key, extractor)| {
                *metric == m.metric && *key == m.key && *extractor == m.extractor
            });
            match same.map(|i| old.remove(i)) {
                Some((id, ..)) => {
                    sqlx::query("UPDATE measurements SET value = $1, unit = $2, stddev = $3 WHERE id = $4")
                        .bind(m.value)
                        .bind(&m.unit)
                        .bind(super::float::Float(m.stddev))
                        .bind(id)
                        .execute(&mut *tx)
                        .await?;
                }
                None => {
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
                    .bind(super::float::Float(m.stddev))
                    .bind(&m.key)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?;
                }
            }
        }
        // What is not found any more goes.
        for (id, ..) in old {
            sqlx::query("DELETE FROM measurements WHERE id = $1").bind(id).execute(&mut *tx).await?;
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
        .bind(super::float::Float(m.stddev))
        .bind(note)
        .bind(label)
        .bind(now_ms())
        .fetch_all(&self.pool)
        .await?
        .into_iter()
        .next()
        .ok_or(sqlx::Error::RowNotFound)?;
        Ok(id)
    }

    /// Every measurement of the investigation, oldest first. Kept in memory
    /// while the investigation's `measurement_versions` counter is unchanged:
    /// the counter is read first, so rows read after a concurrent change are
    /// filed under the older counter and read again next time, never the
    /// other way round.
    pub async fn measurements_of_investigation(&self, investigation: &str) -> StoreResult<Arc<[MeasurementRow]>> {
        let version: Option<(i64,)> =
            sqlx::query_as("SELECT version FROM measurement_versions WHERE investigation_id = $1")
                .bind(investigation)
                .fetch_optional(&self.pool)
                .await?;
        let version = version.map_or(0, |(v,)| v);
        if let Some(rows) = self.measurements.get(investigation, version) {
            return Ok(rows);
        }
        let rows: Vec<MeasurementRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {MEASUREMENT_COLUMNS} FROM measurements WHERE investigation_id = $1 ORDER BY id"
        )))
        .bind(investigation)
        .fetch_all(&self.pool)
        .await?;
        let rows: Arc<[MeasurementRow]> = rows.into();
        self.measurements.put(investigation, version, rows.clone());
        Ok(rows)
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
        insert_extractor_in(&mut *self.pool.acquire().await?, investigation, name, pattern, unit).await
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
        insert_derived_in(&mut *self.pool.acquire().await?, investigation, name, unit, formula, constants).await
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

/// An extractor on `conn`; `None` when the investigation has one of that name.
pub(super) async fn insert_extractor_in(
    conn: &mut sqlx::AnyConnection,
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
    .fetch_all(conn)
    .await?
    .into_iter()
    .next();
    Ok(id.map(|(id,)| id))
}

/// A derived metric on `conn`; `false` when the investigation has one of that name.
pub(super) async fn insert_derived_in(
    conn: &mut sqlx::AnyConnection,
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
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(metric: &str, value: f64, key: Option<&str>) -> Measurement {
        Measurement {
            metric: metric.into(),
            value,
            unit: "tok/s".into(),
            extractor: "vllm-bench-serve".into(),
            stddev: None,
            key: key.map(str::to_string),
        }
    }

    /// Read again (telemetry's summaries after the end, a new extractor), a run
    /// keeps the ids of what it found before: calculators name them.
    #[tokio::test]
    async fn measurements_found_again_keep_their_ids() {
        for (_dir, _database, store) in crate::db::test_stores().await {
            let run = crate::db::tests_support::a_run(&store).await;
            let investigation = store.run_investigation(run).await.unwrap().unwrap();
            let first = [found("output_throughput", 57.5, None), found("ttft_ms", 9.0, Some("p99"))];
            store.replace_run_measurements(&investigation, run, &first).await.unwrap();
            let before = store.measurements_of_runs(&[run]).await.unwrap();
            let again = [found("output_throughput", 57.6, None), found("gpu_util_mean", 80.0, None)];
            store.replace_run_measurements(&investigation, run, &again).await.unwrap();
            let after = store.measurements_of_runs(&[run]).await.unwrap();
            let id_of = |rows: &[MeasurementRow], metric: &str| rows.iter().find(|r| r.metric == metric).map(|r| r.id);
            assert_eq!(
                id_of(&after, "output_throughput"),
                id_of(&before, "output_throughput"),
                "{:?}",
                store.backend()
            );
            assert_eq!(after.iter().find(|r| r.metric == "output_throughput").unwrap().value, 57.6);
            assert!(id_of(&after, "gpu_util_mean").is_some(), "new ones are added");
            assert_eq!(id_of(&after, "ttft_ms"), None, "ones not found any more go");
            assert_eq!(after.len(), 2);
        }
    }

    /// What a server keeps in memory follows every change, its own or another
    /// replica's (a second store on the same database), cascades included.
    #[tokio::test]
    async fn kept_measurements_follow_every_change() {
        for (_dir, database, store) in crate::db::test_stores().await {
            let other = Store::open(&database).await.unwrap();
            let run = crate::db::tests_support::a_run(&store).await;
            let investigation = store.run_investigation(run).await.unwrap().unwrap();
            let seen = |rows: Arc<[MeasurementRow]>| {
                let mut v: Vec<(String, f64)> = rows.iter().map(|r| (r.metric.clone(), r.value)).collect();
                v.sort_by(|a, b| a.0.cmp(&b.0));
                v
            };
            let both = async |want: &[(&str, f64)]| {
                let want: Vec<(String, f64)> = want.iter().map(|(m, v)| (m.to_string(), *v)).collect();
                for s in [&store, &other] {
                    // Twice: the second answer comes from memory.
                    for _ in 0..2 {
                        let got = seen(s.measurements_of_investigation(&investigation).await.unwrap());
                        assert_eq!(got, want, "{:?}", store.backend());
                    }
                }
            };
            both(&[]).await;
            store
                .replace_run_measurements(&investigation, run, &[found("output_throughput", 57.5, None)])
                .await
                .unwrap();
            both(&[("output_throughput", 57.5)]).await;
            other
                .replace_run_measurements(&investigation, run, &[found("output_throughput", 60.0, None)])
                .await
                .unwrap();
            both(&[("output_throughput", 60.0)]).await;
            let manual = found("hbm_share", 13.0, None);
            let id = other.insert_manual_measurement(&investigation, &manual, None, None).await.unwrap();
            both(&[("hbm_share", 13.0), ("output_throughput", 60.0)]).await;
            assert!(store.delete_measurement(id).await.unwrap());
            both(&[("output_throughput", 60.0)]).await;
            let step = store.run(run).await.unwrap().unwrap().step_id;
            assert!(other.delete_step(step).await.unwrap());
            both(&[]).await;
        }
    }

    /// Two replacing one run's measurements at once (the runner, and a
    /// re-extraction after a new extractor) while other writes go on: every
    /// replacement succeeds and the run has each measurement once. (Begun
    /// deferred, a SQLite transaction that read first failed at once with
    /// "database is locked" when another write came between: a run lost its
    /// numbers in CI.)
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn replacements_at_once_with_other_writes_all_succeed() {
        for (_dir, _database, store) in crate::db::test_stores().await {
            let run = crate::db::tests_support::a_run(&store).await;
            let investigation = store.run_investigation(run).await.unwrap().unwrap();
            let writer = {
                let store = store.clone();
                tokio::spawn(async move {
                    for i in 0..200u64 {
                        store.update_run_counts(run, i, 0, i).await.unwrap();
                    }
                })
            };
            let replacers: Vec<_> = (0..4)
                .map(|k| {
                    let (store, investigation) = (store.clone(), investigation.clone());
                    tokio::spawn(async move {
                        for i in 0..25 {
                            let value = f64::from(k * 100 + i);
                            let found = [found("output_throughput", value, None), found("ttft_ms", 9.0, Some("p99"))];
                            store.replace_run_measurements(&investigation, run, &found).await?;
                        }
                        Ok::<_, crate::db::StoreError>(())
                    })
                })
                .collect();
            for replacer in replacers {
                replacer.await.unwrap().unwrap_or_else(|e| panic!("{:?}: {e}", store.backend()));
            }
            writer.await.unwrap();
            let rows = store.measurements_of_runs(&[run]).await.unwrap();
            assert_eq!(rows.len(), 2, "{:?}: {rows:?}", store.backend());
        }
    }
}

#[cfg(test)]
mod floats {
    use super::*;

    /// A spread that is missing, then present, in the same statements: on
    /// PostgreSQL a NULL float once made the cached statement refuse the next
    /// value (see `db::float`).
    #[tokio::test]
    async fn a_missing_float_then_a_present_one() {
        for (_dir, _database, store) in crate::db::test_stores().await {
            let run = crate::db::tests_support::a_run(&store).await;
            let investigation = store.run_investigation(run).await.unwrap().unwrap();
            for i in 0..12 {
                let stddev = (i % 2 == 1).then_some(0.16 * f64::from(i));
                let m = Measurement {
                    metric: format!("tg{i}"),
                    value: 57.5,
                    unit: "tok/s".into(),
                    extractor: "llama-bench".into(),
                    stddev,
                    key: None,
                };
                store.replace_run_measurements(&investigation, run, &[m]).await.unwrap_or_else(|e| {
                    panic!("{:?}, stddev {stddev:?}: {e}", store.backend());
                });
                let kept = store.measurements_of_runs(&[run]).await.unwrap();
                assert_eq!(kept[0].stddev, stddev, "{:?}", store.backend());
            }
        }
    }
}

/// A finished, measured run of a step as its history reads it.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct HistoryRow {
    pub id: i64,
    pub host: String,
    pub command: String,
    /// JSON, as on `runs`.
    pub env: String,
    pub config: Option<String>,
    pub facts_id: Option<i64>,
    pub started_at: Option<i64>,
    /// The metric's value (the unkeyed one, else the first) and unit; none when not measured.
    pub value: Option<f64>,
    pub unit: Option<String>,
}

impl Store {
    /// A step's succeeded, non-warm-up runs in queue order, each with its
    /// value of `metric`: one query, whatever else the runs measured.
    pub async fn history_rows(&self, step: i64, metric: &str) -> StoreResult<Vec<HistoryRow>> {
        Ok(sqlx::query_as(
            "SELECT r.id, r.host, r.command, r.env, r.config, r.facts_id, r.started_at,
                    (SELECT m.value FROM measurements m WHERE m.run_id = r.id AND m.metric = $2
                     ORDER BY CASE WHEN m.key IS NULL THEN 0 ELSE 1 END, m.id LIMIT 1) AS value,
                    (SELECT m.unit FROM measurements m WHERE m.run_id = r.id AND m.metric = $2
                     ORDER BY CASE WHEN m.key IS NULL THEN 0 ELSE 1 END, m.id LIMIT 1) AS unit
             FROM runs r WHERE r.step_id = $1 AND r.status = 'succeeded' AND r.warmup = 0 ORDER BY r.id",
        )
        .bind(step)
        .bind(metric)
        .fetch_all(&self.pool)
        .await?)
    }

    /// The metrics a step's runs measured, each once (for a "they measured …").
    pub async fn metrics_of_step(&self, step: i64) -> StoreResult<Vec<String>> {
        let rows: Vec<(String,)> = sqlx::query_as(
            "SELECT DISTINCT m.metric FROM measurements m JOIN runs r ON r.id = m.run_id WHERE r.step_id = $1 ORDER BY m.metric",
        )
        .bind(step)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(|(m,)| m).collect())
    }
}
