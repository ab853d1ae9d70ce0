//! While a patch is applied on a host, nothing else runs there that could
//! load the changed files: a patched run holds its host alone, other runs
//! share it. Runs wait here (still queued, saying what for) for their turn.
//!
//! This gate is per Sleuth process; across replicas sharing a PostgreSQL
//! database the same turn is taken again there (`crate::db::HostClaim`, an
//! advisory lock), after this one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::{OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock};

/// Who holds each host alone now: (patch step, run).
type Holders = Arc<Mutex<HashMap<String, (i64, i64)>>>;

#[derive(Default)]
pub struct Gates {
    hosts: Mutex<HashMap<String, Arc<RwLock<()>>>>,
    holders: Holders,
}

/// What a run waits for when its host is not free for it, as the run says it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Waiting(pub String);

impl Waiting {
    /// What a run (`patch`: the patch step it runs with) waits for on
    /// `host`, where `holder` — (patch step, run) — holds it alone, if known.
    pub fn for_turn(host: &str, holder: Option<(i64, i64)>, patch: Option<i64>) -> Self {
        Waiting(match (holder, patch) {
            (Some((step, run)), _) => format!("waiting: patch {step} applied on {host} for run {run}"),
            (None, Some(step)) => format!("waiting to apply patch {step}: the runs going on {host} end first"),
            (None, None) => format!("waiting: a patch is being applied on {host}"),
        })
    }
}

/// A run's turn on its host, held until dropped.
pub enum Turn {
    Shared(#[allow(dead_code)] OwnedRwLockReadGuard<()>),
    Alone { _turn: OwnedRwLockWriteGuard<()>, host: String, holders: Holders },
}

impl Drop for Turn {
    fn drop(&mut self) {
        if let Self::Alone { host, holders, .. } = self {
            holders.lock().unwrap_or_else(|e| e.into_inner()).remove(host);
        }
    }
}

impl Gates {
    fn of(&self, host: &str) -> Arc<RwLock<()>> {
        let mut hosts = self.hosts.lock().unwrap_or_else(|e| e.into_inner());
        hosts.entry(host.to_string()).or_default().clone()
    }

    /// What a run waiting on `host` waits for.
    fn why(&self, host: &str, patch: Option<i64>) -> Waiting {
        let holder = self.holders.lock().unwrap_or_else(|e| e.into_inner()).get(host).copied();
        Waiting::for_turn(host, holder, patch)
    }

    /// Run `run`'s turn on `host` now, if it is free for it: alone for a
    /// patched run (`patch`: its patch step), shared for any other; else
    /// what it would wait for.
    pub fn try_enter(&self, host: &str, run: i64, patch: Option<i64>) -> Result<Turn, Waiting> {
        let lock = self.of(host);
        match patch {
            None => lock.try_read_owned().map(Turn::Shared).map_err(|_| self.why(host, None)),
            Some(step) => match lock.try_write_owned() {
                Ok(turn) => Ok(self.alone(turn, host, step, run)),
                Err(_) => Err(self.why(host, Some(step))),
            },
        }
    }

    /// Waits for run `run`'s turn on `host` (see [`Gates::try_enter`]).
    pub async fn enter(&self, host: &str, run: i64, patch: Option<i64>) -> Turn {
        let lock = self.of(host);
        match patch {
            None => Turn::Shared(lock.read_owned().await),
            Some(step) => {
                let turn = lock.write_owned().await;
                self.alone(turn, host, step, run)
            }
        }
    }

    fn alone(&self, turn: OwnedRwLockWriteGuard<()>, host: &str, step: i64, run: i64) -> Turn {
        self.holders.lock().unwrap_or_else(|e| e.into_inner()).insert(host.to_string(), (step, run));
        Turn::Alone { _turn: turn, host: host.to_string(), holders: self.holders.clone() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_patched_run_holds_its_host_alone_and_says_so_to_who_waits() {
        let gates = Arc::new(Gates::default());
        let plain = gates.try_enter("gpu", 1, None).expect("nothing to wait for");
        // The patched run waits for the plain one to end.
        let told = gates.try_enter("gpu", 2, Some(12)).err().map(|w| w.0).unwrap_or_default();
        assert!(told.contains("waiting to apply patch 12"), "{told}");
        let patched = tokio::spawn({
            let gates = gates.clone();
            async move { gates.enter("gpu", 2, Some(12)).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!patched.is_finished(), "a patch waits for the runs going on its host");
        drop(plain);
        let turn = patched.await.unwrap();
        // Another host is not held; this one is, and says by whom.
        drop(gates.try_enter("other", 3, None).expect("another host"));
        let told = gates.try_enter("gpu", 4, None).err().map(|w| w.0).unwrap_or_default();
        assert_eq!(told, "waiting: patch 12 applied on gpu for run 2");
        assert!(tokio::time::timeout(Duration::from_millis(50), gates.enter("gpu", 4, None)).await.is_err());
        drop(turn);
        drop(tokio::time::timeout(Duration::from_secs(1), gates.enter("gpu", 5, None)).await.unwrap());
    }
}
