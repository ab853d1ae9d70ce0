//! Replaying an investigation: a new investigation of the caller's with its
//! steps copied (hosts and env changed), its hypotheses copied onto the copies,
//! then its command steps run — and both conclusions side by side.
//!
//! A replay is planned whole first ([`plan`]: every step validated, every host
//! it reaches named, its size capped), the policy checks those hosts, and the
//! copy is then written in one transaction ([`Replays::copy`]): a refused or
//! failed replay leaves no half investigation. What reaches a host happens
//! after the commit (snippets read, runs started), each as the caller, and
//! what went wrong there is noted on the replay, never hidden.
//!
//! The original is read through its provenance manifest (`provenance.json` of
//! a zip export), so a replay starts alike from an investigation here or from
//! one exported by another Sleuth.

mod view;

pub use view::view;

use crate::db::{Copied, HypothesisRow, Maybe, ReplayCopy, ReplayRow, Store};
use crate::error::{Context, Result};
use crate::policy::Replaying;
use domain::error::ApiError;
use domain::hypotheses::{ConfigPick, HypothesisStatus, RunGroup};
use domain::replays::{Manifest, ManifestHypothesis, ReplayRequest};
use domain::steps::StepBody;
use std::collections::{BTreeMap, HashMap};

/// The most runs one replay may queue.
pub const MAX_RUNS: usize = 2000;
/// The most steps and hypotheses one replay may copy (a manifest is
/// someone's upload: 0.87 MB of it once made 10 000 steps).
pub const MAX_STEPS: usize = 500;
pub const MAX_HYPOTHESES: usize = 200;
/// The most extractors and derived metrics it may copy.
pub const MAX_DEFINITIONS: usize = 100;

/// A replay, checked whole: what it copies and runs, and every host it reaches.
pub struct Plan {
    pub source: Manifest,
    pub original: Option<String>,
    pub host: Option<String>,
    pub env: BTreeMap<String, String>,
    pub repeat: u32,
    pub title: String,
    pub question: String,
    /// `(original step, the copy's body)`, in timeline order.
    pub steps: Vec<(i64, StepBody)>,
    /// The original command steps to run.
    pub to_run: Vec<i64>,
    /// Every host a copy runs on or reads from.
    pub hosts: Vec<String>,
}

/// `A=1, B=2`.
fn env_words(env: &BTreeMap<String, String>) -> String {
    env.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", ")
}

/// Checks a replay of `source` as `request` asks, before anything is written:
/// its env names, the steps to run, its size, and each copied step as saving
/// it would; says every host it reaches.
pub fn plan(source: Manifest, original: Option<String>, request: ReplayRequest) -> Result<Plan> {
    let host = request.host.as_deref().map(str::trim).filter(|h| !h.is_empty()).map(str::to_string);
    for name in request.env.keys() {
        if !crate::ssh::quote::is_env_name(name) {
            return Err(ApiError::invalid(format!("{name:?} is not an environment variable name.")).into());
        }
    }
    if source.steps.len() > MAX_STEPS {
        return Err(ApiError::invalid(format!(
            "This manifest has {} steps; a replay copies at most {MAX_STEPS}.",
            source.steps.len()
        ))
        .into());
    }
    if source.hypotheses.len() > MAX_HYPOTHESES {
        return Err(ApiError::invalid(format!(
            "This manifest has {} hypotheses; a replay copies at most {MAX_HYPOTHESES}.",
            source.hypotheses.len()
        ))
        .into());
    }
    if source.extractors.len() + source.derived.len() > MAX_DEFINITIONS {
        return Err(ApiError::invalid(format!(
            "This manifest has {} extractors and derived metrics; a replay copies at most {MAX_DEFINITIONS}.",
            source.extractors.len() + source.derived.len()
        ))
        .into());
    }
    let commands: Vec<i64> =
        source.steps.iter().filter(|s| matches!(s.body, StepBody::Command(_))).map(|s| s.id).collect();
    let to_run: Vec<i64> = match &request.steps {
        Some(asked) => {
            if let Some(bad) = asked.iter().find(|id| !commands.contains(id)) {
                return Err(ApiError::invalid(format!(
                    "Step {bad} is not a command step of this investigation (its command steps: {commands:?})."
                ))
                .into());
            }
            asked.clone()
        }
        None => commands,
    };
    let repeat = request.repeat.unwrap_or(1);
    if !(1..=domain::runs::MAX_REPEAT).contains(&repeat) {
        return Err(ApiError::invalid(format!("repeat is from 1 to {}.", domain::runs::MAX_REPEAT)).into());
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
        return Err(ApiError::invalid(format!("This replay would queue {queued} runs; at most {MAX_RUNS}.")).into());
    }
    for def in &source.extractors {
        crate::metrics::custom::Extractor::new(&def.name, &def.pattern, &def.unit)?;
    }
    for def in &source.derived {
        crate::metrics::derived::check(def)?;
    }
    if let Some(text) = &source.slo {
        domain::distributions::Slo::parse(text).map_err(ApiError::from)?;
    }
    let mut ordered: Vec<&domain::replays::ManifestStep> = source.steps.iter().collect();
    ordered.sort_by_key(|s| s.position);
    let mut steps = Vec::with_capacity(ordered.len());
    // The host asked for is checked even where no step would reach it.
    let mut hosts: Vec<String> = host.iter().cloned().collect();
    for step in ordered {
        let body = crate::steps::validate(retargeted(&step.body, host.as_deref(), &request.env))
            .map_err(|e| ApiError::invalid(format!("Step {} cannot be copied: {}", step.id, e.message)))?;
        let reaches = match &body {
            StepBody::Command(c) if to_run.contains(&step.id) => Some(&c.host),
            StepBody::Snippet(s) => Some(&s.host),
            StepBody::Grep(g) => Some(&g.host),
            _ => None,
        };
        if let Some(h) = reaches
            && !hosts.contains(h)
        {
            hosts.push(h.clone());
        }
        steps.push((step.id, body));
    }
    let place = host.as_ref().map(|h| format!(" on {h}")).unwrap_or_default();
    let with = if request.env.is_empty() { String::new() } else { format!(" with {}", env_words(&request.env)) };
    let title: String = format!("Replay: {}", source.investigation.title).chars().take(200).collect();
    let question: String =
        format!("{} — replayed{place}{with} from {}", source.investigation.question, source.investigation.url)
            .chars()
            .take(2000)
            .collect();
    Ok(Plan { source, original, host, env: request.env, repeat, title, question, steps, to_run, hosts })
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
        StepBody::Patch(p) => {
            if let Some(host) = host {
                p.host = host.to_string();
            }
        }
        StepBody::Calculator(c) => *c = c.clone().without_sources(),
        StepBody::Note(_) => {}
    }
    body
}

