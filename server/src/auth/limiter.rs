//! Slows down password guessing without handing anyone a way to lock others out.
//!
//! - An attempt is **reserved before** the password is checked: it counts as a
//!   failure from the start and is taken back only on success, so a burst of
//!   parallel guesses cannot all slip past the check while the first ones are
//!   still being verified.
//! - Limits are per **name and address together** (`PAIR_FAILURES` in
//!   `WINDOW`) and per **address** (`CLIENT_FAILURES`, one address guessing
//!   many names). There is no lock on a name alone: anyone could then keep a
//!   colleague out by typing their name wrong five times. Guessing one name
//!   from many addresses is slowed by the cost of argon2 and by the bound on
//!   concurrent checks below, and every failure is logged with name and address.
//! - At most `CONCURRENT_CHECKS` argon2 verifications (19 MiB each) run at once,
//!   each in one of as many memory buffers that are kept and reused, so sign-in
//!   never holds more than `CONCURRENT_CHECKS` × 19 MiB however many arrive (and
//!   no allocator keeps a freed 19 MiB per thread that once verified). A sign-in
//!   that cannot start within `QUEUE_WAIT` is answered 429 at once (its
//!   reservation is given back: nothing was tried).
//! - Failures are rows in the store, so every replica of a team server counts
//!   the same ones (the verification slots are per process: they bound this
//!   machine's memory). Failures that have aged out are swept, so the table
//!   holds only what the window still counts — at most what verification
//!   throughput allows.

use crate::db::Store;
use crate::error::Context;
use crate::time::now_ms;
use domain::error::{ApiError, ErrorCode};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub const PAIR_FAILURES: usize = 5;
pub const CLIENT_FAILURES: usize = 20;
pub const WINDOW: Duration = Duration::from_secs(15 * 60);
pub const CONCURRENT_CHECKS: usize = 4;
pub const QUEUE_WAIT: Duration = Duration::from_secs(2);
const SWEEP_EVERY: Duration = Duration::from_secs(60);

pub struct Limiter {
    store: Store,
    /// When this process last swept aged-out failures.
    swept: Mutex<Instant>,
    checks: Arc<Semaphore>,
    /// argon2's working memory, one per check slot (empty until first used).
    memory: Arc<Mutex<Vec<Vec<argon2::Block>>>>,
}

fn window_ms() -> i64 {
    i64::try_from(WINDOW.as_millis()).unwrap_or(i64::MAX)
}

fn keys(name: &str, client: &str) -> [(String, usize); 2] {
    [(format!("pair:{}|{client}", name.to_lowercase()), PAIR_FAILURES), (format!("client:{client}"), CLIENT_FAILURES)]
}

/// A reserved attempt: a failure unless [`Attempt::succeeded`] is called.
/// Holds one of the verification slots while it lives.
pub struct Attempt<'a> {
    limiter: &'a Limiter,
    name: String,
    client: String,
    /// The failure rows recorded for it (pair, client).
    rows: Vec<i64>,
    _slot: OwnedSemaphorePermit,
}

impl Attempt<'_> {
    /// Runs `check` on a blocking thread with this slot's argon2 memory.
    pub async fn verify<F>(&self, check: F) -> crate::error::Result<bool>
    where
        F: FnOnce(&mut Vec<argon2::Block>) -> bool + Send + 'static,
    {
        // The permit this attempt holds guarantees a buffer is free.
        let mut memory = self.limiter.memory.lock().unwrap_or_else(|e| e.into_inner()).pop().unwrap_or_default();
        let pool = self.limiter.memory.clone();
        let verified = tokio::task::spawn_blocking(move || {
            let verified = check(&mut memory);
            pool.lock().unwrap_or_else(|e| e.into_inner()).push(memory);
            verified
        })
        .await;
        verified.context("checking a password")
    }

    /// The password was right: the reservation is taken back and the pair's
    /// earlier failures forgotten.
    pub async fn succeeded(self) -> crate::error::Result<()> {
        let [(pair, _), _] = keys(&self.name, &self.client);
        self.limiter.store.forget_sign_in_failures(&pair).await?;
        self.limiter.store.delete_sign_in_failures(&self.rows).await?;
        Ok(())
    }
}

