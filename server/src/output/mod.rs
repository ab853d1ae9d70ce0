//! A run's output, stored so that memory stays flat whatever a command prints.
//! Two places, one interface ([`Outputs`]):
//!
//! - **Files** (SQLite, one server): `DATA/runs/{id}.out` holds every byte as it
//!   arrived, stdout and stderr interleaved in arrival order — offsets in the API
//!   are offsets into it, and the raw download is this file — and
//!   `DATA/runs/{id}.idx` one 13-byte record per chunk: arrival time (Unix ms,
//!   i64 LE), stream (1 stdout, 2 stderr), length (u32 LE).
//! - **The store** (PostgreSQL, replicas): the same bytes and records as blocks
//!   in `run_output` (`crate::db::output`), so every replica reads what any
//!   replica's runs printed.
//!
//! Readers only ever see what is stored: the writer announces a new length on
//! the run's [`Progress`] once the bytes are readable (flushed to the file, or
//! committed), and live viewers read up to it.

pub mod held;

use crate::db::OutputBlock as Block;
pub use crate::db::OutputKey;
use crate::db::Store;
use bytes::Bytes;

use std::io::{BufWriter, SeekFrom, Write};
use std::path::{Path, PathBuf};
use tokio::fs::File;
use tokio::io::{AsyncReadExt, AsyncSeekExt};
use tokio::sync::{mpsc, watch};

/// How much of a run's output readers can see, and whether there is more to come.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Progress {
    /// Bytes of output stored (readable).
    pub len: u64,
    pub finished: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Stdout = 1,
    Stderr = 2,
}

/// Where run output is kept: files on SQLite, the database on PostgreSQL.
#[derive(Clone)]
pub enum Outputs {
    Files(PathBuf),
    /// `held`: where output the store cannot take yet is spilled ([`held`]).
    Store {
        store: Store,
        held: PathBuf,
    },
}

/// A block for the store is sent at about this size (or at each flush).
const BLOCK_BYTES: usize = 1024 * 1024;
/// Blocks on their way to the database: how far ingest may run ahead of it.
const BLOCKS_IN_FLIGHT: usize = 4;
/// Blocks read per query when walking a run's whole output in the store.
const BLOCKS_PER_READ: i64 = 8;

fn store_error(e: crate::db::StoreError) -> std::io::Error {
    std::io::Error::other(e)
}

/// The file of an output's bytes: `DATA/runs/{run}.out`, or `DATA/runs/logs/{log}.out`.
pub fn out_path(dir: &Path, key: impl Into<OutputKey>) -> PathBuf {
    match key.into() {
        OutputKey::Run(run) => dir.join(format!("{run}.out")),
        OutputKey::Log(log) => dir.join("logs").join(format!("{log}.out")),
    }
}

fn idx_path(dir: &Path, key: impl Into<OutputKey>) -> PathBuf {
    out_path(dir, key).with_extension("idx")
}

/// The chunk index record of `len` bytes of `stream` that arrived at `at_ms`.
fn chunk_record(stream: Stream, len: usize, at_ms: i64) -> [u8; 13] {
    // SSH packets are at most 256 KB: a chunk always fits the u32 length.
    let len = u32::try_from(len).unwrap_or(u32::MAX);
    let mut record = [0u8; 13];
    record[0..8].copy_from_slice(&at_ms.to_le_bytes());
    record[8] = stream as u8;
    record[9..13].copy_from_slice(&len.to_le_bytes());
    record
}

#[cfg(test)]
pub(crate) fn chunk_record_for_tests(len: usize) -> Vec<u8> {
    chunk_record(Stream::Stdout, len, 0).to_vec()
}

/// The bytes of `stream` in `data`, as the chunk `records` describe it.
fn select_stream(data: &[u8], records: &[u8], stream: Stream, into: &mut Vec<u8>) {
    let mut at = 0usize;
    for record in records.chunks_exact(13) {
        let len = u32::from_le_bytes([record[9], record[10], record[11], record[12]]) as usize;
        if record[8] == stream as u8
            && let Some(bytes) = data.get(at..at + len)
        {
            into.extend_from_slice(bytes);
        }
        at += len;
    }
}

