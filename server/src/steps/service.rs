//! The steps of an investigation's timeline: adding, reading, editing (with
//! the version the editor began on), moving and deleting them. A snippet, a
//! grep or a patch without its bases reads its host when saved; a calculator's inputs may be linked to
//! measurements.

use crate::db::Store;
use crate::error::Result;
use crate::hosts::Hosts;
use crate::metrics::Metrics;
use crate::patches::Patches;
use crate::policy::{Edit, ForBody, Permit, Read, RunOn};
use crate::runs::Runs;
use crate::snippets::Source;
use domain::error::ApiError;
use domain::model::Step;
use domain::steps::StepBody;
use std::collections::HashSet;

#[derive(Clone)]
pub struct Steps {
    store: Store,
    hosts: Hosts,
    source: Source,
    metrics: Metrics,
    runs: Runs,
    patches: Patches,
}

fn not_found(id: i64) -> ApiError {
    ApiError::not_found(format!("There is no step {id}."))
}

/// A save begun on an older version: who changed it since, and (for a note)
/// their text and how it differs from `yours`, line by line.
fn stale(current: &Step, yours: Option<&StepBody>) -> ApiError {
    let theirs = match (&current.body, yours) {
        (StepBody::Note(note), Some(StepBody::Note(mine))) if note.body != mine.body => format!(
            " Their text:\n\n{}\n\nTheirs (-) against yours (+):\n{}",
            note.body,
            line_diff(&note.body, &mine.body)
        ),
        (StepBody::Note(note), _) => format!(" Their text:\n\n{}", note.body),
        _ => String::new(),
    };
    let then = format!("Copy your text, reload, and merge.{theirs}");
    crate::error::stale_save("step", current.updated_by.as_deref(), &current.updated_at, current.version, &then)
}

/// The lines that differ between two texts, `-` theirs and `+` yours, with
/// a line of context around each change.
fn line_diff(theirs: &str, yours: &str) -> String {
    let diff = similar::TextDiff::from_lines(theirs, yours);
    let mut out = String::new();
    for group in diff.grouped_ops(1) {
        if !out.is_empty() {
            out.push_str("  …\n");
        }
        for op in group {
            for change in diff.iter_changes(&op) {
                let sign = match change.tag() {
                    similar::ChangeTag::Delete => '-',
                    similar::ChangeTag::Insert => '+',
                    similar::ChangeTag::Equal => ' ',
                };
                out.push(sign);
                out.push(' ');
                out.push_str(change.value().trim_end_matches('\n'));
                out.push('\n');
            }
        }
    }
    out.trim_end().to_string()
}

impl Steps {
    pub fn new(store: Store, hosts: Hosts, source: Source, metrics: Metrics, runs: Runs, patches: Patches) -> Self {
        Self { store, hosts, source, metrics, runs, patches }
    }

    /// Checks what a body names exists (the host of a command, snippet or grep).
    async fn check_host(&self, body: &StepBody) -> Result<()> {
        let host = match body {
            StepBody::Command(command) => &command.host,
            StepBody::Snippet(snippet) => &snippet.host,
            StepBody::Grep(grep) => &grep.host,
            StepBody::Patch(patch) => &patch.host,
            StepBody::Note(_) | StepBody::Calculator(_) => return Ok(()),
        };
        if !self.hosts.exists(host).await? {
            return Err(ApiError::invalid(format!("There is no host {host:?}; add it on the Hosts page first.")).into());
        }
        Ok(())
    }

    /// Appends a step to the timeline.
    pub async fn add(&self, permit: &ForBody, body: StepBody) -> Result<Step> {
        let investigation = permit.investigation();
        if !crate::ids::is_investigation_id(investigation) {
            return Err(crate::investigations::not_found(investigation).into());
        }
        let edit = permit.edit();
        let body = self.metrics.link(&edit, body).await?;
        let body = super::validate(body)?;
        self.check_host(&body).await?;
        // A snippet, grep or patch reads the host first: a bad path is a 4xx and no step is made.
        let body = self.patches.with_bases(permit, body).await?;
        let fetched = self.source.fetch_for(permit, &body).await?;
        let (kind, fields) = super::to_stored(&body).map_err(|e| crate::error::Error::internal("storing a step", e))?;
        let row = self
            .store
            .insert_step(investigation, kind, &fields)
            .await?
            .ok_or_else(|| crate::investigations::not_found(investigation))?;
        if let Some(fetched) = fetched {
            self.source.store_fetched(&edit, row.id, fetched).await?;
        }
        self.get(&edit.read(), row.id).await
    }

