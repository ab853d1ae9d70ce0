//! The notebook as every request sees it: each operation checks the caller's
//! role (see `access`) for the investigation it touches, then hands over to the
//! unguarded [`Service`]. One place, so no route or server function can forget.

use super::access::{Access, Need, Role};
use super::require_admin;
use crate::db::OwnedBy;
use crate::notebook::{Service, store_error};
use app::accounts::{HostAccess, Member};
use app::backend::{Actor, Notebook};
use app::comments::{Comment, Mention, NewComment};
use app::error::ApiError;
use app::hosts::{ConnectionReport, Host, HostFacts, HostImport, ImportReport, NewHost};
use app::hypotheses::{Hypothesis, HypothesisInput};
use app::metrics::{ExtractorDef, NewMeasurement, Overview, StoredMeasurement};
use app::model::{Investigation, InvestigationPatch, InvestigationSummary, NewInvestigation, Step};
use app::runs::{OutputTail, Run, RunRequest};
use app::shares::{CreatedShareLink, NewShareLink, ShareLink, SharedView};
use app::steps::StepBody;
use app::steps::snippet::{Annotation, AnnotationPatch, NewAnnotation, SourceCandidates};
use std::sync::Arc;

pub struct Guarded {
    inner: Arc<Service>,
    access: Access,
}

/// The host a body reads from when saved (snippets and greps fetch at once).
fn fetching_host(body: &StepBody) -> Option<&str> {
    match body {
        StepBody::Snippet(s) => Some(&s.host),
        StepBody::Grep(g) => Some(&g.host),
        _ => None,
    }
}

impl Guarded {
    pub fn new(inner: Arc<Service>, access: Access) -> Self {
        Self { inner, access }
    }

    /// Edit, or run (role and host) when saving `body` fetches from a host.
    async fn check_body(&self, actor: &Actor, investigation: &str, body: &StepBody) -> Result<(), ApiError> {
        match fetching_host(body) {
            Some(host) => {
                self.access.check(actor, investigation, Need::Run).await?;
                self.access.check_host(actor, host).await
            }
            None => self.access.check(actor, investigation, Need::Edit).await,
        }
    }

    /// Tells everyone viewing `investigation` that it changed, when `result` is a success.
    fn announce<T>(
        &self,
        actor: &Actor,
        investigation: Option<&str>,
        result: Result<T, ApiError>,
    ) -> Result<T, ApiError> {
        if let (Ok(_), Some(investigation)) = (&result, investigation) {
            self.inner.runner.live().changed(investigation, &actor.name);
        }
        result
    }

    async fn step_investigation(&self, step: i64) -> Result<Option<String>, ApiError> {
        self.access.store().investigation_of(OwnedBy::Step, step).await.map_err(store_error)
    }

    /// Run on a step's or run's host: runner role, and the host's allow-list.
    /// Returns the investigation checked.
    async fn check_run(
        &self,
        actor: &Actor,
        what: OwnedBy,
        id: i64,
        host: impl AsyncFnOnce() -> Result<String, ApiError>,
    ) -> Result<Option<String>, ApiError> {
        let investigation = self.access.check_of(actor, what, id, Need::Run).await?;
        self.access.check_host(actor, &host().await?).await?;
        Ok(investigation)
    }
}

