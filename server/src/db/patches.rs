//! Patches applied on hosts for runs (`crate::patches::arm`): one row per
//! patched run, written before anything is written on the host and moved on
//! as the arm goes, so a restart (of any replica) knows what to put back.

use super::{Store, StoreResult};
use domain::steps::patch::ArmState;

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct RunPatchRow {
    pub run_id: i64,
    pub patch_step: i64,
    pub host: String,
    /// Where the originals are kept on the host.
    pub keep_dir: String,
    /// `[ArmFile]` as JSON.
    pub files: String,
    #[sqlx(try_from = "String")]
    pub state: ArmState,
    pub said: Option<String>,
    /// `[path]` cleared before the arm (JSON).
    pub caches: Option<String>,
    /// `[ExpectationMet]` read after the arm (JSON).
    pub expectations: Option<String>,
    pub applied_at: Option<i64>,
    pub ended_at: Option<i64>,
}

const COLUMNS: &str =
    "run_id, patch_step, host, keep_dir, files, state, said, caches, expectations, applied_at, ended_at";

impl Store {
    /// The arm begins: recorded before the host is written to.
    pub async fn begin_run_patch(
        &self,
        run: i64,
        patch_step: i64,
        host: &str,
        keep: &str,
        files: &str,
    ) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO run_patches (run_id, patch_step, host, keep_dir, files, state) VALUES ($1, $2, $3, $4, $5, 'applying')",
        )
        .bind(run)
        .bind(patch_step)
        .bind(host)
        .bind(keep)
        .bind(files)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Where the run's patch stands now, its files' hashes and what was said.
    pub async fn set_run_patch(&self, run: i64, state: ArmState, files: &str, said: &str) -> StoreResult<()> {
        let now = crate::time::now_ms();
        sqlx::query(
            "UPDATE run_patches SET state = $1, files = $2, said = $3,
                    applied_at = CASE WHEN $1 = 'applied' THEN $4 ELSE applied_at END,
                    ended_at = CASE WHEN $1 IN ('reverted', 'refused', 'dirty', 'accepted') THEN $4 ELSE ended_at END
             WHERE run_id = $5",
        )
        .bind(state.as_str())
        .bind(files)
        .bind(said)
        .bind(now)
        .bind(run)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// What was done besides: caches cleared, expectations read (JSON each).
    pub async fn set_run_patch_checks(
        &self,
        run: i64,
        caches: Option<&str>,
        expectations: Option<&str>,
    ) -> StoreResult<()> {
        sqlx::query(
            "UPDATE run_patches SET caches = COALESCE($1, caches), expectations = COALESCE($2, expectations) WHERE run_id = $3",
        )
        .bind(caches)
        .bind(expectations)
        .bind(run)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub async fn run_patches_of(&self, runs: &[i64]) -> StoreResult<Vec<RunPatchRow>> {
        if runs.is_empty() {
            return Ok(Vec::new());
        }
        let list = runs.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
        let sql = format!("SELECT {COLUMNS} FROM run_patches WHERE run_id IN ({list})");
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(sql)).fetch_all(&self.pool).await?)
    }

    /// Patches in one of `states` (on `host`, or on every host), oldest first.
    pub async fn run_patches_in(&self, states: &[ArmState], host: Option<&str>) -> StoreResult<Vec<RunPatchRow>> {
        let list = states.iter().map(|s| format!("'{}'", s.as_str())).collect::<Vec<_>>().join(",");
        let sql = format!(
            "SELECT {COLUMNS} FROM run_patches WHERE state IN ({list}) AND ($1 IS NULL OR host = $1) ORDER BY run_id"
        );
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(host).fetch_all(&self.pool).await?)
    }
}