    /// The step with its runs (the newest one's output tail), snapshots, annotations and search.
    pub async fn get(&self, permit: &Permit<Read>, id: i64) -> Result<Step> {
        let mut steps = vec![super::rendered(self.row(permit, id).await?)?];
        let runs = self.store.runs_of_step(id).await?;
        self.runs.attach(permit, &mut steps, runs, &HashSet::from([id]), None, false).await?;
        let snapshots = self.store.snapshots_of_step(id).await?;
        self.source.attach_snapshots(permit, &mut steps, snapshots)?;
        let annotations = self.store.annotations_of_step(id).await?;
        self.source.attach_annotations(permit, &mut steps, annotations);
        let searches = self.store.search_of_step(id).await?;
        self.source.attach_searches(permit, &mut steps, searches.into_iter().collect())?;
        Ok(steps.remove(0))
    }

    /// Replaces the step's body; its kind cannot change. With `version`, refused
    /// (saying who changed it when, with their text) unless it is still that one.
    pub async fn update(&self, permit: &ForBody, id: i64, body: StepBody, version: Option<i64>) -> Result<Step> {
        let edit = permit.edit();
        let current = self.get(&edit.read(), id).await?;
        if version.is_some_and(|v| v != current.version) {
            return Err(stale(&current, Some(&body)).into());
        }
        if current.body.kind() != body.kind() {
            return Err(ApiError::invalid(format!(
                "Step {id} is a {} step; its kind cannot change to {}.",
                current.body.kind(),
                body.kind()
            ))
            .into());
        }
        let body = self.metrics.link(&edit, body).await?;
        let body = super::validate(body)?;
        self.check_host(&body).await?;
        let body = self.patches.with_bases(permit, body).await?;
        let fetched = self.source.fetch_for(permit, &body).await?;
        let (_, fields) = super::to_stored(&body).map_err(|e| crate::error::Error::internal("storing a step", e))?;
        let Some(row) = self.store.update_step_body(id, &fields, &permit.actor().name, version).await? else {
            // Gone, or saved by someone else between our read and our write.
            return Err(match self.get(&edit.read(), id).await {
                Ok(newer) => stale(&newer, Some(&body)).into(),
                Err(e) => e,
            });
        };
        if let Some(fetched) = fetched {
            self.source.store_fetched(&edit, row.id, fetched).await?;
        }
        self.get(&edit.read(), row.id).await
    }

    /// Fetches a snippet step's file again (optionally another range) as a new snapshot.
    pub async fn refresh_snippet(&self, permit: RunOn, id: i64, start: Option<u64>, end: Option<u64>) -> Result<Step> {
        let step = self.get(&permit.permit().read(), id).await?;
        let StepBody::Snippet(mut body) = step.body else {
            return Err(ApiError::invalid(format!("Step {id} is not a snippet.")).into());
        };
        if start.is_some() || end.is_some() {
            body.start = start.or(body.start);
            body.end = end.or(body.end);
            // Marks go with the lines they mark: those no longer shown are dropped.
            let (first, last) = (body.start.unwrap_or(1), body.end.unwrap_or(u64::MAX));
            body.marked.retain(|n| (first..=last).contains(n));
        }
        let body = super::validate(StepBody::Snippet(body))?;
        self.update(&ForBody::Fetch(permit), id, body, None).await
    }

    /// The step's row, if it is of the permit's investigation.
    async fn row(&self, permit: &Permit<impl crate::policy::Right>, id: i64) -> Result<crate::db::StepRow> {
        let row = self.store.step(id).await?.filter(|s| s.investigation_id == permit.investigation());
        Ok(row.ok_or_else(|| not_found(id))?)
    }

    /// A copy of `original` (its body; no runs, snapshots or comments) right
    /// after it: the next experiment, changed from the last one.
    pub async fn duplicate(&self, permit: &ForBody, original: &Step) -> Result<Step> {
        let copy = self.add(permit, original.body.clone()).await?;
        self.store.move_step(copy.id, i64::from(original.position) + 1).await?.ok_or_else(|| not_found(copy.id))?;
        self.get(&permit.edit().read(), copy.id).await
    }

    /// Moves the step to `position` (1-based, clamped to the timeline).
    pub async fn move_to(&self, permit: &Permit<Edit>, id: i64, position: u32) -> Result<Step> {
        self.row(permit, id).await?;
        let row = self.store.move_step(id, i64::from(position)).await?.ok_or_else(|| not_found(id))?;
        super::rendered(row)
    }

    /// Deletes the step, cancelling its runs and removing their output.
    pub async fn delete(&self, permit: &Permit<Edit>, id: i64) -> Result<()> {
        self.row(permit, id).await?;
        let runs = self.store.runs_of_step(id).await?;
        self.runs.forget(permit, &runs).await;
        if !self.store.delete_step(id).await? {
            return Err(not_found(id).into());
        }
        Ok(())
    }
}
