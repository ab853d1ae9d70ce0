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
//! - Entries whose failures have all aged out are swept, so the table holds only
//!   what the window still counts — at most what verification throughput allows.

use app::error::{ApiError, ErrorCode};
use std::collections::{HashMap, VecDeque};
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
    state: Mutex<Table>,
    checks: Arc<Semaphore>,
    /// argon2's working memory, one per check slot (empty until first used).
    memory: Arc<Mutex<Vec<Vec<argon2::Block>>>>,
}

struct Table {
    failures: HashMap<String, VecDeque<Instant>>,
    swept: Instant,
}

impl Default for Limiter {
    fn default() -> Self {
        Self {
            state: Mutex::new(Table { failures: HashMap::new(), swept: Instant::now() }),
            checks: Arc::new(Semaphore::new(CONCURRENT_CHECKS)),
            memory: Arc::new(Mutex::new(vec![Vec::new(); CONCURRENT_CHECKS])),
        }
    }
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
    at: Instant,
    _slot: OwnedSemaphorePermit,
}

impl Attempt<'_> {
    /// Runs `check` on a blocking thread with this slot's argon2 memory.
    pub async fn verify<F>(&self, check: F) -> Result<bool, ApiError>
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
        verified.map_err(|e| crate::notebook::internal("password check", e))
    }

    /// The password was right: the reservation is taken back and the pair's
    /// earlier failures forgotten.
    pub fn succeeded(self) {
        let [(pair, _), (client, _)] = keys(&self.name, &self.client);
        let mut table = self.limiter.table();
        table.failures.remove(&pair);
        remove_one(&mut table.failures, &client, self.at);
    }
}

fn remove_one(failures: &mut HashMap<String, VecDeque<Instant>>, key: &str, at: Instant) {
    if let Some(times) = failures.get_mut(key) {
        if let Some(i) = times.iter().position(|t| *t == at) {
            times.remove(i);
        }
        if times.is_empty() {
            failures.remove(key);
        }
    }
}

