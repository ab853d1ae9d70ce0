//! A patch as a run's arm (#52): applied on the host before the run, put back
//! after it whatever happened, each step checked by sha256 and recorded
//! (`run_patches`) before the host is touched, so that a restart — of any
//! replica — puts back what a run left applied.
//!
//! Applying reads each file's text, checks it is the patch's base, applies
//! the diff to it here and has the host write it (`host::apply`, which checks
//! every base again and writes nothing unless all match). Putting back writes
//! the original only over what the patch wrote; a file changed since is left
//! alone and, like an original that will not go back, makes the host dirty.

use super::diff;
use super::host::{self, Change, Said, Written};
use crate::db::{RunPatchRow, Store};
use crate::ssh::{Pool, Target};
use domain::steps::patch::{ArmFile, ArmState, Expectation, ExpectationMet, PatchFile, RunPatch};
use serde::{Deserialize, Serialize};

/// The most a patch's files may hold together, read to be patched.
const MAX_TEXT_BYTES: usize = 64 << 20;

/// A run's patch as its plan keeps it: fixed when the run is queued, so an
/// edit of the patch step later does not change what a queued run applies.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PlanPatch {
    pub step: i64,
    pub diff: String,
    pub files: Vec<PatchFile>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caches: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expect: Vec<Expectation>,
}

/// A patch applied for a run: what putting it back needs.
#[derive(Clone, Debug)]
pub struct Applied {
    pub run: i64,
    pub step: i64,
    pub keep: String,
    pub files: Vec<ArmFile>,
    /// What applying it said (where hunks went when applied by context).
    pub said: Option<String>,
}

