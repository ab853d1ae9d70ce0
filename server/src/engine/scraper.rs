//! One run's scraper: a channel on the run's host that runs `scrape.py`
//! (`urllib`, one GET per interval, framed on stdout), its frames read into
//! scrapes on the run's time axis, changes stored every few seconds, notes on
//! what failed.

use crate::db::Store;
use crate::ssh::exec::{self, Event};
use crate::ssh::{Pool, Target, quote};
use domain::engine::series::Recorder;
use domain::steps::command::MetricsSpec;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tokio::sync::{oneshot, watch};

/// Scrapes are stored at least this often while a run goes.
const STORE_EVERY: Duration = Duration::from_secs(2);
/// A scraper channel that does not open within this is given up (a note).
const OPEN_WITHIN: Duration = Duration::from_secs(10);
/// How long the last scrape may take once the run ended.
const LAST_WITHIN: Duration = Duration::from_secs(5);
/// A scrape's body beyond this is cut (vLLM's is ~100 kB with many LoRAs).
const MAX_BODY: usize = 16 << 20;
/// Series kept per run: an engine exposing tens of thousands (one per LoRA,
/// per request ID label) would make every viewer of the run read megabytes.
/// The rest are counted and their names said in a note.
pub const MAX_SERIES: usize = 2000;
/// Bytes of recorded metrics a run keeps (changes only, as stored): past it
/// the run goes on, its later scrapes are not kept, and a note says from when.
/// 2 000 series changing every second fill it in about an hour and a half.
pub const KEEP_AT_MOST: usize = 128 << 20;
/// What the script prints when the host has no python3.
const NO_PYTHON: &str = "sleuth-engine: no python3";
const FRAME: &str = "sleuth-scrape ";

/// The loop on the host (`scrape.py`): a scrape, a frame `sleuth-scrape STATUS LEN`, the
/// body; until stdin says `last` (one more) or closes. A `/metrics` slower
/// than the interval is waited for, then what is left of the interval (none);
/// how many scrapes were late is said at the end (`sleuth-late N SLOWEST_MS`).
const SCRIPT: &str = include_str!("scrape.py");

/// The command the scraper channel runs (POSIX sh, then python3).
fn script(spec: &MetricsSpec) -> String {
    format!(
        "command -v python3 >/dev/null 2>&1 || {{ echo '{NO_PYTHON}'; exit 0; }}\nexec python3 -c {} {} {} {MAX_BODY}\n",
        quote::quote(SCRIPT),
        quote::quote(&spec.url),
        spec.interval_ms
    )
}

/// The scraper's stdout cut into scrapes: `(status, body)`, status 0 when
/// the GET itself failed (the body says why).
#[derive(Default)]
struct Frames {
    buffer: Vec<u8>,
    /// Lines that were not a frame (the no-python3 line, a stray print).
    said: Vec<String>,
}

impl Frames {
    fn push(&mut self, data: &[u8]) -> Vec<(u16, Vec<u8>)> {
        self.buffer.extend_from_slice(data);
        let mut out = Vec::new();
        while let Some(end) = self.buffer.iter().position(|b| *b == b'\n') {
            let line = String::from_utf8_lossy(&self.buffer[..end]).to_string();
            let Some((status, len)) = line.strip_prefix(FRAME).and_then(|rest| rest.split_once(' ')) else {
                if self.said.len() < 5 && !line.trim().is_empty() {
                    self.said.push(line.chars().take(300).collect());
                }
                self.buffer.drain(..=end);
                continue;
            };
            let (Ok(status), Ok(len)) = (status.parse::<u16>(), len.parse::<usize>()) else {
                self.buffer.drain(..=end);
                continue;
            };
            // The body and its closing newline, once all of it came.
            if self.buffer.len() < end + 1 + len + 1 {
                break;
            }
            let body = self.buffer[end + 1..end + 1 + len].to_vec();
            self.buffer.drain(..end + 1 + len + 1);
            out.push((status, body));
        }
        out
    }
}

