//! Annotations: Markdown beside a line range of a snippet step.
//!
//! An annotation may only cover lines its step shows (the newest snapshot), so a
//! link to it always lands on visible code. It remembers the snapshot it was
//! written against; when a refresh brings a file with another sha256 it is marked
//! `outdated` rather than moved, since lines cannot be matched reliably.

use super::Source;
use crate::db::AnnotationRow;
use crate::error::Result;
use crate::markdown::to_safe_html;
use crate::policy::{Edit, Permit, Read};
use crate::time::timestamp;
use domain::error::ApiError;
use domain::model::Step;
use domain::steps::StepBody;
use domain::steps::snippet::{
    ANNOTATION_CHARS, Annotation, AnnotationPatch, NewAnnotation, Snapshot, annotation_anchor,
};

const AUTHOR_CHARS: usize = 80;

fn not_found(id: i64) -> ApiError {
    ApiError::not_found(format!("There is no annotation {id}."))
}

fn check_body(body: &str) -> Result<String, ApiError> {
    let body = body.trim();
    if body.is_empty() {
        return Err(ApiError::invalid("The annotation is empty; write what these lines mean."));
    }
    let chars = body.chars().count();
    if chars > ANNOTATION_CHARS {
        return Err(ApiError::invalid(format!(
            "The annotation is {chars} characters; the limit is {ANNOTATION_CHARS}."
        )));
    }
    Ok(body.to_string())
}

fn check_author(author: Option<&str>) -> Result<Option<String>, ApiError> {
    let Some(author) = author.map(str::trim).filter(|a| !a.is_empty()) else { return Ok(None) };
    if author.chars().count() > AUTHOR_CHARS || author.chars().any(char::is_control) {
        return Err(ApiError::invalid(format!("The name must be one line of at most {AUTHOR_CHARS} characters.")));
    }
    Ok(Some(author.to_string()))
}

/// The lines must be ones the step shows now.
fn check_range(start: u64, end: u64, shown: &Snapshot) -> Result<(i64, i64), ApiError> {
    if start == 0 || end == 0 {
        return Err(ApiError::invalid("Line numbers start at 1."));
    }
    if start > end {
        return Err(ApiError::invalid(format!("The first line ({start}) is after the last ({end}).")));
    }
    if start < shown.start || end > shown.end {
        return Err(ApiError::invalid(format!(
            "Lines {start}–{end} are not all shown: the snippet shows lines {}–{}. Expand it first.",
            shown.start, shown.end
        )));
    }
    let line = |n: u64| i64::try_from(n).map_err(|_| ApiError::invalid("The line number is too large."));
    Ok((line(start)?, line(end)?))
}

fn newest_snapshot(step: &Step) -> Result<&Snapshot, ApiError> {
    if !matches!(step.body, StepBody::Snippet(_)) {
        return Err(ApiError::invalid(format!(
            "Step {} is a {} step; only snippet steps have lines to annotate.",
            step.id,
            step.body.kind()
        )));
    }
    step.snapshots.last().ok_or_else(|| ApiError::invalid(format!("Step {} has not been fetched yet.", step.id)))
}

fn view(row: AnnotationRow, snapshots: &[Snapshot]) -> Annotation {
    let sha = |id: i64| snapshots.iter().find(|s| s.id == id).and_then(|s| s.sha256.as_deref());
    let newest = snapshots.last().and_then(|s| s.sha256.as_deref());
    // A snapshot deleted with its history (or never recorded) says nothing either way.
    let outdated = row.snapshot_id.and_then(sha).is_some_and(|written| Some(written) != newest);
    Annotation {
        id: row.id,
        step_id: row.step_id,
        start: u64::try_from(row.start_line).unwrap_or(1),
        end: u64::try_from(row.end_line).unwrap_or(1),
        html: to_safe_html(&row.body),
        body: row.body,
        author: row.author,
        url: format!("{}#{}", domain::model::investigation_url(&row.investigation_id), annotation_anchor(row.id)),
        snapshot_id: row.snapshot_id,
        outdated,
        created_at: timestamp(row.created_at),
        updated_at: timestamp(row.updated_at),
    }
}

impl Source {
    /// The annotations of snippet steps (after their snapshots, which say what is outdated).
    pub fn attach_annotations(&self, _: &Permit<Read>, steps: &mut [Step], rows: Vec<AnnotationRow>) {
        for row in rows {
            let Some(step) = steps.iter_mut().find(|s| s.id == row.step_id) else { continue };
            let annotation = view(row, &step.snapshots);
            step.annotations.push(annotation);
        }
    }

