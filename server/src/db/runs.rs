//! Run rows. Output bytes live in files (see `crate::runs::output`); the row
//! holds the counters, refreshed while the run goes and final at its end.

use super::{NewRun, RunEnd, RunRow, Store, StoreResult};
use crate::time::now_ms;
use domain::runs::RunStatus;

/// A claim on a left command (`client_left = 2`) by a replica other than this
/// one (`$1`) that is not alive (no lease renewed since `$2`; SQLite keeps no
/// leases: there, any earlier process).
const ABANDONED: &str =
    "(replica IS NULL OR (replica <> $1 AND replica NOT IN (SELECT id FROM replicas WHERE seen_at >= $2)))";

pub(super) const COLUMNS: &str = "id, step_id, host, command, env, cwd, timeout_s, status, exit_code, exit_signal, error,
    batch_index, batch_size, warmup, stdout_bytes, stderr_bytes, lines, queued_at, started_at, finished_at, who, facts_id,
    config, sweep_id, sweep_index, telemetry, plan, run_dir, server, artifact_notes, host_quiet_s,
    CAST(CASE WHEN telemetry_svg IS NULL THEN 0 ELSE 1 END AS BIGINT) AS telemetry_drawn, origin, origin_id,
    COALESCE(launch, id) AS launch, waiting";

