//! Making, reading and stopping watches: what a watch may be (its schedule,
//! webhook, configuration, metric) is checked here, and it is bound to the
//! step's version its creator saw, so that it runs only what they approved.

use crate::db::{Store, WatchRow};
use crate::error::{Context, Result};
use crate::policy::{Permit, Read, Run};
use domain::error::ApiError;
use domain::model::Step;
use domain::watches::{DEFAULT_MAX_FAILURES, MAX_EVERY_S, WatchRequest};
use std::sync::Arc;

/// How watches behave on this server (`sleuth serve` flags).
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// `--public-url`: where people open Sleuth (`https://sleuth.example.com`);
    /// webhook messages link there. Without it, the address a watch was made through.
    pub public_url: Option<String>,
    /// `--webhook-allow`: inside ranges webhooks may reach (none by default).
    pub webhook_allow: Vec<ipnet::IpNet>,
    /// `--watch-min-every`: the shortest schedule a watch may have, in seconds.
    pub min_every_s: u64,
}

/// The shortest schedule a watch may have by default: a watch runs a
/// benchmark on a GPU host, and 200 of them every second once wore a host down.
pub const MIN_EVERY_S: u64 = 60;
/// Watches that run at once, per step and per person.
pub const MAX_PER_STEP: i64 = 5;
pub const MAX_PER_USER: i64 = 20;

#[derive(Clone)]
pub struct Watches {
    store: Store,
    settings: Arc<Settings>,
    /// Watches the scheduler is tending now (a firing claimed, its run not
    /// yet queued): a deletion waits for them.
    tending: Tending,
}

/// The ids of the watches being tended in this process.
pub type Tending = Arc<std::sync::Mutex<std::collections::HashSet<i64>>>;

/// `https://sleuth.example.com/team/` → `https://sleuth.example.com/team`;
/// none for anything but an http(s) URL without spaces.
pub fn base_url(text: &str) -> Option<String> {
    let text = text.trim().trim_end_matches('/');
    let rest = text.strip_prefix("https://").or_else(|| text.strip_prefix("http://"))?;
    let fine = !rest.is_empty() && !text.chars().any(|c| c.is_whitespace() || c.is_control() || c == '"' || c == '<');
    fine.then(|| text.to_string())
}

impl Watches {
    pub fn new(store: Store, settings: Settings) -> Self {
        Self { store, settings: Arc::new(settings), tending: Tending::default() }
    }

