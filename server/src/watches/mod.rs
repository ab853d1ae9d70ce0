//! Watching steps: each watch runs its step on a schedule (`every_s` or a
//! cron line), judges the step's history after each run
//! (`crate::metrics::history`), and tells a new change point to its webhook
//! and on the investigation. The scheduler ticks every second on every
//! replica; each firing and each judging is a compare-and-set in the
//! database (`db/watches.rs`), so on a team server exactly one replica runs
//! or judges it. Watches are tended side by side (a slow webhook delays only
//! its own). A watch runs only what its creator approved — the step's version
//! when it was made; an edit by anyone else stops it — and acts with its
//! creator's rights at each firing, through the same checks as their own
//! requests: one who lost access stops their watch.

pub mod rows;
mod schedule;
mod service;
pub mod webhook;

pub use service::{MAX_PER_STEP, MAX_PER_USER, MIN_EVERY_S, Settings, Tending, Watches, base_url};

use crate::db::{Store, WatchRow};
use crate::guarded::Guarded;
use domain::history::{Change, HistoryQuery};
use domain::ports::Actor;
use domain::runs::{RunRequest, RunStatus};
use domain::watches::{StopReason, webhook_shown};
use rows::next_at;
use std::sync::Arc;
use std::time::Duration;

/// How often the scheduler looks.
const TICK: Duration = Duration::from_secs(1);

/// Who a watch acts as: its creator, with the rights they have now (an
/// admin's watch acts as an admin); `None` when they have no account any more.
async fn actor_of(store: &Store, row: &WatchRow) -> crate::db::StoreResult<Option<Actor>> {
    let name = row.created_by.clone().unwrap_or_else(|| "local".into());
    if name == "local" {
        return Ok(Some(Actor { local: true, admin: true, name }));
    }
    Ok(store.user_by_name(&name).await?.map(|user| Actor { local: false, admin: user.is_admin != 0, name }))
}

/// Starts the scheduler (one per process; replicas share the work by the database).
pub fn spawn(guarded: Arc<Guarded>, store: Store) {
    let busy = guarded.watches_being_tended();
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(TICK);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            ticks.tick().await;
            let now = crate::time::now_ms();
            let due = match store.watches_to_do(now).await {
                Ok(due) => due,
                Err(e) => {
                    tracing::warn!("cannot read the watches: {e}");
                    continue;
                }
            };
            for row in due {
                // A watch still being tended (its webhook slow) is not tended twice.
                if !busy.lock().is_ok_and(|mut busy| busy.insert(row.id)) {
                    continue;
                }
                let (guarded, store, busy) = (guarded.clone(), store.clone(), busy.clone());
                tokio::spawn(async move {
                    if let Err(e) = tend(&guarded, &store, &row, now).await {
                        tracing::error!(watch = row.id, "watch: {e}");
                    }
                    if let Ok(mut busy) = busy.lock() {
                        busy.remove(&row.id);
                    }
                });
            }
        }
    });
}

/// Why a watch no longer runs what its creator approved.
#[derive(Debug, thiserror::Error)]
enum NotApproved {
    #[error("Its step was deleted.")]
    Deleted,
    #[error("Step changed by {by} at {at}: watch stopped; start it again to run the new version.")]
    Changed { by: String, at: String },
}

impl NotApproved {
    fn reason(&self) -> StopReason {
        match self {
            Self::Deleted => StopReason::StepDeleted,
            Self::Changed { .. } => StopReason::StepChanged,
        }
    }
}

/// Why a watch stops before a firing, if it must: its step changed by
/// someone else since its creator approved it (their own edit carries on,
/// bound to the new version).
async fn still_approved(store: &Store, row: &WatchRow) -> crate::db::StoreResult<Result<(), NotApproved>> {
    let Some(step) = store.step(row.step_id).await? else { return Ok(Err(NotApproved::Deleted)) };
    let Some(approved) = row.step_version else { return Ok(Ok(())) };
    if step.version == approved {
        return Ok(Ok(()));
    }
    let by = step.updated_by.clone().unwrap_or_else(|| "someone".into());
    if row.created_by.as_deref() == Some(by.as_str()) {
        store.rebind_watch(row.id, step.version, &step.body).await?;
        return Ok(Ok(()));
    }
    Ok(Err(NotApproved::Changed { by, at: crate::time::timestamp(step.updated_at) }))
}

/// One watch's turn: its last run judged once it ended, then a new run if one is due.
async fn tend(guarded: &Guarded, store: &Store, row: &WatchRow, now: i64) -> crate::db::StoreResult<()> {
    let Some(actor) = actor_of(store, row).await? else {
        let who = row.created_by.as_deref().unwrap_or("its creator");
        return store
            .stop_watch(row.id, StopReason::CreatorGone, &format!("{who} has no account here any more."))
            .await;
    };
    let last = match row.last_run {
        Some(id) => guarded.run(&actor, id).await.ok(),
        None => None,
    };
    let unjudged = row.last_run.is_some_and(|run| row.judged_run.is_none_or(|j| j < run));
    if let Some(run) = last.as_ref().filter(|r| unjudged && r.status.is_finished())
        && store.claim_judging(row.id, row.judged_run, run.id).await?
    {
        judge(guarded, store, row, run, &actor).await?;
    }
    let Some(was) = row.next_at.filter(|at| *at <= now) else { return Ok(()) };
    let next = next_at(row.every_s, row.cron.as_deref(), now);
    if !store.claim_watch(row.id, was, next).await? {
        return Ok(()); // another replica took this firing
    }
    // A run still going is not stacked on: this firing is skipped.
    if last.as_ref().is_some_and(|r| !r.status.is_finished()) {
        return Ok(());
    }
    if let Err(why) = still_approved(store, row).await? {
        return store.stop_watch(row.id, why.reason(), &why.to_string()).await;
    }
    // Deleted or stopped meanwhile (this turn was claimed before): nothing is queued for it.
    if store.watch(row.id).await?.is_none_or(|w| w.stopped.is_some()) {
        return Ok(());
    }
    let request = match only(guarded, &actor, row).await {
        Ok(only) => RunRequest { repeat: Some(1), only, ..RunRequest::default() },
        Err(why) => return store.stop_watch(row.id, StopReason::Unrunnable, &why.to_string()).await,
    };
    match guarded.start_runs_for(&actor, row.step_id, request, domain::runs::RunOrigin::Watch { id: row.id }).await {
        Ok(runs) => match runs.first() {
            Some(run) => store.watch_ran(row.id, run.id).await,
            None => Ok(()),
        },
        Err(e) => {
            let why = format!("Its step could not be run: {}", e.message);
            store.stop_watch(row.id, StopReason::Unrunnable, &why).await
        }
    }
}

