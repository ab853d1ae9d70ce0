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
    if !path.starts_with('/') {
        return Err(ApiError::invalid("Give an absolute path (starting with /).").into());
    }
    if let Some((start, end)) = range {
        if start == 0 {
            return Err(ApiError::invalid("Lines are numbered from 1.").into());
        }
        if start > end {
            return Err(ApiError::invalid(format!("The range starts after it ends ({start} > {end}).")).into());
        }
    }
    let sftp = pool.sftp(target).await?;
    let meta = sftp.metadata(path).await.map_err(|e| sftp_error(path, e))?;
    if meta.is_dir() {
        return Err(ApiError::invalid(format!("{path:?} is a directory; give a file (or grep the directory).")).into());
    }
    let size = meta.size.unwrap_or(0);
    if range.is_none() && size > WHOLE_FILE_LIMIT {
        return Err(ApiError::invalid(format!(
            "{path:?} is {} bytes; give a line range for files over {WHOLE_FILE_LIMIT} bytes.",
            size
        ))
        .into());
    }
    let mut file = sftp.open(path).await.map_err(|e| sftp_error(path, e))?;

    let (want_start, want_end) = range.unwrap_or((1, u64::MAX));
    let mut notes = Vec::new();
    let mut lines: Vec<Vec<u8>> = Vec::new();
    let mut current: Vec<u8> = Vec::new();
    let mut line_no: u64 = 1;
    let mut checked_binary = false;
    let mut buf = vec![0u8; 64 * 1024];
    let mut at_eof = false;
    let digest_here = size <= LOCAL_DIGEST_LIMIT;
    let mut hasher = Sha256::new();
    let (mut newlines, mut last_byte) = (0u64, None);
    let mut collecting = true;
    'read: loop {
        let n = file.read(&mut buf).await.map_err(|e| ApiError::invalid(format!("Reading {path:?} failed: {e}")))?;
        if n == 0 {
            at_eof = true;
            break;
        }
        let chunk = &buf[..n];
        if !checked_binary {
            checked_binary = true;
            if chunk[..chunk.len().min(8000)].contains(&0) {
                return Err(
                    ApiError::invalid(format!("{path:?} looks like a binary file (it contains NUL bytes).")).into()
                );
            }
        }
        if digest_here {
            hasher.update(chunk);
            newlines += chunk.iter().filter(|&&b| b == b'\n').count() as u64;
            last_byte = chunk.last().copied();
        }
        if !collecting {
            continue;
        }
        for &b in chunk {
            if line_no >= want_start && line_no <= want_end {
                current.push(b);
            }
            if b == b'\n' {
                if line_no >= want_start && line_no <= want_end {
                    lines.push(std::mem::take(&mut current));
                }
                line_no += 1;
                if line_no > want_end {
                    if !digest_here {
                        break 'read;
                    }
                    collecting = false;
                    break;
                }
            }
        }
    }
    if at_eof && !current.is_empty() {
        lines.push(current); // a last line without a newline
    }

    let (sha256, total_lines) = if digest_here {
        // A last line without a newline counts, as in an editor.
        let partial = last_byte.is_some_and(|b| b != b'\n');
        (Some(format!("{:x}", hasher.finalize())), Some(newlines + u64::from(partial)))
    } else {
        host_facts(pool, target, path, &mut notes).await?
    };

    let first = want_start;
    let last = first + lines.len() as u64 - 1;
    if lines.is_empty() {
        let total = total_lines.unwrap_or(line_no - 1);
        return Err(ApiError::invalid(format!("{path:?} has {total} lines; line {want_start} is past its end.")).into());
    }
    if range.is_some() && last < want_end {
        notes.push(format!("The file has {last} lines: showing {first}–{last} instead of {first}–{want_end}."));
    }
    let mut replaced = false;
    let mut cut = false;
    let lines = lines
        .into_iter()
        .map(|mut bytes| {
            if bytes.last() == Some(&b'\n') {
                bytes.pop();
            }
            if bytes.last() == Some(&b'\r') {
                bytes.pop();
            }
            let text = match String::from_utf8(bytes) {
                Ok(t) => t,
                Err(e) => {
                    replaced = true;
                    String::from_utf8_lossy(e.as_bytes()).into_owned()
                }
            };
            if text.chars().count() > MAX_LINE_CHARS {
                cut = true;
                let mut t: String = text.chars().take(MAX_LINE_CHARS).collect();
                t.push('…');
                t
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
    Ok(Fetched {
        path: path.to_string(),
        start: first,
        end: last,
        lines,
        total_lines,
        size,
        mtime: meta.mtime.map(u64::from),
        sha256,
        notes,
    })
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
