//! Which replica drives which run, and leases that tell a live replica from a
//! dead one. Every run row names the replica that queued it (`runs.replica`);
//! a replica renews its row in `replicas` every [`RENEW`], and any replica
//! interrupts the unfinished runs of one not seen for [`EXPIRY`] and gives back
//! the runs it was indexing for search.
//!
//! Queued runs of a dead replica end too (with a reason) rather than being
//! taken over: its SSH connections, host-key prompts and batch order died with
//! it, and silently running a command later, from elsewhere, is worse than
//! asking the person to press Run again.

use super::{Store, StoreResult};
use crate::time::now_ms;
use std::time::Duration;

/// The NOTIFY channel replicas tell each other what happened on.
const LIVE_CHANNEL: &str = "sleuth_live";

/// What other replicas tell this one (PostgreSQL's LISTEN).
pub struct Notices(sqlx::postgres::PgListener);

impl Notices {
    /// The next notice's payload; `None` when the connection was lost (and is
    /// being made again): notices sent meanwhile are gone.
    pub async fn next(&mut self) -> StoreResult<Option<String>> {
        Ok(self.0.try_recv().await?.map(|n| n.payload().to_string()))
    }
}

/// How often a replica renews its lease (and looks for dead ones).
pub const RENEW: Duration = Duration::from_secs(5);
/// A replica unseen for this long is dead. With [`RENEW`], its runs are
/// interrupted at most EXPIRY + RENEW after it died.
pub const EXPIRY: Duration = Duration::from_secs(20);

impl Store {
    /// This process's replica id: the host's name, the process id and a random
    /// part (a restart is a new replica).
    pub fn replica(&self) -> &str {
        &self.replica
    }

    /// Listens to the other replicas; `None` on SQLite (there are none).
    pub async fn listen(&self) -> StoreResult<Option<Notices>> {
        let Some(url) = &self.url else { return Ok(None) };
        let mut listener = sqlx::postgres::PgListener::connect(url).await?;
        listener.listen(LIVE_CHANNEL).await?;
        Ok(Some(Notices(listener)))
    }

    /// Tells every listening replica (this one too) `payload` (at most 8000 bytes).
    pub async fn notify(&self, payload: &str) -> StoreResult<()> {
        sqlx::query("SELECT pg_notify($1, $2)").bind(LIVE_CHANNEL).bind(payload).execute(&self.pool).await?;
        Ok(())
    }

    /// Announces this replica, or renews its lease.
    pub async fn renew_lease(&self) -> StoreResult<()> {
        let now = now_ms();
        sqlx::query(
            "INSERT INTO replicas (id, started_at, seen_at) VALUES ($1, $2, $3)
             ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at",
        )
        .bind(self.replica())
        .bind(now)
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// A replica that stops cleanly gives its lease back; what it drove was
    /// ended by its own shutdown.
    pub async fn release_lease(&self) -> StoreResult<()> {
        sqlx::query("DELETE FROM replicas WHERE id = $1").bind(self.replica()).execute(&self.pool).await?;
        Ok(())
    }

    /// Ends the queued and running runs of replicas whose lease expired (or that
    /// never had one: runs from before leases, or from a replica whose row is
    /// gone), with a reason. Returns `(investigation, run)` of each.
    pub async fn interrupt_runs_of_dead_replicas(&self) -> StoreResult<Vec<(String, i64)>> {
        let now = now_ms();
        let cutoff = lease_cutoff();
        let rows: Vec<(i64,)> = sqlx::query_as(
            "UPDATE runs SET status = 'interrupted', finished_at = $1,
                 error = 'The Sleuth replica driving this run (' || COALESCE(replica, 'unknown') ||
                         ') stopped answering while it was ' || status || '; output up to then is kept.',
                 client_left = CASE WHEN status = 'running' THEN 1 ELSE 0 END
             WHERE status IN ('queued', 'running')
               AND (replica IS NULL
                    OR replica NOT IN (SELECT id FROM replicas WHERE seen_at >= $2))
             RETURNING id",
        )
        .bind(now)
        .bind(cutoff)
        .fetch_all(&self.pool)
        .await?;
        let mut ended = Vec::with_capacity(rows.len());
        for (run,) in rows {
            if let Some(investigation) = self.investigation_of(super::OwnedBy::Run, run).await? {
                ended.push((investigation, run));
            }
        }
        sqlx::query("DELETE FROM replicas WHERE seen_at < $1").bind(cutoff).execute(&self.pool).await?;
        Ok(ended)
    }

    /// Gives back to the index the runs that replicas whose lease expired (or
    /// that have none) claimed and never finished indexing; returns them, for
    /// this replica to index.
    pub async fn release_index_claims_of_dead_replicas(&self) -> StoreResult<Vec<i64>> {
        let cutoff = lease_cutoff();
        let rows: Vec<(i64,)> = sqlx::query_as(
            "UPDATE runs SET indexed = 0, index_claimed_by = NULL
             WHERE indexed = 2
               AND (index_claimed_by IS NULL
                    OR index_claimed_by NOT IN (SELECT id FROM replicas WHERE seen_at >= $1))
             RETURNING id",
        )
        .bind(cutoff)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }
}

/// Whether this replica may take a lapsed lease as a dead replica. After the
/// database was away, every lease lapsed with it, live replicas' included:
/// they are given a whole [`EXPIRY`] of reachable database to renew before
/// their runs are judged. An outage long enough to lapse a lease spans at
/// least one of this replica's renewals, so it is seen here.
#[derive(Debug, Default)]
pub struct LeaseJudge {
    /// Since when renewals succeed again after one failed (none: no failure
    /// since this replica started).
    back_since: Option<std::time::Instant>,
    failing: bool,
}

impl LeaseJudge {
    pub fn renewed(&mut self, ok: bool, now: std::time::Instant) {
        if !ok {
            self.failing = true;
            self.back_since = None;
        } else if self.failing {
            self.failing = false;
            self.back_since = Some(now);
        }
    }