impl Limiter {
    pub fn new(store: Store) -> Self {
        Self {
            store,
            swept: Mutex::new(Instant::now()),
            checks: Arc::new(Semaphore::new(CONCURRENT_CHECKS)),
            memory: Arc::new(Mutex::new(vec![Vec::new(); CONCURRENT_CHECKS])),
        }
    }

    /// Reserves an attempt for `name` from `client`: refused (429) when either
    /// limit is reached or no verification slot frees up in time.
    pub async fn reserve(&self, name: &str, client: &str) -> crate::error::Result<Attempt<'_>> {
        let rows = self.count(name, client).await?;
        let slot = match tokio::time::timeout(QUEUE_WAIT, self.checks.clone().acquire_owned()).await {
            Ok(Ok(slot)) => slot,
            _ => {
                self.store.delete_sign_in_failures(&rows).await?;
                return Err(ApiError::new(
                    ErrorCode::TooManyRequests,
                    "Too many sign-ins at once; try again in a few seconds.",
                )
                .into());
            }
        };
        Ok(Attempt { limiter: self, name: name.to_string(), client: client.to_string(), rows, _slot: slot })
    }

    /// Checks both limits and, if neither is reached, records the attempt as a failure.
    async fn count(&self, name: &str, client: &str) -> crate::error::Result<Vec<i64>> {
        let now = now_ms();
        let due = {
            let mut swept = self.swept.lock().unwrap_or_else(|e| e.into_inner());
            let due = swept.elapsed() > SWEEP_EVERY;
            if due {
                *swept = Instant::now();
            }
            due
        };
        if due {
            self.sweep(now).await?;
        }
        match self.store.reserve_sign_in(&keys(name, client), now - window_ms(), now).await? {
            Ok(rows) => Ok(rows),
            Err(oldest) => {
                let wait_ms = u64::try_from(oldest + window_ms() - now).unwrap_or(0);
                Err(ApiError::new(
                    ErrorCode::TooManyRequests,
                    format!("Too many wrong passwords; try again in {} minutes.", wait_ms.div_ceil(60_000).max(1)),
                )
                .into())
            }
        }
    }

    /// Deletes the failures that no longer count at `now`.
    pub(crate) async fn sweep(&self, now: i64) -> crate::error::Result<()> {
        Ok(self.store.sweep_sign_in_failures(now - window_ms()).await?)
    }

    /// How many keys have failures recorded (for tests of the sweep and of bursts).
    pub async fn entries(&self) -> usize {
        self.store.sign_in_failure_keys().await.ok().and_then(|n| usize::try_from(n).ok()).unwrap_or(0)
    }

    /// Verification slots free right now.
    pub fn free_slots(&self) -> usize {
        self.checks.available_permits()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A limiter on a store of its own (SQLite; the API suite runs on both).
    async fn limiter() -> (tempfile::TempDir, Limiter) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&crate::db::Database::Sqlite(dir.path().to_path_buf())).await.unwrap();
        (dir, Limiter::new(store))
    }

    #[tokio::test]
    async fn five_failures_lock_the_name_from_that_address_only() {
        let (_dir, limiter) = limiter().await;
        for _ in 0..PAIR_FAILURES {
            drop(limiter.reserve("ada", "10.0.0.1").await.expect("allowed"));
        }
        let refused = limiter.reserve("ADA", "10.0.0.1").await.err().expect("locked");
        assert_eq!(refused.user().map(|e| e.code), Some(ErrorCode::TooManyRequests));
        assert!(refused.to_string().contains("15 minutes"), "{}", refused.to_string());
        assert!(limiter.reserve("ada", "10.0.0.2").await.is_ok(), "ada herself, from her own address");
        assert!(limiter.reserve("bob", "10.0.0.1").await.is_ok(), "another name from the same address");
    }

    #[tokio::test]
    async fn one_address_guessing_many_names_is_stopped() {
        let (_dir, limiter) = limiter().await;
        for i in 0..CLIENT_FAILURES {
            drop(limiter.reserve(&format!("user{i}"), "10.0.0.9").await.expect("allowed"));
        }
        assert!(limiter.reserve("someone-else", "10.0.0.9").await.is_err());
        assert!(limiter.reserve("someone-else", "10.0.0.8").await.is_ok());
    }

    #[tokio::test]
    async fn a_success_takes_its_reservation_back() {
        let (_dir, limiter) = limiter().await;
        for _ in 0..PAIR_FAILURES - 1 {
            drop(limiter.reserve("ada", "10.0.0.1").await.expect("allowed"));
        }
        limiter.reserve("ada", "10.0.0.1").await.expect("allowed").succeeded().await.unwrap();
        for _ in 0..PAIR_FAILURES {
            drop(limiter.reserve("ada", "10.0.0.1").await.expect("the pair starts over after a success"));
        }
    }

    #[tokio::test]
    async fn reservations_count_before_the_check_finishes() {
        // Attempts held open (being verified) use up the pair's budget: the
        // next is refused although none has failed yet.
        let (_dir, limiter) = limiter().await;
        let mut open = Vec::new();
        for _ in 0..CONCURRENT_CHECKS - 1 {
            open.push(limiter.reserve("ada", "10.0.0.1").await.expect("allowed"));
        }
        for _ in open.len()..PAIR_FAILURES {
            drop(limiter.reserve("ada", "10.0.0.1").await.expect("allowed"));
        }
        let refused = limiter.reserve("ada", "10.0.0.1").await.err().expect("over the budget");
        assert!(refused.to_string().contains("wrong passwords"), "{}", refused.to_string());
        assert_eq!(open.len(), CONCURRENT_CHECKS - 1, "still being checked");
    }

    #[tokio::test]
    async fn a_full_queue_is_refused_quickly_and_costs_nothing() {
        let (_dir, limiter) = limiter().await;
        let mut held = Vec::new();
        for i in 0..CONCURRENT_CHECKS {
            held.push(limiter.reserve(&format!("u{i}"), &format!("10.1.0.{i}")).await.expect("a slot"));
        }
        assert_eq!(limiter.free_slots(), 0);
        let started = Instant::now();
        let busy = limiter.reserve("ada", "10.0.0.1").await.err().expect("no slot");
        assert!(started.elapsed() < QUEUE_WAIT + Duration::from_secs(1));
        assert!(busy.to_string().contains("at once"), "{}", busy.to_string());
        drop(held);
        for _ in 0..PAIR_FAILURES {
            drop(limiter.reserve("ada", "10.0.0.1").await.expect("the refused attempt did not count"));
        }
    }

    #[tokio::test]
    async fn aged_out_entries_are_swept() {
        let (_dir, limiter) = limiter().await;
        drop(limiter.reserve("ada", "10.0.0.1").await.expect("allowed"));
        assert_eq!(limiter.entries().await, 2);
        limiter.sweep(now_ms() + window_ms() - 1000).await.unwrap();
        assert_eq!(limiter.entries().await, 2, "still inside the window");
        limiter.sweep(now_ms() + window_ms() + 1000).await.unwrap();
        assert_eq!(limiter.entries().await, 0, "aged out");
    }

    #[tokio::test]
    async fn two_limiters_on_one_store_count_together() {
        // Two replicas of a team server: guesses through both add up.
        let (dir, a) = limiter().await;
        let b = Limiter::new(Store::open(&crate::db::Database::Sqlite(dir.path().to_path_buf())).await.unwrap());
        for i in 0..PAIR_FAILURES {
            let through = if i % 2 == 0 { &a } else { &b };
            drop(through.reserve("ada", "10.0.0.1").await.expect("allowed"));
        }
        assert!(a.reserve("ada", "10.0.0.1").await.is_err());
        assert!(b.reserve("ada", "10.0.0.1").await.is_err());
    }
}
