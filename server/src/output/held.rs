//! Output blocks the store cannot take yet (PostgreSQL restarting, failing
//! over, out of disk): held in their order, in memory up to [`MEMORY_BYTES`],
//! then in a spill file in the data directory, and written once it is back.
//! What is still held when a writer gives up on the store (it stayed away
//! past the wait) is left in `….left` and written as soon as the store takes
//! it (the replica's lease loop, [`replay`]); a spill file a dead process left
//! (`….blocks`) is written by the next server at its start.
//!
//! Spill record: start (u64 LE), data length (u32 LE), chunks length (u32 LE),
//! the data, the chunk records.

use crate::db::{OutputBlock, OutputKey, Store};
use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};

/// Held in memory before blocks go to the spill file.
pub const MEMORY_BYTES: usize = 16 * 1024 * 1024;

/// The spill file of an output: `DIR/spill/run-{id}.blocks` or `log-{id}.blocks`.
pub fn spill_path(dir: &Path, key: OutputKey) -> PathBuf {
    let name = match key {
        OutputKey::Run(id) => format!("run-{id}.blocks"),
        OutputKey::Log(id) => format!("log-{id}.blocks"),
    };
    dir.join("spill").join(name)
}

fn key_of(name: &str) -> Option<OutputKey> {
    let stem = name.strip_suffix(".blocks").or_else(|| name.strip_suffix(".left"))?;
    if let Some(id) = stem.strip_prefix("run-") {
        return id.parse().ok().map(OutputKey::Run);
    }
    stem.strip_prefix("log-").and_then(|id| id.parse().ok()).map(OutputKey::Log)
}

/// Blocks waiting for the store, oldest first.
pub struct Held {
    path: PathBuf,
    memory: VecDeque<OutputBlock>,
    memory_bytes: usize,
    spill: Option<Spill>,
    /// Data bytes held, in memory and spilled.
    bytes: u64,
}

struct Spill {
    write: File,
    read: BufReader<File>,
    /// Records written and not read back yet.
    waiting: usize,
}

impl Held {
    pub fn new(path: PathBuf) -> Self {
        Self { path, memory: VecDeque::new(), memory_bytes: 0, spill: None, bytes: 0 }
    }

    pub fn is_empty(&self) -> bool {
        self.memory.is_empty() && self.spill.as_ref().is_none_or(|s| s.waiting == 0)
    }

    /// Data bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Whether some of it is in the spill file now.
    pub fn spilled(&self) -> bool {
        self.spill.is_some()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Holds `block` after everything held. Once blocks spill, every later one
    /// does too, so that they are read back in order.
    pub fn push(&mut self, block: OutputBlock) -> std::io::Result<()> {
        let len = block.data.len();
        if self.spill.is_none() && self.memory_bytes + len <= MEMORY_BYTES {
            self.memory_bytes += len;
            self.bytes += len as u64;
            self.memory.push_back(block);
            return Ok(());
        }
        let spill = match &mut self.spill {
            Some(spill) => spill,
            None => self.spill.insert(Spill::create(&self.path)?),
        };
        write_record(&mut spill.write, &block)?;
        spill.waiting += 1;
        self.bytes += len as u64;
        Ok(())
    }

    /// `block` back at the front: the store refused it.
    pub fn put_back(&mut self, block: OutputBlock) {
        self.memory_bytes += block.data.len();
        self.bytes += block.data.len() as u64;
        self.memory.push_front(block);
    }

    /// The oldest block held.
    pub fn pop(&mut self) -> std::io::Result<Option<OutputBlock>> {
        if let Some(block) = self.memory.pop_front() {
            self.memory_bytes -= block.data.len();
            self.bytes -= block.data.len() as u64;
            return Ok(Some(block));
        }
        let Some(spill) = &mut self.spill else { return Ok(None) };
        let block = if spill.waiting > 0 { read_record(&mut spill.read)? } else { None };
        match &block {
            Some(block) => {
                spill.waiting -= 1;
                self.bytes -= block.data.len() as u64;
            }
            None => spill.waiting = 0,
        }
        if spill.waiting == 0 {
            self.spill = None;
            let _ = std::fs::remove_file(&self.path);
        }
        Ok(block)
    }

    /// Where [`Held::keep_all`] leaves what it held.
    pub fn left_path(&self) -> PathBuf {
        self.path.with_extension("left")
    }

    /// Everything held, written in order to [`Held::left_path`] (giving up on
    /// the store: [`replay`] writes it later). Returns the bytes kept.
    pub fn keep_all(mut self) -> std::io::Result<u64> {
        let bytes = self.bytes;
        let left = self.left_path();
        let tmp = self.path.with_extension("tmp");
        if let Some(dir) = tmp.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut out = std::io::BufWriter::new(File::create(&tmp)?);
        while let Some(block) = self.pop()? {
            write_record(&mut out, &block)?;
        }
        out.into_inner().map_err(std::io::IntoInnerError::into_error)?.sync_all()?;
        std::fs::rename(&tmp, &left)?;
        Ok(bytes)
    }
}

impl Spill {
    fn create(path: &Path) -> std::io::Result<Self> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let write = std::fs::OpenOptions::new().create(true).write(true).truncate(true).open(path)?;
        let read = BufReader::new(File::open(path)?);
        Ok(Self { write, read, waiting: 0 })
    }
}

