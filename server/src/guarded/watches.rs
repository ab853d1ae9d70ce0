//! Watches: who may run a step may watch it (each firing is checked again, as
//! its creator); readers of the investigation see its watches.

use crate::db::WatchRow;
use crate::policy::Read;
use domain::error::ApiError;
use domain::ports::Actor;
use domain::watches::{DEFAULT_MAX_FAILURES, MAX_EVERY_S, MIN_EVERY_S, Watch, WatchRequest};

impl super::Guarded {
    /// `POST /api/v1/steps/{id}/watch`.
    pub async fn watch_step(&self, actor: &Actor, step: i64, request: WatchRequest) -> Result<Watch, ApiError> {
        let runs_it = self.access.run_on_step(actor, step).await?;
        let found = self.step(actor, step).await?;
        let domain::steps::StepBody::Command(body) = &found.body else {
            return Err(ApiError::invalid("Only a command step can be watched: it is run on the schedule."));
        };
        let cron = request.cron.as_deref().map(str::trim).filter(|c| !c.is_empty()).map(str::to_string);
        match (request.every_s, &cron) {
            (Some(_), Some(_)) | (None, None) => {
                return Err(ApiError::invalid("Say how often: every_s (seconds) or cron (a cron line), one of them."));
            }
            (Some(every), None) if !(MIN_EVERY_S..=MAX_EVERY_S).contains(&every) => {
                return Err(ApiError::invalid(format!("every_s is from {MIN_EVERY_S} to {MAX_EVERY_S}.")));
            }
            (None, Some(line)) => {
                domain::watches::Cron::parse(line).map_err(ApiError::invalid)?;
            }
            _ => {}
        }
        let webhook = request.webhook.as_deref().map(str::trim).filter(|w| !w.is_empty()).map(str::to_string);
        if let Some(url) = &webhook
            && !domain::steps::command::is_host_url(url)
        {
            return Err(ApiError::invalid(
                "The webhook is an http:// or https:// URL (one line, up to 2000 characters).",
            ));
        }
        let config = request.config.as_deref().map(str::trim).filter(|c| !c.is_empty()).map(str::to_string);
        let labels: Vec<String> =
            domain::sweeps::configurations(&body.matrix).iter().map(domain::sweeps::config_label).collect();
        match &config {
            Some(c) if !labels.contains(c) => {
                return Err(ApiError::invalid(format!(
                    "This step has no configuration {c:?}{}.",
                    if labels.is_empty() { String::new() } else { format!("; it has {}", labels.join(", ")) }
                )));
            }
            None if labels.len() > 1 => {
                return Err(ApiError::invalid(format!(
                    "A watch runs and judges one configuration of a sweep: give config, one of {}.",
                    labels.join(", ")
                )));
            }
            _ => {}
        }
        let metric =
            domain::hypotheses::check_metric(request.metric.as_deref().unwrap_or(crate::metrics::history::METRIC))?;
        let now = crate::time::now_ms();
        let every = request.every_s.map(|s| i64::try_from(s).unwrap_or(i64::MAX));
        let row = WatchRow {
            id: 0,
            step_id: step,
            investigation_id: found.investigation_id.clone(),
            metric,
            config,
            every_s: every,
            cron: cron.clone(),
            webhook,
            max_failures: i64::from(request.max_failures.unwrap_or(DEFAULT_MAX_FAILURES).clamp(1, 100)),
            created_by: Some(actor.name.clone()),
            created_at: now,
            // The first run now (a watch is asked for to see the next number).
            next_at: if every.is_some() { Some(now) } else { crate::watch_rows::next_at(None, cron.as_deref(), now) },
            runs: 0,
            failures: 0,
            last_run: None,
            judged_run: None,
            told_run: None,
            last_change: None,
            last_told: None,
            stopped: None,
        };
        let id = self.notebook.add_watch(runs_it.permit(), &row).await?;
        self.watch(actor, id).await
    }

    pub async fn watch(&self, actor: &Actor, id: i64) -> Result<Watch, ApiError> {
        let row = self
            .notebook
            .watch_row(id)
            .await?
            .ok_or_else(|| ApiError::not_found(format!("There is no watch {id}.")))?;
        self.access
            .permit::<Read>(actor, &row.investigation_id)
            .await
            .map_err(|_| ApiError::not_found(format!("There is no watch {id}.")))?;
        Ok(crate::watch_rows::view(&row))
    }

    /// `GET /api/v1/watches`: those of investigations the actor may read.
    pub async fn watches(&self, actor: &Actor) -> Result<Vec<Watch>, ApiError> {
        let mut out = Vec::new();
        for row in self.notebook.watch_rows().await? {
            if self.access.permit::<Read>(actor, &row.investigation_id).await.is_ok() {
                out.push(crate::watch_rows::view(&row));
            }
        }
        Ok(out)
    }

    /// An investigation's watches (its page's banner).
    pub async fn watches_of(&self, actor: &Actor, investigation: &str) -> Result<Vec<Watch>, ApiError> {
        let permit = self.access.permit::<Read>(actor, investigation).await?;
        Ok(self.notebook.watch_rows_of(&permit).await?.iter().map(crate::watch_rows::view).collect())
    }

    /// `DELETE /api/v1/watches/{id}`: who may run its step stops it, at once.
    pub async fn delete_watch(&self, actor: &Actor, id: i64) -> Result<(), ApiError> {
        let missing = || ApiError::not_found(format!("There is no watch {id}."));
        let row = self.notebook.watch_row(id).await?.ok_or_else(missing)?;
        let runs_it = self.access.run_on_step(actor, row.step_id).await?;
        Ok(self.notebook.delete_watch(runs_it.permit(), id).await?)
    }
}
