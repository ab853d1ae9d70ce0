//! One sampler per host, shared by every run there.
//!
//! A sampler is one channel running [`super::sampler_script`]: `nvidia-smi`
//! started once, not once per run. A run that starts *watches* the host's
//! sampler (starting it when none runs) and keeps the readings that come
//! between its start and its end, timed from its own start; the sampler stays
//! a while after the last run ([`Samplers::new`]'s `linger`), so a sweep of
//! short runs starts it once. A per-run sampler was a second login shell and
//! an `nvidia-smi` start competing for the host's CPU exactly when each run
//! started: 2.3× a ControlMaster session for a run of `true` on a busy host.
//!
//! Samplers are keyed by host and by the run's `PATH` (where it sets one): the
//! same `nvidia-smi` the command finds. Other variables do not change what
//! `nvidia-smi` reports (it ignores `CUDA_VISIBLE_DEVICES`), so runs of a sweep
//! over them share one sampler.
//!
//! It never fails a run: no `nvidia-smi`, a channel that does not open, a
//! driver that answers with an error — each is a note on the runs watching.
//! It stops by itself once no run has watched it for `linger`: Sleuth closes
//! the channel's stdin, the script's `read` returns and its exit trap kills
//! both `nvidia-smi`s (`kill 0`); a connection that drops does the same
//! through sshd.

use super::contention::{Clock, Listing, RunSeen};
use super::{Line, Lines, NO_NVIDIA_SMI, OPEN_WITHIN, STOP_WITHIN};
use crate::db::Store;
use crate::ssh::exec::{self, Event};
use crate::ssh::{Pool, Target, quote};
use domain::telemetry::Sample;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, oneshot, watch};

/// Samples are stored at least this often while a run goes.
const STORE_EVERY: Duration = Duration::from_secs(2);
/// How long a sampler stays after its last run, by default: a sweep's next
/// run comes within seconds, a person's next try within a minute or two.
pub const LINGER: Duration = Duration::from_secs(120);
/// What nvidia-smi says on stderr, kept for the runs that watch.
const SAID_BYTES: usize = 4096;

/// A host's sampler: by the host (address, login, key, jumps), and the runs' `PATH`.
type Key = (Target, Option<String>);

/// The samplers running now, one per host (and `PATH`).
pub struct Samplers {
    pool: Arc<Pool>,
    store: Store,
    linger: Duration,
    running: Arc<Mutex<HashMap<Key, Arc<HostSampler>>>>,
}

/// Readings as they came, with when.
#[derive(Clone, Debug)]
struct Timed {
    at: Instant,
    gpu: u32,
    sample: Sample,
    clock: Clock,
}

/// What one read of the sampler's stdout gave: readings, and listings of
/// the processes on the GPUs.
#[derive(Debug, Default)]
struct Batch {
    readings: Vec<Timed>,
    listings: Vec<(Instant, Listing)>,
}

/// One host's sampler, as its runs see it.
struct HostSampler {
    readings: broadcast::Sender<Arc<Batch>>,
    state: Mutex<HostState>,
    /// How many runs watch it now; it lingers once this is 0.
    watchers: watch::Sender<usize>,
    /// It has said something: a reading, a line it could not read, or why it ended.
    spoke: watch::Sender<bool>,
}

#[derive(Default)]
struct HostState {
    /// Every GPU's name, from the first reading of it.
    names: BTreeMap<u32, String>,
    /// Why it is not sampling (it never started, or stopped), for runs that watch.
    ended: Option<String>,
    /// What nvidia-smi said that was not a reading, with when.
    said: Vec<(Instant, String)>,
    said_bytes: usize,
    /// Lines that were neither a header nor a reading (the first few).
    unread: Vec<String>,
    /// The host has no nvidia-smi (the script said so and ended).
    no_nvidia_smi: bool,
}

/// A run watching its host's sampler. Dropping it stops the watching too.
pub struct Watching {
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<usize>,
}

impl Watching {
    /// Tells it the run ended, without waiting: the returned task ends once
    /// the run's samples and notes are stored, with how many samples it kept.
    pub fn stop(self) -> tokio::task::JoinHandle<usize> {
        let _ = self.stop.send(());
        self.task
    }
}

/// Counts a watcher for as long as it lives (a task that panics too).
struct Watcher(Arc<HostSampler>);

