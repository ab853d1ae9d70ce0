//! While a patch is applied on a host, nothing else runs there that could
//! load the changed files: a patched run holds its host alone, other runs
//! share it. Runs wait here (still queued) for their turn.
//!
//! This gate is per Sleuth process; replicas sharing a database each keep
//! their own (a host driven by two replicas at once is not held across them).

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
    fn why(&self, host: &str, patch: Option<i64>) -> String {
        let holder = self.holders.lock().unwrap_or_else(|e| e.into_inner()).get(host).copied();
        match (holder, patch) {
            (Some((step, run)), _) => format!("waiting: patch {step} applied on {host} for run {run}"),
            (None, Some(step)) => format!("waiting to apply patch {step}: the runs going on {host} end first"),
            (None, None) => format!("waiting: a patch is being applied on {host}"),
        }
    }

    /// Waits for run `run`'s turn on `host`: alone for a patched run
    /// (`patch`: its patch step), shared for any other. `waiting` is told,
    /// once, what it waits for when it must wait.
    pub async fn enter(&self, host: &str, run: i64, patch: Option<i64>, waiting: impl FnOnce(String)) -> Turn {
        let lock = self.of(host);
        match patch {
            None => match lock.clone().try_read_owned() {
                Ok(turn) => Turn::Shared(turn),
                Err(_) => {
                    waiting(self.why(host, None));
                    Turn::Shared(lock.read_owned().await)
                }
            },
            Some(step) => {
                let turn = match lock.clone().try_write_owned() {
                    Ok(turn) => turn,
                    Err(_) => {
                        waiting(self.why(host, Some(step)));
                        lock.write_owned().await
                    }
                };
                self.holders.lock().unwrap_or_else(|e| e.into_inner()).insert(host.to_string(), (step, run));
                Turn::Alone { _turn: turn, host: host.to_string(), holders: self.holders.clone() }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_patched_run_holds_its_host_alone_and_says_so_to_who_waits() {
        let gates = Arc::new(Gates::default());
        let plain = gates.enter("gpu", 1, None, |_| panic!("nothing to wait for")).await;
        // The patched run waits for the plain one to end.
        let patched = tokio::spawn({
            let gates = gates.clone();
            async move {
                let mut told = String::new();
                let turn = gates.enter("gpu", 2, Some(12), |why| told = why).await;
                (turn, told)
            }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!patched.is_finished(), "a patch waits for the runs going on its host");
        drop(plain);
        let (turn, told) = patched.await.unwrap();
        assert!(told.contains("waiting to apply patch 12"), "{told}");
        // Another host is not held; this one is, and says by whom.
        drop(gates.enter("other", 3, None, |_| panic!("another host")).await);
        let mut told = String::new();
        let waiting = gates.enter("gpu", 4, None, |why| told = why);
        assert!(tokio::time::timeout(Duration::from_millis(50), waiting).await.is_err());
        assert_eq!(told, "waiting: patch 12 applied on gpu for run 2");
        drop(turn);
        drop(tokio::time::timeout(Duration::from_secs(1), gates.enter("gpu", 5, None, |_| {})).await.unwrap());
    }
}
