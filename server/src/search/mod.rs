//! Search over everything the team has seen, with the database's own full-text
//! engine (SQLite FTS5, PostgreSQL tsvector; `db/search.rs`).
//!
//! Design notes
//! - What can be found is a row in `search_docs`: an investigation's title and
//!   question, each note, command (with its env and sweep), snippet (path and
//!   the newest snapshot's lines), grep, hypothesis, annotation, comment, a
//!   run's measurement labels, and a run's output in pieces of about
//!   [`PIECE_BYTES`] cut at line ends. Each row knows where a result links to
//!   and what filters narrow by (host, env, author, time).
//! - The index holds words only ([`query::words`]): the same cut on both
//!   backends and for queries, so phrases and prefixes mean the same everywhere
//!   and nothing typed reaches the engine's syntax.
//! - Output is indexed once a run has ended, by one background task
//!   ([`Index`]), in short transactions; while this replica drives runs it
//!   works a fifth of the time at most ([`IDLE_SHARE`]), so ingest keeps the
//!   machine (on 2 cores, indexing flat out beside a 512 MB ingest slowed it by
//!   35 %). Until a run is indexed a search says how many runs still wait.
//!   A run is claimed by the replica indexing it (`runs.indexed` = 2 and
//!   `index_claimed_by`); when that replica dies, the others' lease loop gives
//!   the run back and indexes it, as it indexes the runs it interrupts for a
//!   dead replica (`runs/runner.rs`).
//!   Everything else is indexed again (replaced whole, per investigation) a
//!   moment after it changes. A server that starts catches up on what an older
//!   binary, a restart or a migration left out.
//! - Output text is not copied into the index: an excerpt reads its piece back
//!   from the run's output by byte range.

pub mod excerpt;
mod find;
pub mod query;

pub use find::Search;

use crate::db::{NewDoc, OutputKey, OwnedBy, Store};
use crate::output::Outputs;
use domain::search::DocKind;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::mpsc;

/// Output is indexed in pieces of about this many bytes (cut at a line end).
pub const PIECE_BYTES: usize = 32 * 1024;
/// Pieces written per transaction.
const PIECES_PER_WRITE: usize = 64;
/// A change is indexed this long after it happened (later changes join it).
const SETTLE: Duration = Duration::from_millis(300);
/// While runs go, the indexer rests this many times as long as each batch took.
const IDLE_SHARE: u32 = 4;
/// A job that failed (a busy database, a replica's connection lost) is tried
/// again after 1, 2, 4… s, this many times, before it is left to the next
/// change or start.
const ATTEMPTS: u32 = 6;

enum Job {
    Investigation(String, u32),
    Run(i64, u32),
}

/// The indexer: takes what changed and what ended, and keeps the index up to date.
pub struct Index {
    jobs: mpsc::UnboundedSender<Job>,
}

impl Index {
    /// Starts indexing (and catching up on what is not indexed yet).
    /// `driving`: how many runs this replica drives now (ingest comes first).
    pub fn start(store: Store, outputs: Outputs, driving: Arc<AtomicUsize>) -> Arc<Self> {
        let (jobs, rx) = mpsc::unbounded_channel();
        tokio::spawn(work(store, outputs, driving, rx, jobs.clone()));
        Arc::new(Self { jobs })
    }

    /// An index that is not kept: what it is told goes nowhere.
    pub fn off() -> Arc<Self> {
        let (jobs, _) = mpsc::unbounded_channel();
        Arc::new(Self { jobs })
    }

    /// `investigation` changed: index its notes, steps, hypotheses… again.
    pub fn changed(&self, investigation: &str) {
        let _ = self.jobs.send(Job::Investigation(investigation.to_string(), 0));
    }

    /// `run` ended: index its output and measurements.
    pub fn run_ended(&self, run: i64) {
        let _ = self.jobs.send(Job::Run(run, 0));
    }
}