impl Store {
    /// Inserts one run; `launch`: the first run of its Run press or sweep
    /// (none for that first one, which is its own).
    pub async fn insert_run(&self, run: &NewRun, launch: Option<i64>) -> StoreResult<RunRow> {
        let row: RunRow = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "INSERT INTO runs (step_id, host, command, env, cwd, timeout_s, status, batch_index, batch_size, warmup, queued_at, who,
                               replica, config, sweep_id, sweep_index, telemetry, plan, origin, origin_id, launch)
             VALUES ($1, $2, $3, $4, $5, $6, 'queued', $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)
             RETURNING {COLUMNS}"
        )))
        .bind(run.step_id)
        .bind(&run.host)
        .bind(&run.command)
        .bind(&run.env)
        .bind(&run.cwd)
        .bind(run.timeout_s)
        .bind(run.batch_index)
        .bind(run.batch_size)
        .bind(i64::from(run.warmup))
        .bind(now_ms())
        .bind(&run.who)
        .bind(self.replica())
        .bind(&run.config)
        .bind(run.sweep_id)
        .bind(run.sweep_index)
        .bind(i64::from(run.telemetry))
        .bind(&run.plan)
        .bind(run.origin.kind().as_str())
        .bind(run.origin.id())
        .bind(launch)
        .fetch_all(&self.pool)
        .await?
        .into_iter()
        .next()
        .ok_or(sqlx::Error::RowNotFound)?;
        // A launch's first run is stored without one (read as its own id):
        // one write per run, not an insert and an update.
        Ok(row)
    }

    pub async fn run(&self, id: i64) -> StoreResult<Option<RunRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM runs WHERE id = $1")))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// Runs of the given steps, oldest first.
    /// The investigation's run and measurement counters (0 before any), which
    /// every change to its runs or measurements bumps.
    pub async fn data_versions(&self, investigation: &str) -> StoreResult<(i64, i64)> {
        let (runs, measurements): (Option<i64>, Option<i64>) = sqlx::query_as(
            "SELECT (SELECT version FROM run_versions WHERE investigation_id = $1),
                    (SELECT version FROM measurement_versions WHERE investigation_id = $1)",
        )
        .bind(investigation)
        .fetch_one(&self.pool)
        .await?;
        Ok((runs.unwrap_or(0), measurements.unwrap_or(0)))
    }

    /// Kept in memory while the investigation's run counter (bumped by
    /// triggers in the same transaction as every change, migration 0029) is
    /// the one they were read at; read before the rows, so a write between
    /// the two can only cause a miss.
    pub async fn runs_of_investigation(&self, investigation: &str) -> StoreResult<Vec<RunRow>> {
        let version: Option<(i64,)> = sqlx::query_as("SELECT version FROM run_versions WHERE investigation_id = $1")
            .bind(investigation)
            .fetch_optional(&self.pool)
            .await?;
        let version = version.map_or(0, |(v,)| v);
        if let Some(rows) = self.runs.get(investigation, version) {
            return Ok(rows.to_vec());
        }
        let rows: Vec<RunRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM runs WHERE step_id IN (SELECT id FROM steps WHERE investigation_id = $1) ORDER BY id"
        )))
        .bind(investigation)
        .fetch_all(&self.pool)
        .await?;
        self.runs.put(investigation, version, rows.clone().into());
        Ok(rows)
    }

    pub async fn runs_of_step(&self, step_id: i64) -> StoreResult<Vec<RunRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM runs WHERE step_id = $1 ORDER BY id")))
            .bind(step_id)
            .fetch_all(&self.pool)
            .await?)
    }

    /// Deletes a run with what hangs off it (measurements, logs, telemetry,
    /// its output in the search index); `false` if there is no such run.
    pub async fn delete_run(&self, id: i64) -> StoreResult<bool> {
        let mut tx = self.begin_serialised(super::Queue::Search).await?;
        sqlx::query("DELETE FROM search_docs WHERE run_id = $1 AND kind IN ('output', 'server_log')")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        let investigation: Option<(String,)> = sqlx::query_as(
            "DELETE FROM runs WHERE id = $1 RETURNING (SELECT investigation_id FROM steps WHERE steps.id = runs.step_id)",
        )
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some((investigation,)) = investigation else { return Ok(false) };
        super::touch_investigation(&mut tx, &investigation, now_ms()).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// The investigation a run belongs to.
    pub async fn run_investigation(&self, id: i64) -> StoreResult<Option<String>> {
        let row: Option<(String,)> =
            sqlx::query_as("SELECT s.investigation_id FROM runs r JOIN steps s ON s.id = r.step_id WHERE r.id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.map(|(id,)| id))
    }

    /// queued → running, pointing at the host's newest facts; `false` if the run is
    /// no longer queued (cancelled meanwhile).
    pub async fn start_run(&self, id: i64, run_dir: &str) -> StoreResult<bool> {
        let done = sqlx::query(
            "UPDATE runs SET status = 'running', started_at = $1, run_dir = $3, waiting = NULL,
                 facts_id = (SELECT max(id) FROM host_facts WHERE host_name = runs.host)
             WHERE id = $2 AND status = 'queued'",
        )
        .bind(now_ms())
        .bind(id)
        .bind(run_dir)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// What a queued run waits for (none: it no longer waits).
    pub async fn set_run_waiting(&self, id: i64, waiting: Option<&str>) -> StoreResult<()> {
        sqlx::query("UPDATE runs SET waiting = $1 WHERE id = $2 AND status = 'queued'")
            .bind(waiting)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    pub async fn update_run_counts(&self, id: i64, stdout: u64, stderr: u64, lines: u64) -> StoreResult<()> {
        sqlx::query("UPDATE runs SET stdout_bytes = $1, stderr_bytes = $2, lines = $3 WHERE id = $4")
            .bind(stdout as i64)
            .bind(stderr as i64)
            .bind(lines as i64)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Records how a run ended, unless it already has.
    pub async fn finish_run(&self, id: i64, end: &RunEnd<'_>) -> StoreResult<bool> {
        let done = sqlx::query(
            "UPDATE runs SET status = $1, exit_code = $2, exit_signal = $3, error = $4, finished_at = $5, host_quiet_s = NULL
             WHERE id = $6 AND status IN ('queued', 'running')",
        )
        .bind(end.status.as_str())
        .bind(end.exit_code)
        .bind(end.exit_signal)
        .bind(end.error)
        .bind(now_ms())
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// How long the run's host has not answered (`None`: it answers); a
    /// running run's only.
    pub async fn set_host_quiet(&self, id: i64, seconds: Option<i64>) -> StoreResult<()> {
        sqlx::query("UPDATE runs SET host_quiet_s = $1 WHERE id = $2 AND status = 'running'")
            .bind(seconds)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Cancels a run that has not started; `false` if it had.
    pub async fn cancel_queued_run(&self, id: i64) -> StoreResult<bool> {
        let done = sqlx::query(
            "UPDATE runs SET status = 'cancelled', error = 'Cancelled before it started.', finished_at = $1
             WHERE id = $2 AND status = 'queued'",
        )
        .bind(now_ms())
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// The finished runs on a host, with their investigations (to price them again).
    pub async fn finished_runs_on_host(&self, host: &str) -> StoreResult<Vec<(i64, String)>> {
        Ok(sqlx::query_as(
            "SELECT r.id, s.investigation_id FROM runs r JOIN steps s ON s.id = r.step_id
             WHERE r.host = $1 AND r.status NOT IN ('queued', 'running') ORDER BY r.id",
        )
        .bind(host)
        .fetch_all(&self.pool)
        .await?)
    }

    /// How many runs there are of each status.
    pub async fn runs_by_status(&self) -> StoreResult<Vec<(RunStatus, i64)>> {
        #[derive(sqlx::FromRow)]
        struct Count {
            #[sqlx(try_from = "String")]
            status: RunStatus,
            n: i64,
        }
        let counts: Vec<Count> =
            sqlx::query_as("SELECT status, COUNT(*) AS n FROM runs GROUP BY status ORDER BY status")
                .fetch_all(&self.pool)
                .await?;
        Ok(counts.into_iter().map(|c| (c.status, c.n)).collect())
    }

    /// At start: runs a crashed or stopped server left open. Returns their ids.
    pub async fn interrupt_unfinished_runs(&self) -> StoreResult<Vec<i64>> {
        let rows: Vec<(i64,)> = sqlx::query_as(
            "UPDATE runs SET status = 'interrupted', finished_at = $1,
                 error = 'The Sleuth server stopped while this run was ' || status || '.',
                 client_left = CASE WHEN status = 'running' THEN 1 ELSE 0 END
             WHERE status IN ('queued', 'running') RETURNING id",
        )
        .bind(now_ms())
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }
}

/// Runs whose commands may still be running on their hosts (`runs::retention`):
/// `client_left` is 1 while one may be, 2 while a server is stopping it, 0 after.
/// A claim (2) names its replica in `runs.replica` (the run's driver is over by
/// then): a claim whose replica died before it finished is taken again.
impl Store {
    /// `(run, host, run_dir)` of each run ended while its command ran, not
    /// being stopped by a live replica.
    pub async fn clients_left(&self) -> StoreResult<Vec<(i64, String, String)>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT id, host, COALESCE(run_dir, '') FROM runs
             WHERE status NOT IN ('queued', 'running') AND (client_left = 1 OR (client_left = 2 AND {ABANDONED}))"
        )))
        .bind(self.replica())
        .bind(super::replicas::lease_cutoff())
        .fetch_all(&self.pool)
        .await?)
    }

    /// Takes the run's left command to stop; `false` if a live replica has it.
    pub async fn claim_client_left(&self, run: i64) -> StoreResult<bool> {
        let done = sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE runs SET client_left = 2, replica = $1
             WHERE id = $3 AND (client_left = 1 OR (client_left = 2 AND {ABANDONED}))"
        )))
        .bind(self.replica())
        .bind(super::replicas::lease_cutoff())
        .bind(run)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Gives it back, for the next start to try (its host could not be reached).
    pub async fn unclaim_client_left(&self, run: i64) -> StoreResult<()> {
        sqlx::query("UPDATE runs SET client_left = 1 WHERE id = $1 AND client_left = 2")
            .bind(run)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Its left command is stopped (or was gone); `note` is added to its error.
    pub async fn client_stopped(&self, run: i64, note: Option<&str>) -> StoreResult<()> {
        match note {
            Some(note) => {
                sqlx::query("UPDATE runs SET client_left = 0, error = COALESCE(error || ' ', '') || $2 WHERE id = $1")
                    .bind(run)
                    .bind(note)
                    .execute(&self.pool)
                    .await?
            }
            None => sqlx::query("UPDATE runs SET client_left = 0 WHERE id = $1").bind(run).execute(&self.pool).await?,
        };
        Ok(())
    }

    /// The `run_dir`s on `host` a sweep must leave: runs queued or running
    /// (on any replica), and runs whose server may still be running there.
    pub async fn run_dirs_in_use(&self, host: &str) -> StoreResult<Vec<String>> {
        let rows: Vec<(String,)> = sqlx::query_as(
            "SELECT run_dir FROM runs WHERE host = $1 AND run_dir IS NOT NULL
               AND (status IN ('queued', 'running') OR server_handle IS NOT NULL OR client_left <> 0)",
        )
        .bind(host)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(|(d,)| d).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two stores on one database (replicas): what either changes — a run
    /// added, counted, ended, its step deleted — the other's next read shows,
    /// though each keeps the runs in memory while nothing changed.
    #[tokio::test]
    async fn kept_runs_follow_every_change() {
        for (_dir, database, store) in crate::db::test_stores().await {
            let other = Store::open(&database).await.unwrap();
            let run = crate::db::tests_support::a_run(&store).await;
            let investigation = store.run_investigation(run).await.unwrap().unwrap();
            let seen = async |s: &Store| -> Vec<(i64, RunStatus, i64)> {
                // Twice: the second answer comes from memory.
                let first = s.runs_of_investigation(&investigation).await.unwrap();
                let again = s.runs_of_investigation(&investigation).await.unwrap();
                let of = |rows: Vec<RunRow>| -> Vec<(i64, RunStatus, i64)> {
                    rows.into_iter().map(|r| (r.id, r.status, r.stdout_bytes)).collect()
                };
                let (first, again) = (of(first), of(again));
                assert_eq!(first, again);
                first
            };
            let both = async |want: Vec<(i64, RunStatus, i64)>| {
                assert_eq!(seen(&store).await, want, "{:?}", store.backend());
                assert_eq!(seen(&other).await, want, "{:?}", store.backend());
            };
            both(vec![(run, RunStatus::Queued, 0)]).await;
            other.update_run_counts(run, 5, 0, 1).await.unwrap();
            both(vec![(run, RunStatus::Queued, 5)]).await;
            let end = RunEnd { status: RunStatus::Succeeded, exit_code: Some(0), exit_signal: None, error: None };
            assert!(store.finish_run(run, &end).await.unwrap());
            both(vec![(run, RunStatus::Succeeded, 5)]).await;
            let step = store.run(run).await.unwrap().unwrap().step_id;
            let second = store.insert_step(&investigation, "command", "{}").await.unwrap().unwrap();
            let added = crate::db::tests_support::a_run_of(&other, second.id).await;
            both(vec![(run, RunStatus::Succeeded, 5), (added, RunStatus::Queued, 0)]).await;
            assert!(other.delete_step(step).await.unwrap());
            both(vec![(added, RunStatus::Queued, 0)]).await;
        }
    }

    /// A command left running by a killed Sleuth is stopped by one replica; if
    /// that one dies while stopping it, another takes the claim over.
    #[tokio::test]
    async fn a_left_command_claimed_by_a_replica_that_died_is_claimed_again() {
        for (_dir, database, first) in crate::db::test_stores().await {
            let second = Store::open(&database).await.unwrap();
            let run = crate::db::tests_support::a_run(&first).await;
            assert!(first.start_run(run, "~/.sleuth/runs/1-ab").await.unwrap());
            assert!(first.interrupt_unfinished_runs().await.unwrap().contains(&run));
            let left = |rows: Vec<(i64, String, String)>| rows.iter().any(|(id, _, _)| *id == run);
            assert!(left(second.clients_left().await.unwrap()));

            first.renew_lease().await.unwrap();
            second.renew_lease().await.unwrap();
            assert!(first.claim_client_left(run).await.unwrap());
            assert!(!second.claim_client_left(run).await.unwrap(), "a live replica's claim holds");
            assert!(!left(second.clients_left().await.unwrap()), "{:?}", first.backend());

            // The first replica dies mid-stop: its lease lapses.
            sqlx::query("UPDATE replicas SET seen_at = 0 WHERE id = $1")
                .bind(first.replica())
                .execute(&first.pool)
                .await
                .unwrap();
            assert!(left(second.clients_left().await.unwrap()), "{:?}", first.backend());
            assert!(second.claim_client_left(run).await.unwrap(), "{:?}", first.backend());
            assert!(!first.claim_client_left(run).await.unwrap(), "now the second's");
            second.client_stopped(run, Some("Stopped.")).await.unwrap();
            assert!(!left(first.clients_left().await.unwrap()));
            assert!(!second.claim_client_left(run).await.unwrap(), "nothing left to stop");
        }
    }
}
