//! Reading a line range of a file on a host.
//!
//! The file is read over the host's long-lived SFTP session, so the path never
//! passes through a shell. The whole-file facts (line count, sha256) are computed
//! here for files up to [`LOCAL_DIGEST_LIMIT`], read whole — source files are
//! small, and this saves a session on the host (~100 ms of sshd work, the bulk of
//! a fetch). Larger files transfer only the bytes up to the last wanted line, and
//! their facts come from `sha256sum` and `awk` on the host with the path strictly
//! single-quoted: the file may be 100 MB and only its digest crosses the network.

use crate::ssh::{self, Pool, Target, quote::quote};
use domain::error::ApiError;
use russh_sftp::protocol::StatusCode;
use sha2::{Digest, Sha256};
use tokio::io::AsyncReadExt;

/// Without a range, a whole file is fetched only up to this size.
pub const WHOLE_FILE_LIMIT: u64 = 1024 * 1024;
/// Files up to this size are read whole and digested here.
pub const LOCAL_DIGEST_LIMIT: u64 = 8 * 1024 * 1024;
/// Longer lines are cut for display (and the cut is noted).
pub const MAX_LINE_CHARS: usize = 4_000;

#[derive(Clone, Debug)]
pub struct Fetched {
    pub path: String,
    /// The range actually shown, 1-based, inclusive.
    pub start: u64,
    pub end: u64,
    pub lines: Vec<String>,
    pub total_lines: Option<u64>,
    pub size: u64,
    /// Unix seconds.
    pub mtime: Option<u64>,
    pub sha256: Option<String>,
    /// What a reader should know: clamped ranges, cut lines, replaced bytes.
    pub notes: Vec<String>,
}

fn sftp_error(path: &str, e: russh_sftp::client::error::Error) -> ApiError {
    use russh_sftp::client::error::Error;
    match e {
        Error::Status(status) => match status.status_code {
            StatusCode::NoSuchFile => ApiError::not_found(format!("There is no file {path:?} on the host.")),
            StatusCode::PermissionDenied => ApiError::invalid(format!("Permission denied reading {path:?}.")),
            _ => ApiError::invalid(format!("The host could not read {path:?}: {}", status.error_message)),
        },
        other => ApiError::new(domain::error::ErrorCode::HostUnreachable, format!("Reading {path:?} failed: {other}")),
    }
}

/// Lines `start..=end` (or the whole file, up to [`WHOLE_FILE_LIMIT`]).
pub async fn fetch(
    pool: &Pool,
    target: &Target,
    path: &str,
    range: Option<(u64, u64)>,
) -> crate::error::Result<Fetched> {
    check_request(path, range)?;
    let sftp = pool.sftp(target).await?;
    let meta = sftp.metadata(path).await.map_err(|e| sftp_error(path, e))?;
    if meta.is_dir() {
        return Err(ApiError::invalid(format!("{path:?} is a directory; give a file (or grep the directory).")).into());
    }
    let size = meta.size.unwrap_or(0);
    if range.is_none() && size > WHOLE_FILE_LIMIT {
        return Err(ApiError::invalid(format!(
            "{path:?} is {size} bytes; give a line range for files over {WHOLE_FILE_LIMIT} bytes."
        ))
        .into());
    }
    let mut file = sftp.open(path).await.map_err(|e| sftp_error(path, e))?;
    let (want_start, want_end) = range.unwrap_or((1, u64::MAX));
    let mut lines = Lines::new(want_start, want_end, size <= LOCAL_DIGEST_LIMIT);
    read_into(&mut file, path, &mut lines).await?;

    let mut notes = Vec::new();
    let seen_lines = lines.line_no - 1;
    let (sha256, total_lines, wanted) = match lines.finish() {
        (Some(whole), wanted) => (Some(whole.sha256), Some(whole.lines), wanted),
        (None, wanted) => {
            let (sha256, total) = host_facts(pool, target, path, &mut notes).await?;
            (sha256, total, wanted)
        }
    };
    if wanted.is_empty() {
        let total = total_lines.unwrap_or(seen_lines);
        return Err(ApiError::invalid(format!("{path:?} has {total} lines; line {want_start} is past its end.")).into());
    }
    let (first, last) = (want_start, want_start + wanted.len() as u64 - 1);
    if range.is_some() && last < want_end {
        notes.push(format!("The file has {last} lines: showing {first}–{last} instead of {first}–{want_end}."));
    }
    Ok(Fetched {
        path: path.to_string(),
        start: first,
        end: last,
        lines: shown(wanted, &mut notes),
        total_lines,
        size,
        mtime: meta.mtime.map(u64::from),
        sha256,
        notes,
    })
}