/// Why a patch was not applied for a run: the run's error, nothing written.
#[derive(Debug, thiserror::Error)]
pub enum NotApplied {
    #[error("The patch could not be recorded before it was applied: {0}")]
    Unrecorded(#[source] crate::db::StoreError),
    #[error("Patch {step}'s diff: {source}")]
    Diff { step: i64, source: diff::DiffError },
    #[error("Patch {step}'s files could not be read: {source}")]
    Unread { step: i64, source: crate::error::Error },
    #[error("Patch {step} was not applied: {source}")]
    Host { step: i64, source: crate::error::Error },
    #[error("{path} is not UTF-8 text; a patch changes text.")]
    NotText { path: String },
    /// A file's base, place or answer refused it; the sentence says which and why.
    #[error("{0}")]
    Refused(String),
}

fn short(hash: &str) -> &str {
    &hash[..hash.len().min(12)]
}

fn files_json(files: &[ArmFile]) -> String {
    serde_json::to_string(files).unwrap_or_else(|_| "[]".into())
}

/// Applies `patch` for run `run` (its originals kept under `keep`, relative
/// to the home directory; `by_context`: see [`changes`]). `Err`: why the run
/// does not start, nothing left written (the host's script checks every base
/// before it writes any).
pub async fn apply(
    store: &Store,
    pool: &Pool,
    target: &Target,
    run: i64,
    keep: &str,
    patch: &PlanPatch,
    by_context: bool,
) -> Result<Applied, NotApplied> {
    let mut files: Vec<ArmFile> = patch
        .files
        .iter()
        .map(|f| ArmFile { path: f.path.clone(), base: f.base.clone().unwrap_or_default(), ..ArmFile::default() })
        .collect();
    store
        .begin_run_patch(run, patch.step, &target.name, keep, &files_json(&files))
        .await
        .map_err(NotApplied::Unrecorded)?;
    let (changes, placings) = match changes(pool, target, patch, by_context).await {
        Ok(done) => done,
        Err(why) => return refused(store, run, &files, why).await,
    };
    for (file, change) in files.iter_mut().zip(&changes) {
        file.base = change.base.clone();
    }
    let said = match host::apply(pool, target, keep, &changes).await {
        Ok(said) => said,
        Err(source) => return refused(store, run, &files, NotApplied::Host { step: patch.step, source }).await,
    };
    let mut problems = Vec::new();
    for (file, said) in files.iter_mut().zip(&said) {
        match said {
            Said::Applied(hash) => file.applied = Some(hash.clone()),
            Said::Hash(_) => {} // its base held; another file's did not
            other => problems.push(format!("{}: {}", file.path, said_text(other, &file.base))),
        }
    }
    if !problems.is_empty() || files.iter().any(|f| f.applied.is_none()) {
        if files.iter().any(|f| f.applied.is_some()) {
            // Every base held and some files were renamed into place before
            // one could not be: those are put back now, as after a run.
            let partly = Applied { run, step: patch.step, keep: keep.to_string(), files, said: None };
            let back = revert(store, pool, target, &partly).await;
            let why = format!("Patch {} was not applied: {}. {}", patch.step, problems.join("; "), back.text);
            if back.state == ArmState::Dirty {
                return Err(NotApplied::Refused(why)); // recorded dirty by the revert
            }
            return refused(store, run, &back.files, NotApplied::Refused(why)).await;
        }
        let why = format!("Patch {} was not applied; nothing was written. {}", patch.step, problems.join("; "));
        return refused(store, run, &files, NotApplied::Refused(why)).await;
    }
    let mut said = format!("Patch {} applied: {} file(s), each written and hashed.", patch.step, files.len());
    if !placings.is_empty() {
        said.push_str(&format!(" Applied by context where the base differs: {}.", placings.join("; ")));
    }
    if let Err(e) = store.set_run_patch(run, ArmState::Applied, &files_json(&files), &said).await {
        tracing::error!(run, "cannot record that patch {} is applied: {e}", patch.step);
    }
    let said = (!placings.is_empty()).then_some(said);
    Ok(Applied { run, step: patch.step, keep: keep.to_string(), files, said })
}

/// The arm does not start: recorded, and the reason handed on.
async fn refused(store: &Store, run: i64, files: &[ArmFile], why: NotApplied) -> Result<Applied, NotApplied> {
    if let Err(e) = store.set_run_patch(run, ArmState::Refused, &files_json(files), &why.to_string()).await {
        tracing::error!(run, "cannot record that its patch was refused: {e}");
    }
    Err(why)
}

/// Each file's new text: its text on the host, which must be its base, with
/// the diff applied. `by_context` (a replay, on another host or version): a
/// file whose base differs is patched where its hunks' context is found, and
/// where each went is said.
async fn changes(
    pool: &Pool,
    target: &Target,
    patch: &PlanPatch,
    by_context: bool,
) -> Result<(Vec<Change>, Vec<String>), NotApplied> {
    let step = patch.step;
    let mut placings = Vec::new();
    let parsed = diff::parse(&patch.diff).map_err(|source| NotApplied::Diff { step, source })?;
    let paths: Vec<String> = patch.files.iter().map(|f| f.path.clone()).collect();
    let texts = host::texts(pool, target, &paths, MAX_TEXT_BYTES)
        .await
        .map_err(|source| NotApplied::Unread { step, source })?;
    let mut changes = Vec::new();
    for ((file, text), part) in patch.files.iter().zip(texts).zip(&parsed) {
        let base = file.base.clone().unwrap_or_default();
        let text = match text {
            Ok(text) => text,
            Err(said) => {
                return Err(NotApplied::Refused(format!(
                    "Patch {} was not applied: {}: {}",
                    patch.step,
                    file.path,
                    said_text(&said, &base)
                )));
            }
        };
        let found = crate::ids::sha256_hex(&text);
        if found != base && !by_context {
            return Err(NotApplied::Refused(format!(
                "Patch {} was not applied: {} changed since the patch was made (expected sha256 {}…, found {}…).",
                patch.step,
                file.path,
                short(&base),
                short(&found)
            )));
        }
        let text = String::from_utf8(text).map_err(|_| NotApplied::NotText { path: file.path.clone() })?;
        let new = match diff::apply(&text, part) {
            Ok((new, placed)) => {
                if found != base {
                    placings.push(format!("{}: {}", file.path, placed_text(&placed)));
                }
                new
            }
            Err(placed) => {
                return Err(NotApplied::Refused(format!(
                    "Patch {} does not apply to {} here (its base differs: sha256 {}…, not {}…), by its context either: {}.",
                    patch.step,
                    file.path,
                    short(&found),
                    short(&base),
                    placed_text(&placed)
                )));
            }
        };
        // The base on this host is what it is put back to.
        changes.push(Change { path: file.path.clone(), base: found, text: new.into_bytes() });
    }
    Ok((changes, placings))
}

/// Where each hunk went: `hunk 1 at line 132 (+2)`, `hunk 2 not found`.
fn placed_text(placed: &[diff::Placed]) -> String {
    let each = placed.iter().enumerate().map(|(i, p)| match p {
        diff::Placed::At { line, offset, fuzz } => {
            let fuzz = if *fuzz > 0 { format!(", fuzz {fuzz}") } else { String::new() };
            format!("hunk {} at line {line} ({offset:+}{fuzz})", i + 1)
        }
        diff::Placed::NotFound => format!("hunk {} not found", i + 1),
    });
    each.collect::<Vec<_>>().join(", ")
}

/// Puts back what [`apply`] wrote and records how that went: every file's
/// base verified (`Reverted`), or not (`Dirty`: the host refuses new runs
/// until an admin restores or accepts it). Returns the sentence the run says.
pub async fn revert(store: &Store, pool: &Pool, target: &Target, applied: &Applied) -> RunPatch {
    let written = written(&applied.files);
    let mut files = applied.files.clone();
    let (state, text) = match host::revert(pool, target, &applied.keep, &written).await {
        Ok(said) => judge_revert(applied.step, &mut files, &said),
        Err(e) => (ArmState::Dirty, format!("Patch {} could not be put back: {e}", applied.step)),
    };
    let text = match &applied.said {
        Some(said) => format!("{said} {text}"),
        None => text,
    };
    if let Err(e) = store.set_run_patch(applied.run, state, &files_json(&files), &text).await {
        tracing::error!(run = applied.run, "cannot record how patch {} was put back: {e}", applied.step);
    }
    if state == ArmState::Dirty {
        tracing::error!(run = applied.run, host = %target.name, "{text}");
    }
    RunPatch { step: applied.step, state, files, text, caches_cleared: Vec::new(), expectations: Vec::new() }
}

/// The files as putting them back needs them.
fn written(files: &[ArmFile]) -> Vec<Written> {
    let each = |f: &ArmFile| Written {
        path: f.path.clone(),
        base: f.base.clone(),
        applied: f.applied.clone().unwrap_or_default(),
    };
    files.iter().map(each).collect()
}

/// What the revert script said of each file: the state it leaves the host in.
fn judge_revert(step: i64, files: &mut [ArmFile], said: &[Said]) -> (ArmState, String) {
    let mut problems = Vec::new();
    let mut changed_during = Vec::new();
    for (file, said) in files.iter_mut().zip(said) {
        match said {
            Said::Reverted(hash) => {
                file.reverted = Some(hash.clone());
                file.at_end = file.at_end.clone().or_else(|| file.applied.clone());
            }
            Said::Changed(hash) => {
                file.at_end = Some(hash.clone());
                changed_during.push(file.path.clone());
                problems.push(format!("{} changed during the run (sha256 {}…): left as it is", file.path, short(hash)));
            }
            other => problems.push(format!("{}: {}", file.path, said_text(other, &file.base))),
        }
    }
    if problems.is_empty() {
        (ArmState::Reverted, format!("Patch {step} was applied for the run and put back; every file's base verified."))
    } else {
        (ArmState::Dirty, format!("Patch {step} was not put back cleanly: {}.", problems.join("; ")))
    }
}

/// A sentence for what the host said of a file.
fn said_text(said: &Said, base: &str) -> String {
    match said {
        Said::Hash(h) | Said::Differs(h) if h != base => {
            format!("changed since the patch was made (expected sha256 {}…, found {}…)", short(base), short(h))
        }
        Said::Hash(_) | Said::Differs(_) => "its base".into(),
        Said::Missing => "file missing".into(),
        Said::Escapes(to) => format!("a symlink to {to}, outside its directory: not followed"),
        Said::Applied(h) => format!("written (sha256 {}…)", short(h)),
        Said::Reverted(h) => format!("put back (sha256 {}…)", short(h)),
        Said::Changed(h) => format!("changed since it was written (sha256 {}…)", short(h)),
        Said::Unverified(h) => format!("put back, but its sha256 is {}…, not its base's {}…", short(h), short(base)),
        Said::Failed(why) => why.clone(),
    }
}

/// An admin puts a dirty patch's originals back over whatever is there now;
/// verified, the host is clean again (`Reverted`), else it stays `Dirty`.
pub async fn restore(
    store: &Store,
    pool: &Pool,
    target: &Target,
    row: &RunPatchRow,
    by: &str,
) -> crate::error::Result<RunPatch> {
    let mut files: Vec<ArmFile> = crate::error::stored(&row.files, || format!("run {}'s patch files", row.run_id))?;
    let written = written(&files);
    let said = host::restore(pool, target, &row.keep_dir, &written).await?;
    let (state, text) = judge_revert(row.patch_step, &mut files, &said);
    let text = match state {
        ArmState::Reverted => format!("Restored by {by}: every file's original put back and its base verified."),
        _ => format!("{by} tried to restore it: {text}"),
    };
    store.set_run_patch(row.run_id, state, &files_json(&files), &text).await?;
    Ok(RunPatch { step: row.patch_step, state, files, text, caches_cleared: Vec::new(), expectations: Vec::new() })
}

/// A run's patch as the API shows it.
pub fn shown(row: &RunPatchRow) -> crate::error::Result<RunPatch> {
    let run = row.run_id;
    let files: Vec<ArmFile> = crate::error::stored(&row.files, || format!("run {run}'s patch files"))?;
    let caches_cleared = crate::error::stored_opt(row.caches.as_deref(), || format!("run {run}'s caches cleared"))?;
    let expectations = crate::error::stored_opt(row.expectations.as_deref(), || format!("run {run}'s expectations"))?;
    Ok(RunPatch {
        step: row.patch_step,
        state: row.state,
        files,
        text: row.said.clone().unwrap_or_else(|| format!("Patch {} is being applied.", row.patch_step)),
        caches_cleared: caches_cleared.unwrap_or_default(),
        expectations: expectations.unwrap_or_default(),
    })
}

/// Puts back what runs left applied (or half applied) when their Sleuth
/// stopped: every row `applying` or `applied` whose run is over (ended
/// `interrupted` by this start, or by the lease of the replica that drove it).
pub async fn recover(store: &Store, pool: &std::sync::Arc<Pool>) {
    let rows = match store.run_patches_in(&[ArmState::Applying, ArmState::Applied], None).await {
        Ok(rows) => rows,
        Err(e) => return tracing::error!("cannot read the patches runs left applied: {e}"),
    };
    let hosts = crate::hosts::Hosts::new(store.clone(), pool.clone());
    for row in rows {
        match store.run(row.run_id).await {
            Ok(Some(run)) if !run.status.is_finished() => continue, // it goes on, here or on a live replica
            Ok(_) => {}
            Err(e) => {
                tracing::error!(run = row.run_id, "cannot tell whether the run of a patch left applied is over: {e}");
                continue;
            }
        }
        let Ok(target) = hosts.target(&row.host).await else {
            tracing::error!(run = row.run_id, host = %row.host, "a patch left applied on a host that is gone");
            continue;
        };
        let files: Vec<ArmFile> = match crate::error::stored(&row.files, || format!("run {}'s patch files", row.run_id))
        {
            Ok(files) => files,
            Err(e) => {
                // The host is left as it is, not guessed at; the row says what it is.
                tracing::error!(run = row.run_id, host = %row.host, "a patch left applied cannot be put back: {}", crate::error::chain(&e));
                continue;
            }
        };
        // Half applied: a file not said written may still have been; putting
        // back checks each file's hash before it writes, so it is tried for all.
        let files = files
            .into_iter()
            .map(|mut f| {
                if f.applied.is_none() {
                    f.applied = Some(f.base.clone());
                }
                f
            })
            .collect();
        let applied = Applied { run: row.run_id, step: row.patch_step, keep: row.keep_dir.clone(), files, said: None };
        let done = revert(store, pool, &target, &applied).await;
        tracing::warn!(run = row.run_id, host = %row.host, state = done.state.as_str(), "a patch left applied by a stopped Sleuth: {}", done.text);
    }
}

/// Removes the patch's caches on the host (`~/…` under the home directory):
/// each is gone after it (one that was not there counts as cleared). One that
/// cannot be removed is an error, the run's to say.
pub async fn clear_caches(pool: &Pool, target: &Target, caches: &[String]) -> crate::error::Result<Vec<String>> {
    if caches.is_empty() {
        return Ok(Vec::new());
    }
    let mut script = String::from("set -u\n");
    for (n, path) in caches.iter().enumerate() {
        let shell = match path.strip_prefix("~/") {
            Some(rest) => format!("\"$HOME\"/{}", crate::ssh::quote::quote(rest)),
            None => crate::ssh::quote::quote(path),
        };
        script.push_str(&format!(
            "p={shell}; if [ -e \"$p\" ] || [ -L \"$p\" ]; then rm -rf -- \"$p\" && echo \"cleared\t{n}\" || echo \"failed\t{n}\"; else echo \"cleared\t{n}\"; fi\n"
        ));
    }
    let captured = crate::ssh::exec::capture(pool, target, &script, 64 * 1024).await?;
    let out = String::from_utf8_lossy(&captured.stdout);
    let mut cleared = Vec::new();
    for line in out.lines() {
        let (word, n) = line.split_once('\t').unwrap_or((line, ""));
        let Some(path) = n.parse::<usize>().ok().and_then(|n| caches.get(n)) else { continue };
        match word {
            "cleared" => cleared.push(path.clone()),
            _ => {
                return Err(domain::error::ApiError::invalid(format!(
                    "The cache {path} could not be removed on {}.",
                    target.name
                ))
                .into());
            }
        }
    }
    Ok(cleared)
}

/// Reads a run's output and its server's log for the patch's expectations:
/// each line met or not, and where it was found. Output is read as a stream
/// (it may be gigabytes).
pub async fn read_expectations(
    outputs: &crate::output::Outputs,
    run: i64,
    server_log: Option<i64>,
    expect: &[Expectation],
) -> Vec<ExpectationMet> {
    use futures::StreamExt;
    let mut found: Vec<Option<String>> = vec![None; expect.len()];
    let keep = expect.iter().map(|e| e.text.len()).max().unwrap_or(0);
    let sources = std::iter::once((crate::db::OutputKey::Run(run), "output"))
        .chain(server_log.map(|log| (crate::db::OutputKey::Log(log), "server log")));
    for (key, name) in sources {
        let mut stream = std::pin::pin!(outputs.whole(key));
        // The end of the last buffer, so a line cut between two is still found.
        let mut carry: Vec<u8> = Vec::new();
        while let Some(Ok(bytes)) = stream.next().await {
            carry.extend_from_slice(&bytes);
            let text = String::from_utf8_lossy(&carry);
            for (e, seen) in expect.iter().zip(found.iter_mut()) {
                if seen.is_none() && text.contains(&e.text) {
                    *seen = Some(name.to_string());
                }
            }
            let cut = carry.len().saturating_sub(keep);
            carry.drain(..cut);
        }
    }
    expect
        .iter()
        .zip(found)
        .map(|(e, found_in)| ExpectationMet {
            text: e.text.clone(),
            present: e.present,
            met: found_in.is_some() == e.present,
            found_in,
        })
        .collect()
}