    pub fn may_judge_others(&self, now: std::time::Instant) -> bool {
        !self.failing && self.back_since.is_none_or(|since| now.duration_since(since) >= EXPIRY)
    }
}

/// Replicas seen since this moment (ms) are alive; the others are dead.
pub(super) fn lease_cutoff() -> i64 {
    now_ms() - EXPIRY.as_millis() as i64
}

/// A host's turn held across replicas: on PostgreSQL, an advisory lock —
/// shared for a plain run, exclusive for a patched one — on a connection of
/// its own, held until this is dropped (or its replica dies, when the
/// database ends the session and the lock with it). On SQLite there is one
/// server, whose own gate (`crate::patches::gate`) is the whole story.
pub struct HostClaim {
    connection: Option<sqlx::postgres::PgConnection>,
    key: i32,
}

/// The first half of the advisory lock's key: Sleuth's host turns (the second
/// half is the host's name, hashed).
const HOST_TURNS: i32 = 0x5e_17_4a;

impl HostClaim {
    /// Takes the host's turn if it is free for it now (`alone`: for a patched
    /// run); `false`: another replica's run holds it so.
    pub async fn try_take(&mut self, alone: bool) -> StoreResult<bool> {
        let Some(connection) = self.connection.as_mut() else { return Ok(true) };
        let sql =
            if alone { "SELECT pg_try_advisory_lock($1, $2)" } else { "SELECT pg_try_advisory_lock_shared($1, $2)" };
        let taken: bool = sqlx::query_scalar(sql).bind(HOST_TURNS).bind(self.key).fetch_one(connection).await?;
        Ok(taken)
    }
}

impl Store {
    /// A claim on `host`'s turn across replicas ([`HostClaim`]), not yet taken.
    pub async fn host_claim(&self, host: &str) -> StoreResult<HostClaim> {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(host.as_bytes());
        let key = i32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]);
        let connection = match &self.url {
            Some(url) => {
                use sqlx::Connection;
                Some(sqlx::postgres::PgConnection::connect(url).await?)
            }
            None => None,
        };
        Ok(HostClaim { connection, key })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn leases_lapsed_with_the_database_are_not_judged_until_a_period_after_it_is_back() {
        let start = Instant::now();
        let at = |s: u64| start + Duration::from_secs(s);
        let lease = EXPIRY.as_secs();
        let mut judge = LeaseJudge::default();
        judge.renewed(true, at(0));
        assert!(
            judge.may_judge_others(at(0)),
            "a replica up with its database judges at once (a restart after a crash)"
        );
        judge.renewed(false, at(10));
        assert!(!judge.may_judge_others(at(10)), "not while it cannot renew its own");
        judge.renewed(false, at(40));
        judge.renewed(true, at(50));
        assert!(!judge.may_judge_others(at(50)));
        assert!(!judge.may_judge_others(at(50 + lease - 1)));
        judge.renewed(true, at(55));
        assert!(judge.may_judge_others(at(50 + lease)), "a whole lease period after it came back");
        judge.renewed(false, at(100));
        judge.renewed(true, at(105));
        assert!(!judge.may_judge_others(at(106)), "the clock starts again with each outage");
    }
}
