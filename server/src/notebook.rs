//! Sleuth's notebook operations: input checks, the store, and conversion to the
//! API types. Both the JSON API handlers and the UI's server functions come here
//! (through [`app::backend::Notebook`]), so each rule is written once.

use crate::db::{InvestigationRow, StepRow, Store};
use crate::runs::Runner;
use crate::ssh::Pool;
use crate::{ids, steps};
use app::accounts::{HostAccess, Member};
use app::backend::Notebook;
use app::comments::{Comment, Mention, NewComment};
use app::error::ApiError;
use app::hosts::{ConnectionReport, Host, HostFacts, HostImport, ImportReport, NewHost};
use app::hypotheses::{Hypothesis, HypothesisInput};
use app::metrics::{ExtractorDef, NewMeasurement, Overview, StoredMeasurement};
use app::model::{
    Investigation, InvestigationPatch, InvestigationStatus, InvestigationSummary, NewInvestigation, Step,
    investigation_url, limits, step_url,
};
use app::runs::{OutputTail, Run, RunRequest};
use app::shares::{CreatedShareLink, NewShareLink, ShareLink, SharedView};
use app::steps::StepBody;
use app::steps::snippet::{Annotation, AnnotationPatch, NewAnnotation, SourceCandidates};
use std::sync::Arc;

pub struct Service {
    pub(crate) store: Store,
    pub(crate) pool: Arc<Pool>,
    pub(crate) runner: Arc<Runner>,
}

impl Service {
    pub fn new(store: Store, pool: Arc<Pool>, runner: Arc<Runner>) -> Self {
        Self { store, pool, runner }
    }
}

/// Logs the cause and gives the user the generic message.
pub(crate) fn internal(context: &str, cause: impl std::fmt::Display) -> ApiError {
    tracing::error!("{context}: {cause}");
    ApiError::internal()
}

pub(crate) fn store_error(cause: sqlx::Error) -> ApiError {
    internal("store", cause)
}

fn investigation_not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("There is no investigation {id:?}."))
}

impl Service {
    /// Only whether it exists: loading the whole investigation would render it.
    pub(crate) async fn existing_investigation(&self, id: &str) -> Result<(), ApiError> {
        let found = ids::is_investigation_id(id) && self.store.investigation(id).await.map_err(store_error)?.is_some();
        if found { Ok(()) } else { Err(investigation_not_found(id)) }
    }
}

fn step_not_found(id: i64) -> ApiError {
    ApiError::not_found(format!("There is no step {id}."))
}

fn check_title(title: &str) -> Result<String, ApiError> {
    let title = title.trim();
    if title.is_empty() {
        return Err(ApiError::invalid("The title cannot be empty."));
    }
    let chars = title.chars().count();
    if chars > limits::TITLE_CHARS {
        return Err(ApiError::invalid(format!(
            "The title is {chars} characters; the limit is {}.",
            limits::TITLE_CHARS
        )));
    }
    Ok(title.to_string())
}

fn check_question(question: &str) -> Result<String, ApiError> {
    let question = question.trim();
    let chars = question.chars().count();
    if chars > limits::QUESTION_CHARS {
        return Err(ApiError::invalid(format!(
            "The question is {chars} characters; the limit is {}.",
            limits::QUESTION_CHARS
        )));
    }
    Ok(question.to_string())
}

/// Unix milliseconds → RFC 3339 with milliseconds, UTC.
pub(crate) fn timestamp(ms: i64) -> String {
    let format =
        time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&format).ok())
        .unwrap_or_default()
}

fn status(row: &InvestigationRow) -> InvestigationStatus {
    // The schema's CHECK constraint allows nothing else.
    InvestigationStatus::parse(&row.status).unwrap_or(InvestigationStatus::Open)
}

fn summary(row: InvestigationRow) -> InvestigationSummary {
    InvestigationSummary {
        url: investigation_url(&row.id),
        status: status(&row),
        step_count: u32::try_from(row.step_count).unwrap_or(u32::MAX),
        created_at: timestamp(row.created_at),
        updated_at: timestamp(row.updated_at),
        id: row.id,
        title: row.title,
        question: row.question,
    }
}

