//! What browsers watching an investigation are told as it happens: run events
//! (queued, started, finished, counters) on a broadcast channel, and per running
//! run a watch of how many output bytes are stored. Output itself is always read
//! from the store of output (`output::Outputs`), so a reader that reconnects at
//! an offset gets every byte once: no gaps, no duplicates.
//!
//! Besides runs: every other change (a step, an edit, an annotation, a comment,
//! a hypothesis) as a [`Change`] naming who made it, and who is viewing each
//! investigation (one entry per open event stream, see [`Live::join`]).
//!
//! Replicas: on a shared database every replica's `Live` hears the others
//! (`bridge.rs` carries [`Notice`]s over PostgreSQL's NOTIFY). What happens here
//! goes out as a notice; what arrives is applied with the `*_remote` methods,
//! which never send it on again. A run driven by another replica has a
//! *remote* progress watch here, moved by the notices of its output.

use crate::output::OutputKey;
pub use crate::output::Progress;
use domain::runs::Run;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, mpsc, watch};

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
        let frame = super::sse::frame("run", &serde_json::to_string(&run).unwrap_or_default());
        Self { investigation_id: investigation.to_string(), run, frame }
    }
}

#[derive(Clone, Debug)]
pub enum Change {
    /// Something in it changed; pages read it again.
    Edited { investigation_id: String, by: String },
    /// Who has it open now (names, sorted, once each).
    Viewers { investigation_id: String, names: Vec<String> },
    /// Some news from other replicas may have been missed: every page reads
    /// everything again.
    Resync,
}

impl Change {
    /// The investigation it is about (`None`: all of them).
    pub fn investigation_id(&self) -> Option<&str> {
        match self {
            Self::Edited { investigation_id, .. } | Self::Viewers { investigation_id, .. } => Some(investigation_id),
            Self::Resync => None,
        }
    }
}

/// What one replica tells the others; small (ids and offsets), the rest is read
/// from the store.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum Notice {
    /// A run of the investigation was queued, started, ended or counted.
    Run {
        investigation: String,
        run: i64,
    },
    /// A running run's stored output is now `len` bytes long.
    Output {
        run: i64,
        len: u64,
    },
    /// A log kept with a running run (its server's) is now `len` bytes long.
    LogOutput {
        run: i64,
        log: i64,
        len: u64,
    },
    Change {
        investigation: String,
        by: String,
    },
    /// The sender's own viewers of the investigation (all of them, each time).
    Viewers {
        investigation: String,
        names: Vec<String>,
    },
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

/// A running run's progress (of its output, or of a log kept with it), and
/// whether another replica drives it.
struct Tracked {
    progress: watch::Sender<Progress>,
    remote: bool,
    /// The run it is of (a log ends with its run, heard from elsewhere).
    run: i64,
}

/// How long another replica's viewer list counts without being repeated
/// (replicas repeat theirs every `crate::db::LEASE_RENEW`).
const REMOTE_VIEWERS_FOR: Duration = Duration::from_secs(15);

struct RemoteViewers {
    seen: Instant,
    names: Vec<String>,
}

pub struct Live {
    events: broadcast::Sender<RunEvent>,
    changes: broadcast::Sender<Change>,
    /// Investigation → the names of its open event streams here (a name repeats per tab).
    viewers: Mutex<HashMap<String, Vec<String>>>,
    /// (replica, investigation) → the viewers that replica last reported.
    remote_viewers: Mutex<HashMap<(String, String), RemoteViewers>>,
    runs: Mutex<HashMap<OutputKey, Tracked>>,
    /// Notices for the other replicas, when there are any (see `bridge.rs`).
    outbox: OnceLock<mpsc::UnboundedSender<Notice>>,
    /// Set when the server shuts down: event streams end so it can.
    closing: watch::Sender<bool>,
}