/// An arm of the original as an arm of the copy. Steps and configurations
/// map to their copies; runs chosen one by one (or an arm narrowed by a
/// window, a launch or runs left out) map to what they ran: a sweep's run to
/// the same configuration of the copied step, another to the copied step —
/// so a hypothesis over chosen runs is judged on the replay too.
/// A step's stored fields with the patch steps it names (`patch`, a
/// matrix's `@patch` values) as their copies; one not copied (yet) is kept.
fn patches_renamed(fields: &str, copies: &HashMap<i64, i64>) -> String {
    let Ok(mut value) = serde_json::from_str::<serde_json::Value>(fields) else { return fields.to_string() };
    let copy = |id: i64| copies.get(&id).copied().unwrap_or(id);
    if let Some(patch) = value.get_mut("patch")
        && let Some(id) = patch.as_i64()
    {
        *patch = copy(id).into();
    }
    if let Some(levels) =
        value.pointer_mut(&format!("/matrix/{}", domain::sweeps::PATCH_KEY)).and_then(|l| l.as_array_mut())
    {
        for level in levels {
            if let Some(id) = level.as_str().and_then(|v| v.parse::<i64>().ok()) {
                *level = copy(id).to_string().into();
            }
        }
    }
    value.to_string()
}

fn mapped_arm(arm: &RunGroup, used: &[i64], source: &Manifest, copies: &HashMap<i64, i64>) -> RunGroup {
    let narrowed = arm.window.is_some() || arm.launch.is_some() || !arm.exclude.is_empty();
    let mut out = RunGroup::default();
    let add_step = |out: &mut RunGroup, step: i64| {
        if !out.steps.contains(&step) {
            out.steps.push(step);
        }
    };
    let add_pick = |out: &mut RunGroup, mut pick: ConfigPick| {
        // A configuration's patch is the copy's patch step.
        if let Some(Some(level)) = pick.config.get_mut(domain::sweeps::PATCH_KEY)
            && let Some(copy) = level.parse::<i64>().ok().and_then(|id| copies.get(&id))
        {
            *level = copy.to_string();
        }
        if !out.configs.contains(&pick) {
            out.configs.push(pick);
        }
    };
    if !narrowed {
        for step in arm.steps.iter().filter_map(|s| copies.get(s)) {
            add_step(&mut out, *step);
        }
        for pick in &arm.configs {
            if let Some(step) = copies.get(&pick.step) {
                add_pick(&mut out, ConfigPick { step: *step, config: pick.config.clone() });
            }
        }
    }
    // Runs: the arm's chosen ones, or (narrowed) every run it used then.
    let runs: Vec<i64> = if narrowed && !used.is_empty() { used.to_vec() } else { arm.runs.clone() };
    for run in runs {
        let Some((step, found)) =
            source.steps.iter().find_map(|s| s.runs.iter().find(|r| r.id == run).map(|r| (s.id, r)))
        else {
            continue;
        };
        let Some(copy) = copies.get(&step) else { continue };
        match &found.config {
            Some(config) => add_pick(&mut out, ConfigPick { step: *copy, config: config.clone() }),
            None => add_step(&mut out, *copy),
        }
    }
    // A pick of a step whose every run is in is the step itself.
    let steps = out.steps.clone();
    out.configs.retain(|p| !steps.contains(&p.step));
    out
}

