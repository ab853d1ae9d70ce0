//! Replaying an investigation: composed of the operations a person would do
//! by hand — a new investigation, its steps copied (hosts and env changed),
//! its hypotheses copied onto the copies, the command steps run — each
//! checked as that operation always is; then both conclusions side by side.

use super::Guarded;
use crate::db::ReplayRow;
use crate::policy::{Edit, Read};
use domain::error::ApiError;
use domain::hypotheses::{HypothesisInput, RunGroup};
use domain::model::{Investigation, NewInvestigation};
use domain::ports::Actor;
use domain::replays::{Replay, ReplayRequest, ReplayedHypothesis, ReplayedRun, ReplayedSnippet, outcome};
use domain::steps::StepBody;
use std::collections::HashMap;

/// The most runs one replay may queue.
const MAX_RUNS: usize = 2000;

impl Guarded {
    /// `POST /api/v1/investigations/{id}/replay`.
    pub async fn replay_investigation(
        &self,
        actor: &Actor,
        original: &str,
        request: ReplayRequest,
    ) -> Result<Replay, ApiError> {
        let source = self.investigation(actor, original, None).await?;
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

        let copy = self
            .create_investigation(
                actor,
                NewInvestigation {
                    title: format!("Replay: {}", source.title).chars().take(200).collect(),
                    question: Some(format!(
                        "{} — replayed{}{} from {}",
                        source.question,
                        host.as_ref().map(|h| format!(" on {h}")).unwrap_or_default(),
                        if request.env.is_empty() {
                            String::new()
                        } else {
                            format!(" with {}", env_words(&request.env))
                        },
                        source.url
                    )),
                },
            )
            .await?;
        let mut steps: Vec<(i64, i64)> = Vec::new();
        for step in &source.steps {
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
            original_id: source.id.clone(),
            host: host.clone(),
            env: serde_json::json!(request.env).to_string(),
            steps: serde_json::json!(steps).to_string(),
            hypotheses: serde_json::json!(hypotheses).to_string(),
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
        // A reader of both, or none: a replay shows the original's conclusions.
        let replayed = self.investigation(actor, &row.investigation_id, None).await.map_err(|_| missing())?;
        let original = self.investigation(actor, &row.original_id, None).await.map_err(|_| missing())?;
        let host_facts = self.facts_differences(actor, &original, &replayed).await?;
        Ok(view(&row, &original, &replayed, host_facts))
    }

    /// What differs between the hosts the two ran on: the newest capture of each side's runs.
    async fn facts_differences(
        &self,
        actor: &Actor,
        original: &Investigation,
        replayed: &Investigation,
    ) -> Result<Vec<String>, ApiError> {
        let newest = |inv: &Investigation| {
            inv.steps
                .iter()
                .flat_map(|s| s.runs.iter())
                .filter(|r| r.facts_id.is_some())
                .max_by_key(|r| r.id)
                .map(|r| r.id)
        };
        let (Some(a), Some(b)) = (newest(original), newest(replayed)) else { return Ok(Vec::new()) };
        let before = self.notebook.facts_of_run(&self.access.permit::<Read>(actor, &original.id).await?, a).await?;
        let after = self.notebook.facts_of_run(&self.access.permit::<Read>(actor, &replayed.id).await?, b).await?;
        Ok(match (before, after) {
            (Some(a), Some(b)) => crate::hypotheses::facts_differences(&a, &b),
            _ => Vec::new(),
        })
    }
}

/// `A=1, B=2`.
fn env_words(env: &std::collections::BTreeMap<String, String>) -> String {
    env.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", ")
}

/// A step as the replay runs it: on `host` where it names one, with `env` set
/// over its own (a command's and its server's).
fn retargeted(body: &StepBody, host: Option<&str>, env: &std::collections::BTreeMap<String, String>) -> StepBody {
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
        StepBody::Note(_) | StepBody::Calculator(_) => {}
    }
    body
}

/// The replay as its page and the API show it.
fn view(row: &ReplayRow, original: &Investigation, replayed: &Investigation, host_facts: Vec<String>) -> Replay {
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
            let ((oo, ov), (ro, rv)) = (outcome(before), outcome(after));
            let same_conclusion = match (&oo, &ro) {
                (Some(x), Some(y)) => Some(x == y),
                _ => None,
            };
            Some(ReplayedHypothesis {
                original_id: *a,
                replay_id: *b,
                statement: before.statement.clone(),
                metric: before.metric.clone(),
                original_outcome: oo,
                replayed_outcome: ro,
                original_verdict: ov,
                replayed_verdict: rv,
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
                    let (x, y) = (x.map(|s| &s.lines), y.map(|s| &s.lines));
                    let shown = if x == y {
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
