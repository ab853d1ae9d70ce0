//! GPU telemetry of runs (`crate::telemetry`): samples as rows, the GPUs seen
//! and notes on the run.

use super::{Store, StoreResult};
use domain::telemetry::Sample;

/// Rows per INSERT of samples.
const SAMPLES_PER_INSERT: usize = 200;

impl Store {
    /// Appends `(gpu, sample)` readings of the run.
    pub async fn insert_samples(&self, run: i64, samples: &[(u32, Sample)]) -> StoreResult<()> {
        for batch in samples.chunks(SAMPLES_PER_INSERT) {
            let mut sql = String::from(
                "INSERT INTO run_telemetry (run_id, gpu, t_ms, gpu_util, mem_util, mem_used_mib, power_w,
                 sm_clock_mhz, mem_clock_mhz, temp_c, pcie_rx_mbs, pcie_tx_mbs) VALUES ",
            );
            for i in 0..batch.len() {
                let slots: Vec<String> = (1..=12).map(|c| format!("${}", i * 12 + c)).collect();
                sql.push_str(&format!("{}({})", if i == 0 { "" } else { ", " }, slots.join(", ")));
            }
            let mut insert = sqlx::query(sqlx::AssertSqlSafe(sql));
            for (gpu, s) in batch {
                insert = insert
                    .bind(run)
                    .bind(i64::from(*gpu))
                    .bind(i64::try_from(s.t_ms).unwrap_or(i64::MAX))
                    .bind(super::float::Float(s.gpu_util))
                    .bind(super::float::Float(s.mem_util))
                    .bind(super::float::Float(s.mem_used_mib))
                    .bind(super::float::Float(s.power_w))
                    .bind(super::float::Float(s.sm_clock_mhz))
                    .bind(super::float::Float(s.mem_clock_mhz))
                    .bind(super::float::Float(s.temp_c))
                    .bind(super::float::Float(s.pcie_rx_mbs))
                    .bind(super::float::Float(s.pcie_tx_mbs));
            }
            insert.execute(&self.pool).await?;
        }
        Ok(())
    }

    /// The run's samples by GPU, then time.
    pub async fn samples(&self, run: i64) -> StoreResult<Vec<(u32, Sample)>> {
        type Row = (
            i64,
            i64,
            Option<f64>,
            Option<f64>,
            Option<f64>,
            Option<f64>,
            Option<f64>,
            Option<f64>,
            Option<f64>,
            Option<f64>,
            Option<f64>,
        );
        let rows: Vec<Row> = sqlx::query_as(
            "SELECT gpu, t_ms, gpu_util, mem_util, mem_used_mib, power_w, sm_clock_mhz, mem_clock_mhz, temp_c,
                    pcie_rx_mbs, pcie_tx_mbs
             FROM run_telemetry WHERE run_id = $1 ORDER BY gpu, t_ms",
        )
        .bind(run)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(|(gpu, t_ms, gpu_util, mem_util, mem_used_mib, power_w, sm, mem, temp, rx, tx)| {
                let sample = Sample {
                    t_ms: u64::try_from(t_ms).unwrap_or(0),
                    gpu_util,
                    mem_util,
                    mem_used_mib,
                    power_w,
                    sm_clock_mhz: sm,
                    mem_clock_mhz: mem,
                    temp_c: temp,
                    pcie_rx_mbs: rx,
                    pcie_tx_mbs: tx,
                };
                (u32::try_from(gpu).unwrap_or(0), sample)
            })
            .collect())
    }

    /// The GPUs seen (JSON `[{"index","name"}]`) and the notes (JSON array).
    pub async fn set_telemetry_info(&self, run: i64, gpus: &str, notes: &str) -> StoreResult<()> {
        sqlx::query("UPDATE runs SET telemetry_gpus = $1, telemetry_notes = $2 WHERE id = $3")
            .bind(gpus)
            .bind(notes)
            .bind(run)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// [`Store::set_telemetry_info`] for a run without samples, and its chart
    /// drawn as what it is, empty: one write where a run of `true` had three.
    pub async fn set_telemetry_without_samples(&self, run: i64, gpus: &str, notes: &str) -> StoreResult<()> {
        sqlx::query("UPDATE runs SET telemetry_gpus = $1, telemetry_notes = $2, telemetry_svg = '' WHERE id = $3")
            .bind(gpus)
            .bind(notes)
            .bind(run)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The run's telemetry chart; empty when there was nothing to draw.
    pub async fn set_telemetry_svg(&self, run: i64, svg: &str) -> StoreResult<()> {
        sqlx::query("UPDATE runs SET telemetry_svg = $1 WHERE id = $2").bind(svg).bind(run).execute(&self.pool).await?;
        Ok(())
    }

    pub async fn telemetry_svg(&self, run: i64) -> StoreResult<Option<String>> {
        let row: Option<(Option<String>,)> =
            sqlx::query_as("SELECT telemetry_svg FROM runs WHERE id = $1").bind(run).fetch_optional(&self.pool).await?;
        Ok(row.and_then(|(svg,)| svg))
    }

    pub async fn telemetry_info(&self, run: i64) -> StoreResult<Option<(Option<String>, Option<String>)>> {
        Ok(sqlx::query_as("SELECT telemetry_gpus, telemetry_notes FROM runs WHERE id = $1")
            .bind(run)
            .fetch_optional(&self.pool)
            .await?)
    }
}