async fn work(
    store: Store,
    outputs: Outputs,
    driving: Arc<AtomicUsize>,
    mut rx: mpsc::UnboundedReceiver<Job>,
    me: mpsc::UnboundedSender<Job>,
) {
    catch_up(&store, &me).await;
    while let Some(job) = rx.recv().await {
        // What to index, with the attempts made so far (the fewest when a job comes twice).
        let mut investigations = BTreeMap::new();
        let mut runs = BTreeMap::new();
        let mut take = |job: Job| match job {
            Job::Investigation(id, n) => {
                let at = investigations.entry(id).or_insert(n);
                *at = (*at).min(n);
            }
            Job::Run(id, n) => {
                let at = runs.entry(id).or_insert(n);
                *at = (*at).min(n);
            }
        };
        take(job);
        // Changes come in bursts (a sweep's runs, a form's saves): index each once.
        tokio::time::sleep(SETTLE).await;
        while let Ok(job) = rx.try_recv() {
            take(job);
        }
        for (run, attempts) in runs {
            match index_run(&store, &outputs, &driving, run).await {
                Ok(Some(investigation)) => {
                    // Its measurements are in the investigation's rows.
                    investigations.entry(investigation).or_insert(0);
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::error!(run, attempts, "cannot index the run's output: {e}");
                    again(&me, Job::Run(run, attempts + 1), attempts);
                }
            }
        }
        for (investigation, attempts) in investigations {
            if let Err(e) = index_investigation(&store, &investigation).await {
                tracing::error!(investigation, attempts, "cannot index the investigation: {e}");
                again(&me, Job::Investigation(investigation, attempts + 1), attempts);
            }
        }
    }
}

/// Sends `job` again after a back-off, unless it failed [`ATTEMPTS`] times.
fn again(me: &mpsc::UnboundedSender<Job>, job: Job, attempts: u32) {
    if attempts + 1 >= ATTEMPTS {
        tracing::error!("search gives up on it until it changes again or the server starts");
        return;
    }
    let me = me.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1 << attempts)).await;
        let _ = me.send(job);
    });
}

async fn catch_up(store: &Store, me: &mpsc::UnboundedSender<Job>) {
    // One process per SQLite file: a run claimed but never finished was cut short by a stop.
    if store.backend() == crate::db::Backend::Sqlite
        && let Err(e) = store.release_index_claims().await
    {
        tracing::error!("cannot release the search index's claims: {e}");
    }
    match store.unindexed_investigations().await {
        Ok(ids) => {
            if !ids.is_empty() {
                tracing::info!("indexing {} investigations for search", ids.len());
            }
            for id in ids {
                let _ = me.send(Job::Investigation(id, 0));
            }
        }
        Err(e) => tracing::error!("cannot list what search has not indexed: {e}"),
    }
    match store.unindexed_runs().await {
        Ok(ids) => {
            if !ids.is_empty() {
                tracing::info!("indexing the output of {} runs for search", ids.len());
            }
            for id in ids {
                let _ = me.send(Job::Run(id, 0));
            }
        }
        Err(e) => tracing::error!("cannot list the runs search has not indexed: {e}"),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error(transparent)]
    Store(#[from] crate::db::StoreError),
    #[error("reading output: {0}")]
    Output(#[from] std::io::Error),
    /// Stored data that does not parse (`Error::unreadable`).
    #[error(transparent)]
    Unreadable(#[from] crate::error::Error),
}

/// The words to index for `text`.
pub fn index_words(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in query::words(text).filter(|w| w.chars().count() <= query::MAX_WORD) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&word);
    }
    out
}

/// `"\nNAME=value\n…"` for the env filter; a sweep's unset variable is `NAME=unset`.
pub fn env_text<'a>(pairs: impl IntoIterator<Item = (&'a str, Option<&'a str>)>) -> Option<String> {
    let mut out = String::from("\n");
    for (k, v) in pairs {
        out.push_str(k);
        out.push('=');
        out.push_str(v.unwrap_or("unset"));
        out.push('\n');
    }
    (out.len() > 1).then_some(out)
}