impl Limiter {
    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reserves an attempt for `name` from `client`: refused (429) when either
    /// limit is reached or no verification slot frees up in time.
    pub async fn reserve(&self, name: &str, client: &str) -> Result<Attempt<'_>, ApiError> {
        let at = self.count(name, client)?;
        let slot = match tokio::time::timeout(QUEUE_WAIT, self.checks.clone().acquire_owned()).await {
            Ok(Ok(slot)) => slot,
            _ => {
                let mut table = self.table();
                for (key, _) in keys(name, client) {
                    remove_one(&mut table.failures, &key, at);
                }
                return Err(ApiError::new(
                    ErrorCode::TooManyRequests,
                    "Too many sign-ins at once; try again in a few seconds.",
                ));
            }
        };
        Ok(Attempt { limiter: self, name: name.to_string(), client: client.to_string(), at, _slot: slot })
    }

    /// Checks both limits and, if neither is reached, records the attempt as a failure.
    fn count(&self, name: &str, client: &str) -> Result<Instant, ApiError> {
        let now = Instant::now();
        let mut table = self.table();
        if now.duration_since(table.swept) > SWEEP_EVERY {
            table.failures.retain(|_, times| times.back().is_some_and(|t| now.duration_since(*t) <= WINDOW));
            table.swept = now;
        }
        let keys = keys(name, client);
        for (key, limit) in &keys {
            let Some(times) = table.failures.get_mut(key) else { continue };
            while times.front().is_some_and(|t| now.duration_since(*t) > WINDOW) {
                times.pop_front();
            }
            if times.len() >= *limit {
                let wait = times.front().map_or(WINDOW, |t| WINDOW.saturating_sub(now.duration_since(*t)));
                return Err(ApiError::new(
                    ErrorCode::TooManyRequests,
                    format!("Too many wrong passwords; try again in {} minutes.", wait.as_secs().div_ceil(60).max(1)),
                ));
            }
        }
        for (key, _) in keys {
            table.failures.entry(key).or_default().push_back(now);
        }
        Ok(now)
    }

    /// How many keys the table holds (for tests of the sweep and of bursts).
    pub fn entries(&self) -> usize {
        self.table().failures.len()
    }

    /// Verification slots free right now.
    pub fn free_slots(&self) -> usize {
        self.checks.available_permits()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn five_failures_lock_the_name_from_that_address_only() {
        let limiter = Limiter::default();
        for _ in 0..PAIR_FAILURES {
            drop(limiter.reserve("ada", "10.0.0.1").await.expect("allowed"));
        }
        let refused = limiter.reserve("ADA", "10.0.0.1").await.err().expect("locked");
        assert_eq!(refused.code, ErrorCode::TooManyRequests);
        assert!(refused.message.contains("15 minutes"), "{}", refused.message);
        assert!(limiter.reserve("ada", "10.0.0.2").await.is_ok(), "ada herself, from her own address");
        assert!(limiter.reserve("bob", "10.0.0.1").await.is_ok(), "another name from the same address");
    }

    #[tokio::test]
    async fn one_address_guessing_many_names_is_stopped() {
        let limiter = Limiter::default();
        for i in 0..CLIENT_FAILURES {
            drop(limiter.reserve(&format!("user{i}"), "10.0.0.9").await.expect("allowed"));
        }
        assert!(limiter.reserve("someone-else", "10.0.0.9").await.is_err());
        assert!(limiter.reserve("someone-else", "10.0.0.8").await.is_ok());
    }

    #[tokio::test]
    async fn a_success_takes_its_reservation_back() {
        let limiter = Limiter::default();
        for _ in 0..PAIR_FAILURES - 1 {
            drop(limiter.reserve("ada", "10.0.0.1").await.expect("allowed"));
        }
        limiter.reserve("ada", "10.0.0.1").await.expect("allowed").succeeded();
        for _ in 0..PAIR_FAILURES {
            drop(limiter.reserve("ada", "10.0.0.1").await.expect("the pair starts over after a success"));
        }
    }

    #[tokio::test]
    async fn reservations_count_before_the_check_finishes() {
        // Attempts held open (being verified) use up the pair's budget: the
        // next is refused although none has failed yet.
        let limiter = Limiter::default();
        let mut open = Vec::new();
        for _ in 0..CONCURRENT_CHECKS - 1 {
            open.push(limiter.reserve("ada", "10.0.0.1").await.expect("allowed"));
        }
        for _ in open.len()..PAIR_FAILURES {
            drop(limiter.reserve("ada", "10.0.0.1").await.expect("allowed"));
        }
        let refused = limiter.reserve("ada", "10.0.0.1").await.err().expect("over the budget");
        assert!(refused.message.contains("wrong passwords"), "{}", refused.message);
        assert_eq!(open.len(), CONCURRENT_CHECKS - 1, "still being checked");
    }

    #[tokio::test]
    async fn a_full_queue_is_refused_quickly_and_costs_nothing() {
        let limiter = Limiter::default();
        let mut held = Vec::new();
        for i in 0..CONCURRENT_CHECKS {
            held.push(limiter.reserve(&format!("u{i}"), &format!("10.1.0.{i}")).await.expect("a slot"));
        }
        assert_eq!(limiter.free_slots(), 0);
        let started = Instant::now();
        let busy = limiter.reserve("ada", "10.0.0.1").await.err().expect("no slot");
        assert!(started.elapsed() < QUEUE_WAIT + Duration::from_secs(1));
        assert!(busy.message.contains("at once"), "{}", busy.message);
        drop(held);
        for _ in 0..PAIR_FAILURES {
            drop(limiter.reserve("ada", "10.0.0.1").await.expect("the refused attempt did not count"));
        }
    }

    #[tokio::test]
    async fn aged_out_entries_are_swept() {
        let limiter = Limiter::default();
        drop(limiter.reserve("ada", "10.0.0.1").await.expect("allowed"));
        assert_eq!(limiter.entries(), 2);
        {
            let mut table = limiter.table();
            let old = Instant::now().checked_sub(WINDOW + SWEEP_EVERY + Duration::from_secs(1));
            let Some(old) = old else { return }; // a machine up for less than 16 minutes
            for times in table.failures.values_mut() {
                times.iter_mut().for_each(|t| *t = old);
            }
            table.swept = old;
        }
        drop(limiter.reserve("bob", "10.0.0.2").await.expect("allowed"));
        assert_eq!(limiter.entries(), 2, "ada's aged-out entries went, bob's are new");
    }
}
