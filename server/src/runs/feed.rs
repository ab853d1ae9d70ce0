//! Live output as Server-Sent Events, rendered once per chunk and shared by
//! every viewer of a run.
//!
//! A running run that someone follows has one feed: a task that waits for its
//! output file to grow (the run's [`Progress`] watch), reads the new complete
//! lines, renders them to HTML and formats the SSE frame once, and broadcasts
//! the frame as reference-counted bytes. A viewer first replays the file from
//! its offset up to where the feed has got (rendering that part itself), then
//! forwards the feed's frames as they are. One that falls behind (the broadcast
//! buffer overflowed), or whose offset is between two frames, fills the gap
//! from the file by offset: it never holds the others up, and gets every byte
//! once. When the run ends the feed sends the last bytes (a last line without
//! a newline too) and closes; viewers then read what is left and send `end`.

use super::live::{Live, Progress};
use super::output_html;
use crate::output::OutputKey;
use crate::output::Outputs;
use bytes::Bytes;
use futures::Stream;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{broadcast, watch};

/// The most output one frame carries (a longer line is sent in parts).
const FRAME_BYTES: u64 = 256 * 1024;
/// Frames a slow viewer may be behind before it reads from the file instead.
const BUFFERED_FRAMES: usize = 64;
/// How long a viewer of a queued run waits for it to start.
const QUEUED_WAIT: Duration = Duration::from_secs(60);
/// How long a run another replica drives may go without news before the
/// store is read again (its notices can be lost: see [`Feeds::changed`]).
const RECHECK: Duration = Duration::from_secs(5);

/// Output `[start, end)` of a run, as the SSE frame every viewer gets.
#[derive(Clone, Debug)]
struct Frame {
    start: u64,
    end: u64,
    bytes: Bytes,
}

/// A running run's shared feed.
#[derive(Clone)]
struct Feed {
    frames: broadcast::Sender<Frame>,
    /// Output up to here has been broadcast (or skipped while nobody listened).
    published: Arc<AtomicU64>,
}

/// The feeds of the runs that are being followed on this server.
pub struct Feeds {
    outputs: Outputs,
    live: Arc<Live>,
    /// Read again for a run another replica drives (see [`Self::progress`]).
    store: crate::db::Store,
    feeds: Mutex<HashMap<OutputKey, Feed>>,
}

/// How much of `bytes` (read at `start`, the file being `len` long) a frame
/// takes: whole lines while the run goes, everything once it is over, and a
/// full frame's worth of a line too long for one.
fn cut(bytes: &[u8], start: u64, len: u64, finished: bool) -> usize {
    if finished && start + bytes.len() as u64 >= len {
        return bytes.len();
    }
    match bytes.iter().rposition(|&b| b == b'\n') {
        Some(i) => i + 1,
        None if bytes.len() as u64 >= FRAME_BYTES => bytes.len(),
        None => 0,
    }
}

/// The next frame of output at `offset` (at most `until`), rendered here; `None`
/// when there is no whole line yet (or nothing).
async fn read_frame(
    outputs: &Outputs,
    key: OutputKey,
    run: i64,
    offset: u64,
    until: u64,
    finished: bool,
) -> std::io::Result<Option<Frame>> {
    if offset >= until {
        return Ok(None);
    }
    let (bytes, _) = outputs.read_range(key, offset, (until - offset).min(FRAME_BYTES)).await?;
    let n = cut(&bytes, offset, until, finished);
    if n == 0 {
        return Ok(None);
    }
    let end = offset + n as u64;
    Ok(Some(Frame {
        start: offset,
        end,
        bytes: super::sse::frame_with_id("output", end, &output_html(run, &bytes[..n])),
    }))
}

impl Feeds {
    pub fn new(outputs: Outputs, live: Arc<Live>, store: crate::db::Store) -> Self {
        Self { outputs, live, store, feeds: Mutex::new(HashMap::new()) }
    }

    /// A viewer's hold on the run's feed, started if the run is running here
    /// and nobody follows it yet. Viewers hold receivers only, never the
    /// sender: the channel closes when the feed is done.
    /// `watch`: the run's progress ([`Self::progress`]), which a new feed pumps from.
    fn feed(self: &Arc<Self>, key: OutputKey, run: i64, watch: watch::Receiver<Progress>) -> Following {
        let mut feeds = self.feeds.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(feed) = feeds.get(&key) {
            return Following { published: feed.published.clone(), frames: feed.frames.subscribe() };
        }
        let (frames, receiver) = broadcast::channel(BUFFERED_FRAMES);
        let feed = Feed { frames, published: Arc::new(AtomicU64::new(0)) };
        let published = feed.published.clone();
        feeds.insert(key, feed.clone());
        tokio::spawn(self.clone().pump(key, run, feed, watch));
        Following { published, frames: receiver }
    }