fn run_env(row: &crate::db::RunRow) -> Result<Option<String>, IndexError> {
    use crate::error::{stored, stored_opt};
    let env: Vec<(String, String)> = stored(&row.env, || format!("run {}'s environment", row.id))?;
    let config: serde_json::Map<String, serde_json::Value> =
        stored_opt(row.config.as_deref(), || format!("run {}'s configuration", row.id))?.unwrap_or_default();
    let config: Vec<(String, Option<String>)> = config
        .into_iter()
        .map(|(k, v)| {
            let v = match v {
                serde_json::Value::Null => None,
                serde_json::Value::String(s) => Some(s),
                other => Some(other.to_string()),
            };
            (k, v)
        })
        .collect();
    Ok(env_text(env.iter().map(|(k, v)| (k.as_str(), Some(v.as_str()))).chain(
        config.iter().filter(|(k, _)| !env.iter().any(|(e, _)| e == k)).map(|(k, v)| (k.as_str(), v.as_deref())),
    )))
}

/// Indexes a finished run's output; the investigation it is in.
async fn index_run(
    store: &Store,
    outputs: &Outputs,
    driving: &AtomicUsize,
    run: i64,
) -> Result<Option<String>, IndexError> {
    let Some(row) = store.run(run).await? else { return Ok(None) };
    if !row.status.is_finished() {
        return Ok(None);
    }
    let Some(investigation) = store.investigation_of(OwnedBy::Run, run).await? else { return Ok(None) };
    // One indexer per run, across replicas too.
    if !store.claim_run_for_index(run).await? {
        return Ok(None);
    }
    match index_claimed(store, outputs, driving, &row, &investigation).await {
        Ok(()) => Ok(Some(investigation)),
        Err(e) => {
            // Released, so that this replica (or another) takes it again.
            if let Err(e) = store.release_index_claim(run).await {
                tracing::error!(run, "cannot release the run's claim on the index: {e}");
            }
            Err(e)
        }
    }
}

async fn index_claimed(
    store: &Store,
    outputs: &Outputs,
    driving: &AtomicUsize,
    row: &crate::db::RunRow,
    investigation: &str,
) -> Result<(), IndexError> {
    let mut batch = Vec::with_capacity(PIECES_PER_WRITE);
    index_stream(store, outputs, driving, row, investigation, Indexed::Output, &mut batch).await?;
    // Its server's log, which holds lines such as vLLM's custom-allreduce warning.
    for log in store.logs_of_runs(&[row.id]).await?.into_iter().filter(|l| l.kind == crate::db::LogKind::Server) {
        index_stream(store, outputs, driving, row, investigation, Indexed::ServerLog(log.id), &mut batch).await?;
    }
    store.add_run_docs(investigation, row.id, &batch, true).await?;
    Ok(())
}

/// One stream of a run: what its command printed, or its server's log.
#[derive(Clone, Copy)]
enum Indexed {
    Output,
    ServerLog(i64),
}