    /// What the scheduler marks while it tends a watch.
    pub fn tending(&self) -> Tending {
        self.tending.clone()
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// A new watch of `step` (which the permit may run), bound to the step as
    /// it is now; `through`: the address the request came to (its links'
    /// base when no public URL is set).
    pub async fn create(
        &self,
        permit: &Permit<Run>,
        step: &Step,
        request: WatchRequest,
        through: Option<String>,
    ) -> Result<i64> {
        let domain::steps::StepBody::Command(body) = &step.body else {
            return Err(ApiError::invalid("Only a command step can be watched: it is run on the schedule.").into());
        };
        let cron = request.cron.as_deref().map(str::trim).filter(|c| !c.is_empty()).map(str::to_string);
        match (request.every_s, &cron) {
            (Some(_), Some(_)) | (None, None) => {
                return Err(
                    ApiError::invalid("Say how often: every_s (seconds) or cron (a cron line), one of them.").into()
                );
            }
            (Some(every), None) if !(self.settings.min_every_s..=MAX_EVERY_S).contains(&every) => {
                return Err(ApiError::invalid(format!(
                    "every_s is from {} to {MAX_EVERY_S} (this server's shortest schedule is --watch-min-every).",
                    self.settings.min_every_s
                ))
                .into());
            }
            (None, Some(line)) => {
                super::schedule::Schedule::parse(line)?;
            }
            _ => {}
        }
        let webhook = request.webhook.as_deref().map(str::trim).filter(|w| !w.is_empty()).map(str::to_string);
        if let Some(url) = &webhook {
            let checked = super::webhook::check(url, &self.settings.webhook_allow)
                .map_err(|why| ApiError::invalid(why.to_string()))?;
            // A name that resolves inside is refused now too; it is checked again
            // at sending (one that cannot be found now may be later: DNS away).
            let resolved =
                tokio::time::timeout(std::time::Duration::from_secs(2), checked.resolve(&self.settings.webhook_allow))
                    .await;
            if let Ok(Err(why @ super::webhook::Refused::Inside { .. })) = resolved {
                return Err(ApiError::invalid(why.to_string()).into());
            }
        }
        let (of_step, of_user) = self.store.running_watches(step.id, &permit.actor().name).await?;
        if of_step >= MAX_PER_STEP {
            return Err(ApiError::invalid(format!(
                "Step {} has {of_step} watches already, the most it may have; stop one first.",
                step.id
            ))
            .into());
        }
        if of_user >= MAX_PER_USER {
            return Err(ApiError::invalid(format!(
                "You have {of_user} watches running, the most one person may; stop one first."
            ))
            .into());
        }
        let config = request.config.as_deref().map(str::trim).filter(|c| !c.is_empty()).map(str::to_string);
        let labels: Vec<String> =
            domain::sweeps::configurations(&body.matrix).iter().map(domain::sweeps::config_label).collect();
        match &config {
            Some(c) if !labels.contains(c) => {
                return Err(ApiError::invalid(format!(
                    "This step has no configuration {c:?}{}.",
                    if labels.is_empty() { String::new() } else { format!("; it has {}", labels.join(", ")) }
                ))
                .into());
            }
            None if labels.len() > 1 => {
                return Err(ApiError::invalid(format!(
                    "A watch runs and judges one configuration of a sweep: give config, one of {}.",
                    labels.join(", ")
                ))
                .into());
            }
            _ => {}
        }
        let metric =
            domain::hypotheses::check_metric(request.metric.as_deref().unwrap_or(crate::metrics::history::METRIC))
                .map_err(ApiError::from)?;
        let now = crate::time::now_ms();
        let every = request.every_s.map(|s| i64::try_from(s).unwrap_or(i64::MAX));
        let base = self.settings.public_url.clone().or_else(|| through.as_deref().and_then(base_url));
        let row = WatchRow {
            id: 0,
            step_id: step.id,
            investigation_id: permit.investigation().to_string(),
            metric,
            config,
            every_s: every,
            cron: cron.clone(),
            webhook,
            max_failures: i64::from(request.max_failures.unwrap_or(DEFAULT_MAX_FAILURES).clamp(1, 100)),
            created_by: Some(permit.actor().name.clone()),
            created_at: now,
            // The first run now (a watch is asked for to see the next number).
            next_at: if every.is_some() { Some(now) } else { super::rows::next_at(None, cron.as_deref(), now) },
            runs: 0,
            failures: 0,
            last_run: None,
            judged_run: None,
            told_run: None,
            last_change: None,
            last_told: None,
            stopped: None,
            stop_reason: crate::db::Maybe(None),
            step_version: Some(step.version),
            approved: Some(crate::steps::to_stored(&step.body).context("a watched step as JSON")?.1),
            base_url: base,
        };
        Ok(self.store.insert_watch(&row).await?)
    }

    /// A watch's record. Unchecked: its caller checks the investigation it names.
    pub async fn row(&self, id: i64) -> Result<Option<WatchRow>> {
        Ok(self.store.watch(id).await?)
    }

    /// Every watch. Unchecked: its caller keeps those the actor may read.
    pub async fn rows(&self) -> Result<Vec<WatchRow>> {
        Ok(self.store.watches().await?)
    }

    pub async fn rows_of(&self, permit: &Permit<Read>) -> Result<Vec<WatchRow>> {
        Ok(self.store.watches_of(permit.investigation()).await?)
    }

    /// Deletes a watch of the permit's investigation: nothing more is queued
    /// for it. Audited, with what it watched.
    pub async fn delete(&self, permit: &Permit<Run>, id: i64) -> Result<()> {
        let row = match self.store.watch(id).await? {
            Some(row) if row.investigation_id == permit.investigation() => row,
            _ => return Err(ApiError::not_found(format!("There is no watch {id}.")).into()),
        };
        self.store.delete_watch(id).await?;
        // A firing claimed just before may be queueing its run: it is queued
        // before this answers, or not at all (it finds the watch gone).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        while self.tending.lock().is_ok_and(|t| t.contains(&id)) && std::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let entry = crate::db::NewAudit {
            who: permit.actor().name.clone(),
            action: "watch.delete",
            host: None,
            target: format!("watch {id} of step {} in {}", row.step_id, row.investigation_id),
            env: None,
            outcome: Some(format!("made by {}, {} runs", row.created_by.as_deref().unwrap_or("?"), row.runs)),
            run_id: None,
        };
        crate::audit::record(&self.store, entry).await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_base_url_is_an_http_url_without_its_last_slash() {
        use super::base_url;
        assert_eq!(base_url("https://sleuth.example.com/team/").as_deref(), Some("https://sleuth.example.com/team"));
        assert_eq!(base_url("http://127.0.0.1:3000").as_deref(), Some("http://127.0.0.1:3000"));
        for bad in ["ftp://x", "https://", "http://a b", "javascript:alert(1)", "http://x\"><script>"] {
            assert_eq!(base_url(bad), None, "{bad}");
        }
    }
}