impl Outputs {
    /// Where a store's run output goes: the database for PostgreSQL (with
    /// `dir/spill` for what it cannot take yet), files in `dir` for SQLite.
    pub fn for_store(store: &Store, dir: PathBuf) -> Self {
        match store.backend() {
            crate::db::Backend::Sqlite => Outputs::Files(dir),
            crate::db::Backend::Postgres => Outputs::Store { store: store.clone(), held: dir },
        }
    }

    /// A writer appending to run `run`'s output, which tells `progress` what
    /// readers can see.
    pub fn writer(
        &self,
        key: impl Into<OutputKey>,
        progress: watch::Sender<Progress>,
    ) -> std::io::Result<OutputWriter> {
        let run: OutputKey = key.into();
        let sink = match self {
            Outputs::Files(dir) => {
                if let Some(parent) = out_path(dir, run).parent() {
                    std::fs::create_dir_all(parent)?;
                }
                let open = |path: PathBuf| std::fs::OpenOptions::new().create(true).append(true).open(path);
                let out = open(out_path(dir, run))?;
                let idx = open(idx_path(dir, run))?;
                Sink::Files { out: BufWriter::with_capacity(BLOCK_BYTES, out), idx: BufWriter::new(idx) }
            }
            Outputs::Store { store, held: dir } => {
                let (blocks, receiver) = mpsc::channel(BLOCKS_IN_FLIGHT);
                let held = held::Held::new(held::spill_path(dir, run));
                let task = tokio::spawn(commit_blocks(store.clone(), run, receiver, held, progress.clone()));
                Sink::Store { blocks, task, data: Vec::with_capacity(BLOCK_BYTES), chunks: Vec::new(), start: 0 }
            }
        };
        let len = match self {
            Outputs::Files(dir) => std::fs::metadata(out_path(dir, run)).map_or(0, |m| m.len()),
            // A run's output is written once, by the run: it starts empty.
            Outputs::Store { .. } => 0,
        };
        Ok(OutputWriter { sink, progress, len, stdout: 0, stderr: 0, lines: 0 })
    }