/// Adds `stream`'s pieces to the index, writing `batch` whenever it is full
/// (what is left in it is the caller's to write).
async fn index_stream(
    store: &Store,
    outputs: &Outputs,
    driving: &AtomicUsize,
    row: &crate::db::RunRow,
    investigation: &str,
    stream: Indexed,
    batch: &mut Vec<NewDoc>,
) -> Result<(), IndexError> {
    let run = row.id;
    let (key, kind, ref_id) = match stream {
        Indexed::Output => (OutputKey::Run(run), DocKind::Output, None),
        Indexed::ServerLog(log) => (OutputKey::Log(log), DocKind::ServerLog, Some(log)),
    };
    let env = run_env(row)?;
    let at = row.finished_at.or(row.started_at).unwrap_or(row.queued_at);
    // An error is tried again (the claim is released), never taken for no output:
    // a busy database would otherwise mark the run indexed with nothing in it.
    let len = outputs.len(key).await?;
    let (mut offset, mut line) = (0u64, 1i64);
    let mut batch_started = std::time::Instant::now();
    let mut carry: Vec<u8> = Vec::new();
    while offset < len || !carry.is_empty() {
        let (bytes, _) = outputs.read_range(key, offset, PIECE_BYTES as u64).await?;
        let read = bytes.len() as u64;
        let start = offset - carry.len() as u64;
        let mut piece = std::mem::take(&mut carry);
        piece.extend_from_slice(&bytes);
        offset += read;
        // Cut after the last line end, unless this is the end of the output
        // (or a line longer than two pieces, which is cut where it is).
        let end = if offset >= len || read == 0 {
            piece.len()
        } else {
            match piece.iter().rposition(|&b| b == b'\n') {
                Some(i) => i + 1,
                None if piece.len() >= 2 * PIECE_BYTES => piece.len(),
                None => {
                    carry = piece;
                    continue;
                }
            }
        };
        carry = piece.split_off(end);
        let text = String::from_utf8_lossy(&piece);
        let lines = piece.iter().filter(|&&b| b == b'\n').count() as i64;
        let words = index_words(&text);
        if !words.is_empty() {
            batch.push(NewDoc {
                kind,
                step_id: Some(row.step_id),
                run_id: Some(run),
                ref_id,
                start_byte: Some(start as i64),
                len: Some(piece.len() as i64),
                first_line: Some(line),
                host: Some(row.host.clone()),
                env: env.clone(),
                author: row.who.clone(),
                created_at: at,
                words,
                ..NewDoc::default()
            });
        }
        line += lines;
        if batch.len() >= PIECES_PER_WRITE {
            store.add_run_docs(investigation, run, batch, false).await?;
            batch.clear();
            if driving.load(Ordering::Relaxed) > 0 {
                tokio::time::sleep(batch_started.elapsed() * IDLE_SHARE).await;
            }
            batch_started = std::time::Instant::now();
        }
        if read == 0 {
            break;
        }
    }
    Ok(())
}

