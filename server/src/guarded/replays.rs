//! Replays: a reader of an investigation may replay it into a new one of
//! their own, if every host the copies reach is theirs to use; readers of the
//! copy read the replay. The plan and the copy are `crate::replays`.

use super::Guarded;
use crate::policy::Read;
use domain::error::ApiError;
use domain::hosts::HostFacts;
use domain::ports::Actor;
use domain::replays::{MANIFEST_FORMAT, Manifest, ManifestReplay, Replay, ReplayRequest, manifest_of};
use domain::runs::{RunOrigin, RunRequest};
use domain::steps::StepBody;
use std::collections::HashMap;

impl Guarded {
    /// The investigation's provenance manifest: its steps, runs (with the
    /// host facts each started under), snippets' hashes and conclusions.
    pub async fn manifest(&self, actor: &Actor, investigation: &str) -> Result<Manifest, ApiError> {
        let source = self.investigation(actor, investigation, None).await?;
        let permit = self.access.permit::<Read>(actor, investigation).await?;
        let mut facts: HashMap<i64, HostFacts> = HashMap::new();
        for run in source.steps.iter().flat_map(|s| s.runs.iter()) {
            if let Some(id) = run.facts_id
                && !facts.contains_key(&id)
                && let Some(found) = self.notebook.facts_of_run(&permit, run.id).await?
            {
                facts.insert(id, found);
            }
        }
        Ok(manifest_of(&source, &facts, crate::time::timestamp(crate::time::now_ms())))
    }

    /// `POST /api/v1/investigations/{id}/replay`.
    pub async fn replay_investigation(
        &self,
        actor: &Actor,
        original: &str,
        request: ReplayRequest,
    ) -> Result<Replay, ApiError> {
        let manifest = self.manifest(actor, original).await?;
        self.start_replay(actor, manifest, Some(original.to_string()), request).await
    }

    /// `POST /api/v1/replays`: another Sleuth's manifest, replayed here.
    pub async fn replay_manifest(&self, actor: &Actor, asked: ManifestReplay) -> Result<Replay, ApiError> {
        if asked.provenance.format != MANIFEST_FORMAT {
            return Err(ApiError::invalid(format!(
                "This is not a manifest Sleuth reads: its format is {:?}, not {MANIFEST_FORMAT:?}.",
                asked.provenance.format
            )));
        }
        let request = ReplayRequest { host: asked.host, env: asked.env, steps: asked.steps, repeat: asked.repeat };
        self.start_replay(actor, asked.provenance, None, request).await
    }

    /// Everything is checked before anything is copied (the plan, the hosts,
    /// room for runs); the copy is one transaction; then the copies reach
    /// their hosts as the caller, and what fails there is noted on the replay.
    async fn start_replay(
        &self,
        actor: &Actor,
        source: Manifest,
        original: Option<String>,
        request: ReplayRequest,
    ) -> Result<Replay, ApiError> {
        let plan = crate::replays::plan(source, original, request)?;
        let permit = self.access.replaying(actor, &plan.hosts).await?;
        if !plan.to_run.is_empty() {
            self.notebook.runs.ready_to_start()?;
        }
        let copied = self.notebook.replays.copy(&permit, &plan).await?;
        let copies: HashMap<i64, i64> = copied.steps.iter().copied().collect();
        let mut notes = Vec::new();
        for (original, body) in &plan.steps {
            let Some(copy) = copies.get(original) else { continue };
            if let StepBody::Snippet(_) | StepBody::Grep(_) = body
                && let Err(e) = self.update_step(actor, *copy, body.clone(), None).await
            {
                notes.push(format!("Step {copy} (a copy of {original}) was not read on its host: {}", e.message));
            }
        }
        let origin = RunOrigin::Replay { id: copied.replay };
        for original in &plan.to_run {
            let Some(copy) = copies.get(original) else { continue };
            let request = RunRequest { repeat: Some(plan.repeat), ..Default::default() };
            if let Err(e) = self.start_runs_for(actor, *copy, request, origin).await {
                notes.push(format!("Step {copy} (a copy of {original}) was not started: {}", e.message));
            }
        }
        self.notebook.replays.note(copied.replay, &notes).await?;
        self.replay(actor, copied.replay).await
    }

    /// `GET /api/v1/replays/{id}`: where it stands, and both conclusions. A
    /// reader of the replay's investigation reads it (its manifest is the
    /// original as its creator could read it).
    pub async fn replay(&self, actor: &Actor, id: i64) -> Result<Replay, ApiError> {
        let missing = || ApiError::not_found(format!("There is no replay {id}."));
        let row = self.notebook.replays.row(id).await?.ok_or_else(missing)?;
        let replayed = self.investigation(actor, &row.investigation_id, None).await.map_err(|_| missing())?;
        let permit = self.access.permit::<Read>(actor, &replayed.id).await?;
        let manifest: Manifest = crate::error::stored(&row.manifest, || format!("replay {id}'s manifest"))?;
        let newest =
            replayed.steps.iter().flat_map(|s| s.runs.iter()).filter(|r| r.facts_id.is_some()).max_by_key(|r| r.id);
        let after = match newest {
            Some(run) => self.notebook.facts_of_run(&permit, run.id).await?,
            None => None,
        };
        let before = manifest
            .steps
            .iter()
            .flat_map(|s| s.runs.iter())
            .filter_map(|r| r.facts.as_ref().map(|f| (r.id, f)))
            .max_by_key(|(id, _)| *id);
        let host_facts = match (before, after) {
            (Some((_, a)), Some(b)) => crate::facts::differ::differences(a, &b),
            _ => Vec::new(),
        };
        Ok(crate::replays::view(&row, &manifest, &replayed, host_facts)?)
    }
}
