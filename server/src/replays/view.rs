//! A replay as its page and the API show it: each hypothesis judged on the
//! original's runs and on the replay's, the snippets read again, what differs
//! between the hosts, and the runs.

use crate::db::ReplayRow;
use crate::error::{Result, stored, stored_opt};
use domain::model::Investigation;
use domain::replays::{
    Manifest, Replay, ReplayStatus, ReplayedHypothesis, ReplayedRun, ReplayedSnippet, SnippetSource, outcome,
};
use domain::steps::StepBody;

/// The replay as its page and the API show it.
pub fn view(row: &ReplayRow, original: &Manifest, replayed: &Investigation, host_facts: Vec<String>) -> Result<Replay> {
    let steps: Vec<(i64, i64)> = stored(&row.steps, || format!("replay {}'s steps", row.id))?;
    let pairs: Vec<(i64, i64)> = stored(&row.hypotheses, || format!("replay {}'s hypotheses", row.id))?;
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
            let judged = |o: &Option<domain::metrics::Outcome>| o.filter(|o| o.judged());
            let same_conclusion = match (judged(&before.outcome), judged(&replayed_outcome)) {
                (Some(x), Some(y)) => Some(x == y),
                _ => None,
            };
            Some(ReplayedHypothesis {
                original_id: *a,
                replay_id: *b,
                statement: before.statement.clone(),
                metric: before.metric.clone(),
                original_outcome: before.outcome,
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
                (Some(p), Some(q)) if p == q => (SnippetSource::Same, None),
                (Some(_), Some(_)) => {
                    let shown = if x.map(|s| &s.lines) == y.map(|s| &s.lines) {
                        "the lines shown are the same; elsewhere in the file it differs"
                    } else {
                        "the lines shown differ"
                    };
                    (SnippetSource::Changed, Some(shown.to_string()))
                }
                _ => (SnippetSource::Unread, y.and_then(|s| s.notes.first().cloned())),
            };
            Some(ReplayedSnippet {
                original_step: *a,
                replay_step: *b,
                path: y.map(|s| s.path.clone()).or_else(|| body.path.clone()),
                source,
                note,
            })
        })
        .collect();
    Ok(Replay {
        id: row.id,
        original: row.original_id.clone(),
        original_title: original.investigation.title.clone(),
        original_url: original.investigation.url.clone(),
        investigation: row.investigation_id.clone(),
        host: row.host.clone(),
        env: stored(&row.env, || format!("replay {}'s environment", row.id))?,
        status: if running { ReplayStatus::Running } else { ReplayStatus::Finished },
        steps,
        runs,
        hypotheses,
        snippets,
        host_facts,
        created_at: crate::time::timestamp(row.created_at),
        created_by: row.created_by.clone(),
        url: format!("/replays/{}", row.id),
        notes: stored_opt(row.notes.as_deref(), || format!("replay {}'s notes", row.id))?.unwrap_or_default(),
    })
}
