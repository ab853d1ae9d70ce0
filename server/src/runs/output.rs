//! A run's output on disk, so memory stays flat whatever a command prints.
//!
//! - `runs/{id}.out`: every byte as it arrived, stdout and stderr interleaved in
//!   arrival order. Offsets in the API are offsets into this file, and the raw
//!   download is this file.
//! - `runs/{id}.idx`: one 13-byte record per chunk: arrival time (Unix ms, i64
//!   LE), stream (1 stdout, 2 stderr), length (u32 LE). It tells which bytes came
//!   from which stream and when.

use std::io::{BufWriter, SeekFrom, Write};
use std::path::{Path, PathBuf};
use tokio::fs::File;
use tokio::io::{AsyncReadExt, AsyncSeekExt};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Stdout = 1,
    Stderr = 2,
}

pub fn out_path(dir: &Path, run: i64) -> PathBuf {
    dir.join(format!("{run}.out"))
}

fn idx_path(dir: &Path, run: i64) -> PathBuf {
    dir.join(format!("{run}.idx"))
}

/// Appends chunks for one run. Counters are what the run row reports.
///
/// Writes are plain blocking writes into the page cache (memcpy speed, a 1 MB
/// buffer at a time). tokio::fs would copy every buffer once more and hop to a
/// blocking thread per write, which cost a third of the ingest rate here.
pub struct OutputWriter {
    out: BufWriter<std::fs::File>,
    idx: BufWriter<std::fs::File>,
    pub len: u64,
    pub stdout: u64,
    pub stderr: u64,
    pub lines: u64,
}

impl OutputWriter {
    pub fn create(dir: &Path, run: i64) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let open = |path: PathBuf| std::fs::OpenOptions::new().create(true).append(true).open(path);
        let out = open(out_path(dir, run))?;
        let len = out.metadata()?.len();
        let idx = open(idx_path(dir, run))?;
        Ok(Self {
            out: BufWriter::with_capacity(1024 * 1024, out),
            idx: BufWriter::new(idx),
            len,
            stdout: 0,
            stderr: 0,
            lines: 0,
        })
    }

    pub fn append(&mut self, stream: Stream, bytes: &[u8], at_ms: i64) -> std::io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        // SSH packets are at most 256 KB: a chunk always fits the u32 length.
        let len = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
        self.out.write_all(bytes)?;
        let mut record = [0u8; 13];
        record[0..8].copy_from_slice(&at_ms.to_le_bytes());
        record[8] = stream as u8;
        record[9..13].copy_from_slice(&len.to_le_bytes());
        self.idx.write_all(&record)?;
        self.len += bytes.len() as u64;
        match stream {
            Stream::Stdout => self.stdout += bytes.len() as u64,
            Stream::Stderr => self.stderr += bytes.len() as u64,
        }
        self.lines += bytes.iter().filter(|&&b| b == b'\n').count() as u64;
        Ok(())
    }

    /// Makes everything appended so far visible to readers.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()?;
        self.idx.flush()
    }
}

/// Up to `limit` bytes from `offset`, and the file's length.
pub async fn read_range(dir: &Path, run: i64, offset: u64, limit: u64) -> std::io::Result<(Vec<u8>, u64)> {
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

/// One stream's bytes (stdout or stderr), from the index. For tests and exports.
pub async fn read_stream(dir: &Path, run: i64, stream: Stream) -> std::io::Result<Vec<u8>> {
    let out = tokio::fs::read(out_path(dir, run)).await?;
    let idx = tokio::fs::read(idx_path(dir, run)).await?;
    let mut result = Vec::new();
    let mut at = 0usize;
    for record in idx.chunks_exact(13) {
        let len = u32::from_le_bytes([record[9], record[10], record[11], record[12]]) as usize;
        if record[8] == stream as u8
            && let Some(bytes) = out.get(at..at + len)
        {
            result.extend_from_slice(bytes);
        }
        at += len;
    }
    Ok(result)
}

pub async fn remove(dir: &Path, run: i64) {
    let _ = tokio::fs::remove_file(out_path(dir, run)).await;
    let _ = tokio::fs::remove_file(idx_path(dir, run)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn chunks_round_trip_by_stream_and_range() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = OutputWriter::create(dir.path(), 7).unwrap();
        w.append(Stream::Stdout, b"out1\n", 1).unwrap();
        w.append(Stream::Stderr, b"err\xff\n", 2).unwrap();
        w.append(Stream::Stdout, b"out2", 3).unwrap();
        w.flush().unwrap();
        assert_eq!((w.len, w.stdout, w.stderr, w.lines), (14, 9, 5, 2));
        assert_eq!(read_stream(dir.path(), 7, Stream::Stdout).await.unwrap(), b"out1\nout2");
        assert_eq!(read_stream(dir.path(), 7, Stream::Stderr).await.unwrap(), b"err\xff\n");
        assert_eq!(read_range(dir.path(), 7, 5, 5).await.unwrap(), (b"err\xff\n".to_vec(), 14));
        assert_eq!(read_range(dir.path(), 7, 99, 5).await.unwrap(), (vec![], 14));
        assert_eq!(read_range(dir.path(), 8, 0, 5).await.unwrap(), (vec![], 0));
    }
}