    /// A step as annotations see it: its body and snapshots, if it is of the permit's investigation.
    async fn annotated_step(&self, permit: &Permit<impl crate::policy::Right>, step_id: i64) -> Result<Step> {
        let row = self.store.step(step_id).await?.filter(|s| s.investigation_id == permit.investigation());
        let row = row.ok_or_else(|| ApiError::not_found(format!("There is no step {step_id}.")))?;
        let mut step = crate::steps::unrendered(row)?;
        step.snapshots = self
            .store
            .snapshots_of_step(step_id)
            .await?
            .into_iter()
            .map(super::snapshot_view)
            .collect::<Result<_>>()?;
        Ok(step)
    }

    /// The annotation, if it is of the permit's investigation.
    async fn row(&self, permit: &Permit<impl crate::policy::Right>, id: i64) -> Result<(AnnotationRow, Step)> {
        let row = self.store.annotation(id).await?.ok_or_else(|| not_found(id))?;
        let step = self.annotated_step(permit, row.step_id).await.map_err(|_| not_found(id))?;
        Ok((row, step))
    }

    /// Writes an annotation beside lines the snippet step shows.
    pub async fn add_annotation(
        &self,
        permit: &Permit<Edit>,
        step_id: i64,
        mut new: NewAnnotation,
    ) -> Result<Annotation> {
        // With accounts, the author is whoever is signed in, not what they type.
        // Without (`--no-auth`, one person), a typed name is kept.
        if !permit.actor().local {
            new.author = Some(permit.actor().name.clone());
        }
        let step = self.annotated_step(permit, step_id).await?;
        let shown = newest_snapshot(&step)?;
        let range = check_range(new.start, new.end, shown)?;
        let body = check_body(&new.body)?;
        let author = check_author(new.author.as_deref())?;
        // Its `@name`s reach Mentions, as a comment's do (without accounts there is no one to tell).
        let mentions = self.store.users_named_in(&body, &permit.actor().name).await?;
        let id =
            self.store.insert_annotation(step_id, Some(shown.id), range, &body, author.as_deref(), &mentions).await?;
        tracing::info!(step = step_id, annotation = id, "annotated lines {}–{}", new.start, new.end);
        self.annotation(&permit.read(), id).await
    }

    pub async fn annotation(&self, permit: &Permit<Read>, id: i64) -> Result<Annotation> {
        let (row, step) = self.row(permit, id).await?;
        Ok(view(row, &step.snapshots))
    }

    pub async fn update_annotation(
        &self,
        permit: &Permit<Edit>,
        id: i64,
        patch: AnnotationPatch,
    ) -> Result<Annotation> {
        let (current, step) = self.row(permit, id).await?;
        let start = patch.start.unwrap_or(u64::try_from(current.start_line).unwrap_or(1));
        let end = patch.end.unwrap_or(u64::try_from(current.end_line).unwrap_or(1));
        let range = if patch.start.is_some() || patch.end.is_some() {
            check_range(start, end, newest_snapshot(&step)?)?
        } else {
            (current.start_line, current.end_line)
        };
        let body = match &patch.body {
            Some(body) => check_body(body)?,
            None => current.body.clone(),
        };
        let mentions = match &patch.body {
            Some(_) => self.store.users_named_in(&body, &permit.actor().name).await?,
            None => Vec::new(),
        };
        if !self.store.update_annotation(id, range, &body, &mentions).await? {
            return Err(not_found(id).into());
        }
        self.annotation(&permit.read(), id).await
    }

    pub async fn delete_annotation(&self, permit: &Permit<Edit>, id: i64) -> Result<()> {
        self.row(permit, id).await?;
        if !self.store.delete_annotation(id).await? {
            return Err(not_found(id).into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(start: u64, end: u64) -> Snapshot {
        Snapshot {
            id: 1,
            path: "/x.py".into(),
            start,
            end,
            lines: vec![],
            html_lines: vec![],
            total_lines: None,
            size: 0,
            mtime: None,
            sha256: None,
            notes: vec![],
            fetched_at: String::new(),
        }
    }

    #[test]
    fn ranges_must_be_ordered_and_shown() {
        let s = shown(130, 180);
        assert_eq!(check_range(130, 180, &s).unwrap(), (130, 180));
        assert_eq!(check_range(137, 137, &s).unwrap(), (137, 137));
        assert!(check_range(140, 135, &s).unwrap_err().message.contains("after"));
        assert!(check_range(120, 135, &s).unwrap_err().message.contains("130–180"));
        assert!(check_range(170, 181, &s).is_err());
        assert!(check_range(0, 3, &s).is_err());
    }

    #[test]
    fn bodies_and_names_are_checked() {
        assert_eq!(check_body("  *why*  ").unwrap(), "*why*");
        assert!(check_body(" \n ").is_err());
        assert!(check_body(&"x".repeat(ANNOTATION_CHARS + 1)).is_err());
        assert_eq!(check_author(Some("  ")).unwrap(), None);
        assert_eq!(check_author(Some(" Ada ")).unwrap().as_deref(), Some("Ada"));
        assert!(check_author(Some("Ada\nEve")).is_err());
    }
}