/// What can be refused before the host is asked.
fn check_request(path: &str, range: Option<(u64, u64)>) -> crate::error::Result<()> {
    if !path.starts_with('/') {
        return Err(ApiError::invalid("Give an absolute path (starting with /).").into());
    }
    match range {
        Some((0, _)) => Err(ApiError::invalid("Lines are numbered from 1.").into()),
        Some((start, end)) if start > end => {
            Err(ApiError::invalid(format!("The range starts after it ends ({start} > {end}).")).into())
        }
        _ => Ok(()),
    }
}

/// Reads `file` into `lines` until it has what it needs (or the end).
async fn read_into(file: &mut russh_sftp::client::fs::File, path: &str, lines: &mut Lines) -> crate::error::Result<()> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut first = true;
    loop {
        let n = file.read(&mut buf).await.map_err(|e| ApiError::invalid(format!("Reading {path:?} failed: {e}")))?;
        if n == 0 {
            lines.at_eof();
            return Ok(());
        }
        let chunk = &buf[..n];
        if std::mem::take(&mut first) && chunk[..chunk.len().min(8000)].contains(&0) {
            return Err(ApiError::invalid(format!("{path:?} looks like a binary file (it contains NUL bytes).")).into());
        }
        if lines.take(chunk) == Wants::Nothing {
            return Ok(());
        }
    }
}

/// Whether [`Lines`] needs more of the file.
#[derive(Debug, PartialEq)]
enum Wants {
    More,
    Nothing,
}

/// A file's bytes, chunk by chunk, into the wanted lines, and (for a file
/// digested here) its sha256 and line count, which need all of it.
struct Lines {
    want_start: u64,
    want_end: u64,
    wanted: Vec<Vec<u8>>,
    current: Vec<u8>,
    line_no: u64,
    /// `None` for a file too big to digest here.
    digest: Option<(Sha256, u64, Option<u8>)>,
}

/// A whole file's facts.
struct WholeFile {
    sha256: String,
    lines: u64,
}

impl Lines {
    fn new(want_start: u64, want_end: u64, digest_here: bool) -> Self {
        Self {
            want_start,
            want_end,
            wanted: Vec::new(),
            current: Vec::new(),
            line_no: 1,
            digest: digest_here.then(|| (Sha256::new(), 0, None)),
        }
    }

    fn take(&mut self, chunk: &[u8]) -> Wants {
        if let Some((hasher, newlines, last_byte)) = &mut self.digest {
            hasher.update(chunk);
            *newlines += chunk.iter().filter(|&&b| b == b'\n').count() as u64;
            *last_byte = chunk.last().copied();
        }
        if self.line_no > self.want_end {
            return Wants::More; // only the digest still reads
        }
        for &b in chunk {
            let wanted = self.line_no >= self.want_start && self.line_no <= self.want_end;
            if wanted {
                self.current.push(b);
            }
            if b == b'\n' {
                if wanted {
                    self.wanted.push(std::mem::take(&mut self.current));
                }
                self.line_no += 1;
                if self.line_no > self.want_end {
                    return if self.digest.is_some() { Wants::More } else { Wants::Nothing };
                }
            }
        }
        Wants::More
    }

    /// The file ended: a last line without a newline is a line.
    fn at_eof(&mut self) {
        if !self.current.is_empty() {
            self.wanted.push(std::mem::take(&mut self.current));
        }
    }

    fn finish(self) -> (Option<WholeFile>, Vec<Vec<u8>>) {
        let digest = self.digest.map(|(hasher, newlines, last_byte)| {
            // A last line without a newline counts, as in an editor.
            let partial = last_byte.is_some_and(|b| b != b'\n');
            WholeFile { sha256: format!("{:x}", hasher.finalize()), lines: newlines + u64::from(partial) }
        });
        (digest, self.wanted)
    }
}

/// The lines as shown: without line ends, invalid UTF-8 replaced, long lines
/// cut, each of which is noted once.
fn shown(lines: Vec<Vec<u8>>, notes: &mut Vec<String>) -> Vec<String> {
    let (mut replaced, mut cut) = (false, false);
    let lines = lines
        .into_iter()
        .map(|mut bytes| {
            if bytes.last() == Some(&b'\n') {
                bytes.pop();
            }
            if bytes.last() == Some(&b'\r') {
                bytes.pop();
            }
            let text = String::from_utf8(bytes).unwrap_or_else(|e| {
                replaced = true;
                String::from_utf8_lossy(e.as_bytes()).into_owned()
            });
            if text.chars().count() > MAX_LINE_CHARS {
                cut = true;
                text.chars().take(MAX_LINE_CHARS).chain(['…']).collect()
            } else {
                text
            }
        })
        .collect();
    if replaced {
        notes.push("Some bytes are not UTF-8 and are shown as �.".into());
    }
    if cut {
        notes.push(format!("Lines longer than {MAX_LINE_CHARS} characters are cut."));
    }
    lines
}