fn write_record(out: &mut impl Write, block: &OutputBlock) -> std::io::Result<()> {
    let too_long = || std::io::Error::other("an output block over 4 GB");
    let mut head = [0u8; 16];
    head[0..8].copy_from_slice(&block.start.to_le_bytes());
    head[8..12].copy_from_slice(&u32::try_from(block.data.len()).map_err(|_| too_long())?.to_le_bytes());
    head[12..16].copy_from_slice(&u32::try_from(block.chunks.len()).map_err(|_| too_long())?.to_le_bytes());
    out.write_all(&head)?;
    out.write_all(&block.data)?;
    out.write_all(&block.chunks)
}

/// The next record, `None` at the end (a record cut short by a crash is the end).
fn read_record(input: &mut impl Read) -> std::io::Result<Option<OutputBlock>> {
    let mut head = [0u8; 16];
    if let Err(e) = input.read_exact(&mut head) {
        return if e.kind() == std::io::ErrorKind::UnexpectedEof { Ok(None) } else { Err(e) };
    }
    let start = u64::from_le_bytes(head[0..8].try_into().unwrap_or_default());
    let data_len = u32::from_le_bytes(head[8..12].try_into().unwrap_or_default()) as usize;
    let chunks_len = u32::from_le_bytes(head[12..16].try_into().unwrap_or_default()) as usize;
    let mut data = vec![0u8; data_len];
    let mut chunks = vec![0u8; chunks_len];
    match input.read_exact(&mut data).and_then(|()| input.read_exact(&mut chunks)) {
        Ok(()) => Ok(Some(OutputBlock { start, data, chunks })),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
        Err(e) => Err(e),
    }
}

/// Writes what writers left for the store under `dir` (`.left`; at a start,
/// `starting`, also the spill files of a process that died: `.blocks`) and
/// removes each once stored; one the store still refuses stays for the next
/// try. Returns the bytes stored.
pub async fn replay(store: &Store, dir: &Path, starting: bool) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir.join("spill")) else { return 0 };
    let mut stored = 0;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !starting && !name.ends_with(".left") {
            continue; // A running writer's.
        }
        let Some(key) = key_of(&name) else { continue };
        let path = entry.path();
        match replay_one(store, key, &path).await {
            Ok(bytes) => {
                tracing::warn!(?key, bytes, "stored the output an earlier server held in {}", path.display());
                stored += bytes;
                let _ = std::fs::remove_file(&path);
            }
            Err(e) => tracing::error!(?key, "cannot store the output held in {}: {e}", path.display()),
        }
    }
    stored
}