    /// How many bytes of output the run has (so far).
    pub async fn len(&self, key: impl Into<OutputKey>) -> std::io::Result<u64> {
        let run: OutputKey = key.into();
        match self {
            Outputs::Files(dir) => match tokio::fs::metadata(out_path(dir, run)).await {
                Ok(meta) => Ok(meta.len()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
                Err(e) => Err(e),
            },
            Outputs::Store { store, .. } => store.output_len(run).await.map_err(store_error),
        }
    }

    /// Where output the store could not take yet is held (`None`: files).
    pub fn held_dir(&self) -> Option<&Path> {
        match self {
            Outputs::Files(_) => None,
            Outputs::Store { held, .. } => Some(held),
        }
    }

    /// The directory of output files (`None`: output lives in the database).
    pub fn dir(&self) -> Option<&std::path::Path> {
        match self {
            Outputs::Files(dir) => Some(dir),
            Outputs::Store { .. } => None,
        }
    }

    /// Up to `limit` bytes from `offset`, and the output's length.
    pub async fn read_range(
        &self,
        key: impl Into<OutputKey>,
        offset: u64,
        limit: u64,
    ) -> std::io::Result<(Vec<u8>, u64)> {
        let run: OutputKey = key.into();
        match self {
            Outputs::Files(dir) => read_file_range(dir, run, offset, limit).await,
            Outputs::Store { store, .. } => {
                let len = store.output_len(run).await.map_err(store_error)?;
                if offset >= len || limit == 0 {
                    return Ok((Vec::new(), len));
                }
                let to = offset.saturating_add(limit).min(len);
                Ok((store.output_range(run, offset, to).await.map_err(store_error)?, len))
            }
        }
    }

    /// One stream's bytes (stdout or stderr), from the chunk index. For tests and exports.
    pub async fn read_stream(&self, key: impl Into<OutputKey>, stream: Stream) -> std::io::Result<Vec<u8>> {
        let run: OutputKey = key.into();
        let mut result = Vec::new();
        match self {
            Outputs::Files(dir) => {
                let out = tokio::fs::read(out_path(dir, run)).await?;
                let idx = tokio::fs::read(idx_path(dir, run)).await?;
                select_stream(&out, &idx, stream, &mut result);
            }
            Outputs::Store { store, .. } => {
                let mut from = 0;
                loop {
                    let blocks = store.output_blocks(run, from, BLOCKS_PER_READ).await.map_err(store_error)?;
                    let Some(last) = blocks.last() else { break };
                    from = last.start + last.data.len() as u64;
                    for block in &blocks {
                        select_stream(&block.data, &block.chunks, stream, &mut result);
                    }
                }
            }
        }
        Ok(result)
    }

    /// The whole output as a stream of byte buffers, for downloads: output can be
    /// gigabytes, so it is never read at once.
    pub fn whole(&self, run: OutputKey) -> impl futures::Stream<Item = std::io::Result<Bytes>> + Send + use<> {
        enum Cursor {
            File(PathBuf, Option<File>),
            Store(Store, u64),
            Done,
        }
        let cursor = match self {
            Outputs::Files(dir) => Cursor::File(out_path(dir, run), None),
            Outputs::Store { store, .. } => Cursor::Store(store.clone(), 0),
        };
        futures::stream::unfold(cursor, move |cursor| async move {
            match cursor {
                Cursor::Done => None,
                Cursor::File(path, file) => {
                    let mut file = match file {
                        Some(file) => file,
                        None => match File::open(&path).await {
                            Ok(file) => file,
                            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
                            Err(e) => return Some((Err(e), Cursor::Done)),
                        },
                    };
                    let mut buf = vec![0u8; 256 * 1024];
                    match file.read(&mut buf).await {
                        Ok(0) => None,
                        Ok(n) => {
                            buf.truncate(n);
                            Some((Ok(Bytes::from(buf)), Cursor::File(path, Some(file))))
                        }
                        Err(e) => Some((Err(e), Cursor::Done)),
                    }
                }
                Cursor::Store(store, from) => match store.output_blocks(run, from, 1).await {
                    Ok(mut blocks) => {
                        let block = blocks.pop()?;
                        let next = block.start + block.data.len() as u64;
                        Some((Ok(Bytes::from(block.data)), Cursor::Store(store, next)))
                    }
                    Err(e) => Some((Err(store_error(e)), Cursor::Done)),
                },
            }
        })
    }

    pub async fn remove(&self, key: impl Into<OutputKey>) {
        let run: OutputKey = key.into();
        match self {
            Outputs::Files(dir) => {
                let _ = tokio::fs::remove_file(out_path(dir, run)).await;
                let _ = tokio::fs::remove_file(idx_path(dir, run)).await;
            }
            Outputs::Store { store, .. } => {
                if let Err(e) = store.delete_output(run).await {
                    tracing::error!(?run, "cannot delete output: {e}");
                }
            }
        }
    }
}

async fn read_file_range(dir: &Path, run: OutputKey, offset: u64, limit: u64) -> std::io::Result<(Vec<u8>, u64)> {
    let mut file = match File::open(out_path(dir, run)).await {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), 0)),
        Err(e) => return Err(e),
    };
    let len = file.metadata().await?.len();
    if offset >= len {
        return Ok((Vec::new(), len));
    }
    file.seek(SeekFrom::Start(offset)).await?;
    let want = limit.min(len - offset);
    let mut buf = Vec::with_capacity(usize::try_from(want).unwrap_or(0));
    file.take(want).read_to_end(&mut buf).await?;
    Ok((buf, len))
}