    /// Broadcasts the run's output as it grows, until it has ended and all is sent.
    async fn pump(self: Arc<Self>, key: OutputKey, run: i64, feed: Feed, mut watch: watch::Receiver<Progress>) {
        let mut at = 0;
        loop {
            let progress = *watch.borrow_and_update();
            loop {
                // Nobody listening: nothing to render; newcomers read the file.
                if feed.frames.receiver_count() == 0 {
                    at = progress.len;
                    feed.published.store(at, Ordering::Release);
                    break;
                }
                match read_frame(&self.outputs, key, run, at, progress.len, progress.finished).await {
                    Ok(Some(frame)) => {
                        at = frame.end;
                        let _ = feed.frames.send(frame);
                        feed.published.store(at, Ordering::Release);
                    }
                    Ok(None) => break,
                    Err(e) => {
                        tracing::error!(run, ?key, "live output: {e}");
                        break;
                    }
                }
            }
            if progress.finished {
                break;
            }
            if self.changed(&mut watch, key, run).await.is_err() {
                // The run is over; its last progress says so.
                continue;
            }
        }
        // Closing the channel tells viewers to read what is left and end.
        self.feeds.lock().unwrap_or_else(|e| e.into_inner()).remove(&key);
    }

    /// The run's output from `offset` as SSE bytes: `event: output` frames, then
    /// `event: end` once the run is over and everything was sent.
    /// `status` is the run's as stored: a run that is running with no feed here
    /// is driven by another replica, whose output this replica follows through
    /// the store (and the notices of its growth, `live.rs`).
    /// `key`: the run's own output, or a log kept with it (its server's).
    pub async fn follow(
        self: &Arc<Self>,
        key: OutputKey,
        run: i64,
        offset: u64,
        status: domain::runs::RunStatus,
    ) -> impl Stream<Item = Bytes> + use<> {
        let feed = self.progress(key, run, status).await.map(|watch| self.feed(key, run, watch));
        let viewer = Viewer { outputs: self.outputs.clone(), key, run, offset, feed, pending: None, done: false };
        futures::stream::unfold(viewer, |mut viewer| async move {
            let bytes = viewer.next().await?;
            Some((bytes, viewer))
        })
    }
}

impl Feeds {
    /// The run's progress: here, or through the store for a run another
    /// replica drives; a queued run is waited for (at most [`QUEUED_WAIT`])
    /// rather than said to be over. `None`: it is over (or never started).
    async fn progress(
        &self,
        key: OutputKey,
        run: i64,
        status: domain::runs::RunStatus,
    ) -> Option<watch::Receiver<Progress>> {
        if let Some(watch) = self.live.watch(key) {
            return Some(watch);
        }
        if status == domain::runs::RunStatus::Running {
            let stored = self.outputs.len(key).await.unwrap_or(0);
            let watch = self.live.watch_remote(key, run, stored);
            // The run may have ended since the caller read it, its notice
            // finding nothing here to finish; from here on the notice finds the watch.
            self.finish_if_ended(run).await;
            return Some(watch);
        }
        if status.is_finished() {
            return None;
        }
        let deadline = tokio::time::Instant::now() + QUEUED_WAIT;
        let mut events = self.live.subscribe();
        while tokio::time::Instant::now() < deadline {
            let event = tokio::time::timeout(Duration::from_millis(100), events.recv()).await;
            if let Ok(Ok(event)) = event
                && event.run.id == run
                && event.run.status.is_finished()
            {
                return None;
            }
            if let Some(watch) = self.live.watch(key) {
                return Some(watch);
            }
        }
        None
    }

    /// How far the run's output has got, as SSE frames with ids and no data
    /// (`event: output`, then `end`), for a client that reads the bytes from
    /// `…/output` itself (`sleuth run`): nothing is rendered for it, and a
    /// slow one skips to the latest length.
    pub async fn lengths(
        self: &Arc<Self>,
        key: OutputKey,
        run: i64,
        offset: u64,
        status: domain::runs::RunStatus,
    ) -> impl Stream<Item = Bytes> + use<> {
        let watch = self.progress(key, run, status).await;
        let feeds = self.clone();
        futures::stream::unfold(Some((watch, offset)), move |state| {
            let feeds = feeds.clone();
            async move {
                let (watch, sent) = state?;
                if let Some(mut watch) = watch {
                    loop {
                        let progress = *watch.borrow_and_update();
                        if progress.finished {
                            break;
                        }
                        if progress.len > sent {
                            let frame = super::sse::frame_with_id("output", progress.len, "");
                            return Some((frame, Some((Some(watch), progress.len))));
                        }
                        if feeds.changed(&mut watch, key, run).await.is_err() {
                            break;
                        }
                    }
                }
                // Over: what the store holds is all there is.
                let len = feeds.outputs.len(key).await.unwrap_or(sent).max(sent);
                Some((super::sse::frame_with_id("end", len, "end"), None))
            }
        })
    }
}