impl Default for Live {
    fn default() -> Self {
        Self {
            events: broadcast::channel(1024).0,
            changes: broadcast::channel(1024).0,
            viewers: Mutex::new(HashMap::new()),
            remote_viewers: Mutex::new(HashMap::new()),
            runs: Mutex::new(HashMap::new()),
            outbox: OnceLock::new(),
            closing: watch::channel(false).0,
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
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

    /// From now on, what happens here is also sent as notices to the returned
    /// receiver (once: a second call gets `None`).
    pub fn bridge(&self) -> Option<mpsc::UnboundedReceiver<Notice>> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.outbox.set(tx).ok()?;
        Some(rx)
    }

    fn tell_others(&self, notice: Notice) {
        if let Some(outbox) = self.outbox.get() {
            let _ = outbox.send(notice);
        }
    }

    pub fn publish(&self, event: RunEvent) {
        self.tell_others(Notice::Run { investigation: event.investigation_id.clone(), run: event.run.id });
        self.publish_remote(event);
    }

    /// A run event from another replica (or this one's, once told).
    pub fn publish_remote(&self, event: RunEvent) {
        let run = &event.run;
        if run.status.is_finished() {
            self.finish_remote(run.id);
        } else if run.status == domain::runs::RunStatus::Running {
            // Viewers here may follow it from now on.
            self.watch_remote(run.id, run.id, 0);
        }
        // No subscribers is fine: nobody is watching.
        let _ = self.events.send(event);
    }

    pub fn subscribe(&self) -> broadcast::Receiver<RunEvent> {
        self.events.subscribe()
    }

    pub fn changed(&self, investigation: &str, by: &str) {
        self.tell_others(Notice::Change { investigation: investigation.into(), by: by.into() });
        self.changed_remote(investigation, by);
    }

    pub fn changed_remote(&self, investigation: &str, by: &str) {
        let _ = self.changes.send(Change::Edited { investigation_id: investigation.into(), by: by.into() });
    }

    /// Pages read everything again (news from other replicas may be lost).
    pub fn resync(&self) {
        let _ = self.changes.send(Change::Resync);
    }

    pub fn subscribe_changes(&self) -> broadcast::Receiver<Change> {
        self.changes.subscribe()
    }

    /// `name` is viewing `investigation` until the returned guard is dropped;
    /// everyone watching it hears the new list each time.
    pub fn join(self: &std::sync::Arc<Self>, investigation: &str, name: &str) -> Presence {
        lock(&self.viewers).entry(investigation.into()).or_default().push(name.into());
        self.local_viewers_changed(investigation);
        Presence { live: self.clone(), investigation: investigation.into(), name: name.into() }
    }

    fn leave(&self, investigation: &str, name: &str) {
        {
            let mut viewers = lock(&self.viewers);
            if let Some(names) = viewers.get_mut(investigation) {
                if let Some(i) = names.iter().position(|n| n == name) {
                    names.swap_remove(i);
                }
                if names.is_empty() {
                    viewers.remove(investigation);
                }
            }
        }
        self.local_viewers_changed(investigation);
    }

    fn local_viewers_changed(&self, investigation: &str) {
        let names = lock(&self.viewers).get(investigation).cloned().unwrap_or_default();
        self.tell_others(Notice::Viewers { investigation: investigation.into(), names });
        self.announce(investigation);
    }

    /// Tells the others who views what here (they forget a replica that stops
    /// saying so); called every lease renewal.
    pub fn repeat_viewers(&self) {
        let viewers: Vec<(String, Vec<String>)> =
            lock(&self.viewers).iter().map(|(i, names)| (i.clone(), names.clone())).collect();
        for (investigation, names) in viewers {
            self.tell_others(Notice::Viewers { investigation, names });
        }
        // And forgets, here, the replicas that stopped repeating theirs.
        let gone: Vec<String> = {
            let mut remote = lock(&self.remote_viewers);
            let stale: Vec<(String, String)> =
                remote.iter().filter(|(_, v)| v.seen.elapsed() > REMOTE_VIEWERS_FOR).map(|(k, _)| k.clone()).collect();
            stale.into_iter().filter_map(|key| remote.remove(&key).map(|_| key.1)).collect()
        };
        for investigation in gone {
            self.announce(&investigation);
        }
    }

    /// Another replica's viewers of `investigation`.
    pub fn viewers_remote(&self, replica: &str, investigation: &str, names: Vec<String>) {
        {
            let mut remote = lock(&self.remote_viewers);
            let key = (replica.to_string(), investigation.to_string());
            if names.is_empty() {
                remote.remove(&key);
            } else {
                remote.insert(key, RemoteViewers { seen: Instant::now(), names });
            }
        }
        self.announce(investigation);
    }

    /// Everyone viewing it, on every replica: names sorted, once each.
    pub fn viewers(&self, investigation: &str) -> Vec<String> {
        let mut names = lock(&self.viewers).get(investigation).cloned().unwrap_or_default();
        for ((_, i), remote) in lock(&self.remote_viewers).iter() {
            if i == investigation && remote.seen.elapsed() <= REMOTE_VIEWERS_FOR {
                names.extend(remote.names.iter().cloned());
            }
        }
        names.sort();
        names.dedup();
        names
    }

    fn announce(&self, investigation: &str) {
        let names = self.viewers(investigation);
        let _ = self.changes.send(Change::Viewers { investigation_id: investigation.into(), names });
    }

    /// This replica drives the run from now on: its output writer moves the
    /// returned progress (and, with other replicas, each move is told them).
    pub fn start(&self, run: i64) -> watch::Sender<Progress> {
        self.start_key(OutputKey::Run(run), run)
    }

    /// [`Self::start`] for a log kept with `run` (its server's log).
    pub fn start_log(&self, run: i64, log: i64) -> watch::Sender<Progress> {
        self.start_key(OutputKey::Log(log), run)
    }

    fn start_key(&self, key: OutputKey, run: i64) -> watch::Sender<Progress> {
        let progress = {
            let mut runs = lock(&self.runs);
            let tracked = runs.entry(key).or_insert_with(|| Tracked {
                progress: watch::channel(Progress::default()).0,
                remote: false,
                run,
            });
            // A viewer may have come first and taken it for another replica's.
            tracked.remote = false;
            tracked.progress.clone()
        };
        if let Some(outbox) = self.outbox.get().cloned() {
            let mut moves = progress.subscribe();
            tokio::spawn(async move {
                while moves.changed().await.is_ok() {
                    let Progress { len, finished } = *moves.borrow_and_update();
                    let notice = match key {
                        OutputKey::Run(run) => Notice::Output { run, len },
                        OutputKey::Log(log) => Notice::LogOutput { run, log, len },
                    };
                    if outbox.send(notice).is_err() || finished {
                        break;
                    }
                }
            });
        }
        progress
    }

    pub fn finish(&self, key: impl Into<OutputKey>) {
        if let Some(tracked) = lock(&self.runs).remove(&key.into()) {
            tracked.progress.send_modify(|p| p.finished = true);
        }
    }

    /// Another replica stored more of its run's output. Only runs heard to be
    /// running are followed: a late notice of one that ended is dropped.
    pub fn output_remote(&self, key: impl Into<OutputKey>, len: u64) {
        let runs = lock(&self.runs);
        if let Some(tracked) = runs.get(&key.into()).filter(|t| t.remote) {
            tracked.progress.send_if_modified(|p| {
                let grew = len > p.len;
                p.len = p.len.max(len);
                grew
            });
        }
    }

    /// A run driven elsewhere ended: its output and its logs are whole.
    pub fn finish_remote(&self, run: i64) {
        let mut runs = lock(&self.runs);
        let ended: Vec<OutputKey> = runs.iter().filter(|(_, t)| t.remote && t.run == run).map(|(k, _)| *k).collect();
        for key in ended {
            if let Some(tracked) = runs.remove(&key) {
                tracked.progress.send_modify(|p| p.finished = true);
            }
        }
    }

    /// A watch of the run's progress, or `None` if it is not running (here, or
    /// as far as this replica has heard, elsewhere).
    pub fn watch(&self, key: impl Into<OutputKey>) -> Option<watch::Receiver<Progress>> {
        lock(&self.runs).get(&key.into()).map(|t| t.progress.subscribe())
    }

    /// A watch of a run that is running but not here: another replica drives it
    /// and has stored `len` bytes so far. (The watch that exists, if any.)
    /// `key` is the run's output or a log of `run`.
    pub fn watch_remote(&self, key: impl Into<OutputKey>, run: i64, len: u64) -> watch::Receiver<Progress> {
        let mut runs = lock(&self.runs);
        let tracked = runs.entry(key.into()).or_insert_with(|| Tracked {
            progress: watch::channel(Progress { len, finished: false }).0,
            remote: true,
            run,
        });
        if tracked.remote {
            tracked.progress.send_if_modified(|p| {
                let grew = len > p.len;
                p.len = p.len.max(len);
                grew
            });
        }
        tracked.progress.subscribe()
    }

    /// Whether this replica follows `key` for a run another one drives.
    pub fn is_remote(&self, key: impl Into<OutputKey>) -> bool {
        lock(&self.runs).get(&key.into()).is_some_and(|t| t.remote)
    }

    /// What this replica follows for others (`(output, its run)`), for a resync.
    pub fn remote_runs(&self) -> Vec<(OutputKey, i64)> {
        lock(&self.runs).iter().filter(|(_, t)| t.remote).map(|(key, t)| (*key, t.run)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: i64, status: &str) -> Run {
        super::super::run_from_row(crate::db::RunRow {
            id,
            step_id: 1,
            host: "h".into(),
            command: "true".into(),
            env: "[]".into(),
            cwd: None,
            timeout_s: None,
            status: domain::runs::RunStatus::parse(status).expect("a run status"),
            exit_code: None,
            exit_signal: None,
            error: None,
            batch_index: 1,
            batch_size: 1,
            warmup: 0,
            stdout_bytes: 0,
            stderr_bytes: 0,
            lines: 0,
            queued_at: 0,
            started_at: None,
            finished_at: None,
            who: None,
            facts_id: None,
            config: None,
            sweep_id: None,
            sweep_index: None,
            telemetry: 0,
            plan: None,
            run_dir: None,
            server: None,
            artifact_notes: None,
            host_quiet_s: None,
            telemetry_drawn: 0,
            origin: domain::runs::OriginKind::Person,
            origin_id: None,
            launch: None,
            waiting: None,
        })
        .expect("a run of the test's own")
    }

    #[test]
    fn notices_are_small_tagged_json() {
        let notice = Notice::Output { run: 7, len: 1234 };
        let json = serde_json::to_string(&notice).unwrap();
        assert_eq!(json, r#"{"t":"output","run":7,"len":1234}"#);
        assert_eq!(serde_json::from_str::<Notice>(&json).unwrap(), notice);
        assert!(serde_json::from_str::<Notice>(r#"{"t":"nonsense"}"#).is_err());
    }

    #[tokio::test]
    async fn a_remote_run_moves_with_its_notices_and_ends_with_its_event() {
        let live = Live::default();
        let mut watch = live.watch_remote(9, 9, 10);
        live.output_remote(9, 5);
        assert_eq!(watch.borrow_and_update().len, 10, "never backwards");
        live.output_remote(9, 50);
        assert!(watch.has_changed().unwrap());
        assert_eq!(watch.borrow_and_update().len, 50);
        live.publish_remote(RunEvent::new("i", run(9, "interrupted")));
        assert!(watch.borrow().finished);
        assert!(live.watch(9).is_none());
    }

    #[tokio::test]
    async fn a_local_start_takes_over_a_watch_a_viewer_made_first() {
        let live = Live::default();
        let viewer = live.watch_remote(3, 3, 0);
        let progress = live.start(3);
        live.output_remote(3, 99); // nobody else drives it: ignored
        progress.send_modify(|p| p.len = 7);
        assert_eq!(viewer.borrow().len, 7, "the viewer sees the local writer");
    }

    #[test]
    fn viewers_of_other_replicas_count_until_they_stop_repeating() {
        let live = std::sync::Arc::new(Live::default());
        let _me = live.join("i", "ada");
        live.viewers_remote("replica-b", "i", vec!["bob".into(), "ada".into()]);
        assert_eq!(live.viewers("i"), vec!["ada", "bob"]);
        live.viewers_remote("replica-b", "i", vec![]);
        assert_eq!(live.viewers("i"), vec!["ada"]);
    }

    #[tokio::test]
    async fn what_happens_here_is_told_once_and_remote_news_is_not_sent_back() {
        let live = std::sync::Arc::new(Live::default());
        let mut outbox = live.bridge().expect("a first bridge");
        assert!(live.bridge().is_none(), "one bridge");
        live.changed("i", "ada");
        live.changed_remote("i", "bob");
        let presence = live.join("i", "ada");
        drop(presence);
        let told: Vec<Notice> = std::iter::from_fn(|| outbox.try_recv().ok()).collect();
        assert_eq!(
            told,
            vec![
                Notice::Change { investigation: "i".into(), by: "ada".into() },
                Notice::Viewers { investigation: "i".into(), names: vec!["ada".into()] },
                Notice::Viewers { investigation: "i".into(), names: vec![] },
            ]
        );
    }
}
