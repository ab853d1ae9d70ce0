//! Source snippets fetched from hosts: reading a line range over SFTP, keeping a
//! snapshot of what was read, and highlighting it.

pub mod annotations;
pub mod fetch;
pub mod highlight;
pub mod refs;
pub mod resolve;
pub mod search;

use crate::db::{SnapshotRow, Store};
use crate::error::{Context, Error, Result};
use crate::hosts::Hosts;
use crate::output::Outputs;
use crate::policy::{Edit, ForBody, Permit, Read, RunOn};
use crate::time::timestamp;
use domain::error::ApiError;
use domain::model::Step;
use domain::steps::StepBody;
use domain::steps::snippet::{Snapshot, SnippetBody};
use std::collections::HashMap;

/// Source on hosts: snippets fetched into snapshots, greps, annotations, and
/// the files a run's output names.
#[derive(Clone)]
pub struct Source {
    store: Store,
    hosts: Hosts,
    outputs: Outputs,
}

fn highlight_row(path: &str, start_line: i64, lines: &[String]) -> Vec<String> {
    // A shebang or modeline names the language only on line 1.
    let first = if start_line == 1 { lines.first().map(String::as_str) } else { None };
    highlight::highlight(path, first, lines)
}

pub(crate) fn snapshot_view(row: SnapshotRow) -> Result<Snapshot> {
    let id = row.id;
    let lines: Vec<String> = crate::error::stored(&row.lines, || format!("snapshot {id}'s lines"))?;
    let notes = crate::error::stored(&row.notes, || format!("snapshot {id}'s notes"))?;
    // The highlighted lines are a cache of `lines`: one that does not parse
    // (or does not match) is made again, so nothing is lost.
    let stored: Option<Vec<String>> = row.html_lines.as_deref().and_then(|h| serde_json::from_str(h).ok());
    let html_lines = match stored {
        Some(html) if html.len() == lines.len() => html,
        _ => highlight_row(&row.path, row.start_line, &lines),
    };
    Ok(Snapshot {
        id: row.id,
        start: u64::try_from(row.start_line).unwrap_or(1),
        end: u64::try_from(row.end_line).unwrap_or(1),
        html_lines,
        lines,
        total_lines: row.total_lines.and_then(|t| u64::try_from(t).ok()),
        size: u64::try_from(row.size).unwrap_or(0),
        mtime: row.mtime.map(|s| timestamp(s * 1000)),
        sha256: row.sha256,
        notes,
        fetched_at: timestamp(row.fetched_at),
        path: row.path,
    })
}

impl Source {
    pub fn new(store: Store, hosts: Hosts, outputs: Outputs) -> Self {
        Self { store, hosts, outputs }
    }

    /// Reads what a snippet names from its host (step_id left 0 for the caller).
    async fn fetch_snapshot(&self, body: &SnippetBody) -> Result<SnapshotRow> {
        let target = self.hosts.target(&body.host).await?;
        let pool = self.hosts.pool();
        let path = match (&body.path, &body.module) {
            (Some(path), _) => path.clone(),
            (None, Some(module)) => {
                let python = body.python.as_deref().unwrap_or("python3");
                fetch::resolve_module(pool, &target, python, module).await?
            }
            (None, None) => return Err(ApiError::invalid("Give either `path` or `module`.").into()),
        };
        let range = body.start.zip(body.end);
        let fetched =
            tokio::time::timeout(std::time::Duration::from_secs(60), fetch::fetch(pool, &target, &path, range))
                .await
                .map_err(|_| {
                    ApiError::new(
                        domain::error::ErrorCode::HostUnreachable,
                        format!("Reading {path:?} took over 60 s."),
                    )
                })??;
        tracing::info!(host = %body.host, path = %fetched.path, start = fetched.start, end = fetched.end, "fetched snippet");
        let start = i64::try_from(fetched.start).unwrap_or(1);
        let lines = fetched.lines.clone();
        let path = fetched.path.clone();
        // Highlighting thousands of lines takes a while: off the async threads.
        let html = tokio::task::spawn_blocking(move || highlight_row(&path, start, &lines))
            .await
            .context("highlighting a snippet")?;
        let html_lines = serde_json::to_string(&html).context("a snapshot's HTML lines as JSON")?;
        Ok(SnapshotRow {
            id: 0,
            step_id: 0,
            path: fetched.path,
            start_line: i64::try_from(fetched.start).unwrap_or(1),
            end_line: i64::try_from(fetched.end).unwrap_or(1),
            lines: serde_json::to_string(&fetched.lines).context("a snapshot's lines as JSON")?,
            total_lines: fetched.total_lines.and_then(|t| i64::try_from(t).ok()),
            size: i64::try_from(fetched.size).unwrap_or(i64::MAX),
            mtime: fetched.mtime.and_then(|m| i64::try_from(m).ok()),
            sha256: fetched.sha256,
            notes: serde_json::to_string(&fetched.notes).context("a snapshot's notes as JSON")?,
            fetched_at: 0,
            html_lines: Some(html_lines),
        })
    }