impl Drop for Watcher {
    fn drop(&mut self) {
        self.0.watchers.send_modify(|n| *n = n.saturating_sub(1));
    }
}

impl Samplers {
    pub fn new(pool: Arc<Pool>, store: Store, linger: Duration) -> Self {
        Self { pool, store, linger, running: Default::default() }
    }

    /// Starts keeping `target`'s GPU readings for `run` (whose t = 0 is
    /// `started`), in the run's `PATH`.
    pub fn watch(&self, target: &Target, env: &[(String, String)], run: i64, started: Instant) -> Watching {
        let path = env.iter().rev().find(|(k, _)| k == "PATH").map(|(_, v)| v.clone());
        let key = (target.clone(), path.clone());
        let (host, readings) = {
            let mut running = self.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let host = running.entry(key.clone()).or_insert_with(|| self.start(key, target.clone(), path)).clone();
            // Counted under the lock: the sampler decides to stop under it too.
            host.watchers.send_modify(|n| *n += 1);
            let readings = host.readings.subscribe();
            (host, readings)
        };
        let (stop, stopped) = oneshot::channel();
        let store = self.store.clone();
        let name = target.name.clone();
        let task = tokio::spawn(async move {
            let watcher = Watcher(host);
            keep_for_run(&store, &watcher.0, &name, readings, run, started, stopped).await
        });
        Watching { stop, task }
    }

    fn start(&self, key: Key, target: Target, path: Option<String>) -> Arc<HostSampler> {
        let host = Arc::new(HostSampler {
            readings: broadcast::channel(256).0,
            state: Mutex::default(),
            watchers: watch::channel(0).0,
            spoke: watch::channel(false).0,
        });
        let (pool, running, linger, sampler) = (self.pool.clone(), self.running.clone(), self.linger, host.clone());
        tokio::spawn(async move {
            // Out of the set (unless a newer one took the place), so the next
            // run starts another; while idle, only when no run joined meanwhile.
            let leave = |only_idle: bool| {
                let mut running = running.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if only_idle && *sampler.watchers.borrow() > 0 {
                    return false;
                }
                if running.get(&key).is_some_and(|now| Arc::ptr_eq(now, &sampler)) {
                    running.remove(&key);
                }
                true
            };
            sample_host(&pool, &target, path.as_deref(), &sampler, linger, || leave(true)).await;
            leave(false);
        });
        host
    }
}

impl HostSampler {
    fn state(&self) -> std::sync::MutexGuard<'_, HostState> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn end(&self, why: String) {
        self.state().ended.get_or_insert(why);
        self.spoke.send_replace(true);
    }
}

/// The host's sampler: its channel read into readings for the runs watching,
/// until no run has watched it for `linger` (`leave` says whether none does,
/// and takes it out of the set if so, under the lock runs join it by).
async fn sample_host(
    pool: &Pool,
    target: &Target,
    path: Option<&str>,
    host: &HostSampler,
    linger: Duration,
    leave: impl Fn() -> bool,
) {
    let Some(mut channel) = open_channel(pool, target, path, host).await else { return };
    let began = Instant::now();
    let (mut lines, mut errors) = (Lines::new(), Lines::new());
    let mut watchers = host.watchers.subscribe();
    let mut idle_since: Option<tokio::time::Instant> = Some(tokio::time::Instant::now());
    // A host without nvidia-smi stays known as such while runs come (its
    // channel closes at once), rather than a session being opened per run.
    let mut closed = false;
    loop {
        let idle = crate::time::or_never(idle_since.map(|since| tokio::time::sleep_until(since + linger)));
        tokio::select! {
            event = channel.next(), if !closed => match event {
                Some(Event::Stdout(data)) => read_stdout(host, target, &mut lines, began, &data),
                Some(Event::Stderr(data)) => {
                    let at = Instant::now();
                    let t_ms = u64::try_from(at.duration_since(began).as_millis()).unwrap_or(u64::MAX);
                    for line in errors.push(&data) {
                        // dmon's table comes on stderr; anything else is said.
                        if !lines.read_dmon(&line, t_ms) && !line.trim().is_empty() {
                            let mut state = host.state();
                            if state.said_bytes < SAID_BYTES {
                                state.said_bytes += line.len();
                                state.said.push((at, line));
                            }
                        }
                    }
                }
                Some(Event::Exit(_)) => {}
                None if host.state().no_nvidia_smi => closed = true,
                None => {
                    host.end(format!("The GPU sampler on {} stopped.", target.name));
                    break;
                }
            },
            changed = watchers.changed() => {
                if changed.is_err() {
                    break;
                }
                let now = *watchers.borrow_and_update();
                idle_since = (now == 0).then(tokio::time::Instant::now);
            }
            () = idle => {
                if leave() {
                    break;
                }
                idle_since = None;
            }
        }
    }
    host.end(format!("The GPU sampler on {} stopped.", target.name));
    if !closed {
        // EOF on its stdin: the script's `read` returns and its trap kills both samplers.
        channel.eof().await;
        // Whatever the host still sends while it stops is not anyone's.
        let _ = tokio::time::timeout(STOP_WITHIN, async { while channel.next().await.is_some() {} }).await;
        channel.close().await;
    }
}

