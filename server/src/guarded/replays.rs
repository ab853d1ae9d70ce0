//! Replaying an investigation: composed of the operations a person would do
//! by hand — a new investigation, its steps copied (hosts and env changed),
//! its hypotheses copied onto the copies, the command steps run — each
//! checked as that operation always is; then both conclusions side by side.
//! The original is read through its provenance manifest (`provenance.json`
//! of a zip export), so a replay starts alike from an investigation here or
//! from one exported by another Sleuth.

use super::Guarded;
use crate::db::ReplayRow;
use crate::policy::{Edit, Read};
use domain::error::ApiError;
use domain::hosts::HostFacts;
use domain::hypotheses::{HypothesisInput, RunGroup};
use domain::model::{Investigation, NewInvestigation};
use domain::ports::Actor;
use domain::replays::{
    MANIFEST_FORMAT, Manifest, ManifestReplay, Replay, ReplayRequest, ReplayedHypothesis, ReplayedRun, ReplayedSnippet,
    manifest_of, outcome,
};
use domain::steps::StepBody;
use std::collections::{BTreeMap, HashMap};

/// The most runs one replay may queue.
const MAX_RUNS: usize = 2000;

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

    async fn start_replay(
        &self,
        actor: &Actor,
        source: Manifest,
        original: Option<String>,
        request: ReplayRequest,
    ) -> Result<Replay, ApiError> {
        let host = request.host.as_deref().map(str::trim).filter(|h| !h.is_empty()).map(str::to_string);
        if let Some(host) = &host {
            // Its access is checked again by every step and run: this only says it early and plainly.
            self.host(actor, host).await?;
        }
        for name in request.env.keys() {
            if !crate::ssh::quote::is_env_name(name) {
                return Err(ApiError::invalid(format!("{name:?} is not an environment variable name.")));
            }
        }
        let commands: Vec<i64> =
            source.steps.iter().filter(|s| matches!(s.body, StepBody::Command(_))).map(|s| s.id).collect();
        let to_run: Vec<i64> = match &request.steps {
            Some(asked) => {
                if let Some(bad) = asked.iter().find(|id| !commands.contains(id)) {
                    return Err(ApiError::invalid(format!(
                        "Step {bad} is not a command step of this investigation (its command steps: {commands:?})."
                    )));
                }
                asked.clone()
            }
            None => commands,
        };
        let repeat = request.repeat.unwrap_or(1);
        if !(1..=domain::runs::MAX_REPEAT).contains(&repeat) {
            return Err(ApiError::invalid(format!("repeat is from 1 to {}.", domain::runs::MAX_REPEAT)));
        }
        let queued: usize = to_run
            .iter()
            .filter_map(|id| source.steps.iter().find(|s| s.id == *id))
            .map(|s| match &s.body {
                StepBody::Command(c) => domain::sweeps::configurations(&c.matrix).len().max(1) * repeat as usize,
                _ => 0,
            })
            .sum();
        if queued > MAX_RUNS {
            return Err(ApiError::invalid(format!("This replay would queue {queued} runs; at most {MAX_RUNS}.")));
        }

        let place = host.as_ref().map(|h| format!(" on {h}")).unwrap_or_default();
        let with = if request.env.is_empty() { String::new() } else { format!(" with {}", env_words(&request.env)) };
        let copy = self
            .create_investigation(
                actor,
                NewInvestigation {
                    title: format!("Replay: {}", source.investigation.title).chars().take(200).collect(),
                    question: Some(
                        format!(
                            "{} — replayed{place}{with} from {}",
                            source.investigation.question, source.investigation.url
                        )
                        .chars()
                        .take(2000)
                        .collect(),
                    ),
                },
            )
            .await?;
        // Its numbers are read as the original's were.
        for def in &source.extractors {
            self.add_extractor(actor, &copy.id, def.clone()).await?;
        }
        for def in &source.derived {
            self.add_derived(actor, &copy.id, def.clone()).await?;
        }
        if let Some(text) = &source.slo {
            self.set_slo(actor, &copy.id, domain::distributions::SloInput { text: text.clone() }).await?;
        }
        let mut ordered: Vec<&domain::replays::ManifestStep> = source.steps.iter().collect();
        ordered.sort_by_key(|s| s.position);
        let mut steps: Vec<(i64, i64)> = Vec::new();
        for step in ordered {
            let body = retargeted(&step.body, host.as_deref(), &request.env);
            let added = self.add_step(actor, &copy.id, body).await?;
            steps.push((step.id, added.id));
        }
        let mapped: HashMap<i64, i64> = steps.iter().copied().collect();
        let mut hypotheses: Vec<(i64, i64)> = Vec::new();
        for h in &source.hypotheses {
            let group = |g: &RunGroup| RunGroup {
                runs: Vec::new(),
                steps: g.steps.iter().filter_map(|s| mapped.get(s).copied()).collect(),
                configs: g
                    .configs
                    .iter()
                    .filter_map(|c| {
                        Some(domain::hypotheses::ConfigPick { step: *mapped.get(&c.step)?, config: c.config.clone() })
                    })
                    .collect(),
            };
            let input = HypothesisInput {
                statement: Some(h.statement.clone()),
                rationale: Some(h.rationale.clone()),
                metric: h.metric.clone(),
                direction: h.direction.clone(),
                expected_pct: Some(h.expected_pct),
                baseline: Some(group(&h.baseline)),
                treatment: Some(group(&h.treatment)),
                ..HypothesisInput::default()
            };
            let added = self.add_hypothesis(actor, &copy.id, input).await?;
            hypotheses.push((h.id, added.id));
        }
        let row = ReplayRow {
            id: 0,
            investigation_id: copy.id.clone(),
            original_id: original,
            host: host.clone(),
            env: serde_json::json!(request.env).to_string(),
            steps: serde_json::json!(steps).to_string(),
            hypotheses: serde_json::json!(hypotheses).to_string(),
            manifest: serde_json::to_string(&source).unwrap_or_default(),
            created_by: Some(actor.name.clone()),
            created_at: crate::time::now_ms(),
        };
        let permit = self.access.permit::<Edit>(actor, &copy.id).await?;
        let id = self.notebook.record_replay(&permit, &row).await?;
        for original in &to_run {
            if let Some(copy) = mapped.get(original) {
                let request = domain::runs::RunRequest { repeat: Some(repeat), ..Default::default() };
                self.start_runs(actor, *copy, request).await?;
            }
        }
        self.replay(actor, id).await
    }

    /// `GET /api/v1/replays/{id}`: where it stands, and both conclusions.
    pub async fn replay(&self, actor: &Actor, id: i64) -> Result<Replay, ApiError> {
        let missing = || ApiError::not_found(format!("There is no replay {id}."));
        let row = self.notebook.replay_row(id).await?.ok_or_else(missing)?;
        // A reader of the replay's investigation reads it (its manifest is
        // the original as its creator could read it).
        let replayed = self.investigation(actor, &row.investigation_id, None).await.map_err(|_| missing())?;
        let manifest: Manifest = serde_json::from_str(&row.manifest).map_err(|_| missing())?;
        let permit = self.access.permit::<Read>(actor, &replayed.id).await?;
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
            (Some((_, a)), Some(b)) => crate::hypotheses::facts_differences(a, &b),
            _ => Vec::new(),
        };
        Ok(view(&row, &manifest, &replayed, host_facts))
    }
}