#[async_trait::async_trait]
impl Notebook for Guarded {
    async fn list_investigations(&self, actor: &Actor) -> Result<Vec<InvestigationSummary>, ApiError> {
        let all = self.inner.list_investigations().await?;
        Ok(match self.access.readable(actor).await? {
            None => all,
            Some(ids) => all.into_iter().filter(|i| ids.contains(&i.id)).collect(),
        })
    }
    async fn create_investigation(&self, actor: &Actor, new: NewInvestigation) -> Result<Investigation, ApiError> {
        let created = self.inner.create_investigation(new).await?;
        self.access.store().set_member(&created.id, &actor.name, Role::Owner.as_str()).await.map_err(store_error)?;
        Ok(created)
    }
    async fn investigation(&self, actor: &Actor, id: &str) -> Result<Investigation, ApiError> {
        let role = self.access.checked_role(actor, id, Need::Read).await?;
        let mut investigation = self.inner.investigation(id).await?;
        investigation.abilities = role.abilities();
        if role == Role::Owner {
            investigation.share_links = self.inner.share_links(id).await?;
        }
        Ok(investigation)
    }
    async fn update_investigation(
        &self,
        actor: &Actor,
        id: &str,
        patch: InvestigationPatch,
    ) -> Result<Investigation, ApiError> {
        self.access.check(actor, id, Need::Edit).await?;
        let done = self.inner.update_investigation(id, patch).await;
        self.announce(actor, Some(id), done)
    }
    async fn delete_investigation(&self, actor: &Actor, id: &str) -> Result<(), ApiError> {
        self.access.check(actor, id, Need::Own).await?;
        self.inner.delete_investigation(id).await
    }
    async fn add_step(&self, actor: &Actor, investigation: &str, body: StepBody) -> Result<Step, ApiError> {
        self.check_body(actor, investigation, &body).await?;
        let done = self.inner.add_step(actor, investigation, body).await;
        self.announce(actor, Some(investigation), done)
    }
    async fn step(&self, actor: &Actor, id: i64) -> Result<Step, ApiError> {
        self.access.check_of(actor, OwnedBy::Step, id, Need::Read).await?;
        self.inner.step(id).await
    }
    async fn update_step(
        &self,
        actor: &Actor,
        id: i64,
        body: StepBody,
        version: Option<i64>,
    ) -> Result<Step, ApiError> {
        let at = self.step_investigation(id).await?;
        if let Some(investigation) = &at {
            self.check_body(actor, investigation, &body).await?;
        }
        let done = self.inner.update_step(actor, id, body, version).await;
        self.announce(actor, at.as_deref(), done)
    }
    async fn move_step(&self, actor: &Actor, id: i64, position: u32) -> Result<Step, ApiError> {
        let at = self.access.check_of(actor, OwnedBy::Step, id, Need::Edit).await?;
        let done = self.inner.move_step(id, position).await;
        self.announce(actor, at.as_deref(), done)
    }
    /// Deleting a step cancels its runs, and cancelling needs the runner role.
    async fn delete_step(&self, actor: &Actor, id: i64) -> Result<(), ApiError> {
        let at = self.access.check_of(actor, OwnedBy::Step, id, Need::Edit).await?;
        if let Some(investigation) = &at
            && self.inner.step(id).await?.runs.iter().any(|run| !run.status.is_finished())
        {
            self.access.check(actor, investigation, Need::Run).await.map_err(|_| {
                ApiError::new(
                    app::error::ErrorCode::Forbidden,
                    "This step has a run in progress; deleting it would cancel the run, which needs the runner role. \
                     Wait for the run to end, or ask a runner.",
                )
            })?;
        }
        let done = self.inner.delete_step(id).await;
        self.announce(actor, at.as_deref(), done)
    }