/// The sampler's channel, with the script started; `None` (and why, for the
/// runs watching) when it cannot be had.
async fn open_channel(pool: &Pool, target: &Target, path: Option<&str>, host: &HostSampler) -> Option<exec::Exec> {
    let opened = match tokio::time::timeout(OPEN_WITHIN, exec::open(pool, target)).await {
        Ok(Ok(opened)) => opened,
        Ok(Err(e)) => {
            host.end(format!("GPU telemetry could not start: {e}"));
            return None;
        }
        Err(_) => {
            host.end(format!(
                "GPU telemetry could not start: no second channel to {} within {} s (the host's session limit?).",
                target.name,
                OPEN_WITHIN.as_secs()
            ));
            return None;
        }
    };
    let env = path.map(|p| ("PATH", p));
    let script = quote::remote_script(&super::sampler_script(), env, std::iter::empty(), None);
    match opened.start(&script).await {
        Ok(channel) => Some(channel),
        Err(e) => {
            host.end(format!("GPU telemetry could not start: {e}"));
            None
        }
    }
}

/// The sampler's stdout: readings sent to the runs watching, GPU names kept.
fn read_stdout(host: &HostSampler, target: &Target, lines: &mut Lines, began: Instant, data: &[u8]) {
    let at = Instant::now();
    let t_ms = u64::try_from(at.duration_since(began).as_millis()).unwrap_or(u64::MAX);
    let mut batch = Batch::default();
    let mut state = host.state();
    for line in lines.push(data) {
        if line.trim() == NO_NVIDIA_SMI {
            state.no_nvidia_smi = true;
            state.ended.get_or_insert(format!("No nvidia-smi on {}: no GPU telemetry.", target.name));
        } else {
            match lines.read(&line, t_ms, &mut state.names) {
                Line::Reading(gpu, sample, clock) => batch.readings.push(Timed { at, gpu, sample, clock }),
                Line::Apps(listing) => batch.listings.push((at, listing)),
                Line::Known => {}
                Line::Unknown if state.unread.len() < 3 => state.unread.push(line),
                Line::Unknown => {}
            }
        }
    }
    let spoke = !batch.readings.is_empty() || state.ended.is_some() || !state.unread.is_empty();
    drop(state);
    if spoke {
        host.spoke.send_replace(true);
    }
    if !batch.readings.is_empty() || !batch.listings.is_empty() {
        // No run watching is no error: the readings are not for anyone.
        let _ = host.readings.send(Arc::new(batch));
    }
}

