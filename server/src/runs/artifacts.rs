//! Files as evidence: after a run, the files in its directory that its step's
//! globs name are fetched over SFTP and kept with it (`run_logs`, kind
//! `artifact`; their bytes like output, `crate::output`), each with its size and
//! sha256.
//!
//! Nothing outside the run's directory is read: the directory is walked over
//! SFTP (not expanded by a shell), `..` never appears in a glob (checked when
//! the step is saved), and a symbolic link is followed only if its target,
//! resolved on the host, is inside the directory. Limits per file and per run
//! bound what is kept; a file over them, a link that leads out, a file that
//! changed while it was read are notes on the run, never a failed run.

use super::life::Context;
use crate::db::Store;
use crate::output::{OutputKey, Outputs, Progress, Stream};
use crate::ssh::Pool;
use domain::steps::command::ArtifactLimits;
use russh_sftp::client::SftpSession;
use sha2::{Digest, Sha256};
use tokio::io::AsyncReadExt;
use tokio::sync::watch;

/// Most files a run's directory is walked for, and how deep.
const MAX_ENTRIES: usize = 20_000;
const MAX_DEPTH: usize = 16;
/// Most artifacts kept per run.
const MAX_FILES: usize = 200;
/// Read size per SFTP request batch (the client pipelines requests under it).
const READ_BYTES: usize = 1024 * 1024;

/// Whether `path` (relative, `/`-separated) matches `glob`: `*` and `?` within
/// a name, `**` for any number of directories.
pub fn matches(glob: &str, path: &str) -> bool {
    let glob: Vec<&str> = glob.trim().trim_start_matches("./").split('/').filter(|p| !p.is_empty()).collect();
    let path: Vec<&str> = path.split('/').collect();
    match_parts(&glob, &path)
}

fn match_parts(glob: &[&str], path: &[&str]) -> bool {
    match (glob.first(), path.first()) {
        (None, None) => true,
        (Some(&"**"), _) => match_parts(&glob[1..], path) || (!path.is_empty() && match_parts(glob, &path[1..])),
        (Some(g), Some(p)) => match_name(g.as_bytes(), p.as_bytes()) && match_parts(&glob[1..], &path[1..]),
        _ => false,
    }
}

fn match_name(glob: &[u8], name: &[u8]) -> bool {
    match (glob.first(), name.first()) {
        (None, None) => true,
        (Some(b'*'), _) => match_name(&glob[1..], name) || (!name.is_empty() && match_name(glob, &name[1..])),
        (Some(b'?'), Some(_)) => match_name(&glob[1..], &name[1..]),
        (Some(g), Some(n)) if g == n => match_name(&glob[1..], &name[1..]),
        _ => false,
    }
}

/// A file found in the run's directory.
struct Found {
    /// Relative to the run's directory.
    name: String,
    /// Its path for SFTP (relative to the user's home).
    path: String,
    size: u64,
    mtime: Option<u32>,
}

/// What a fetch kept and said.
#[derive(Default)]
pub struct Fetched {
    pub kept: Vec<i64>,
    pub notes: Vec<String>,
    pub bytes: u64,
}

/// Fetches the files of run `run`'s directory (`dir`, relative to the home)
/// that `globs` name, within `limits`.
pub async fn fetch(
    sftp: &SftpSession,
    store: &Store,
    outputs: &Outputs,
    run: i64,
    dir: &str,
    globs: &[String],
    limits: ArtifactLimits,
) -> Fetched {
    let mut done = Fetched::default();
    let root = match sftp.canonicalize(dir).await {
        Ok(root) => root,
        Err(e) => {
            done.notes.push(format!("The run's directory {dir} could not be read: {e}."));
            return done;
        }
    };
    let mut found = Vec::new();
    walk(sftp, &root, dir, "", 0, globs, &mut found, &mut done.notes).await;
    found.sort_by(|a, b| a.name.cmp(&b.name));
    for glob in globs {
        if !found.iter().any(|f| matches(glob, &f.name)) {
            done.notes.push(format!("No file in the run's directory matches {glob:?}."));
        }
    }
    if found.len() > MAX_FILES {
        done.notes.push(format!("{} files match; the first {MAX_FILES} (by name) are kept.", found.len()));
        found.truncate(MAX_FILES);
    }
    for file in found {
        if file.size > limits.file_bytes {
            done.notes.push(format!(
                "{} is {}; the limit per file is {}: not kept.",
                file.name,
                domain::runs::human_bytes(file.size),
                domain::runs::human_bytes(limits.file_bytes)
            ));
            continue;
        }
        if done.bytes + file.size > limits.run_bytes {
            done.notes.push(format!(
                "{} ({}) would pass the limit of {} per run: not kept.",
                file.name,
                domain::runs::human_bytes(file.size),
                domain::runs::human_bytes(limits.run_bytes)
            ));
            continue;
        }
        match keep(sftp, store, outputs, run, &file, limits.file_bytes).await {
            Ok((id, size, note)) => {
                done.kept.push(id);
                done.bytes += size;
                done.notes.extend(note);
            }
            Err(e) => done.notes.push(format!("{} could not be fetched: {e}.", file.name)),
        }
    }
    done
}