impl Feeds {
    /// Waits for the run's progress to change. A run another replica drives
    /// is read again from the store after [`RECHECK`] without news: a notice
    /// lost on the way (a replica that started listening late, a dropped
    /// connection) must not keep its viewers waiting for ever.
    async fn changed(
        &self,
        watch: &mut watch::Receiver<Progress>,
        key: OutputKey,
        run: i64,
    ) -> Result<(), watch::error::RecvError> {
        loop {
            match tokio::time::timeout(RECHECK, watch.changed()).await {
                Ok(changed) => return changed,
                Err(_) if self.live.is_remote(key) => self.recheck(key, run).await,
                Err(_) => {}
            }
        }
    }

    /// The store's word on a run another replica drives: how long its output
    /// is, and whether it has ended.
    async fn recheck(&self, key: OutputKey, run: i64) {
        if let Ok(len) = self.outputs.len(key).await {
            self.live.output_remote(key, len);
        }
        self.finish_if_ended(run).await;
    }

    /// A run another replica drove, marked over here if the store says it ended.
    async fn finish_if_ended(&self, run: i64) {
        if let Ok(Some(row)) = self.store.run(run).await
            && row.status.is_finished()
        {
            self.live.finish_remote(run);
        }
    }
}

/// What a viewer holds of a feed.
struct Following {
    published: Arc<AtomicU64>,
    frames: broadcast::Receiver<Frame>,
}

/// One viewer's place in a run's output.
struct Viewer {
    outputs: Outputs,
    key: OutputKey,
    run: i64,
    offset: u64,
    feed: Option<Following>,
    /// A frame received ahead of the viewer's offset, sent after the gap is filled.
    pending: Option<Frame>,
    done: bool,
}

impl Viewer {
    async fn next(&mut self) -> Option<Bytes> {
        loop {
            if self.done {
                return None;
            }
            let Some(Following { published, frames }) = &mut self.feed else {
                return Some(self.drain().await);
            };
            // Catching up: what the feed sent before this viewer came, from the file.
            let published = published.load(Ordering::Acquire);
            if self.offset < published {
                return Some(self.read_from_file(published).await);
            }
            let frame = match self.pending.take() {
                Some(frame) => frame,
                None => match frames.recv().await {
                    Ok(frame) => frame,
                    // Fell behind: the next frame starts past the offset; the gap comes from the file.
                    Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => {
                        self.feed = None;
                        continue;
                    }
                },
            };
            if frame.end <= self.offset {
                continue;
            }
            if frame.start == self.offset {
                self.offset = frame.end;
                return Some(frame.bytes);
            }
            // A gap before the frame (or a frame this viewer is part-way into).
            let until = if frame.start > self.offset { frame.start } else { frame.end };
            if frame.start > self.offset {
                self.pending = Some(frame);
            }
            return Some(self.read_from_file(until).await);
        }
    }

    /// A frame read from the file, up to `until` (a frame boundary, so the
    /// bytes before it may end without a newline).
    async fn read_from_file(&mut self, until: u64) -> Bytes {
        match read_frame(&self.outputs, self.key, self.run, self.offset, until, true).await {
            Ok(Some(frame)) => {
                self.offset = frame.end;
                frame.bytes
            }
            Ok(None) => self.fail("the output file is shorter than what was sent"),
            Err(e) => self.fail(&e.to_string()),
        }
    }

    /// The run is over (or not running here): the rest of the file, then `end`.
    async fn drain(&mut self) -> Bytes {
        let len = match self.outputs.len(self.key).await {
            Ok(len) => len,
            Err(e) => return self.fail(&e.to_string()),
        };
        if self.offset < len {
            return self.read_from_file(len).await;
        }
        self.done = true;
        super::sse::frame_with_id("end", self.offset, "end")
    }

    fn fail(&mut self, why: &str) -> Bytes {
        tracing::error!(run = self.run, "live output: {why}");
        self.done = true;
        super::sse::frame_with_id("end", self.offset, "error")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_end_at_a_line_unless_the_run_is_over() {
        assert_eq!(cut(b"one\ntwo", 0, 7, false), 4);
        assert_eq!(cut(b"one\ntwo", 0, 7, true), 7);
        assert_eq!(cut(b"partial", 0, 7, false), 0);
        let long = vec![b'x'; FRAME_BYTES as usize];
        assert_eq!(cut(&long, 0, FRAME_BYTES * 2, false), long.len(), "a line longer than a frame goes in parts");
    }
}