    // Hosts: everyone signed in sees them; changing them is for admins; testing
    // and capturing facts run on them (see `Access::check_host_use`).
    async fn hosts(&self, _: &Actor) -> Result<Vec<Host>, ApiError> {
        self.inner.hosts().await
    }
    async fn host(&self, _: &Actor, name: &str) -> Result<Host, ApiError> {
        self.inner.host(name).await
    }
    async fn add_host(&self, actor: &Actor, host: NewHost) -> Result<Host, ApiError> {
        require_admin(actor, "add hosts")?;
        self.inner.add_host(host).await
    }
    async fn update_host(&self, actor: &Actor, name: &str, host: NewHost) -> Result<Host, ApiError> {
        require_admin(actor, "change hosts")?;
        self.inner.update_host(name, host).await
    }
    async fn remove_host(&self, actor: &Actor, name: &str) -> Result<(), ApiError> {
        require_admin(actor, "remove hosts")?;
        self.inner.remove_host(name).await
    }
    async fn trust_host(&self, actor: &Actor, name: &str, fingerprint: &str) -> Result<Host, ApiError> {
        require_admin(actor, "trust host keys")?;
        self.inner.trust_host(actor, name, fingerprint).await
    }
    async fn set_passphrase(&self, actor: &Actor, name: &str, passphrase: String) -> Result<(), ApiError> {
        require_admin(actor, "unlock host keys")?;
        self.inner.set_passphrase(name, passphrase).await
    }
    async fn test_host(&self, actor: &Actor, name: &str) -> Result<ConnectionReport, ApiError> {
        self.access.check_host_use(actor, name).await?;
        self.inner.test_host(actor, name).await
    }
    async fn import_hosts(&self, actor: &Actor, source: HostImport) -> Result<ImportReport, ApiError> {
        require_admin(actor, "import hosts")?;
        self.inner.import_hosts(source).await
    }
    /// The python a capture names is used again by every automatic capture
    /// before a day's first run, so only admins choose it.
    async fn capture_facts(&self, actor: &Actor, host: &str, python: Option<String>) -> Result<HostFacts, ApiError> {
        self.access.check_host_use(actor, host).await?;
        let names_python = python.as_deref().is_some_and(|p| !p.trim().is_empty());
        if names_python && !actor.admin {
            return Err(ApiError::new(
                app::error::ErrorCode::Forbidden,
                "Only admins choose the python that fact captures use (every automatic capture uses it again); \
                 capture without naming one.",
            ));
        }
        self.inner.capture_facts(actor, host, python.as_deref()).await
    }
    async fn facts(&self, actor: &Actor, host: &str) -> Result<Option<HostFacts>, ApiError> {
        self.access.check_host_use(actor, host).await?;
        self.inner.facts(host).await
    }
    /// Those who may use the host, and readers of an investigation with a run
    /// that points at these facts (its provenance shows them).
    async fn facts_by_id(&self, actor: &Actor, id: i64) -> Result<HostFacts, ApiError> {
        let hidden = || ApiError::not_found(format!("There are no host facts {id} that you may read."));
        let Some(row) = self.access.store().facts(id).await.map_err(store_error)? else { return Err(hidden()) };
        let mut allowed = self.access.check_host_use(actor, &row.host_name).await.is_ok();
        if !allowed {
            for investigation in self.access.store().investigations_with_facts(id).await.map_err(store_error)? {
                if self.access.check(actor, &investigation, Need::Read).await.is_ok() {
                    allowed = true;
                    break;
                }
            }
        }
        if !allowed {
            return Err(hidden());
        }
        self.inner.facts_by_id(id).await
    }