/// A hypothesis of the original as a row of the copy (its arms mapped by `copies`).
fn copied_hypothesis(h: &ManifestHypothesis, source: &Manifest, copies: &HashMap<i64, i64>) -> Result<HypothesisRow> {
    let arm = |g: &RunGroup, used: &[i64]| -> Result<String> {
        serde_json::to_string(&mapped_arm(g, used, source, copies)).context("a replayed arm as JSON")
    };
    Ok(HypothesisRow {
        id: 0,
        investigation_id: String::new(),
        statement: h.statement.clone(),
        rationale: h.rationale.clone(),
        metric: h.metric.clone(),
        direction: Maybe(h.direction),
        expected_pct: h.expected_pct,
        status: HypothesisStatus::Open,
        status_auto: 1,
        baseline: arm(&h.baseline, &h.baseline_runs)?,
        treatment: arm(&h.treatment, &h.treatment_runs)?,
        evidence: "[]".into(),
        created_at: 0,
        updated_at: 0,
        version: 1,
        updated_by: None,
    })
}

#[derive(Clone)]
pub struct Replays {
    store: Store,
}

impl Replays {
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    /// The copy, in one transaction: the investigation (the caller owns it),
    /// its extractors, derived metrics and SLO, its steps and hypotheses, and
    /// the replay's record.
    pub async fn copy(&self, permit: &Replaying, plan: &Plan) -> Result<Copied> {
        for (_, body) in &plan.steps {
            let host = match body {
                StepBody::Snippet(s) => Some(&s.host),
                StepBody::Grep(g) => Some(&g.host),
                _ => None,
            };
            if let Some(host) = host.filter(|h| !permit.reaches(h)) {
                return Err(crate::error::Error::bug(format!("a replay permit without {host}")));
            }
        }
        let steps = plan
            .steps
            .iter()
            .map(|(id, body)| {
                let (kind, fields) = crate::steps::to_stored(body).context("storing a replayed step")?;
                Ok((*id, kind, fields))
            })
            .collect::<Result<Vec<_>>>()?;
        let derived = plan
            .source
            .derived
            .iter()
            .map(|d| {
                let constants = serde_json::to_string(&d.constants).context("a derived metric's constants as JSON")?;
                Ok((d.name.trim().to_string(), d.unit.trim().to_string(), d.formula.clone(), constants))
            })
            .collect::<Result<Vec<_>>>()?;
        // Mapped inside the transaction, once the copies have ids; a mapping
        // that fails is an internal error, and nothing is written.
        let failed = std::sync::Mutex::new(None);
        let hypotheses = |copies: &HashMap<i64, i64>| -> Vec<(i64, HypothesisRow)> {
            plan.source
                .hypotheses
                .iter()
                .filter_map(|h| match copied_hypothesis(h, &plan.source, copies) {
                    Ok(row) => Some((h.id, row)),
                    Err(e) => {
                        if let Ok(mut failed) = failed.lock() {
                            failed.get_or_insert(e);
                        }
                        None
                    }
                })
                .collect()
        };
        let actor = permit.actor();
        for _ in 0..4 {
            let id = crate::ids::new_investigation_id();
            let copy = ReplayCopy {
                renamed: patches_renamed,
                id: &id,
                title: &plan.title,
                question: &plan.question,
                owner: &actor.name,
                extractors: plan
                    .source
                    .extractors
                    .iter()
                    .map(|e| (e.name.trim().to_string(), e.pattern.clone(), e.unit.trim().to_string()))
                    .collect(),
                derived: derived.clone(),
                slo: plan.source.slo.clone(),
                steps: steps.clone(),
                hypotheses: &hypotheses,
                replay: ReplayRow {
                    id: 0,
                    investigation_id: id.clone(),
                    original_id: plan.original.clone(),
                    host: plan.host.clone(),
                    env: serde_json::json!(plan.env).to_string(),
                    steps: "[]".into(),
                    hypotheses: "[]".into(),
                    manifest: serde_json::to_string(&plan.source).context("a replayed manifest as JSON")?,
                    created_by: Some(actor.name.clone()),
                    created_at: crate::time::now_ms(),
                    notes: None,
                },
            };
            if let Some(error) = failed.lock().ok().and_then(|mut f| f.take()) {
                return Err(error);
            }
            if let Some(copied) = self.store.insert_replay_copy(&copy).await? {
                if let Some(error) = failed.lock().ok().and_then(|mut f| f.take()) {
                    return Err(error);
                }
                tracing::info!(replay = copied.replay, investigation = %id, by = %actor.name, "replayed into a copy");
                return Ok(copied);
            }
        }
        Err(crate::error::Error::bug("no free investigation id after 4 tries"))
    }

