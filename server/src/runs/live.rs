//! What browsers watching an investigation are told as it happens: run events
//! (queued, started, finished, counters) on a broadcast channel, and per running
//! run a watch of how many output bytes are on disk. Output itself is always read
//! from the run's file, so a reader that reconnects at an offset gets every byte
//! once: no gaps, no duplicates.
//!
//! Besides runs: every other change (a step, an edit, an annotation, a comment,
//! a hypothesis) as a [`Change`] naming who made it, and who is viewing each
//! investigation (one entry per open event stream, see [`Live::join`]).

use app::runs::Run;
use std::collections::HashMap;
use std::sync::Mutex;
use tokio::sync::{broadcast, watch};

#[derive(Clone, Debug)]
pub struct RunEvent {
    pub investigation_id: String,
    pub run: Run,
    /// The event stream's frame of it (`event: run`, the run as JSON), made once
    /// for every reader of the investigation.
    pub frame: bytes::Bytes,
}

impl RunEvent {
    pub fn new(investigation: &str, run: Run) -> Self {
        let frame = super::events::run_frame(&serde_json::to_string(&run).unwrap_or_default());
        Self { investigation_id: investigation.to_string(), run, frame }
    }
}

#[derive(Clone, Debug)]
pub enum Change {
    /// Something in it changed; pages read it again.
    Edited { investigation_id: String, by: String },
    /// Who has it open now (names, sorted, once each).
    Viewers { investigation_id: String, names: Vec<String> },
}

impl Change {
    pub fn investigation_id(&self) -> &str {
        match self {
            Self::Edited { investigation_id, .. } | Self::Viewers { investigation_id, .. } => investigation_id,
        }
    }
}

/// One viewer of one investigation while it lives (its event stream is open).
pub struct Presence {
    live: std::sync::Arc<Live>,
    investigation: String,
    name: String,
}

impl Drop for Presence {
    fn drop(&mut self) {
        self.live.leave(&self.investigation, &self.name);
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Progress {
    /// Bytes of output on disk.
    pub len: u64,
    pub finished: bool,
}

pub struct Live {
    events: broadcast::Sender<RunEvent>,
    changes: broadcast::Sender<Change>,
    /// Investigation → the names of its open event streams (a name repeats per tab).
    viewers: Mutex<HashMap<String, Vec<String>>>,
    runs: Mutex<HashMap<i64, watch::Sender<Progress>>>,
    /// Set when the server shuts down: event streams end so it can.
    closing: watch::Sender<bool>,
}

impl Default for Live {
    fn default() -> Self {
        Self {
            events: broadcast::channel(1024).0,
            changes: broadcast::channel(1024).0,
            viewers: Mutex::new(HashMap::new()),
            runs: Mutex::new(HashMap::new()),
            closing: watch::channel(false).0,
        }
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

    pub fn changed(&self, investigation: &str, by: &str) {
        let _ = self.changes.send(Change::Edited { investigation_id: investigation.into(), by: by.into() });
    }

    pub fn subscribe_changes(&self) -> broadcast::Receiver<Change> {
        self.changes.subscribe()
    }

    /// `name` is viewing `investigation` until the returned guard is dropped;
    /// everyone watching it hears the new list each time.
    pub fn join(self: &std::sync::Arc<Self>, investigation: &str, name: &str) -> Presence {
        self.viewers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(investigation.into())
            .or_default()
            .push(name.into());
        self.announce(investigation);
        Presence { live: self.clone(), investigation: investigation.into(), name: name.into() }
    }

    fn leave(&self, investigation: &str, name: &str) {
        {
            let mut viewers = self.viewers.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(names) = viewers.get_mut(investigation) {
                if let Some(i) = names.iter().position(|n| n == name) {
                    names.swap_remove(i);
                }
                if names.is_empty() {
                    viewers.remove(investigation);
                }
            }
        }
        self.announce(investigation);
    }

    pub fn viewers(&self, investigation: &str) -> Vec<String> {
        let viewers = self.viewers.lock().unwrap_or_else(|e| e.into_inner());
        let mut names = viewers.get(investigation).cloned().unwrap_or_default();
        names.sort();
        names.dedup();
        names
    }

    fn announce(&self, investigation: &str) {
        let names = self.viewers(investigation);
        let _ = self.changes.send(Change::Viewers { investigation_id: investigation.into(), names });
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