    async fn start_runs(&self, actor: &Actor, step_id: i64, request: RunRequest) -> Result<Vec<Run>, ApiError> {
        let inner = &self.inner;
        self.check_run(actor, OwnedBy::Step, step_id, async || match inner.step(step_id).await?.body {
            StepBody::Command(c) => Ok(c.host),
            _ => Ok(String::new()),
        })
        .await?;
        self.inner.start_runs(actor, step_id, request).await
    }
    async fn run(&self, actor: &Actor, id: i64) -> Result<Run, ApiError> {
        self.access.check_of(actor, OwnedBy::Run, id, Need::Read).await?;
        self.inner.run(id).await
    }
    async fn cancel_run(&self, actor: &Actor, id: i64) -> Result<Run, ApiError> {
        self.access.check_of(actor, OwnedBy::Run, id, Need::Run).await?;
        self.inner.cancel_run(id).await
    }
    async fn refresh_snippet(
        &self,
        actor: &Actor,
        step_id: i64,
        start: Option<u64>,
        end: Option<u64>,
    ) -> Result<Step, ApiError> {
        let inner = &self.inner;
        let at = self
            .check_run(actor, OwnedBy::Step, step_id, async || match inner.step(step_id).await?.body {
                StepBody::Snippet(s) => Ok(s.host),
                _ => Ok(String::new()),
            })
            .await?;
        let done = self.inner.refresh_snippet(actor, step_id, start, end).await;
        self.announce(actor, at.as_deref(), done)
    }
    async fn add_annotation(
        &self,
        actor: &Actor,
        step_id: i64,
        mut new: NewAnnotation,
    ) -> Result<Annotation, ApiError> {
        let at = self.access.check_of(actor, OwnedBy::Step, step_id, Need::Edit).await?;
        // With accounts, the author is whoever is signed in, not what they type.
        // Without (`--no-auth`, one person), a typed name is kept.
        if !actor.local {
            new.author = Some(actor.name.clone());
        }
        let done = self.inner.add_annotation(step_id, new).await;
        self.announce(actor, at.as_deref(), done)
    }
    async fn annotation(&self, actor: &Actor, id: i64) -> Result<Annotation, ApiError> {
        self.access.check_of(actor, OwnedBy::Annotation, id, Need::Read).await?;
        self.inner.annotation(id).await
    }
    async fn update_annotation(&self, actor: &Actor, id: i64, patch: AnnotationPatch) -> Result<Annotation, ApiError> {
        let at = self.access.check_of(actor, OwnedBy::Annotation, id, Need::Edit).await?;
        let done = self.inner.update_annotation(id, patch).await;
        self.announce(actor, at.as_deref(), done)
    }
    async fn delete_annotation(&self, actor: &Actor, id: i64) -> Result<(), ApiError> {
        let at = self.access.check_of(actor, OwnedBy::Annotation, id, Need::Edit).await?;
        let done = self.inner.delete_annotation(id).await;
        self.announce(actor, at.as_deref(), done)
    }
    async fn source_candidates(
        &self,
        actor: &Actor,
        run_id: i64,
        file: &str,
        line: u64,
    ) -> Result<SourceCandidates, ApiError> {
        let inner = &self.inner;
        self.check_run(actor, OwnedBy::Run, run_id, async || Ok(inner.run(run_id).await?.host)).await?;
        self.inner.source_candidates(actor, run_id, file, line).await
    }
    async fn measurements(&self, actor: &Actor, investigation: &str) -> Result<Vec<StoredMeasurement>, ApiError> {
        self.access.check(actor, investigation, Need::Read).await?;
        self.inner.measurements(investigation).await
    }
    async fn add_measurement(
        &self,
        actor: &Actor,
        investigation: &str,
        new: NewMeasurement,
    ) -> Result<StoredMeasurement, ApiError> {
        self.access.check(actor, investigation, Need::Edit).await?;
        let done = self.inner.add_measurement(investigation, new).await;
        self.announce(actor, Some(investigation), done)
    }
    async fn delete_measurement(&self, actor: &Actor, id: i64) -> Result<(), ApiError> {
        let at = self.access.check_of(actor, OwnedBy::Measurement, id, Need::Edit).await?;
        let done = self.inner.delete_measurement(id).await;
        self.announce(actor, at.as_deref(), done)
    }
    async fn overview(
        &self,
        actor: &Actor,
        investigation: &str,
        metric: Option<&str>,
    ) -> Result<Option<Overview>, ApiError> {
        self.access.check(actor, investigation, Need::Read).await?;
        self.inner.overview(investigation, metric).await
    }
    async fn extractors(&self, actor: &Actor, investigation: &str) -> Result<Vec<ExtractorDef>, ApiError> {
        self.access.check(actor, investigation, Need::Read).await?;
        self.inner.extractors(investigation).await
    }
    async fn add_extractor(
        &self,
        actor: &Actor,
        investigation: &str,
        def: ExtractorDef,
    ) -> Result<ExtractorDef, ApiError> {
        self.access.check(actor, investigation, Need::Edit).await?;
        let done = self.inner.add_extractor(investigation, def).await;
        self.announce(actor, Some(investigation), done)
    }
    async fn remove_extractor(&self, actor: &Actor, investigation: &str, name: &str) -> Result<(), ApiError> {
        self.access.check(actor, investigation, Need::Edit).await?;
        let done = self.inner.remove_extractor(investigation, name).await;
        self.announce(actor, Some(investigation), done)
    }
    async fn hypotheses(&self, actor: &Actor, investigation: &str) -> Result<Vec<Hypothesis>, ApiError> {
        self.access.check(actor, investigation, Need::Read).await?;
        self.inner.hypotheses(investigation).await
    }
    async fn hypothesis(&self, actor: &Actor, id: i64) -> Result<Hypothesis, ApiError> {
        self.access.check_of(actor, OwnedBy::Hypothesis, id, Need::Read).await?;
        self.inner.hypothesis(id).await
    }
    async fn add_hypothesis(
        &self,
        actor: &Actor,
        investigation: &str,
        input: HypothesisInput,
    ) -> Result<Hypothesis, ApiError> {
        self.access.check(actor, investigation, Need::Edit).await?;
        let done = self.inner.add_hypothesis(investigation, input).await;
        self.announce(actor, Some(investigation), done)
    }
    async fn update_hypothesis(&self, actor: &Actor, id: i64, input: HypothesisInput) -> Result<Hypothesis, ApiError> {
        let at = self.access.check_of(actor, OwnedBy::Hypothesis, id, Need::Edit).await?;
        let done = self.inner.update_hypothesis(actor, id, input).await;
        self.announce(actor, at.as_deref(), done)
    }
    async fn delete_hypothesis(&self, actor: &Actor, id: i64) -> Result<(), ApiError> {
        let at = self.access.check_of(actor, OwnedBy::Hypothesis, id, Need::Edit).await?;
        let done = self.inner.delete_hypothesis(id).await;
        self.announce(actor, at.as_deref(), done)
    }
    async fn output_before(&self, actor: &Actor, id: i64, before: u64, bytes: u64) -> Result<OutputTail, ApiError> {
        self.access.check_of(actor, OwnedBy::Run, id, Need::Read).await?;
        self.inner.output_before(id, before, bytes).await
    }
    async fn members(&self, actor: &Actor, investigation: &str) -> Result<Vec<Member>, ApiError> {
        self.access.check(actor, investigation, Need::Read).await?;
        self.inner.members(investigation).await
    }
    async fn set_member(&self, actor: &Actor, investigation: &str, member: Member) -> Result<Vec<Member>, ApiError> {
        self.access.check(actor, investigation, Need::Own).await?;
        let done = self.inner.set_member(investigation, member).await;
        self.announce(actor, Some(investigation), done)
    }
    async fn host_access(&self, _: &Actor, host: &str) -> Result<HostAccess, ApiError> {
        self.inner.host_access(host).await
    }
    async fn set_host_access(&self, actor: &Actor, host: &str, access: HostAccess) -> Result<HostAccess, ApiError> {
        require_admin(actor, "decide who runs on hosts")?;
        self.inner.set_host_access(host, access).await
    }
    async fn share_links(&self, actor: &Actor, investigation: &str) -> Result<Vec<ShareLink>, ApiError> {
        self.access.check(actor, investigation, Need::Own).await?;
        self.inner.share_links(investigation).await
    }
    async fn create_share_link(
        &self,
        actor: &Actor,
        investigation: &str,
        new: NewShareLink,
    ) -> Result<CreatedShareLink, ApiError> {
        self.access.check(actor, investigation, Need::Own).await?;
        self.inner.create_share_link(actor, investigation, new).await
    }
    async fn revoke_share_link(&self, actor: &Actor, id: i64) -> Result<ShareLink, ApiError> {
        self.access.check_of(actor, OwnedBy::ShareLink, id, Need::Own).await?;
        self.inner.revoke_share_link(actor, id).await
    }
    async fn add_comment(&self, actor: &Actor, investigation: &str, new: NewComment) -> Result<Comment, ApiError> {
        self.access.check(actor, investigation, Need::Edit).await?;
        let done = self.inner.add_comment(actor, investigation, new).await;
        self.announce(actor, Some(investigation), done)
    }
    async fn resolve_comment(&self, actor: &Actor, id: i64, resolved: bool) -> Result<Comment, ApiError> {
        let at = self.access.check_of(actor, OwnedBy::Comment, id, Need::Edit).await?;
        let done = self.inner.resolve_comment(actor, id, resolved).await;
        self.announce(actor, at.as_deref(), done)
    }
    /// Only mentions in investigations the reader may still read.
    async fn mentions(&self, actor: &Actor, all: bool) -> Result<Vec<Mention>, ApiError> {
        let mentions = self.inner.mentions(actor, all).await?;
        Ok(match self.access.readable(actor).await? {
            None => mentions,
            Some(ids) => mentions.into_iter().filter(|m| ids.contains(&m.investigation_id)).collect(),
        })
    }
    async fn read_mentions(&self, actor: &Actor, comment: Option<i64>) -> Result<(), ApiError> {
        self.inner.read_mentions(actor, comment).await
    }
    /// No role needed: the token is the right to read, and the view is read-only.
    async fn shared(&self, token: &str) -> Result<SharedView, ApiError> {
        self.inner.shared(token).await
    }
}