/// A save that started from an older version of `what` (a step, a hypothesis):
/// who changed it since, when (RFC 3339), its version now, and `then` — what it
/// says now and what to do — so nothing is lost on either side.
pub(crate) fn stale_save(what: &str, who: Option<&str>, at: &str, version: i64, then: &str) -> ApiError {
    ApiError::new(
        app::error::ErrorCode::Conflict,
        format!(
            "Not saved: this {what} was changed by {} at {} (version {version}) after you opened it. {then}",
            who.unwrap_or("someone"),
            app::model::short_time(at),
        ),
    )
}

fn stale(current: &Step) -> ApiError {
    let theirs = match &current.body {
        StepBody::Note(note) => format!(" Their text:\n\n{}", note.body),
        _ => String::new(),
    };
    let then = format!("Copy your text, reload, and merge.{theirs}");
    stale_save("step", current.updated_by.as_deref(), &current.updated_at, current.version, &then)
}

fn step(row: StepRow) -> Result<Step, ApiError> {
    let body = steps::from_stored(&row.kind, &row.body)
        .map_err(|e| internal(&format!("step {} has an unreadable body", row.id), e))?;
    Ok(Step {
        url: step_url(&row.investigation_id, row.id),
        runs: Vec::new(),
        snapshots: Vec::new(),
        annotations: Vec::new(),
        search: None,
        html: steps::render(&body),
        body,
        id: row.id,
        position: u32::try_from(row.position).unwrap_or(0),
        created_at: timestamp(row.created_at),
        updated_at: timestamp(row.updated_at),
        version: row.version,
        updated_by: row.updated_by,
        investigation_id: row.investigation_id,
    })
}

#[async_trait::async_trait]
impl Notebook for Service {
    async fn list_investigations(&self) -> Result<Vec<InvestigationSummary>, ApiError> {
        let rows = self.store.list_investigations().await.map_err(store_error)?;
        Ok(rows.into_iter().map(summary).collect())
    }

    async fn create_investigation(&self, new: NewInvestigation) -> Result<Investigation, ApiError> {
        let title = check_title(&new.title)?;
        let question = check_question(new.question.as_deref().unwrap_or_default())?;
        // 50 random bits: a collision is all but impossible, but never fatal.
        for _ in 0..4 {
            let id = ids::new_investigation_id();
            if self.store.insert_investigation(&id, &title, &question).await.map_err(store_error)? {
                tracing::info!(investigation = %id, "created investigation");
                return self.investigation(&id).await;
            }
        }
        Err(internal("create_investigation", "no free id after 4 tries"))
    }

    async fn investigation(&self, id: &str) -> Result<Investigation, ApiError> {
        if !ids::is_investigation_id(id) {
            return Err(investigation_not_found(id));
        }
        let row =
            self.store.investigation(id).await.map_err(store_error)?.ok_or_else(|| investigation_not_found(id))?;
        let mut steps =
            self.store.steps(id).await.map_err(store_error)?.into_iter().map(step).collect::<Result<Vec<_>, _>>()?;
        let runs = self.store.runs_of_investigation(id).await.map_err(store_error)?;
        self.attach_runs(&mut steps, runs).await;
        let snapshots = self.store.snapshots_of_investigation(id).await.map_err(store_error)?;
        self.attach_snapshots(&mut steps, snapshots).await;
        let annotations = self.store.annotations_of_investigation(id).await.map_err(store_error)?;
        self.attach_annotations(&mut steps, annotations);
        let searches = self.store.searches_of_investigation(id).await.map_err(store_error)?;
        self.attach_searches(&mut steps, searches);
        let hypotheses = self.hypotheses_impl(id).await?;
        let extractors = self.extractors_impl(id).await?;
        let measurements = self.measurements_impl(id).await?;
        let overview = crate::metrics::overview::overview(None, &steps, &measurements, &hypotheses);
        let members = self.store.members(id).await.map_err(store_error)?;
        let comments = self.comments_impl(id).await?;
        let summary = summary(row);
        Ok(Investigation {
            members: members.into_iter().map(|(user, role)| Member { user, role }).collect(),
            share_links: Vec::new(),
            comments,
            // Unguarded: the guard narrows this to the reader's role.
            abilities: app::model::Abilities::ALL,
            hypotheses,
            extractors,
            measurements,
            overview,
            id: summary.id,
            url: summary.url,
            title: summary.title,
            question: summary.question,
            status: summary.status,
            created_at: summary.created_at,
            updated_at: summary.updated_at,
            steps,
        })
    }

