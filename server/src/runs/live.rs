//! What browsers watching an investigation are told as it happens: run events
//! (queued, started, finished, counters) on a broadcast channel, and per running
//! run a watch of how many output bytes are on disk. Output itself is always read
//! from the run's file, so a reader that reconnects at an offset gets every byte
//! once: no gaps, no duplicates.

use app::runs::Run;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::Mutex;
use tokio::sync::{broadcast, watch};

#[derive(Clone, Debug, Serialize)]
pub struct RunEvent {
    pub investigation_id: String,
    pub run: Run,
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Progress {
    /// Bytes of output on disk.
    pub len: u64,
    pub finished: bool,
}

pub struct Live {
    events: broadcast::Sender<RunEvent>,
    runs: Mutex<HashMap<i64, watch::Sender<Progress>>>,
    /// Set when the server shuts down: event streams end so it can.
    closing: watch::Sender<bool>,
}

impl Default for Live {
    fn default() -> Self {
        Self { events: broadcast::channel(1024).0, runs: Mutex::new(HashMap::new()), closing: watch::channel(false).0 }
    }
}

impl Live {
    /// Ends every event stream (server shutdown).
    pub fn close(&self) {
        self.closing.send_replace(true);
    }

    /// Resolves when the server is shutting down.
    pub fn closed(&self) -> impl std::future::Future<Output = ()> + Send + use<> {
        let mut closing = self.closing.subscribe();
        async move {
            let _ = closing.wait_for(|c| *c).await;
        }
    }

    pub fn publish(&self, event: RunEvent) {
        // No subscribers is fine: nobody is watching.
        let _ = self.events.send(event);
    }

    pub fn subscribe(&self) -> broadcast::Receiver<RunEvent> {
        self.events.subscribe()
    }

    pub fn start(&self, run: i64) -> watch::Sender<Progress> {
        let (tx, _) = watch::channel(Progress::default());
        self.runs.lock().unwrap_or_else(|e| e.into_inner()).insert(run, tx.clone());
        tx
    }

    pub fn finish(&self, run: i64) {
        if let Some(tx) = self.runs.lock().unwrap_or_else(|e| e.into_inner()).remove(&run) {
            tx.send_modify(|p| p.finished = true);
        }
    }

    /// A watch of the run's progress, or `None` if it is not running here.
    pub fn watch(&self, run: i64) -> Option<watch::Receiver<Progress>> {
        self.runs.lock().unwrap_or_else(|e| e.into_inner()).get(&run).map(|tx| tx.subscribe())
    }
}