    /// What went wrong on the hosts after the copy, kept on the replay.
    pub async fn note(&self, id: i64, notes: &[String]) -> Result<()> {
        if !notes.is_empty() {
            self.store.note_replay(id, notes).await?;
        }
        Ok(())
    }

    /// A replay's record. Unchecked: its caller reads the investigations it
    /// names as the actor before showing anything of it.
    pub async fn row(&self, id: i64) -> Result<Option<ReplayRow>> {
        Ok(self.store.replay(id).await?)
    }

    /// The replays of an investigation (its page links them), newest first,
    /// and the replay it is the copy of. Unchecked likewise.
    pub async fn of(&self, original: &str) -> Result<Vec<ReplayRow>> {
        Ok(self.store.replays_of(original).await?)
    }

    pub async fn copied_into(&self, investigation: &str) -> Result<Option<ReplayRow>> {
        Ok(self.store.replay_into(investigation).await?)
    }
}

/// A replay as the investigations it joins link it.
pub fn link(row: &ReplayRow) -> domain::model::ReplayLink {
    domain::model::ReplayLink {
        id: row.id,
        url: format!("/replays/{}", row.id),
        investigation: row.investigation_id.clone(),
        original: row.original_id.clone(),
        host: row.host.clone(),
        created_at: crate::time::timestamp(row.created_at),
        created_by: row.created_by.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> Manifest {
        serde_json::from_value(serde_json::json!({
            "format": "sleuth-provenance/1",
            "investigation": { "id": "i", "title": "t", "question": "q", "url": "/i/i" },
            "exported_at": "2026-12-06T00:00:00Z",
            "steps": [
                { "id": 7, "position": 1, "body": { "kind": "note", "body": "n" }, "runs": [
                    { "id": 70, "host": "h", "command": "c", "env": [], "config": { "MB": "1" }, "status": "succeeded",
                      "warmup": false, "started_at": null, "facts": null, "artifacts": [], "measurements": [] },
                    { "id": 71, "host": "h", "command": "c", "env": [], "config": { "MB": "8" }, "status": "succeeded",
                      "warmup": false, "started_at": null, "facts": null, "artifacts": [], "measurements": [] }
                ] },
                { "id": 8, "position": 2, "body": { "kind": "note", "body": "n" }, "runs": [
                    { "id": 80, "host": "h", "command": "c", "env": [], "config": null, "status": "succeeded",
                      "warmup": false, "started_at": null, "facts": null, "artifacts": [], "measurements": [] }
                ] }
            ],
            "hypotheses": []
        }))
        .unwrap()
    }

    #[test]
    fn chosen_runs_replay_as_their_configurations() {
        let source = manifest();
        let copies: HashMap<i64, i64> = [(7, 107), (8, 108)].into_iter().collect();
        let arm = RunGroup { runs: vec![71, 80], ..RunGroup::default() };
        let mapped = mapped_arm(&arm, &[71, 80], &source, &copies);
        assert_eq!(mapped.steps, [108], "a plain run: its step");
        assert_eq!(mapped.configs.len(), 1);
        assert_eq!(mapped.configs[0].step, 107);
        assert_eq!(domain::sweeps::config_label(&mapped.configs[0].config), "MB=8");
        assert!(mapped.runs.is_empty(), "the original's run ids mean nothing in the copy");
        // Narrowed by a launch: the runs it used, as configurations.
        let arm = RunGroup { steps: vec![7], launch: Some(70), ..RunGroup::default() };
        let mapped = mapped_arm(&arm, &[70], &source, &copies);
        assert_eq!((mapped.steps.len(), mapped.configs.len()), (0, 1), "{mapped:?}");
        assert_eq!(domain::sweeps::config_label(&mapped.configs[0].config), "MB=1");
        // A plain step arm maps as it is.
        let arm = RunGroup { steps: vec![8], ..RunGroup::default() };
        assert_eq!(mapped_arm(&arm, &[80], &source, &copies).steps, [108]);
    }
}