    /// The snapshots of snippet steps: the newest highlighted, older ones as text.
    pub fn attach_snapshots(&self, _: &Permit<Read>, steps: &mut [Step], rows: Vec<SnapshotRow>) -> Result<()> {
        let mut by_step: HashMap<i64, Vec<Snapshot>> = HashMap::new();
        for row in rows {
            by_step.entry(row.step_id).or_default().push(snapshot_view(row)?);
        }
        for step in steps.iter_mut() {
            if let Some(mut snapshots) = by_step.remove(&step.id) {
                // Pages highlight the newest only; older ones keep their text.
                let newest = snapshots.len().saturating_sub(1);
                for snapshot in &mut snapshots[..newest] {
                    snapshot.html_lines.clear();
                }
                step.snapshots = snapshots;
            }
        }
        Ok(())
    }
}

/// What a step fetched from its host before it is stored.
pub enum Fetched {
    Snapshot(SnapshotRow),
    Search(search::Found),
}

impl Source {
    /// Reads from the host what a snippet or grep body asks for (audited).
    pub async fn fetch_for(&self, permit: &ForBody, body: &StepBody) -> Result<Option<Fetched>> {
        let host = match body {
            StepBody::Snippet(s) => &s.host,
            StepBody::Grep(g) => &g.host,
            _ => return Ok(None),
        };
        let Some(run_on) = permit.fetch_on(host) else {
            return Err(Error::bug(format!("saving a step that reads {host} without a permit to run there")));
        };
        self.fetch(run_on, body).await
    }

    async fn fetch(&self, permit: &RunOn, body: &StepBody) -> Result<Option<Fetched>> {
        let result = self.fetch_from_host(body).await;
        let (action, host, target) = match body {
            StepBody::Snippet(s) => {
                let file = s.path.clone().or_else(|| s.module.as_ref().map(|m| format!("module {m}")));
                let lines = match (s.start, s.end) {
                    (Some(a), Some(b)) => format!(" lines {a}-{b}"),
                    _ => String::new(),
                };
                ("snippet.fetch", &s.host, format!("{}{lines}", file.unwrap_or_default()))
            }
            StepBody::Grep(g) => ("grep", &g.host, format!("{:?} in {}", g.pattern, g.path)),
            _ => return result,
        };
        let outcome = crate::audit::outcome(&result);
        let entry = crate::db::NewAudit {
            who: permit.actor().name.clone(),
            action,
            host: Some(host.clone()),
            target,
            outcome,
            ..Default::default()
        };
        crate::audit::record(&self.store, entry).await;
        result
    }

    async fn fetch_from_host(&self, body: &StepBody) -> Result<Option<Fetched>> {
        Ok(match body {
            StepBody::Snippet(snippet) => Some(Fetched::Snapshot(self.fetch_snapshot(snippet).await?)),
            StepBody::Grep(grep) => {
                let target = self.hosts.target(&grep.host).await?;
                let pool = self.hosts.pool();
                let found =
                    tokio::time::timeout(std::time::Duration::from_secs(120), search::grep(pool, &target, grep))
                        .await
                        .map_err(|_| {
                            ApiError::new(domain::error::ErrorCode::HostUnreachable, "The search took over 120 s.")
                        })??;
                Some(Fetched::Search(found))
            }
            _ => None,
        })
    }

    /// Keeps what was fetched for a step, as its newest snapshot or search.
    pub async fn store_fetched(&self, _: &Permit<Edit>, step_id: i64, fetched: Fetched) -> Result<()> {
        match fetched {
            Fetched::Snapshot(mut row) => {
                row.step_id = step_id;
                Ok(self.store.insert_snapshot(&row).await?)
            }
            Fetched::Search(found) => {
                let hits = serde_json::to_string(&found.hits).context("grep hits as JSON")?;
                let total = i64::try_from(found.total).unwrap_or(i64::MAX);
                Ok(self.store.insert_search(step_id, &hits, total, found.error.as_deref()).await?)
            }
        }
    }

    /// The newest search of each grep step, its matches marked.
    pub fn attach_searches(&self, _: &Permit<Read>, steps: &mut [Step], rows: Vec<crate::db::SearchRow>) -> Result<()> {
        for row in rows {
            let Some(step) = steps.iter_mut().find(|s| s.id == row.step_id) else { continue };
            let StepBody::Grep(body) = &step.body else { continue };
            let mut hits: Vec<domain::steps::grep::Hit> =
                crate::error::stored(&row.hits, || format!("grep step {}'s hits", row.step_id))?;
            let marker = search::Marker::new(&body.pattern, body.regex);
            for hit in &mut hits {
                hit.html = search::mark(&hit.text, &marker);
            }
            step.search = Some(domain::steps::grep::SearchResult {
                hits,
                total: u64::try_from(row.total).unwrap_or(0),
                error: row.error,
                searched_at: timestamp(row.searched_at),
            });
        }
        Ok(())
    }
}
