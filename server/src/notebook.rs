//! Sleuth's notebook operations: input checks, the store, and conversion to the
//! API types. Both the JSON API handlers and the UI's server functions come here
//! (through [`app::backend::Notebook`]), so each rule is written once.

use crate::db::{InvestigationRow, StepRow, Store};
use crate::runs::Runner;
use crate::ssh::Pool;
use crate::{ids, steps};
use app::accounts::Member;
use app::backend::Actor;
use app::error::ApiError;
use app::metrics::Overview;
use app::model::{
    Investigation, InvestigationPatch, InvestigationStatus, InvestigationSummary, NewInvestigation, Step, StepWindow,
    investigation_url, limits, step_url,
};
use app::steps::StepBody;
use std::collections::{HashMap, HashSet};
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

fn investigation_not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("There is no investigation {id:?}."))
}

impl Service {
    /// Only whether it exists: loading the whole investigation would render it.
    pub(crate) async fn existing_investigation(&self, id: &str) -> Result<(), ApiError> {
        let found = ids::is_investigation_id(id) && self.store.investigation(id).await?.is_some();
        if found { Ok(()) } else { Err(investigation_not_found(id)) }
    }
}

impl Service {
    /// A step's body alone, without its runs, snapshots or highlighting: what
    /// a permission check needs (which host it runs on).
    pub(crate) async fn step_body(&self, id: i64) -> Result<StepBody, ApiError> {
        let row = self.store.step(id).await?.ok_or_else(|| step_not_found(id))?;
        steps::from_stored(&row.kind, &row.body).map_err(|e| internal(&format!("step {id} has an unreadable body"), e))
    }