/// `A=1, B=2`.
fn env_words(env: &BTreeMap<String, String>) -> String {
    env.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", ")
}

/// A step as the replay runs it: on `host` where it names one, with `env` set
/// over its own (a command's and its server's); a calculator keeps its inputs'
/// values, not which of the original's measurements they came from.
fn retargeted(body: &StepBody, host: Option<&str>, env: &BTreeMap<String, String>) -> StepBody {
    let mut body = body.clone();
    match &mut body {
        StepBody::Command(c) => {
            if let Some(host) = host {
                c.host = host.to_string();
            }
            c.env.extend(env.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        StepBody::Snippet(s) => {
            if let Some(host) = host {
                s.host = host.to_string();
            }
        }
        StepBody::Grep(g) => {
            if let Some(host) = host {
                g.host = host.to_string();
            }
        }
        StepBody::Calculator(c) => *c = c.clone().without_sources(),
        StepBody::Note(_) => {}
    }
    body
}

/// The replay as its page and the API show it.
fn view(row: &ReplayRow, original: &Manifest, replayed: &Investigation, host_facts: Vec<String>) -> Replay {
    let steps: Vec<(i64, i64)> = serde_json::from_str(&row.steps).unwrap_or_default();
    let pairs: Vec<(i64, i64)> = serde_json::from_str(&row.hypotheses).unwrap_or_default();
    let runs: Vec<ReplayedRun> = replayed
        .steps
        .iter()
        .flat_map(|s| s.runs.iter())
        .map(|r| ReplayedRun { id: r.id, step_id: r.step_id, host: r.host.clone(), status: r.status })
        .collect();
    let running = runs.iter().any(|r| !r.status.is_finished());
    let hypotheses = pairs
        .iter()
        .filter_map(|(a, b)| {
            let before = original.hypotheses.iter().find(|h| h.id == *a)?;
            let after = replayed.hypotheses.iter().find(|h| h.id == *b)?;
            let (replayed_outcome, replayed_verdict) = outcome(after);
            // Judged on both sides: an outcome that says its noise is unknown
            // (one run a side) is no conclusion to agree or disagree with.
            let judged = |o: &Option<String>| o.clone().filter(|o| o != "noise_unknown");
            let same_conclusion = match (judged(&before.outcome), judged(&replayed_outcome)) {
                (Some(x), Some(y)) => Some(x == y),
                _ => None,
            };
            Some(ReplayedHypothesis {
                original_id: *a,
                replay_id: *b,
                statement: before.statement.clone(),
                metric: before.metric.clone(),
                original_outcome: before.outcome.clone(),
                replayed_outcome,
                original_verdict: before.verdict.clone(),
                replayed_verdict,
                same_conclusion,
            })
        })
        .collect();
    let snippets = steps
        .iter()
        .filter_map(|(a, b)| {
            let before = original.steps.iter().find(|s| s.id == *a)?;
            let StepBody::Snippet(body) = &before.body else { return None };
            let after = replayed.steps.iter().find(|s| s.id == *b)?;
            let (x, y) = (before.snapshots.first(), after.snapshots.first());
            let (source, note) = match (x.and_then(|s| s.sha256.as_ref()), y.and_then(|s| s.sha256.as_ref())) {
                (Some(p), Some(q)) if p == q => ("same", None),
                (Some(_), Some(_)) => {
                    let shown = if x.map(|s| &s.lines) == y.map(|s| &s.lines) {
                        "the lines shown are the same; elsewhere in the file it differs"
                    } else {
                        "the lines shown differ"
                    };
                    ("changed", Some(shown.to_string()))
                }
                _ => ("unread", y.and_then(|s| s.notes.first().cloned())),
            };
            Some(ReplayedSnippet {
                original_step: *a,
                replay_step: *b,
                path: y.map(|s| s.path.clone()).or_else(|| body.path.clone()),
                source: source.into(),
                note,
            })
        })
        .collect();
    Replay {
        id: row.id,
        original: row.original_id.clone(),
        original_title: original.investigation.title.clone(),
        original_url: original.investigation.url.clone(),
        investigation: row.investigation_id.clone(),
        host: row.host.clone(),
        env: serde_json::from_str(&row.env).unwrap_or_default(),
        status: if running { "running" } else { "finished" }.into(),
        steps,
        runs,
        hypotheses,
        snippets,
        host_facts,
        created_at: crate::time::timestamp(row.created_at),
        created_by: row.created_by.clone(),
        url: format!("/replays/{}", row.id),
    }
}