/// sha256 and line count of a large file, computed on the host; the path is one quoted word.
async fn host_facts(
    pool: &Pool,
    target: &Target,
    path: &str,
    notes: &mut Vec<String>,
) -> crate::error::Result<(Option<String>, Option<u64>)> {
    let q = quote(path);
    // awk counts a last line without a newline, as an editor does (wc -l does not).
    let facts =
        ssh::exec::capture(pool, target, &format!("sha256sum < {q} && awk 'END {{ print NR }}' < {q}"), 4096).await?;
    let text = String::from_utf8_lossy(&facts.stdout);
    let mut words = text.split_whitespace();
    let sha256 = words.next().filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit())).map(str::to_string);
    let total_lines: Option<u64> = words.nth(1).and_then(|n| n.parse().ok());
    if sha256.is_none() {
        notes.push("The host did not report a sha256 (is sha256sum installed?).".into());
    }
    Ok((sha256, total_lines))
}

/// `module` (e.g. `vllm.distributed.device_communicators.custom_all_reduce`) →
/// its source file, as `python` on the host resolves it (without importing it).
pub async fn resolve_module(pool: &Pool, target: &Target, python: &str, module: &str) -> crate::error::Result<String> {
    let valid = |s: &str| {
        !s.is_empty() && s.split('.').all(|p| !p.is_empty() && p.chars().all(|c| c == '_' || c.is_ascii_alphanumeric()))
    };
    if !valid(module) {
        return Err(ApiError::invalid(format!("{module:?} is not a Python module name.")).into());
    }
    let program = "import importlib.util, sys\nspec = importlib.util.find_spec(sys.argv[1])\nprint(spec.origin if spec and spec.origin else '')";
    let script = format!("{} -c {} {}", quote(python), quote(program), quote(module));
    let out = ssh::exec::capture(pool, target, &script, 64 * 1024).await?;
    let origin = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if out.exit_code != Some(0) || !origin.starts_with('/') {
        let err = String::from_utf8_lossy(&out.stderr);
        let why = err.lines().last().unwrap_or("no source file").to_string();
        return Err(ApiError::invalid(format!("{python} could not resolve {module}: {why}")).into());
    }
    Ok(origin)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &[u8], chunk: usize, range: (u64, u64), digest: bool) -> (Option<(String, u64)>, Vec<String>) {
        let mut lines = Lines::new(range.0, range.1, digest);
        for part in text.chunks(chunk) {
            if lines.take(part) == Wants::Nothing {
                break;
            }
        }
        lines.at_eof();
        let (whole, wanted) = lines.finish();
        (whole.map(|w| (w.sha256, w.lines)), wanted.into_iter().map(|l| String::from_utf8(l).unwrap()).collect())
    }

    #[test]
    fn lines_are_cut_out_of_chunks_anywhere() {
        let text = b"one\ntwo\r\nthree\nfour";
        for chunk in [1, 2, 3, 5, 64] {
            let (whole, wanted) = read(text, chunk, (2, 3), true);
            assert_eq!(wanted, ["two\r\n", "three\n"], "chunks of {chunk}");
            let (sha, lines) = whole.expect("digested here");
            assert_eq!(lines, 4, "a last line without a newline counts");
            assert_eq!(sha, format!("{:x}", Sha256::digest(text)));
            assert_eq!(read(text, chunk, (3, 9), false).1, ["three\n", "four"], "to the end");
        }
    }

    #[test]
    fn a_big_file_is_read_only_to_its_last_wanted_line() {
        let mut lines = Lines::new(1, 1, false);
        assert_eq!(lines.take(b"a\nb\n"), Wants::Nothing);
        let (whole, wanted) = lines.finish();
        assert!(whole.is_none());
        assert_eq!(wanted, [b"a\n".to_vec()]);
    }

    #[test]
    fn shown_lines_lose_their_ends_and_say_what_was_changed() {
        let mut notes = Vec::new();
        let long = vec![b'x'; MAX_LINE_CHARS + 1];
        let shown = shown(vec![b"a\r\n".to_vec(), vec![0xff, b'\n'], long], &mut notes);
        assert_eq!(shown[0], "a");
        assert_eq!(shown[1], "\u{fffd}");
        assert!(shown[2].ends_with('…') && shown[2].chars().count() == MAX_LINE_CHARS + 1);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(check_request("relative", None).is_err());
        assert!(check_request("/a", Some((0, 3))).is_err());
        assert!(check_request("/a", Some((5, 3))).is_err());
        assert!(check_request("/a", Some((3, 3))).is_ok());
    }
}