    /// Whether a run of the step is queued or running.
    pub(crate) async fn has_active_run(&self, step: i64) -> Result<bool, ApiError> {
        let runs = self.store.runs_of_step(step).await?;
        Ok(runs.iter().any(|r| app::runs::RunStatus::parse(&r.status).is_some_and(|s| !s.is_finished())))
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

/// Unix milliseconds → the UTC day, `2026-11-30`.
pub(crate) fn day(ms: i64) -> String {
    timestamp(ms).chars().take(10).collect()
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
    let mut step = unrendered_step(row)?;
    step.html = steps::render(&step.body);
    if let StepBody::Calculator(calculator) = &step.body {
        step.results = calculator.results();
    }
    Ok(step)
}

/// A step without its HTML: what a folded step of a long timeline needs.
fn unrendered_step(row: StepRow) -> Result<Step, ApiError> {
    let body = steps::from_stored(&row.kind, &row.body)
        .map_err(|e| internal(&format!("step {} has an unreadable body", row.id), e))?;
    Ok(Step {
        url: step_url(&row.investigation_id, row.id),
        runs: Vec::new(),
        snapshots: Vec::new(),
        annotations: Vec::new(),
        search: None,
        results: None,
        html: None,
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

impl Service {
    pub(crate) async fn list_investigations(&self) -> Result<Vec<InvestigationSummary>, ApiError> {
        let rows = self.store.list_investigations().await?;
        Ok(rows.into_iter().map(summary).collect())
    }

    pub(crate) async fn create_investigation(&self, new: NewInvestigation) -> Result<Investigation, ApiError> {
        let title = check_title(&new.title)?;
        let question = check_question(new.question.as_deref().unwrap_or_default())?;
        // 50 random bits: a collision is all but impossible, but never fatal.
        for _ in 0..4 {
            let id = ids::new_investigation_id();
            if self.store.insert_investigation(&id, &title, &question).await? {
                tracing::info!(investigation = %id, "created investigation");
                return self.investigation(&id, None).await;
            }
        }
        Err(internal("create_investigation", "no free id after 4 tries"))
    }

    /// The whole investigation (`window` `None`, as the API answers), or as a
    /// page shows it: only the steps `window` shows are rendered and carry runs'
    /// output, snapshots, searches and comments; `outline` lists every step. What
    /// a page costs then follows what it shows, not what the runs printed.
    pub(crate) async fn investigation(&self, id: &str, window: Option<&StepWindow>) -> Result<Investigation, ApiError> {
        if !ids::is_investigation_id(id) {
            return Err(investigation_not_found(id));
        }
        let row = self.store.investigation(id).await?.ok_or_else(|| investigation_not_found(id))?;
        let mut steps = self.store.steps(id).await?.into_iter().map(unrendered_step).collect::<Result<Vec<_>, _>>()?;
        let count = u32::try_from(steps.len()).unwrap_or(u32::MAX);
        let shown: HashSet<i64> =
            steps.iter().filter(|s| window.is_none_or(|w| w.shows(s.position, count))).map(|s| s.id).collect();
        for step in steps.iter_mut().filter(|s| shown.contains(&s.id)) {
            step.html = steps::render(&step.body);
        }
        let runs = self.store.runs_of_investigation(id).await?;
        self.attach_runs(&mut steps, runs, &shown).await;
        let runs_fingerprint = app::runs::runs_fingerprint(steps.iter().flat_map(|s| s.runs.iter()));
        let mut snapshots = self.store.snapshots_of_investigation(id).await?;
        snapshots.retain(|row| shown.contains(&row.step_id));
        self.attach_snapshots(&mut steps, snapshots).await;
        let annotations = self.store.annotations_of_investigation(id).await?;
        let mut annotated: HashMap<i64, Vec<i64>> = HashMap::new();
        for row in &annotations {
            annotated.entry(row.step_id).or_default().push(row.id);
        }
        self.attach_annotations(
            &mut steps,
            annotations.into_iter().filter(|row| shown.contains(&row.step_id)).collect(),
        );
        let mut searches = self.store.searches_of_investigation(id).await?;
        searches.retain(|row| shown.contains(&row.step_id));
        self.attach_searches(&mut steps, searches);
        let hypotheses = self.hypotheses(id).await?;
        let extractors = self.extractors(id).await?;
        let derived = crate::metrics::record::derived_defs(&self.store, id).await?;
        let measurements = self.measurements(id).await?;
        let overview = crate::metrics::overview::overview(None, None, &steps, &measurements, &hypotheses);
        let members = self.store.members(id).await?;
        let mut comments = self.comments(id).await?;
        let mut outline = Vec::new();
        if shown.len() < steps.len() {
            let mut commented: HashMap<i64, Vec<i64>> = HashMap::new();
            for c in &comments {
                commented.entry(c.step_id).or_default().push(c.id);
            }
            outline = steps.iter().map(Step::outline).collect();
            for entry in &mut outline {
                entry.annotations = annotated.remove(&entry.id).unwrap_or_default();
                entry.comments = commented.remove(&entry.id).unwrap_or_default();
            }
            comments.retain(|c| shown.contains(&c.step_id));
            steps.retain(|s| shown.contains(&s.id));
        }
        let summary = summary(row);
        Ok(Investigation {
            outline,
            runs_fingerprint,
            members: members.into_iter().map(|(user, role)| Member { user, role }).collect(),
            share_links: Vec::new(),
            comments,
            // Unguarded: the guard narrows this to the reader's role.
            abilities: app::model::Abilities::ALL,
            hypotheses,
            extractors,
            derived,
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

    pub(crate) async fn update_investigation(
        &self,
        id: &str,
        patch: InvestigationPatch,
    ) -> Result<Investigation, ApiError> {
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
                .await?;
        if !found {
            return Err(investigation_not_found(id));
        }
        self.investigation(id, None).await
    }

    pub(crate) async fn delete_investigation(&self, id: &str) -> Result<(), ApiError> {
        let runs = if ids::is_investigation_id(id) { self.store.runs_of_investigation(id).await? } else { Vec::new() };
        self.forget_runs(id, runs.iter().map(|r| r.id)).await;
        let found = ids::is_investigation_id(id) && self.store.delete_investigation(id).await?;
        if !found {
            return Err(investigation_not_found(id));
        }
        tracing::info!(investigation = %id, "deleted investigation");
        Ok(())
    }

    pub(crate) async fn add_step(&self, actor: &Actor, investigation: &str, body: StepBody) -> Result<Step, ApiError> {
        if !ids::is_investigation_id(investigation) {
            return Err(investigation_not_found(investigation));
        }
        let body = self.link_measurements(investigation, body).await?;
        let body = steps::validate(body)?;
        self.check_references(&body).await?;
        // A snippet or grep reads the host first: a bad path is a 4xx and no step is made.
        let fetched = self.fetch_for(actor, &body).await?;
        let (kind, fields) = steps::to_stored(&body).map_err(|e| internal("to_stored", e))?;
        let row = self
            .store
            .insert_step(investigation, kind, &fields)
            .await?
            .ok_or_else(|| investigation_not_found(investigation))?;
        if let Some(fetched) = fetched {
            self.store_fetched(row.id, fetched).await?;
        }
        self.step(row.id).await
    }

    pub(crate) async fn step(&self, id: i64) -> Result<Step, ApiError> {
        let row = self.store.step(id).await?.ok_or_else(|| step_not_found(id))?;
        let mut steps = vec![step(row)?];
        let runs = self.store.runs_of_step(id).await?;
        self.attach_runs(&mut steps, runs, &HashSet::from([id])).await;
        let snapshots = self.store.snapshots_of_step(id).await?;
        self.attach_snapshots(&mut steps, snapshots).await;
        let annotations = self.store.annotations_of_step(id).await?;
        self.attach_annotations(&mut steps, annotations);
        let searches = self.store.search_of_step(id).await?;
        self.attach_searches(&mut steps, searches.into_iter().collect());
        Ok(steps.remove(0))
    }

    pub(crate) async fn update_step(
        &self,
        actor: &Actor,
        id: i64,
        body: StepBody,
        version: Option<i64>,
    ) -> Result<Step, ApiError> {
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
        let fetched = self.fetch_for(actor, &body).await?;
        let (_, fields) = steps::to_stored(&body).map_err(|e| internal("to_stored", e))?;
        let Some(row) = self.store.update_step_body(id, &fields, &actor.name, version).await? else {
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

    pub(crate) async fn move_step(&self, id: i64, position: u32) -> Result<Step, ApiError> {
        let row = self.store.move_step(id, i64::from(position)).await?.ok_or_else(|| step_not_found(id))?;
        step(row)
    }

    pub(crate) async fn delete_step(&self, id: i64) -> Result<(), ApiError> {
        let runs = self.store.runs_of_step(id).await?;
        if let Some(row) = self.store.step(id).await? {
            self.forget_runs(&row.investigation_id, runs.iter().map(|r| r.id)).await;
        }
        if !self.store.delete_step(id).await? {
            return Err(step_not_found(id));
        }
        Ok(())
    }

    pub(crate) async fn overview(
        &self,
        investigation: &str,
        query: &app::metrics::OverviewQuery,
    ) -> Result<Option<Overview>, ApiError> {
        let inv = self.investigation(investigation, None).await?;
        let metric = query.metric.as_deref().map(str::trim).filter(|m| !m.is_empty());
        let baseline = query.baseline.as_deref().map(str::trim).filter(|b| !b.is_empty());
        if metric.is_none() && baseline.is_none() {
            return Ok(inv.overview);
        }
        let found =
            crate::metrics::overview::overview(metric, baseline, &inv.steps, &inv.measurements, &inv.hypotheses);
        match (found, metric) {
            (Some(found), _) => {
                if let Some(baseline) = baseline
                    && !found.groups.iter().any(|g| g.label == baseline)
                {
                    let labels: Vec<&str> = found.groups.iter().map(|g| g.label.as_str()).collect();
                    return Err(ApiError::not_found(format!(
                        "No configuration is called {baseline:?}; the groups are: {}.",
                        labels.join(", ")
                    )));
                }
                Ok(Some(found))
            }
            (None, None) => Ok(None),
            (None, Some(metric)) => {
                let measured: Vec<&str> = inv
                    .overview
                    .iter()
                    .flat_map(|o| std::iter::once(&o.metric).chain(&o.metrics))
                    .map(String::as_str)
                    .collect();
                Err(ApiError::not_found(format!(
                    "{metric:?} was not measured in two runs of this investigation{}.",
                    if measured.is_empty() { String::new() } else { format!("; these were: {}", measured.join(", ")) }
                )))
            }
        }
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