/// One run's share: the readings between its start and its end, stored as
/// they come (every [`STORE_EVERY`]), then its GPUs and notes. Returns how
/// many samples it kept.
async fn keep_for_run(
    store: &Store,
    host: &HostSampler,
    name: &str,
    mut readings: broadcast::Receiver<Arc<Batch>>,
    run: i64,
    started: Instant,
    mut stopped: oneshot::Receiver<()>,
) -> usize {
    let mut pending: Vec<(u32, Sample)> = Vec::new();
    let (mut sampled, mut missed, mut named) = (0usize, 0u64, false);
    let mut last_store = Instant::now();
    let mut seen = RunSeen::default();
    let mut take = |batch: &Batch, pending: &mut Vec<(u32, Sample)>, seen: &mut RunSeen| {
        for timed in batch.readings.iter().filter(|t| t.at >= started) {
            let mut sample = timed.sample.clone();
            sample.t_ms = u64::try_from(timed.at.duration_since(started).as_millis()).unwrap_or(u64::MAX);
            seen.reading(timed.gpu, &sample, timed.clock);
            pending.push((timed.gpu, sample));
            sampled += 1;
        }
        for (at, listing) in batch.listings.iter().filter(|(at, _)| *at >= started) {
            seen.listing(*at, listing);
        }
    };
    let mut sampler_gone = false;
    loop {
        tokio::select! {
            batch = readings.recv(), if !sampler_gone => match batch {
                Ok(batch) => take(&batch, &mut pending, &mut seen),
                Err(broadcast::error::RecvError::Lagged(n)) => missed += n,
                Err(broadcast::error::RecvError::Closed) => sampler_gone = true,
            },
            _ = &mut stopped => break,
        }
        if last_store.elapsed() >= STORE_EVERY && !pending.is_empty() {
            if !named {
                // Its GPUs are named before its first sample is stored: a
                // reader never finds readings without their GPU's name.
                named = store_info(store, run, host, &seen, &[], false).await;
            }
            store_samples(store, run, &mut pending).await;
            last_store = Instant::now();
        }
    }
    // What came before the end and is not read yet.
    while let Ok(batch) = readings.try_recv() {
        take(&batch, &mut pending, &mut seen);
    }
    let ended = started.elapsed();
    if sampled == 0 {
        // A run shorter than a new sampler's start: its note says why it has
        // no readings once the sampler has said anything (not its run's time).
        let mut spoke = host.spoke.subscribe();
        let _ = tokio::time::timeout(STOP_WITHIN, spoke.wait_for(|spoke| *spoke)).await;
    }
    let mut notes = Vec::new();
    {
        let state = host.state();
        let said: Vec<&str> = state.said.iter().filter(|(at, _)| *at >= started).map(|(_, l)| l.as_str()).collect();
        if !said.is_empty() {
            let said: String = said.join("\n").chars().take(300).collect();
            notes.push(format!("nvidia-smi said: {said}"));
        }
        if missed > 0 {
            notes
                .push(format!("{missed} batches of GPU readings came faster than they were stored and were left out."));
        }
        if sampled == 0 {
            if let Some(ended) = &state.ended {
                notes.push(ended.clone());
            } else if !state.unread.is_empty() {
                let said: String = state.unread.join(" | ").chars().take(300).collect();
                notes.push(format!("nvidia-smi answered, but not with readings Sleuth understands: {said}"));
            } else {
                notes.push(format!(
                    "No GPU reading of {name} came in the {:.1} s the run lasted (one comes every {:.1} s, and \
                     nvidia-smi's first can take a while).",
                    ended.as_secs_f64(),
                    f64::from(super::SAMPLE_MS) / 1000.0
                ));
            }
        }
    }
    store_info(store, run, host, &seen, &notes, sampled == 0).await;
    store_samples(store, run, &mut pending).await;
    sampled
}

/// The run's GPUs (every GPU the sampler has seen, named, with what was
/// seen on each), its processes' CPU, and notes; for a run without samples, its (empty) chart
/// marked drawn as well.
async fn store_info(
    store: &Store,
    run: i64,
    host: &HostSampler,
    seen: &RunSeen,
    notes: &[String],
    nothing_sampled: bool,
) -> bool {
    let gpus = seen.stored(&host.state().names);
    let (gpus, notes) = (serde_json::json!(gpus).to_string(), serde_json::json!(notes).to_string());
    let stored = if nothing_sampled {
        store.set_telemetry_without_samples(run, &gpus, &notes).await
    } else {
        store.set_telemetry_info(run, &gpus, &notes).await
    };
    match stored {
        Ok(()) => true,
        Err(e) => {
            tracing::error!(run, "cannot record telemetry notes: {e}");
            false
        }
    }
}

async fn store_samples(store: &Store, run: i64, pending: &mut Vec<(u32, Sample)>) {
    if pending.is_empty() {
        return;
    }
    if let Err(e) = store.insert_samples(run, pending).await {
        tracing::error!(run, "cannot store GPU telemetry: {e}");
    }
    pending.clear();
}