/// A run's output files read back as store blocks (`sleuth migrate`): about a
/// megabyte each, cut at chunk boundaries, each with its index records. Bytes
/// the index does not cover (a server that died between the two writes) come
/// last, as stdout.
pub struct FileBlocks {
    out: std::io::BufReader<std::fs::File>,
    records: std::vec::IntoIter<[u8; 13]>,
    start: u64,
    len: u64,
}

impl FileBlocks {
    /// `None` when the run has no output file.
    pub fn open(dir: &Path, key: impl Into<OutputKey>) -> std::io::Result<Option<Self>> {
        let run: OutputKey = key.into();
        let out = match std::fs::File::open(out_path(dir, run)) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let len = out.metadata()?.len();
        let idx = match std::fs::read(idx_path(dir, run)) {
            Ok(idx) => idx,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        let records: Vec<[u8; 13]> = idx.chunks_exact(13).filter_map(|r| r.try_into().ok()).collect();
        Ok(Some(Self { out: std::io::BufReader::new(out), records: records.into_iter(), start: 0, len }))
    }

    /// The next block.
    pub fn next_block(&mut self) -> std::io::Result<Option<crate::db::OutputBlock>> {
        use std::io::Read;
        let start = self.start;
        let mut data = Vec::new();
        let mut chunks = Vec::new();
        while data.len() < BLOCK_BYTES {
            let Some(record) = self.records.next() else { break };
            let len = u64::from(u32::from_le_bytes([record[9], record[10], record[11], record[12]]));
            let len = len.min(self.len - (start + data.len() as u64));
            let before = data.len();
            (&mut self.out).take(len).read_to_end(&mut data)?;
            let read = data.len() - before;
            if read == 0 {
                break;
            }
            let at = i64::from_le_bytes(record[0..8].try_into().unwrap_or_default());
            let stream = if record[8] == Stream::Stderr as u8 { Stream::Stderr } else { Stream::Stdout };
            chunks.extend_from_slice(&chunk_record(stream, read, at));
        }
        if data.is_empty() {
            // Past the index: whatever is left, unindexed.
            (&mut self.out).take(BLOCK_BYTES as u64).read_to_end(&mut data)?;
            if data.is_empty() {
                return Ok(None);
            }
            chunks.extend_from_slice(&chunk_record(Stream::Stdout, data.len(), 0));
        }
        self.start += data.len() as u64;
        Ok(Some(crate::db::OutputBlock { start, data, chunks }))
    }
}

/// Output files a PostgreSQL-backed Sleuth kept in its data dir before output
/// moved into the database (postgres/0003): each run's file goes into the store
/// once — where the store has none of that run's output — and is renamed
/// `.imported`, so the old data dir's notebook reads whole after an upgrade.
/// Returns how many runs' output it took in.
pub async fn import_old_files(store: &Store, dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    let mut imported = 0;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(run) = name.strip_suffix(".out").and_then(|id| id.parse::<i64>().ok()) else { continue };
        let key = OutputKey::Run(run);
        match (store.output_len(key).await, store.run(run).await) {
            (Ok(0), Ok(Some(_))) => {}
            _ => continue,
        }
        let copied = async {
            let Some(mut blocks) = FileBlocks::open(dir, key)? else { return Ok(()) };
            while let Some(block) = blocks.next_block()? {
                store.append_output(key, block.start, &block.data, &block.chunks).await.map_err(store_error)?;
            }
            std::io::Result::Ok(())
        };
        match copied.await {
            Ok(()) => {
                for path in [out_path(dir, key), idx_path(dir, key)] {
                    let _ = std::fs::rename(
                        &path,
                        path.with_extension(format!(
                            "{}.imported",
                            path.extension().unwrap_or_default().to_string_lossy()
                        )),
                    );
                }
                imported += 1;
            }
            Err(e) => tracing::error!(run, "cannot take in the output file of an older Sleuth: {e}"),
        }
    }
    if imported > 0 {
        tracing::warn!(imported, "took the output files of an older Sleuth in {} into the database", dir.display());
    }
    imported
}