/// A run's scraper, as the runner holds it.
pub struct Scraping {
    started: watch::Sender<Option<Instant>>,
    /// True once the first scrape came back (or the scraper ended).
    spoke: watch::Receiver<bool>,
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl Scraping {
    /// Starts asking the engine for `run` (its server is ready).
    pub fn start(pool: std::sync::Arc<Pool>, store: Store, target: Target, spec: MetricsSpec, run: i64) -> Self {
        let (started, t0) = watch::channel(None);
        let (stop, stopped) = oneshot::channel();
        let (spoke_tx, spoke) = watch::channel(false);
        let task = tokio::spawn(async move {
            let mut scraper = Scraper::new(store, run, spec, spoke_tx);
            scraper.run(&pool, &target, t0, stopped).await;
            scraper.spoke.send_replace(true);
            scraper.end().await;
        });
        Self { started, spoke, stop, task }
    }

    /// Waits (at most `within`) for the first scrape: the one a run's
    /// counters count from must come before its first request.
    pub async fn first_scrape(&mut self, within: Duration) {
        let _ = tokio::time::timeout(within, self.spoke.wait_for(|spoke| *spoke)).await;
    }

    /// The run's command started: t = 0 of its time axis.
    pub fn command_started(&self, at: Instant) {
        self.started.send_replace(Some(at));
    }

    /// The run ended: one last scrape, everything stored. Waited for (a few
    /// seconds at most), so the run's measurements read all of it.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        if tokio::time::timeout(LAST_WITHIN * 2, self.task).await.is_err() {
            tracing::warn!("the engine scraper did not end in time");
        }
    }
}

/// One run's scraping: what came, what failed, what is stored.
struct Scraper {
    store: Store,
    run: i64,
    spec: MetricsSpec,
    /// Scrapes before the command's start was known, with when they came.
    held: Vec<(Instant, domain::engine::Exposition)>,
    t0: Option<Instant>,
    recorder: Recorder,
    seq: i64,
    scrapes: usize,
    /// Failed scrapes by why ("HTTP 404", "not the text format", the error).
    failed: BTreeMap<String, usize>,
    unread_lines: usize,
    notes: Vec<String>,
    spoke: watch::Sender<bool>,
    /// Series kept, and those beyond [`MAX_SERIES`] left out (by metric, counted).
    series: std::collections::HashSet<(String, Vec<(String, String)>)>,
    dropped: std::collections::HashSet<(String, Vec<(String, String)>)>,
    dropped_by_metric: BTreeMap<String, usize>,
    /// Bytes stored so far, of [`KEEP_AT_MOST`] (`keep_at_most`, smaller in tests).
    kept_bytes: usize,
    keep_at_most: usize,
    /// Set once the run's metrics filled what it keeps.
    full: bool,
}

impl Scraper {
    fn new(store: Store, run: i64, spec: MetricsSpec, spoke: watch::Sender<bool>) -> Self {
        Self {
            store,
            run,
            spec,
            held: Vec::new(),
            t0: None,
            recorder: Recorder::default(),
            seq: 0,
            scrapes: 0,
            failed: BTreeMap::new(),
            unread_lines: 0,
            notes: Vec::new(),
            spoke,
            series: Default::default(),
            dropped: Default::default(),
            dropped_by_metric: BTreeMap::new(),
            kept_bytes: 0,
            keep_at_most: KEEP_AT_MOST,
            full: false,
        }
    }

    async fn run(
        &mut self,
        pool: &Pool,
        target: &Target,
        mut t0: watch::Receiver<Option<Instant>>,
        mut stopped: oneshot::Receiver<()>,
    ) {
        let channel = match tokio::time::timeout(OPEN_WITHIN, exec::start(pool, target, &script(&self.spec))).await {
            Ok(Ok(channel)) => channel,
            Ok(Err(e)) => return self.notes.push(format!("Engine metrics could not be scraped: {e}")),
            Err(_) => {
                return self.notes.push(format!(
                    "Engine metrics could not be scraped: no channel to {} within {} s (the host's session limit?).",
                    target.name,
                    OPEN_WITHIN.as_secs()
                ));
            }
        };
        let mut channel = channel;
        let mut frames = Frames::default();
        let mut errors = Vec::new();
        let mut stores = tokio::time::interval(STORE_EVERY);
        let mut last_asked: Option<tokio::time::Instant> = None;
        loop {
            let last_due = crate::time::or_never(last_asked.map(|at| tokio::time::sleep_until(at + LAST_WITHIN)));
            tokio::select! {
                event = channel.next() => match event {
                    Some(Event::Stdout(data)) => {
                        for (status, body) in frames.push(&data) {
                            self.came(status, &body);
                        }
                    }
                    Some(Event::Stderr(data)) if errors.len() < 2048 => errors.extend_from_slice(&data),
                    Some(_) => {}
                    None => break,
                },
                changed = t0.changed(), if self.t0.is_none() => {
                    if changed.is_ok() {
                        self.t0 = *t0.borrow_and_update();
                    }
                }
                _ = &mut stopped, if last_asked.is_none() => {
                    // Asked for, or the run dropped its handle: either way the run is over.
                    last_asked = Some(tokio::time::Instant::now());
                    let _ = channel.write(b"last\n").await;
                }
                () = last_due => break,
                _ = stores.tick() => self.store_now(false).await,
            }
        }
        channel.close().await;
        if let Some((late, slowest)) = frames.said.iter().find_map(|line| {
            let (n, ms) = line.trim().strip_prefix("sleuth-late ")?.split_once(' ')?;
            Some((n.parse::<u64>().ok()?, ms.parse::<u64>().ok()?))
        }) {
            self.notes.push(format!(
                "{late} scrapes took longer than the interval of {} ms (the slowest {slowest} ms): the series are \
                 sparser than asked.",
                self.spec.interval_ms
            ));
        }
        if frames.said.iter().any(|line| line.trim() == NO_PYTHON) {
            self.notes.push(format!(
                "No python3 on {}: engine metrics are asked for with python3's urllib, so none were scraped.",
                target.name
            ));
        } else if last_asked.is_none() {
            let said = String::from_utf8_lossy(&errors).trim().chars().take(300).collect::<String>();
            self.notes.push(format!(
                "The engine scraper stopped before the run ended{}.",
                if said.is_empty() { String::new() } else { format!(": {said}") }
            ));
        }
    }