/// The sweep configuration a watch runs, from its label.
async fn only(guarded: &Guarded, actor: &Actor, row: &WatchRow) -> Result<Option<domain::sweeps::Config>, Unrunnable> {
    let Some(label) = &row.config else { return Ok(None) };
    let step = guarded.step(actor, row.step_id).await.map_err(Unrunnable::Step)?;
    let domain::steps::StepBody::Command(body) = &step.body else { return Err(Unrunnable::NotACommand) };
    domain::sweeps::configurations(&body.matrix)
        .into_iter()
        .find(|c| domain::sweeps::config_label(c) == *label)
        .map(Some)
        .ok_or_else(|| Unrunnable::ConfigurationGone(label.clone()))
}

/// Why a watch cannot run its step any more: the sentence it stops with.
#[derive(Debug, thiserror::Error)]
enum Unrunnable {
    #[error("Its step cannot be read: {}", .0.message)]
    Step(domain::error::ApiError),
    #[error("Its step is no command.")]
    NotACommand,
    #[error("Its step no longer has the configuration {0}.")]
    ConfigurationGone(String),
}

/// A run of the watch ended: counted as a failure, or its history judged and
/// a new change told.
async fn judge(
    guarded: &Guarded,
    store: &Store,
    row: &WatchRow,
    run: &domain::runs::Run,
    actor: &Actor,
) -> crate::db::StoreResult<()> {
    if run.status != RunStatus::Succeeded {
        let failures = row.failures + 1;
        store.watch_judged(row.id, failures).await?;
        if failures >= row.max_failures {
            let why = format!(
                "Stopped: {failures} runs in a row did not succeed; the last, #{}, {}{}.",
                run.id,
                run.status.as_str(),
                run.error
                    .as_deref()
                    .map(|e| format!(": {}", e.chars().take(200).collect::<String>()))
                    .unwrap_or_default()
            );
            store.stop_watch(row.id, StopReason::Failing, &why).await?;
        }
        return Ok(());
    }
    store.watch_judged(row.id, 0).await?;
    let query = HistoryQuery { metric: Some(row.metric.clone()), config: row.config.clone(), better: None };
    let history = match guarded.history(actor, row.step_id, &query).await {
        Ok(history) => history,
        Err(e) => {
            tracing::warn!(watch = row.id, "cannot judge its history: {}", e.message);
            return Ok(());
        }
    };
    let Some(change) = history.changes.last().filter(|c| row.told_run.is_none_or(|t| c.run_id > t)) else {
        return Ok(());
    };
    let (text, body) = message(row, &history.metric, history.unit.as_deref(), change);
    // Kept before it is told: whoever the webhook sends to Sleuth finds it, and
    // a Sleuth stopped while telling does not tell it twice.
    let change_json = serde_json::to_string(change).unwrap_or_default();
    let telling = if row.webhook.is_some() { "being told" } else { "no webhook; shown on the investigation" };
    store.watch_told(row.id, change.run_id, &change_json, telling).await?;
    let told = match &row.webhook {
        Some(url) => {
            let delivery = webhook::post(url, &body, &guarded.watch_settings().webhook_allow).await;
            format!("{}: {delivery}", webhook_shown(url))
        }
        None => "no webhook; shown on the investigation".into(),
    };
    tracing::info!(watch = row.id, step = row.step_id, "{text} — {told}");
    store.watch_told(row.id, change.run_id, &change_json, &told).await
}

/// The message: a Slack-compatible `text`, and the change whole.
fn message(row: &WatchRow, metric: &str, unit: Option<&str>, change: &Change) -> (String, serde_json::Value) {
    // Absolute: a message is read in Slack, not on the server.
    let url = format!("{}{}", row.base_url.as_deref().unwrap_or(""), rows::history_path(row));
    let text = format!(
        "Sleuth: {metric} of step {} {} {:+.1} % ({} → {}{}) from run #{}{} — {url}",
        row.step_id,
        change.direction.verb(),
        change.delta_pct,
        domain::metrics::figure(change.before_mean),
        domain::metrics::figure(change.after_mean),
        unit.map(|u| format!(" {u}")).unwrap_or_default(),
        change.run_id,
        if change.between.differs.is_empty() {
            String::new()
        } else {
            format!("; between them: {}", change.between.differs.join("; "))
        },
    );
    let body = serde_json::json!({
        "text": text,
        "investigation": row.investigation_id,
        "step": row.step_id,
        "metric": metric,
        "config": row.config,
        "change": change,
        "url": url,
    });
    (text, body)
}
