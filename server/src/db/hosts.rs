//! Host rows.

use super::{HostRow, Store, StoreResult};
use crate::time::now_ms;

const COLUMNS: &str = r#"name, hostname, port, "user", identity_file, proxy_jump, created_at, updated_at, price_per_hour,
       run_dirs_keep_days, run_dirs_max_mb, run_dirs_swept"#;

impl Store {
    pub async fn hosts(&self) -> StoreResult<Vec<HostRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM hosts ORDER BY name")))
            .fetch_all(&self.pool)
            .await?)
    }

    pub async fn host(&self, name: &str) -> StoreResult<Option<HostRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM hosts WHERE name = $1")))
            .bind(name)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// Inserts or replaces the host called `row.name`; `true` if it was new.
    pub async fn upsert_host(&self, row: &HostRow) -> StoreResult<bool> {
        let now = now_ms();
        let existed = self.host(&row.name).await?.is_some();
        sqlx::query(
            r#"INSERT INTO hosts (name, hostname, port, "user", identity_file, proxy_jump, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             ON CONFLICT (name) DO UPDATE SET hostname = excluded.hostname, port = excluded.port,
                 "user" = excluded."user", identity_file = excluded.identity_file,
                 proxy_jump = excluded.proxy_jump, updated_at = excluded.updated_at"#,
        )
        .bind(&row.name)
        .bind(&row.hostname)
        .bind(row.port)
        .bind(&row.user)
        .bind(&row.identity_file)
        .bind(&row.proxy_jump)
        .bind(now)
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(!existed)
    }

    /// Sets (or, with `None`, removes) what an hour of the host costs; `false`
    /// if there is no such host.
    pub async fn set_host_price(&self, name: &str, price: Option<f64>) -> StoreResult<bool> {
        let done = sqlx::query("UPDATE hosts SET price_per_hour = $1, updated_at = $2 WHERE name = $3")
            .bind(super::float::Float(price))
            .bind(now_ms())
            .bind(name)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Sets how long the host keeps run directories and their cap (`None`:
    /// the default, no cap); `false` if there is no such host.
    pub async fn set_run_dirs_policy(
        &self,
        name: &str,
        keep_days: Option<u32>,
        max_mb: Option<u64>,
    ) -> StoreResult<bool> {
        let done = sqlx::query(
            "UPDATE hosts SET run_dirs_keep_days = $1, run_dirs_max_mb = $2, updated_at = $3 WHERE name = $4",
        )
        .bind(keep_days.map(i64::from))
        .bind(max_mb.and_then(|mb| i64::try_from(mb).ok()))
        .bind(now_ms())
        .bind(name)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Keeps the report of the host's last sweep of run directories.
    pub async fn set_run_dirs_swept(&self, name: &str, report: &str) -> StoreResult<()> {
        sqlx::query("UPDATE hosts SET run_dirs_swept = $1 WHERE name = $2")
            .bind(report)
            .bind(name)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// `false` if there is no such host. Fails (foreign key) while another host jumps through it.
    pub async fn delete_host(&self, name: &str) -> StoreResult<bool> {
        let done = sqlx::query("DELETE FROM hosts WHERE name = $1").bind(name).execute(&self.pool).await?;
        Ok(done.rows_affected() == 1)
    }

    pub async fn hosts_jumping_through(&self, name: &str) -> StoreResult<Vec<String>> {
        let rows: Vec<(String,)> = sqlx::query_as("SELECT name FROM hosts WHERE proxy_jump = $1 ORDER BY name")
            .bind(name)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.into_iter().map(|(n,)| n).collect())
    }
}