    async fn update_investigation(&self, id: &str, patch: InvestigationPatch) -> Result<Investigation, ApiError> {
        let title = patch.title.as_deref().map(check_title).transpose()?;
        let question = patch.question.as_deref().map(check_question).transpose()?;
        let found = ids::is_investigation_id(id)
            && self
                .store
                .update_investigation(
                    id,
                    title.as_deref(),
                    question.as_deref(),
                    patch.status.map(InvestigationStatus::as_str),
                )
                .await
                .map_err(store_error)?;
        if !found {
            return Err(investigation_not_found(id));
        }
        self.investigation(id).await
    }

    async fn delete_investigation(&self, id: &str) -> Result<(), ApiError> {
        let runs = if ids::is_investigation_id(id) {
            self.store.runs_of_investigation(id).await.map_err(store_error)?
        } else {
            Vec::new()
        };
        self.forget_runs(id, runs.iter().map(|r| r.id)).await;
        let found = ids::is_investigation_id(id) && self.store.delete_investigation(id).await.map_err(store_error)?;
        if !found {
            return Err(investigation_not_found(id));
        }
        tracing::info!(investigation = %id, "deleted investigation");
        Ok(())
    }

    async fn add_step(&self, investigation: &str, body: StepBody) -> Result<Step, ApiError> {
        if !ids::is_investigation_id(investigation) {
            return Err(investigation_not_found(investigation));
        }
        let body = self.link_measurements(investigation, body).await?;
        let body = steps::validate(body)?;
        self.check_references(&body).await?;
        // A snippet or grep reads the host first: a bad path is a 4xx and no step is made.
        let fetched = self.fetch_for(&body).await?;
        let (kind, fields) = steps::to_stored(&body).map_err(|e| internal("to_stored", e))?;
        let row = self
            .store
            .insert_step(investigation, kind, &fields)
            .await
            .map_err(store_error)?
            .ok_or_else(|| investigation_not_found(investigation))?;
        if let Some(fetched) = fetched {
            self.store_fetched(row.id, fetched).await?;
        }
        self.step(row.id).await
    }

    async fn step(&self, id: i64) -> Result<Step, ApiError> {
        let row = self.store.step(id).await.map_err(store_error)?.ok_or_else(|| step_not_found(id))?;
        let mut steps = vec![step(row)?];
        let runs = self.store.runs_of_step(id).await.map_err(store_error)?;
        self.attach_runs(&mut steps, runs).await;
        let snapshots = self.store.snapshots_of_step(id).await.map_err(store_error)?;
        self.attach_snapshots(&mut steps, snapshots).await;
        let annotations = self.store.annotations_of_step(id).await.map_err(store_error)?;
        self.attach_annotations(&mut steps, annotations);
        let searches = self.store.search_of_step(id).await.map_err(store_error)?;
        self.attach_searches(&mut steps, searches.into_iter().collect());
        Ok(steps.remove(0))
    }

    async fn update_step(&self, id: i64, body: StepBody, version: Option<i64>) -> Result<Step, ApiError> {
        let current = self.step(id).await?;
        if version.is_some_and(|v| v != current.version) {
            return Err(stale(&current));
        }
        if current.body.kind() != body.kind() {
            return Err(ApiError::invalid(format!(
                "Step {id} is a {} step; its kind cannot change to {}.",
                current.body.kind(),
                body.kind()
            )));
        }
        let body = self.link_measurements(&current.investigation_id, body).await?;
        let body = steps::validate(body)?;
        self.check_references(&body).await?;
        let fetched = self.fetch_for(&body).await?;
        let (_, fields) = steps::to_stored(&body).map_err(|e| internal("to_stored", e))?;
        let who = crate::audit::actor_name();
        let Some(row) = self.store.update_step_body(id, &fields, &who, version).await.map_err(store_error)? else {
            // Gone, or saved by someone else between our read and our write.
            return Err(match self.step(id).await {
                Ok(newer) => stale(&newer),
                Err(e) => e,
            });
        };
        if let Some(fetched) = fetched {
            self.store_fetched(row.id, fetched).await?;
        }
        self.step(row.id).await
    }

    async fn move_step(&self, id: i64, position: u32) -> Result<Step, ApiError> {
        let row = self
            .store
            .move_step(id, i64::from(position))
            .await
            .map_err(store_error)?
            .ok_or_else(|| step_not_found(id))?;
        step(row)
    }