enum Sink {
    /// Plain blocking writes into the page cache (memcpy speed, a 1 MB buffer at
    /// a time). tokio::fs would copy every buffer once more and hop to a
    /// blocking thread per write, which cost a third of the ingest rate here.
    Files { out: BufWriter<std::fs::File>, idx: BufWriter<std::fs::File> },
    /// Blocks go to a task that commits them in order, so reading from SSH and
    /// writing to the database overlap; the bounded channel is the back-pressure.
    Store {
        blocks: mpsc::Sender<Block>,
        task: tokio::task::JoinHandle<std::io::Result<()>>,
        data: Vec<u8>,
        chunks: Vec<u8>,
        start: u64,
    },
}

/// How long a writer whose run has ended waits for a store that went away
/// before it leaves what it holds in the spill file (for the next start).
const WAIT_AFTER_END: std::time::Duration = std::time::Duration::from_secs(60);
/// Between attempts while the store refuses.
const RETRY_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

type Writing = std::pin::Pin<Box<dyn std::future::Future<Output = (Block, Result<(), crate::db::StoreError>)> + Send>>;

/// Commits blocks in order as they come and announces each new length. While
/// the store cannot take them (restarting, failing over, full) they are held
/// ([`held::Held`]) and receiving goes on, so the run's output keeps flowing;
/// they are written when it is back. Another error ends storing: the rest is
/// counted as missing. Either way the error says how many bytes and where.
async fn commit_blocks(
    store: Store,
    run: OutputKey,
    mut blocks: mpsc::Receiver<Block>,
    mut held: held::Held,
    progress: watch::Sender<Progress>,
) -> Result<(), std::io::Error> {
    use tokio::time::{Instant, sleep_until};
    let mut open = true;
    let mut writing: Option<Writing> = None;
    let mut retry_at: Option<Instant> = None;
    let mut outage: Option<(Instant, crate::db::StoreError)> = None;
    let mut ended_at: Option<Instant> = None;
    // Storing stopped for good: why, and the bytes not stored from then on.
    let mut failed: Option<String> = None;
    let mut missing = 0u64;
    loop {
        if writing.is_none() && retry_at.is_none() && failed.is_none() {
            match held.pop() {
                Ok(Some(block)) => {
                    let store = store.clone();
                    writing = Some(Box::pin(async move {
                        let done = store.append_output(run, block.start, &block.data, &block.chunks).await;
                        (block, done)
                    }));
                }
                Ok(None) => {}
                Err(e) => {
                    failed = Some(format!("the held output could not be read back from {}: {e}", held.path().display()))
                }
            }
        }
        if !open && writing.is_none() && (held.is_empty() || failed.is_some()) {
            break;
        }
        let give_up = ended_at.filter(|_| outage.is_some()).map(|at| at + WAIT_AFTER_END);
        tokio::select! {
            block = blocks.recv(), if open => match block {
                Some(block) if failed.is_some() => missing += block.data.len() as u64,
                Some(block) => {
                    let len = block.data.len() as u64;
                    if let Err(e) = held.push(block) {
                        failed = Some(format!("output could not be held for the store in {}: {e}", held.path().display()));
                        missing += len;
                    }
                }
                None => {
                    open = false;
                    ended_at = Some(Instant::now());
                }
            },
            (block, done) = crate::time::or_never(writing.as_mut()), if writing.is_some() => {
                writing = None;
                match done {
                    Ok(()) => {
                        let stop = block.start + block.data.len() as u64;
                        progress.send_modify(|p| p.len = stop);
                        if let Some((since, _)) = outage.take() {
                            tracing::warn!(?run, held = held.bytes(), "the store is back after {:.1} s: writing the output held meanwhile",
                                since.elapsed().as_secs_f64());
                        }
                    }
                    Err(e) if matches!(e.trouble(), crate::db::Trouble::Unavailable | crate::db::Trouble::Full) => {
                        if outage.is_none() {
                            tracing::warn!(?run, "the store cannot take output now, holding it: {e}");
                        }
                        if e.trouble() == crate::db::Trouble::Unavailable {
                            store.note_unreachable();
                        }
                        outage.get_or_insert((Instant::now(), e));
                        held.put_back(block);
                        retry_at = Some(Instant::now() + RETRY_EVERY);
                    }
                    Err(e) => {
                        missing += block.data.len() as u64 + held.bytes();
                        failed = Some(e.to_string());
                    }
                }
            },
            () = crate::time::or_never(retry_at.map(sleep_until)), if retry_at.is_some() => retry_at = None,
            () = crate::time::or_never(give_up.map(sleep_until)), if give_up.is_some() && writing.is_none() => {
                let Some((since, cause)) = outage.take() else { continue };
                let path = held.left_path();
                return Err(std::io::Error::other(match held.keep_all() {
                    Ok(bytes) => format!(
                        "{bytes} bytes are not in the database, which has refused them for {:.0} s ({cause}); \
                         they are kept in {} and written to the database as soon as it takes them (not counted here).",
                        since.elapsed().as_secs_f64(), path.display()
                    ),
                    Err(e) => format!("the database has refused output for {:.0} s ({cause}), and what was held could not be kept in {}: {e}",
                        since.elapsed().as_secs_f64(), path.display()),
                }));
            }
        }
    }
    match failed {
        None => Ok(()),
        Some(why) if missing > 0 => {
            Err(std::io::Error::other(format!("{why}; {missing} bytes from then on were not kept")))
        }
        Some(why) => Err(std::io::Error::other(why)),
    }
}