    /// One scrape came back.
    fn came(&mut self, status: u16, body: &[u8]) {
        let at = Instant::now();
        self.scrapes += 1;
        self.spoke.send_replace(true);
        if status != 200 {
            let why = match status {
                0 => String::from_utf8_lossy(body).chars().take(200).collect(),
                code => format!("HTTP {code}"),
            };
            *self.failed.entry(why).or_default() += 1;
            return;
        }
        let text = String::from_utf8_lossy(body);
        let exposition = domain::engine::parse(&text);
        if exposition.samples.is_empty() && !exposition.unread.is_empty() {
            *self.failed.entry("not the Prometheus text format".into()).or_default() += 1;
            return;
        }
        self.unread_lines += exposition.unread.len();
        let exposition = self.capped(exposition);
        self.held.push((at, exposition));
    }

    /// The scrape's samples of series already kept, and of new ones while
    /// fewer than [`MAX_SERIES`] are; the rest counted by metric.
    fn capped(&mut self, mut exposition: domain::engine::Exposition) -> domain::engine::Exposition {
        exposition.samples.retain(|sample| {
            let key = (sample.name.clone(), sample.labels.clone());
            if self.series.contains(&key) {
                return true;
            }
            if self.series.len() < MAX_SERIES {
                self.series.insert(key);
                return true;
            }
            if self.dropped.insert(key) {
                *self.dropped_by_metric.entry(sample.name.clone()).or_default() += 1;
            }
            false
        });
        exposition
    }

    /// What came is recorded and stored (once the run's t = 0 is known).
    async fn store_now(&mut self, last: bool) {
        let Some(t0) = self.t0 else { return };
        let first = self.held.first().map(|(at, _)| *at);
        for (at, exposition) in self.held.drain(..) {
            self.recorder.push(t_ms(at, t0), &exposition);
        }
        let chunk = if last { self.recorder.finish() } else { self.recorder.take() };
        if let Some(chunk) = chunk {
            if self.full {
                return;
            }
            if self.kept_bytes + chunk.len() > self.keep_at_most {
                self.full = true;
                let since = format!("{:.0}", t_ms(first.unwrap_or(t0), t0).max(0) as f64 / 1000.0);
                self.notes.push(format!(
                    "The engine's metrics filled the {} MiB a run keeps; scrapes from {since} s on were not kept.",
                    self.keep_at_most >> 20
                ));
                return;
            }
            self.kept_bytes += chunk.len();
            self.seq += 1;
            if let Err(e) = self.store.insert_engine_chunk(self.run, self.seq, &chunk).await {
                tracing::error!(run = self.run, "cannot store engine metrics: {e}");
                self.notes.push(format!("Part of the engine's metrics could not be stored: {e}"));
            }
        }
    }