async fn replay_one(store: &Store, key: OutputKey, path: &Path) -> Result<u64, Box<dyn std::error::Error>> {
    let mut input = BufReader::new(File::open(path)?);
    let mut bytes = 0;
    while let Some(block) = read_record(&mut input)? {
        store.append_output(key, block.start, &block.data, &block.chunks).await?;
        bytes += block.data.len() as u64;
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(start: u64, len: usize, fill: u8) -> OutputBlock {
        OutputBlock { start, data: vec![fill; len], chunks: vec![fill; 13] }
    }

    #[test]
    fn blocks_come_back_in_order_through_memory_and_the_spill_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = spill_path(dir.path(), OutputKey::Run(7));
        let mut held = Held::new(path.clone());
        let big = MEMORY_BYTES / 3 + 1;
        let mut start = 0;
        for i in 0..6u8 {
            held.push(block(start, big, i)).unwrap();
            start += big as u64;
        }
        assert!(held.spilled() && path.exists(), "past the memory's share, blocks spill");
        assert_eq!(held.bytes(), 6 * big as u64);
        // The first comes back, is refused, and is put back at the front.
        let first = held.pop().unwrap().unwrap();
        assert_eq!(first.data[0], 0);
        held.put_back(first);
        let mut seen = Vec::new();
        while let Some(b) = held.pop().unwrap() {
            seen.push((b.start, b.data[0], b.data.len(), b.chunks.len()));
            if b.data[0] == 3 {
                // Pushed while reading back: after everything already held.
                held.push(block(start, 10, 9)).unwrap();
            }
        }
        let order: Vec<u8> = seen.iter().map(|s| s.1).collect();
        assert_eq!(order, [0, 1, 2, 3, 4, 5, 9]);
        assert!(seen.windows(2).all(|w| w[0].0 + w[0].2 as u64 == w[1].0), "contiguous: {seen:?}");
        assert!(held.is_empty() && !held.spilled() && !path.exists(), "the drained spill file is removed");
        assert_eq!(held.bytes(), 0);
    }

    #[tokio::test]
    async fn a_spill_file_left_behind_is_stored_at_the_next_start_once() {
        // Only PostgreSQL keeps output in the store (SQLite writes files).
        for (dir, _database, store) in crate::db::test_stores().await {
            if store.backend() != crate::db::Backend::Postgres {
                continue;
            }
            let run = crate::db::tests_support::a_run(&store).await;
            let mut held = Held::new(spill_path(dir.path(), OutputKey::Run(run)));
            held.push(OutputBlock {
                start: 0,
                data: b"held\n".to_vec(),
                chunks: crate::output::chunk_record_for_tests(5),
            })
            .unwrap();
            held.push(OutputBlock {
                start: 5,
                data: b"more".to_vec(),
                chunks: crate::output::chunk_record_for_tests(4),
            })
            .unwrap();
            held.keep_all().unwrap();
            // Another block was stored before the process gave up: written again, it is the same block.
            store
                .append_output(OutputKey::Run(run), 0, b"held\n", &crate::output::chunk_record_for_tests(5))
                .await
                .unwrap();
            assert_eq!(replay(&store, dir.path(), false).await, 9);
            assert_eq!(store.output_len(OutputKey::Run(run)).await.unwrap(), 9);
            assert_eq!(store.output_range(OutputKey::Run(run), 0, 9).await.unwrap(), b"held\nmore");
            assert!(!spill_path(dir.path(), OutputKey::Run(run)).with_extension("left").exists());
            assert_eq!(replay(&store, dir.path(), true).await, 0, "once");
        }
    }

    #[test]
    fn keeping_all_writes_memory_then_spill_in_order_and_a_cut_record_ends_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = spill_path(dir.path(), OutputKey::Log(3));
        let mut held = Held::new(path.clone());
        let big = MEMORY_BYTES / 2;
        held.push(block(0, big, 1)).unwrap();
        held.push(block(big as u64, big, 2)).unwrap();
        held.push(block(2 * big as u64, 5, 3)).unwrap();
        assert!(held.spilled());
        assert_eq!(held.keep_all().unwrap(), 2 * big as u64 + 5);
        let left = path.with_extension("left");
        assert!(!path.exists());
        assert_eq!(key_of(&left.file_name().unwrap().to_string_lossy()), Some(OutputKey::Log(3)));
        let bytes = std::fs::read(&left).unwrap();
        let mut input = &bytes[..];
        let starts: Vec<u64> = std::iter::from_fn(|| read_record(&mut input).unwrap()).map(|b| b.start).collect();
        assert_eq!(starts, [0, big as u64, 2 * big as u64]);
        let mut cut = &bytes[..bytes.len() - 3];
        let whole: Vec<u64> = std::iter::from_fn(|| read_record(&mut cut).unwrap()).map(|b| b.start).collect();
        assert_eq!(whole, [0, big as u64], "a record cut by a crash is where the file ends");
        assert_eq!(key_of("run-x.blocks"), None);
        assert_eq!(key_of("run-12.tmp"), None);
    }
}