    async fn delete_step(&self, id: i64) -> Result<(), ApiError> {
        let runs = self.store.runs_of_step(id).await.map_err(store_error)?;
        if let Some(row) = self.store.step(id).await.map_err(store_error)? {
            self.forget_runs(&row.investigation_id, runs.iter().map(|r| r.id)).await;
        }
        if !self.store.delete_step(id).await.map_err(store_error)? {
            return Err(step_not_found(id));
        }
        Ok(())
    }

    async fn hosts(&self) -> Result<Vec<Host>, ApiError> {
        self.hosts_impl().await
    }
    async fn host(&self, name: &str) -> Result<Host, ApiError> {
        self.host_impl(name).await
    }
    async fn add_host(&self, host: NewHost) -> Result<Host, ApiError> {
        self.add_host_impl(host).await
    }
    async fn update_host(&self, name: &str, host: NewHost) -> Result<Host, ApiError> {
        self.update_host_impl(name, host).await
    }
    async fn remove_host(&self, name: &str) -> Result<(), ApiError> {
        self.remove_host_impl(name).await
    }
    async fn trust_host(&self, name: &str, fingerprint: &str) -> Result<Host, ApiError> {
        self.trust_host_impl(name, fingerprint).await
    }
    async fn set_passphrase(&self, name: &str, passphrase: String) -> Result<(), ApiError> {
        self.set_passphrase_impl(name, passphrase).await
    }
    async fn test_host(&self, name: &str) -> Result<ConnectionReport, ApiError> {
        self.test_host_impl(name).await
    }
    async fn import_hosts(&self, source: HostImport) -> Result<ImportReport, ApiError> {
        self.import_hosts_impl(source).await
    }
    async fn capture_facts(&self, host: &str, python: Option<String>) -> Result<HostFacts, ApiError> {
        self.capture_facts_impl(host, python.as_deref()).await
    }
    async fn facts(&self, host: &str) -> Result<Option<HostFacts>, ApiError> {
        self.facts_impl(host).await
    }
    async fn facts_by_id(&self, id: i64) -> Result<HostFacts, ApiError> {
        self.facts_by_id_impl(id).await
    }
    async fn start_runs(&self, step_id: i64, request: RunRequest) -> Result<Vec<Run>, ApiError> {
        self.start_runs_impl(step_id, request).await
    }
    async fn run(&self, id: i64) -> Result<Run, ApiError> {
        self.run_impl(id).await
    }
    async fn cancel_run(&self, id: i64) -> Result<Run, ApiError> {
        self.cancel_run_impl(id).await
    }
    async fn refresh_snippet(&self, step_id: i64, start: Option<u64>, end: Option<u64>) -> Result<Step, ApiError> {
        self.refresh_snippet_impl(step_id, start, end).await
    }
    async fn add_annotation(&self, step_id: i64, new: NewAnnotation) -> Result<Annotation, ApiError> {
        self.add_annotation_impl(step_id, new).await
    }
    async fn annotation(&self, id: i64) -> Result<Annotation, ApiError> {
        self.annotation_impl(id).await
    }
    async fn update_annotation(&self, id: i64, patch: AnnotationPatch) -> Result<Annotation, ApiError> {
        self.update_annotation_impl(id, patch).await
    }
    async fn delete_annotation(&self, id: i64) -> Result<(), ApiError> {
        self.delete_annotation_impl(id).await
    }
    async fn source_candidates(&self, run_id: i64, file: &str, line: u64) -> Result<SourceCandidates, ApiError> {
        self.source_candidates_impl(run_id, file, line).await
    }
    async fn measurements(&self, investigation: &str) -> Result<Vec<StoredMeasurement>, ApiError> {
        self.measurements_impl(investigation).await
    }
    async fn overview(&self, investigation: &str, metric: Option<&str>) -> Result<Option<Overview>, ApiError> {
        let inv = self.investigation(investigation).await?;
        match (metric, &inv.overview) {
            (None, overview) => Ok(overview.clone()),
            (Some(metric), _) => {
                crate::metrics::overview::overview(Some(metric), &inv.steps, &inv.measurements, &inv.hypotheses)
                    .map(Some)
                    .ok_or_else(|| {
                        let measured = inv.overview.iter().flat_map(|o| std::iter::once(&o.metric).chain(&o.metrics));
                        let measured: Vec<&String> = measured.collect();
                        ApiError::not_found(format!(
                            "{metric:?} was not measured in two runs of this investigation{}.",
                            if measured.is_empty() {
                                String::new()
                            } else {
                                format!(
                                    "; these were: {}",
                                    measured.iter().map(|m| m.as_str()).collect::<Vec<_>>().join(", ")
                                )
                            }
                        ))
                    })
            }
        }
    }
    async fn add_measurement(&self, investigation: &str, new: NewMeasurement) -> Result<StoredMeasurement, ApiError> {
        self.add_measurement_impl(investigation, new).await
    }
    async fn delete_measurement(&self, id: i64) -> Result<(), ApiError> {
        self.delete_measurement_impl(id).await
    }
    async fn extractors(&self, investigation: &str) -> Result<Vec<ExtractorDef>, ApiError> {
        self.extractors_impl(investigation).await
    }
    async fn add_extractor(&self, investigation: &str, def: ExtractorDef) -> Result<ExtractorDef, ApiError> {
        self.add_extractor_impl(investigation, def).await
    }
    async fn remove_extractor(&self, investigation: &str, name: &str) -> Result<(), ApiError> {
        self.remove_extractor_impl(investigation, name).await
    }
    async fn hypotheses(&self, investigation: &str) -> Result<Vec<Hypothesis>, ApiError> {
        self.hypotheses_impl(investigation).await
    }
    async fn hypothesis(&self, id: i64) -> Result<Hypothesis, ApiError> {
        self.hypothesis_impl(id).await
    }
    async fn add_hypothesis(&self, investigation: &str, input: HypothesisInput) -> Result<Hypothesis, ApiError> {
        self.add_hypothesis_impl(investigation, input).await
    }
    async fn update_hypothesis(&self, id: i64, input: HypothesisInput) -> Result<Hypothesis, ApiError> {
        self.update_hypothesis_impl(id, input).await
    }
    async fn delete_hypothesis(&self, id: i64) -> Result<(), ApiError> {
        self.delete_hypothesis_impl(id).await
    }
    async fn output_before(&self, id: i64, before: u64, bytes: u64) -> Result<OutputTail, ApiError> {
        self.output_before_impl(id, before, bytes).await
    }
    async fn members(&self, investigation: &str) -> Result<Vec<Member>, ApiError> {
        self.members_impl(investigation).await
    }
    async fn set_member(&self, investigation: &str, member: Member) -> Result<Vec<Member>, ApiError> {
        self.set_member_impl(investigation, member).await
    }
    async fn host_access(&self, host: &str) -> Result<HostAccess, ApiError> {
        self.host_access_impl(host).await
    }
    async fn set_host_access(&self, host: &str, access: HostAccess) -> Result<HostAccess, ApiError> {
        self.set_host_access_impl(host, access).await
    }
    async fn share_links(&self, investigation: &str) -> Result<Vec<ShareLink>, ApiError> {
        self.share_links_impl(investigation).await
    }
    async fn create_share_link(&self, investigation: &str, new: NewShareLink) -> Result<CreatedShareLink, ApiError> {
        self.create_share_link_impl(investigation, new).await
    }
    async fn revoke_share_link(&self, id: i64) -> Result<ShareLink, ApiError> {
        self.revoke_share_link_impl(id).await
    }
    async fn shared(&self, token: &str) -> Result<SharedView, ApiError> {
        self.shared_impl(token).await
    }
    async fn add_comment(&self, investigation: &str, new: NewComment) -> Result<Comment, ApiError> {
        self.add_comment_impl(investigation, new).await
    }
    async fn resolve_comment(&self, id: i64, resolved: bool) -> Result<Comment, ApiError> {
        self.resolve_comment_impl(id, resolved).await
    }
    async fn mentions(&self, all: bool) -> Result<Vec<Mention>, ApiError> {
        self.mentions_impl(all).await
    }
    async fn read_mentions(&self, comment: Option<i64>) -> Result<(), ApiError> {
        self.read_mentions_impl(comment).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_utc_with_millis() {
        assert_eq!(timestamp(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(timestamp(1_796_023_293_123), "2026-11-30T07:21:33.123Z");
    }

    #[test]
    fn titles_are_trimmed_and_bounded() {
        assert_eq!(check_title("  x  ").unwrap(), "x");
        assert!(check_title("   ").is_err());
        assert!(check_title(&"é".repeat(limits::TITLE_CHARS)).is_ok());
        let err = check_title(&"é".repeat(limits::TITLE_CHARS + 1)).unwrap_err();
        assert_eq!(err.code, app::error::ErrorCode::Invalid);
    }
}