/// Indexes everything of `investigation` but run output again.
async fn index_investigation(store: &Store, investigation: &str) -> Result<(), IndexError> {
    let Some(row) = store.investigation(investigation).await? else { return Ok(()) };
    let mut docs = vec![doc(DocKind::Investigation, row.created_at, format!("{}\n{}", row.title, row.question))];
    let steps = store.steps(investigation).await?;
    let runs = store.runs_of_investigation(investigation).await?;
    let snapshots = store.snapshots_of_investigation(investigation).await?;
    for step in &steps {
        let body = crate::steps::from_stored(step.kind, &step.body)
            .map_err(|e| crate::error::Error::unreadable(format!("step {}'s body", step.id), e))?;
        let base = NewDoc { step_id: Some(step.id), author: step.updated_by.clone(), ..NewDoc::default() };
        use domain::steps::StepBody;
        let (kind, host, env, text) = match &body {
            StepBody::Note(n) => (DocKind::Note, None, None, n.body.clone()),
            StepBody::Command(c) => {
                let env = env_text(c.env.iter().map(|(k, v)| (k.as_str(), Some(v.as_str()))));
                let sweep = domain::sweeps::matrix_text(&c.matrix);
                let env_lines: String = c.env.iter().map(|(k, v)| format!("\n{k}={v}")).collect();
                (DocKind::Command, Some(c.host.clone()), env, format!("{}{env_lines}\n{sweep}", c.command))
            }
            StepBody::Snippet(s) => {
                let what = s.path.clone().or_else(|| s.module.clone()).unwrap_or_default();
                (DocKind::Snippet, Some(s.host.clone()), None, what)
            }
            StepBody::Grep(g) => (DocKind::Grep, Some(g.host.clone()), None, format!("{}\n{}", g.pattern, g.path)),
            StepBody::Calculator(_) => continue,
            StepBody::Patch(p) => (DocKind::Patch, Some(p.host.clone()), None, p.diff.clone()),
        };
        // A snippet is found by its newest snapshot (path, then lines), the others by their text.
        let snapshot = snapshots.iter().filter(|s| s.step_id == step.id).max_by_key(|s| s.id);
        match (kind, snapshot) {
            (DocKind::Snippet, Some(snap)) => {
                let lines: Vec<String> = crate::error::stored(&snap.lines, || format!("snapshot {}'s lines", snap.id))?;
                // A module's name too, before the file it resolved to.
                let head = if text == snap.path { text } else { format!("{text} {}", snap.path) };
                docs.push(NewDoc {
                    kind,
                    host,
                    first_line: Some(snap.start_line),
                    ..with_text(base, snap.fetched_at, format!("{head}\n{}", lines.join("\n")))
                });
            }
            _ => docs.push(NewDoc { kind, host, env, ..with_text(base, step.updated_at, text) }),
        }
    }
    for h in store.hypotheses(investigation).await? {
        let text = format!("{}\n{}\n{}", h.statement, h.rationale, h.status.as_str());
        docs.push(NewDoc {
            kind: DocKind::Hypothesis,
            ref_id: Some(h.id),
            author: h.updated_by.clone(),
            ..with_text(NewDoc::default(), h.updated_at, text)
        });
    }
    for a in store.annotations_of_investigation(investigation).await? {
        docs.push(NewDoc {
            kind: DocKind::Annotation,
            step_id: Some(a.step_id),
            ref_id: Some(a.id),
            first_line: Some(a.start_line),
            author: a.author.clone(),
            ..with_text(NewDoc::default(), a.updated_at, a.body.clone())
        });
    }
    for c in store.comments_of_investigation(investigation).await? {
        docs.push(NewDoc {
            kind: DocKind::Comment,
            step_id: Some(c.step_id),
            ref_id: Some(c.id),
            author: Some(c.author.clone()),
            ..with_text(NewDoc::default(), c.created_at, c.body.clone())
        });
    }
    // Measurement labels, one row per run (and one for those entered by hand).
    let measurements = store.measurements_of_investigation(investigation).await?;
    let mut by_run: std::collections::BTreeMap<Option<i64>, Vec<String>> = Default::default();
    for m in measurements.iter() {
        let mut label = m.metric.clone();
        for part in
            [m.key.as_deref(), Some(m.unit.as_str()), m.label.as_deref(), m.note.as_deref()].into_iter().flatten()
        {
            if !part.is_empty() {
                label.push(' ');
                label.push_str(part);
            }
        }
        by_run.entry(m.run_id).or_default().push(label);
    }
    for (run, labels) in by_run {
        let row = run.and_then(|id| runs.iter().find(|r| r.id == id));
        let first = measurements.iter().filter(|m| m.run_id == run).map(|m| m.created_at).min();
        let at = row.map_or(first.unwrap_or(0), |r| r.finished_at.unwrap_or(r.queued_at));
        docs.push(NewDoc {
            kind: DocKind::Measurement,
            step_id: row.map(|r| r.step_id),
            run_id: run,
            host: row.map(|r| r.host.clone()),
            env: row.map(run_env).transpose()?.flatten(),
            author: row.and_then(|r| r.who.clone()),
            ..with_text(NewDoc::default(), at, labels.join("\n"))
        });
    }
    store.replace_investigation_docs(investigation, &docs).await?;
    Ok(())
}

fn doc(kind: DocKind, at: i64, text: String) -> NewDoc {
    NewDoc { kind, ..with_text(NewDoc::default(), at, text) }
}

fn with_text(base: NewDoc, at: i64, text: String) -> NewDoc {
    NewDoc { created_at: at, words: index_words(&text), body: Some(text), ..base }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_for_the_index_skip_what_nobody_types() {
        let hash = "a".repeat(65);
        assert_eq!(index_words(&format!("NCCL_PROTO=LL {hash} 57.5 tok/s")), "nccl proto ll 57 5 tok s");
    }

    #[test]
    fn env_text_brackets_every_pair() {
        assert_eq!(
            env_text([("NCCL_PROTO", None), ("NCCL_ALGO", Some("Ring"))]).as_deref(),
            Some("\nNCCL_PROTO=unset\nNCCL_ALGO=Ring\n")
        );
        assert_eq!(env_text([]), None);
    }
}
