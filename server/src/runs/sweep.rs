//! Sweeps on the server: turning a step's matrix and a run request into the
//! runs of every configuration (`app::sweeps` has the grid and the order),
//! each an ordinary run that records its configuration; a sweep's progress;
//! cancelling what is left of it.

use crate::db::{NewRun, NewSweep, SweepRow};
use crate::notebook::{Service, internal, timestamp};
use crate::ssh::quote::quote;
use app::error::ApiError;
use app::runs::{RunRequest, RunStatus};
use app::steps::command::CommandBody;
use app::sweeps::{Config, MAX_SWEEP_RUNS, Order, Sweep, config_label, configurations, placeholder, plan};

/// Seeds stay below 2^53, so JSON numbers carry them exactly.
const MAX_SEED: u64 = (1 << 53) - 1;

/// The command with each placeholder of `config` replaced by its value as one
/// shell word, in one pass (a value that looks like a placeholder stays text).
pub fn substitute(command: &str, config: &Config) -> String {
    let placeholders: Vec<(&str, &str)> = config
        .iter()
        .filter(|(key, _)| placeholder(key).is_some())
        .filter_map(|(key, level)| level.as_deref().map(|v| (key.as_str(), v)))
        .collect();
    let mut out = String::with_capacity(command.len());
    let mut rest = command;
    'scan: while !rest.is_empty() {
        if rest.starts_with('{') {
            for (key, value) in &placeholders {
                if let Some(after) = rest.strip_prefix(key) {
                    out.push_str(&quote(value));
                    rest = after;
                    continue 'scan;
                }
            }
        }
        let Some(c) = rest.chars().next() else { break };
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// The env of a configuration's run: the step's, with the sweep's variables
/// that have a value (the unset ones are unset when it runs).
fn env_of(command: &CommandBody, config: &Config) -> Vec<(String, String)> {
    let mut env = command.env.clone();
    for (key, level) in config {
        if let (None, Some(value)) = (placeholder(key), level) {
            env.insert(key.clone(), value.clone());
        }
    }
    env.into_iter().collect()
}

/// What a run request asks of a plain (matrix-less) command.
pub(crate) fn check_plain_request(request: &RunRequest) -> Result<(), ApiError> {
    if request.order.is_some() || request.seed.is_some() {
        return Err(ApiError::invalid(
            "order and seed are for sweeps: give the step a matrix of settings to sweep first.",
        ));
    }
    Ok(())
}

impl Service {
    /// The runs of a sweep of `command` (step `step_id`), and the sweep that
    /// holds them; nothing is stored if the request is refused.
    pub(crate) async fn sweep_runs(
        &self,
        step_id: i64,
        command: &CommandBody,
        request: &RunRequest,
        repeat: u32,
        warmup: u32,
        who: &str,
    ) -> Result<(SweepRow, Vec<NewRun>), ApiError> {
        let configs = configurations(&command.matrix);
        let order = request.order.unwrap_or_default();
        let seed = match (order, request.seed) {
            (Order::Shuffled, Some(seed)) if seed > MAX_SEED => {
                return Err(ApiError::invalid(format!("The seed is from 0 to {MAX_SEED}.")));
            }
            (Order::Shuffled, Some(seed)) => Some(seed),
            (Order::Shuffled, None) => Some(rand::random::<u64>() & MAX_SEED),
            (_, Some(_)) => return Err(ApiError::invalid("A seed is for order = shuffled.")),
            (_, None) => None,
        };
        let total = configs.len() * (repeat + warmup) as usize;
        if total > MAX_SWEEP_RUNS {
            return Err(ApiError::invalid(format!(
                "{} configurations × {} runs each is {total} runs; a sweep has at most {MAX_SWEEP_RUNS}.",
                configs.len(),
                repeat + warmup
            )));
        }
        let sweep = self
            .store
            .insert_sweep(&NewSweep {
                step_id,
                configs: configs.len() as i64,
                repeat: i64::from(repeat),
                warmup: i64::from(warmup),
                order: order.as_str(),
                seed: seed.and_then(|s| i64::try_from(s).ok()),
                keep_going: request.keep_going.unwrap_or(true),
                runs: total as i64,
                who: Some(who),
            })
            .await?;
        let mut runs = Vec::with_capacity(total);
        for (k, planned) in plan(configs.len(), repeat, warmup, order, seed.unwrap_or(0)).into_iter().enumerate() {
            let config = &configs[planned.config];
            runs.push(NewRun {
                step_id,
                host: command.host.clone(),
                command: substitute(&command.command, config),
                env: serde_json::to_string(&env_of(command, config)).map_err(|e| internal("env", e))?,
                cwd: command.cwd.clone(),
                timeout_s: command.timeout_s.and_then(|t| i64::try_from(t).ok()),
                batch_index: i64::from(planned.index),
                batch_size: i64::from(planned.of),
                warmup: planned.warmup,
                who: Some(who.to_string()),
                config: Some(serde_json::to_string(config).map_err(|e| internal("config", e))?),
                sweep_id: Some(sweep.id),
                sweep_index: Some(k as i64 + 1),
                telemetry: command.telemetry,
            });
        }
        Ok((sweep, runs))
    }

    pub(crate) async fn sweep(&self, id: i64) -> Result<Sweep, ApiError> {
        let row = self.store.sweep(id).await?.ok_or_else(|| ApiError::not_found(format!("There is no sweep {id}.")))?;
        let runs: Vec<app::runs::Run> =
            self.store.runs_of_sweep(id).await?.into_iter().map(super::run_from_row).collect();
        let done = runs.iter().filter(|r| r.status.is_finished()).count() as u32;
        let failed = runs.iter().filter(|r| r.status.is_finished() && r.status != RunStatus::Succeeded).count() as u32;
        let running = runs.iter().find(|r| r.status == RunStatus::Running);
        Ok(Sweep {
            id: row.id,
            step_id: row.step_id,
            configs: u32::try_from(row.configs).unwrap_or(0),
            repeat: u32::try_from(row.repeat).unwrap_or(0),
            warmup: u32::try_from(row.warmup).unwrap_or(0),
            order: Order::parse(&row.run_order).unwrap_or_default(),
            seed: row.seed.and_then(|s| u64::try_from(s).ok()),
            keep_going: row.keep_going != 0,
            runs: u32::try_from(row.runs).unwrap_or(0),
            who: row.who,
            created_at: timestamp(row.created_at),
            done,
            failed,
            running: running.map(|r| r.id),
            running_config: running.and_then(|r| r.config.as_ref()).map(config_label),
        })
    }

    pub(crate) async fn cancel_sweep(&self, id: i64) -> Result<Sweep, ApiError> {
        let row = self.store.sweep(id).await?.ok_or_else(|| ApiError::not_found(format!("There is no sweep {id}.")))?;
        let investigation = self
            .store
            .investigation_of(crate::db::OwnedBy::Step, row.step_id)
            .await?
            .ok_or_else(|| ApiError::not_found(format!("There is no sweep {id}.")))?;
        // Queued runs first, so none starts while the running one stops.
        let runs = self.store.runs_of_sweep(id).await?;
        for run in runs.iter().filter(|r| r.status == "queued") {
            self.runner.cancel(&investigation, run.id).await?;
        }
        for run in runs.iter().filter(|r| r.status == "running") {
            self.runner.cancel(&investigation, run.id).await?;
        }
        tracing::info!(sweep = id, "sweep cancelled");
        self.sweep(id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_become_one_quoted_word_each() {
        let config: Config = [
            ("{batch}".to_string(), Some("8".to_string())),
            ("{model}".to_string(), Some("my model; rm -rf /".to_string())),
            ("{x}".to_string(), Some("{batch}".to_string())),
            ("NCCL_PROTO".to_string(), Some("LL".to_string())),
        ]
        .into();
        assert_eq!(
            substitute("bench --batch {batch} --model {model} -x {x} {unknown} awk '{print}'", &config),
            "bench --batch '8' --model 'my model; rm -rf /' -x '{batch}' {unknown} awk '{print}'"
        );
    }

    #[test]
    fn the_env_takes_the_set_values_and_leaves_out_the_unset() {
        let command = CommandBody {
            host: "h".into(),
            command: "c".into(),
            env: [("NCCL_DEBUG".to_string(), "INFO".to_string())].into(),
            cwd: None,
            timeout_s: None,
            matrix: Default::default(),
            telemetry: true,
        };
        let config: Config =
            [("NCCL_PROTO".to_string(), None), ("NCCL_ALGO".to_string(), Some("Tree".to_string()))].into();
        assert_eq!(
            env_of(&command, &config),
            vec![("NCCL_ALGO".to_string(), "Tree".to_string()), ("NCCL_DEBUG".to_string(), "INFO".to_string())]
        );
        assert_eq!(super::super::unset_in(&config), vec!["NCCL_PROTO".to_string()]);
    }
}
