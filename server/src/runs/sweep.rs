//! Sweeps on the server: turning a step's matrix and a run request into the
//! runs of every configuration (`domain::sweeps` has the grid and the order),
//! each an ordinary run that records its configuration; a sweep's progress;
//! cancelling what is left of it.

use crate::db::{NewRun, NewSweep, SweepRow};
use crate::error::{Context, Result};
use crate::ssh::quote::quote;
use crate::time::timestamp;
use domain::error::ApiError;
use domain::runs::{Run, RunRequest, RunStatus};
use domain::steps::command::CommandBody;
use domain::sweeps::{
    Config, MAX_SWEEP_RUNS, Order, Sweep, config_label, configurations, placeholder, plan as plan_of,
};

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
        if let (true, Some(value)) = (domain::sweeps::is_env(key), level) {
            env.insert(key.clone(), value.clone());
        }
    }
    env.into_iter().collect()
}

/// What a run request asks of a plain (matrix-less) command.
pub(crate) fn check_plain_request(request: &RunRequest) -> Result<()> {
    if request.order.is_some() || request.seed.is_some() || request.only.is_some() {
        return Err(ApiError::invalid(
            "order, seed and only are for sweeps: give the step a matrix of settings to sweep first.",
        )
        .into());
    }
    Ok(())
}

pub(crate) fn not_found(id: i64) -> ApiError {
    ApiError::not_found(format!("There is no sweep {id}."))
}

/// The sweep of `command` (step `step_id`) a request asks for, and its runs in
/// the order they run (their `sweep_id` is the caller's to set once the sweep
/// is stored); nothing is stored if the request is refused.
pub(crate) fn plan<'a>(
    step_id: i64,
    command: &CommandBody,
    request: &RunRequest,
    repeat: u32,
    warmup: u32,
    who: &'a str,
) -> Result<(NewSweep<'a>, Vec<NewRun>)> {
    let mut configs = configurations(&command.matrix);
    if let Some(only) = &request.only {
        configs.retain(|config| domain::sweeps::matches(config, only));
        if configs.is_empty() {
            return Err(ApiError::invalid(format!(
                "No configuration of this sweep has {}; it sweeps {}.",
                domain::sweeps::config_label(only),
                domain::sweeps::matrix_text(&command.matrix)
            ))
            .into());
        }
    }
    let order = request.order.unwrap_or_else(|| command.default_order());
    let seed = match (order, request.seed) {
        (Order::Shuffled, Some(seed)) if seed > MAX_SEED => {
            return Err(ApiError::invalid(format!("The seed is from 0 to {MAX_SEED}.")).into());
        }
        (Order::Shuffled, Some(seed)) => Some(seed),
        (Order::Shuffled, None) => Some(rand::random::<u64>() & MAX_SEED),
        (_, Some(_)) => return Err(ApiError::invalid("A seed is for order = shuffled.").into()),
        (_, None) => None,
    };
    let total = configs.len() * (repeat + warmup) as usize;
    if total > MAX_SWEEP_RUNS {
        return Err(ApiError::invalid(format!(
            "{} configurations × {} runs each is {total} runs; a sweep has at most {MAX_SWEEP_RUNS}.",
            configs.len(),
            repeat + warmup
        ))
        .into());
    }
    let sweep = NewSweep {
        step_id,
        configs: configs.len() as i64,
        repeat: i64::from(repeat),
        warmup: i64::from(warmup),
        order: order.as_str(),
        seed: seed.and_then(|s| i64::try_from(s).ok()),
        keep_going: request.keep_going.unwrap_or(true),
        runs: total as i64,
        who: Some(who),
    };
    let mut runs = Vec::with_capacity(total);
    for (k, planned) in plan_of(configs.len(), repeat, warmup, order, seed.unwrap_or(0)).into_iter().enumerate() {
        let config = &configs[planned.config];
        runs.push(NewRun {
            step_id,
            host: command.host.clone(),
            command: substitute(&command.command, config),
            env: serde_json::to_string(&env_of(command, config)).context("a run's environment as JSON")?,
            cwd: command.cwd.clone(),
            timeout_s: command.timeout_s.and_then(|t| i64::try_from(t).ok()),
            batch_index: i64::from(planned.index),
            batch_size: i64::from(planned.of),
            warmup: planned.warmup,
            who: Some(who.to_string()),
            config: Some(serde_json::to_string(config).context("a run's configuration as JSON")?),
            sweep_id: None,
            sweep_index: Some(k as i64 + 1),
            telemetry: command.telemetry,
            plan: super::Plan::of(command, |server| substitute(server, config)).stored(),
            origin: domain::runs::RunOrigin::Person,
        });
    }
    Ok((sweep, runs))
}

/// A sweep as the API shows it, with how far its runs got.
pub(crate) fn view(row: SweepRow, runs: &[Run]) -> Sweep {
    let done = runs.iter().filter(|r| r.status.is_finished()).count() as u32;
    let failed = runs.iter().filter(|r| r.status.is_finished() && r.status != RunStatus::Succeeded).count() as u32;
    let running = runs.iter().find(|r| r.status == RunStatus::Running);
    Sweep {
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
            server: None,
            artifacts: Vec::new(),
            artifact_limits: None,
            output_limit_bytes: None,
            patch: None,
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