/// Walks `path` (`rel` inside the run's directory) for files the globs name.
#[allow(clippy::too_many_arguments)]
async fn walk(
    sftp: &SftpSession,
    root: &str,
    path: &str,
    rel: &str,
    depth: usize,
    globs: &[String],
    found: &mut Vec<Found>,
    notes: &mut Vec<String>,
) {
    if depth > MAX_DEPTH {
        notes.push(format!("{rel}: deeper than {MAX_DEPTH} directories; not searched."));
        return;
    }
    let entries = match sftp.read_dir(path).await {
        Ok(entries) => entries,
        Err(e) => {
            notes.push(format!("{}: cannot be listed: {e}.", if rel.is_empty() { "." } else { rel }));
            return;
        }
    };
    for entry in entries {
        if found.len() >= MAX_ENTRIES {
            notes.push(format!("The run's directory has over {MAX_ENTRIES} files; the rest were not searched."));
            return;
        }
        let name = entry.file_name();
        if name == "." || name == ".." {
            continue;
        }
        let rel_name = if rel.is_empty() { name.clone() } else { format!("{rel}/{name}") };
        let full = format!("{path}/{name}");
        let mut meta = entry.metadata();
        if meta.is_symlink() {
            if !globs.iter().any(|g| matches(g, &rel_name)) {
                continue;
            }
            // Followed only to a file inside the run's directory.
            match sftp.canonicalize(full.clone()).await {
                Ok(target) if target.starts_with(&format!("{root}/")) => match sftp.metadata(full.clone()).await {
                    Ok(target_meta) if target_meta.is_regular() => meta = target_meta,
                    _ => {
                        notes.push(format!("{rel_name} is a link to something that is not a file: not kept."));
                        continue;
                    }
                },
                _ => {
                    notes.push(format!("{rel_name} is a link that leads out of the run's directory: not kept."));
                    continue;
                }
            }
        }
        if meta.is_dir() {
            Box::pin(walk(sftp, root, &full, &rel_name, depth + 1, globs, found, notes)).await;
        } else if meta.is_regular() && globs.iter().any(|g| matches(g, &rel_name)) {
            found.push(Found { name: rel_name, path: full, size: meta.len(), mtime: meta.mtime });
        }
    }
}

/// Reads one file into a new log of the run, hashing it as it comes; its id,
/// size, and a note if it changed meanwhile.
async fn keep(
    sftp: &SftpSession,
    store: &Store,
    outputs: &Outputs,
    run: i64,
    file: &Found,
    limit: u64,
) -> crate::error::Result<(i64, u64, Option<String>)> {
    let log = store.insert_log(run, crate::db::LogKind::Artifact, &file.name).await?;
    let (progress, _) = watch::channel(Progress::default());
    let read = async {
        let mut writer = outputs.writer(OutputKey::Log(log), progress).map_err(|e| e.to_string())?;
        let mut remote = sftp.open(file.path.clone()).await.map_err(|e| e.to_string())?;
        let mut hasher = Sha256::new();
        let mut buffer = vec![0u8; READ_BYTES];
        let mut size = 0u64;
        let mut truncated = false;
        loop {
            let n = remote.read(&mut buffer).await.map_err(|e| e.to_string())?;
            if n == 0 {
                break;
            }
            let n = if size + n as u64 > limit {
                truncated = true;
                usize::try_from(limit - size).unwrap_or(0)
            } else {
                n
            };
            hasher.update(&buffer[..n]);
            writer.append(Stream::Stdout, &buffer[..n], crate::time::now_ms()).await.map_err(|e| e.to_string())?;
            size += n as u64;
            if truncated {
                break;
            }
        }
        writer.finish().await.map_err(|e| e.to_string())?;
        let after = sftp.metadata(file.path.clone()).await.ok();
        let changed = truncated
            || after.as_ref().is_some_and(|m| m.len() != file.size || m.mtime != file.mtime)
            || size != file.size;
        let sha: String = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
        Ok::<_, String>((size, sha, changed))
    }
    .await;
    match read {
        Ok((size, sha, changed)) => {
            store.finish_log(log, size, Some(&sha)).await?;
            let note = changed.then(|| {
                format!(
                    "{} changed while it was read ({} when listed, {} read): what was read is kept.",
                    file.name,
                    domain::runs::human_bytes(file.size),
                    domain::runs::human_bytes(size)
                )
            });
            Ok((log, size, note))
        }
        Err(e) => {
            outputs.remove(OutputKey::Log(log)).await;
            store.delete_log(log).await?;
            Err(crate::error::Error::usage(e))
        }
    }
}

/// The files the plan names, from the run's directory (notes for the rest).
pub(super) async fn fetch_for_run(pool: &Pool, store: &Store, outputs: &Outputs, context: &Context<'_>) {
    let run = context.run.id;
    let limits = context.plan.artifact_limits.unwrap_or_default();
    let notes = match pool.sftp(context.target).await {
        Ok(sftp) => {
            let dir = super::dir::from_home(context.dir);
            let fetched = fetch(&sftp, store, outputs, run, &dir, &context.plan.artifacts, limits).await;
            tracing::info!(run, files = fetched.kept.len(), bytes = fetched.bytes, "fetched artifacts");
            fetched.notes
        }
        Err(e) => vec![format!("The artifacts could not be fetched: {e}")],
    };
    if !notes.is_empty()
        && let Err(e) = store.set_artifact_notes(run, &serde_json::to_string(&notes).unwrap_or_default()).await
    {
        tracing::error!(run, "cannot record the artifacts' notes: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_names_and_directories() {
        assert!(matches("result.json", "result.json"));
        assert!(!matches("result.json", "sub/result.json"));
        assert!(matches("*.json", "vllm-2026.json"));
        assert!(!matches("*.json", "a/b.json"));
        assert!(matches("profiles/*.json.gz", "profiles/rank0.json.gz"));
        assert!(matches("**/*.json", "a/b/c.json"));
        assert!(matches("**/*.json", "c.json"));
        assert!(matches("r?n.log", "run.log"));
        assert!(!matches("r?n.log", "rn.log"));
    }
}