    /// The rest stored, and the notes.
    async fn end(&mut self) {
        self.store_now(true).await;
        let failed: usize = self.failed.values().sum();
        if failed > 0 {
            let why: Vec<String> = self.failed.iter().map(|(why, n)| format!("{why} ({n})")).collect();
            self.notes.push(format!(
                "{failed} of {} scrapes of {} failed: {}.",
                self.scrapes,
                self.spec.url,
                why.join("; ")
            ));
        }
        if !self.dropped.is_empty() {
            let mut most: Vec<(&String, &usize)> = self.dropped_by_metric.iter().collect();
            most.sort_by(|a, b| b.1.cmp(a.1));
            let named: Vec<String> = most.iter().take(5).map(|(m, n)| format!("{m} ({n})")).collect();
            self.notes.push(format!(
                "The engine exposed more than {MAX_SERIES} series; {} more were not kept: {}{}.",
                self.dropped.len(),
                named.join(", "),
                if most.len() > 5 { format!(" and {} other metrics", most.len() - 5) } else { String::new() }
            ));
        }
        if self.unread_lines > 0 {
            self.notes.push(format!(
                "{} lines of the engine's metrics were not the Prometheus text format and were skipped.",
                self.unread_lines
            ));
        }
        let notes = serde_json::json!(self.notes).to_string();
        if let Err(e) = self.store.set_engine_notes(self.run, &notes).await {
            tracing::error!(run = self.run, "cannot record engine notes: {e}");
        }
    }
}

/// `at` on the run's time axis (negative: before its command started).
fn t_ms(at: Instant, t0: Instant) -> i64 {
    match at.checked_duration_since(t0) {
        Some(after) => i64::try_from(after.as_millis()).unwrap_or(i64::MAX),
        None => -i64::try_from(t0.duration_since(at).as_millis()).unwrap_or(i64::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_cut_anywhere_come_out_whole() {
        // A body may hold newlines, and even a line like a frame's.
        let body = b"a 1\nsleuth-scrape 1 1";
        let mut stream = b"sleuth-engine: hello\n".to_vec();
        stream.extend(format!("sleuth-scrape 200 {}\n", body.len()).as_bytes());
        stream.extend(body);
        stream.extend(b"\nsleuth-scrape 404 0\n\nsleuth-scrape 0 9\nrefused!!\n");
        for cut in 0..stream.len() {
            let mut frames = Frames::default();
            let mut got = frames.push(&stream[..cut]);
            got.extend(frames.push(&stream[cut..]));
            assert_eq!(got, [(200, body.to_vec()), (404, Vec::new()), (0, b"refused!!".to_vec())], "cut at {cut}");
            assert_eq!(frames.said, ["sleuth-engine: hello"]);
        }
    }

    #[test]
    fn the_url_is_one_quoted_word() {
        let spec = MetricsSpec { url: "http://127.0.0.1:8000/metrics'; rm -rf ~; '".into(), interval_ms: 250 };
        let script = script(&spec);
        assert!(script.contains("'http://127.0.0.1:8000/metrics'\\''; rm -rf ~; '\\'''"), "{script}");
        assert!(script.ends_with(&format!(" 250 {MAX_BODY}\n")), "{script}");
    }

    #[tokio::test]
    async fn a_run_keeps_metrics_up_to_its_cap_and_says_from_when_it_stopped() {
        for (_dir, _db, store) in crate::db::test_stores().await {
            let run = crate::db::tests_support::a_run(&store).await;
            let spec = MetricsSpec { url: "http://127.0.0.1:8000/metrics".into(), interval_ms: 1000 };
            let mut scraper = Scraper::new(store.clone(), run, spec, watch::channel(false).0);
            scraper.keep_at_most = 16 << 10;
            let t0 = Instant::now();
            scraper.t0 = Some(t0);
            // 50 series changing every scrape, stored every 10 scrapes.
            for i in 0..200u64 {
                let text: String = (0..50).map(|s| format!("vllm:thing{{n=\"{s}\"}} {}\n", i * 7 + s)).collect();
                scraper.held.push((t0 + Duration::from_secs(i), domain::engine::parse(&text)));
                if i % 10 == 9 {
                    scraper.store_now(false).await;
                }
            }
            scraper.end().await;
            let kept: usize = store.engine_chunks(run).await.unwrap().iter().map(String::len).sum();
            assert!(kept > 0 && kept <= 16 << 10, "{kept} bytes kept");
            let note = scraper.notes.iter().find(|n| n.contains("filled")).expect("a note says so");
            assert!(note.contains("scrapes from") && note.contains("s on were not kept"), "{note}");
            let from: u64 =
                note.split("scrapes from ").nth(1).and_then(|r| r.split(' ').next()).unwrap().parse().unwrap();
            assert!((10..200).contains(&from) && from.is_multiple_of(10), "the first scrape not kept: {note}");
        }
    }

    #[test]
    fn times_before_the_start_are_negative() {
        let t0 = Instant::now();
        assert_eq!(t_ms(t0 + Duration::from_millis(1500), t0), 1500);
        if let Some(before) = t0.checked_sub(Duration::from_millis(250)) {
            assert_eq!(t_ms(before, t0), -250);
        }
    }
}