/// Appends chunks for one run. Counters are what the run row reports.
pub struct OutputWriter {
    sink: Sink,
    progress: watch::Sender<Progress>,
    pub len: u64,
    pub stdout: u64,
    pub stderr: u64,
    pub lines: u64,
}

impl OutputWriter {
    /// Bytes appended but not yet on the disk (the space they will take).
    pub fn buffered(&self) -> u64 {
        match &self.sink {
            Sink::Files { out, idx } => (out.buffer().len() + idx.buffer().len()) as u64,
            Sink::Store { .. } => 0,
        }
    }

    pub async fn append(&mut self, stream: Stream, bytes: &[u8], at_ms: i64) -> std::io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        let record = chunk_record(stream, bytes.len(), at_ms);
        match &mut self.sink {
            Sink::Files { out, idx } => {
                out.write_all(bytes)?;
                idx.write_all(&record)?;
            }
            Sink::Store { data, chunks, .. } => {
                data.extend_from_slice(bytes);
                chunks.extend_from_slice(&record);
            }
        }
        self.len += bytes.len() as u64;
        match stream {
            Stream::Stdout => self.stdout += bytes.len() as u64,
            Stream::Stderr => self.stderr += bytes.len() as u64,
        }
        self.lines += bytes.iter().filter(|&&b| b == b'\n').count() as u64;
        if matches!(&self.sink, Sink::Store { data, .. } if data.len() >= BLOCK_BYTES) {
            self.send_block().await?;
        }
        Ok(())
    }

    /// Makes everything appended so far readable (at once for files; once the
    /// block is committed for the store), and says so on the run's progress.
    pub async fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.sink {
            Sink::Files { out, idx } => {
                out.flush()?;
                idx.flush()?;
                let len = self.len;
                self.progress.send_modify(|p| p.len = len);
                Ok(())
            }
            Sink::Store { .. } => self.send_block().await,
        }
    }

    async fn send_block(&mut self) -> std::io::Result<()> {
        let Sink::Store { blocks, data, chunks, start, .. } = &mut self.sink else { return Ok(()) };
        if data.is_empty() {
            return Ok(());
        }
        let block = Block {
            start: *start,
            data: std::mem::replace(data, Vec::with_capacity(BLOCK_BYTES)),
            chunks: std::mem::take(chunks),
        };
        *start += block.data.len() as u64;
        blocks.send(block).await.map_err(|_| std::io::Error::other("the output writer stopped"))
    }

    /// Flushes and waits until everything is stored.
    pub async fn finish(mut self) -> std::io::Result<()> {
        self.flush().await?;
        match self.sink {
            Sink::Files { .. } => Ok(()),
            Sink::Store { blocks, task, .. } => {
                drop(blocks);
                match task.await {
                    Ok(result) => result,
                    Err(e) => Err(std::io::Error::other(e)),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn chunks_round_trip_by_stream_and_range_on_both_backends() {
        for (dir, _database, store) in crate::db::test_stores().await {
            let outputs = Outputs::for_store(&store, dir.path().join("runs"));
            let run = crate::db::tests_support::a_run(&store).await;
            let (progress, seen) = watch::channel(Progress::default());
            let mut w = outputs.writer(run, progress).unwrap();
            w.append(Stream::Stdout, b"out1\n", 1).await.unwrap();
            w.append(Stream::Stderr, b"err\xff\n", 2).await.unwrap();
            w.flush().await.unwrap();
            w.append(Stream::Stdout, b"out2", 3).await.unwrap();
            assert_eq!((w.len, w.stdout, w.stderr, w.lines), (14, 9, 5, 2));
            w.finish().await.unwrap();
            assert_eq!(seen.borrow().len, 14, "the last length readers may read is announced");
            assert_eq!(outputs.len(run).await.unwrap(), 14);
            assert_eq!(outputs.read_stream(run, Stream::Stdout).await.unwrap(), b"out1\nout2");
            assert_eq!(outputs.read_stream(run, Stream::Stderr).await.unwrap(), b"err\xff\n");
            assert_eq!(outputs.read_range(run, 5, 5).await.unwrap(), (b"err\xff\n".to_vec(), 14));
            assert_eq!(outputs.read_range(run, 3, 8).await.unwrap(), (b"1\nerr\xff\no".to_vec(), 14), "across blocks");
            assert_eq!(outputs.read_range(run, 99, 5).await.unwrap(), (vec![], 14));
            assert_eq!(outputs.read_range(run + 1, 0, 5).await.unwrap(), (vec![], 0));
            let whole: Vec<Bytes> = futures::StreamExt::collect::<Vec<_>>(outputs.whole(run.into()))
                .await
                .into_iter()
                .collect::<Result<_, _>>()
                .unwrap();
            assert_eq!(whole.concat(), b"out1\nerr\xff\nout2");
            outputs.remove(run).await;
            assert_eq!(outputs.len(run).await.unwrap(), 0);
        }
    }

    #[tokio::test]
    async fn a_megabyte_block_boundary_keeps_every_byte_in_order() {
        for (dir, _database, store) in crate::db::test_stores().await {
            let outputs = Outputs::for_store(&store, dir.path().join("runs"));
            let run = crate::db::tests_support::a_run(&store).await;
            let (progress, _) = watch::channel(Progress::default());
            let mut w = outputs.writer(run, progress).unwrap();
            let mut expected = Vec::new();
            for i in 0..300u32 {
                let line = format!("{i:05} {}\n", "x".repeat(10_000));
                w.append(Stream::Stdout, line.as_bytes(), i64::from(i)).await.unwrap();
                expected.extend_from_slice(line.as_bytes());
            }
            w.finish().await.unwrap();
            let (all, len) = outputs.read_range(run, 0, u64::MAX).await.unwrap();
            assert_eq!(len as usize, expected.len());
            assert!(all == expected, "{} bytes differ", all.len());
            let mid = BLOCK_BYTES as u64 - 7;
            let (part, _) = outputs.read_range(run, mid, 20).await.unwrap();
            assert_eq!(part, &expected[mid as usize..mid as usize + 20]);
        }
    }
}
