use crate::ssh::quote::is_env_name;
use domain::error::ApiError;
use domain::hosts::is_host_name;
use domain::steps::command::{CommandBody, MAX_COMMAND_BYTES, MAX_ENV_VARS, MAX_TIMEOUT_S};

const MAX_VALUE_BYTES: usize = 8 * 1024;
const MAX_CWD_BYTES: usize = 4096;
const MIN_OUTPUT_BYTES: u64 = 1 << 20;
const MAX_OUTPUT_BYTES: u64 = 1 << 40;

pub fn validate(mut body: CommandBody) -> Result<CommandBody, ApiError> {
    body.host = body.host.trim().to_string();
    if !is_host_name(&body.host) {
        return Err(ApiError::invalid("Choose a host for the command."));
    }
    if body.command.trim().is_empty() {
        return Err(ApiError::invalid("The command is empty."));
    }
    if body.command.len() > MAX_COMMAND_BYTES {
        return Err(ApiError::invalid(format!("The command is longer than {MAX_COMMAND_BYTES} bytes.")));
    }
    if body.command.contains('\0') {
        return Err(ApiError::invalid("The command contains a NUL byte."));
    }
    if body.env.len() > MAX_ENV_VARS {
        return Err(ApiError::invalid(format!("At most {MAX_ENV_VARS} environment variables.")));
    }
    for (name, value) in &body.env {
        if !is_env_name(name) {
            return Err(ApiError::invalid(format!(
                "{name:?} is not a valid environment variable name (letters, digits and _, not starting with a digit)."
            )));
        }
        if value.len() > MAX_VALUE_BYTES || value.contains('\0') {
            return Err(ApiError::invalid(format!("The value of {name} is too long or contains a NUL byte.")));
        }
    }
    body.cwd = body.cwd.map(|c| c.trim().to_string()).filter(|c| !c.is_empty());
    if let Some(cwd) = &body.cwd
        && (cwd.len() > MAX_CWD_BYTES || cwd.contains('\0'))
    {
        return Err(ApiError::invalid("The working directory is too long or contains a NUL byte."));
    }
    if let Some(t) = body.timeout_s
        && !(1..=MAX_TIMEOUT_S).contains(&t)
    {
        return Err(ApiError::invalid(format!("The timeout must be from 1 to {MAX_TIMEOUT_S} seconds.")));
    }
    if let Some(limit) = body.output_limit_bytes
        && !(MIN_OUTPUT_BYTES..=MAX_OUTPUT_BYTES).contains(&limit)
    {
        return Err(ApiError::invalid(format!(
            "output_limit_bytes must be from {MIN_OUTPUT_BYTES} (1 MiB) to {MAX_OUTPUT_BYTES} (1 TiB)."
        )));
    }
    check_matrix(&body)?;
    check_server(&mut body)?;
    domain::steps::command::check_artifact_globs(&body.artifacts)?;
    body.artifacts = body.artifacts.iter().map(|g| g.trim().to_string()).collect();
    if let Some(limits) = &body.artifact_limits
        && (limits.file_bytes == 0 || limits.run_bytes == 0)
    {
        return Err(ApiError::invalid("Artifact limits are at least 1 byte (leave them out for the defaults)."));
    }
    Ok(body)
}

/// A server beside the runs: a command, a readiness test that can work, sane times.
fn check_server(body: &mut CommandBody) -> Result<(), ApiError> {
    use domain::steps::command::{MAX_READY_TIMEOUT_S, MAX_STOP_GRACE_S, Ready};
    let Some(server) = &mut body.server else { return Ok(()) };
    if server.command.trim().is_empty() {
        return Err(ApiError::invalid("The server's command is empty."));
    }
    if server.command.len() > MAX_COMMAND_BYTES || server.command.contains('\0') {
        return Err(ApiError::invalid(format!("The server's command is over {MAX_COMMAND_BYTES} bytes or has a NUL.")));
    }
    if !(1..=MAX_READY_TIMEOUT_S).contains(&server.ready_timeout_s) {
        return Err(ApiError::invalid(format!("ready_timeout_s is from 1 to {MAX_READY_TIMEOUT_S}.")));
    }
    if server.stop_grace_s > MAX_STOP_GRACE_S {
        return Err(ApiError::invalid(format!("stop_grace_s is from 0 to {MAX_STOP_GRACE_S}.")));
    }
    match &mut server.ready {
        Ready::Http(url) => {
            *url = url.trim().to_string();
            if !domain::steps::command::is_host_url(url) {
                return Err(ApiError::invalid(format!(
                    "{url:?} is not a URL the host can ask (http://127.0.0.1:8000/health)."
                )));
            }
        }
        Ready::Log(pattern) => {
            crate::user_regex::compile(pattern, false)
                .map_err(|e| ApiError::invalid(format!("The ready pattern is not a valid regex: {e}")))?;
        }
        Ready::Tcp(0) => return Err(ApiError::invalid("The ready port is from 1 to 65535.")),
        Ready::Tcp(_) => {}
    }
    if let Some(metrics) = &mut server.metrics {
        use domain::steps::command::{MAX_METRICS_INTERVAL_MS, MIN_METRICS_INTERVAL_MS};
        metrics.url = metrics.url.trim().to_string();
        if !domain::steps::command::is_host_url(&metrics.url) {
            return Err(ApiError::invalid(format!(
                "{:?} is not a metrics URL the host can ask (http://127.0.0.1:8000/metrics).",
                metrics.url
            )));
        }
        if !(MIN_METRICS_INTERVAL_MS..=MAX_METRICS_INTERVAL_MS).contains(&metrics.interval_ms) {
            return Err(ApiError::invalid(format!(
                "server.metrics.interval_ms is from {MIN_METRICS_INTERVAL_MS} to {MAX_METRICS_INTERVAL_MS}."
            )));
        }
    }
    Ok(())
}

/// A sweep's settings: real variable names or placeholders the command uses,
/// a few values each, and a grid that stays a size one can wait for.
fn check_matrix(body: &CommandBody) -> Result<(), ApiError> {
    use domain::sweeps::{MAX_CONFIGS, MAX_LEVELS, MAX_SETTINGS, placeholder};
    if body.matrix.len() > MAX_SETTINGS {
        return Err(ApiError::invalid(format!("A sweep has at most {MAX_SETTINGS} settings.")));
    }
    let mut configs = 1usize;
    for (key, levels) in &body.matrix {
        match placeholder(key) {
            Some(name) => {
                if name.is_empty() || !name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric()) {
                    return Err(ApiError::invalid(format!(
                        "{key:?} is not a placeholder: letters, digits and _ in braces, like {{batch}}."
                    )));
                }
                let in_server = body.server.as_ref().is_some_and(|s| s.command.contains(key.as_str()));
                if !body.command.contains(key.as_str()) && !in_server {
                    return Err(ApiError::invalid(format!(
                        "The sweep sets {key}, but the command has no {key} (nor has its server's command)."
                    )));
                }
                if levels.iter().any(Option::is_none) {
                    return Err(ApiError::invalid(format!(
                        "{key} is replaced in the command, so each of its values must be something (not unset)."
                    )));
                }
            }
            None if key == domain::sweeps::PATCH_KEY => {
                if body.patch.is_some() {
                    return Err(ApiError::invalid(
                        "The step has a patch and sweeps @patch: keep the patch in one of them (`none` is the arm without).",
                    ));
                }
                if let Some(bad) = levels.iter().flatten().find(|v| v.parse::<i64>().map_or(true, |n| n <= 0)) {
                    return Err(ApiError::invalid(format!(
                        "@patch's values are patch steps' numbers or none (no patch), not {bad:?}."
                    )));
                }
            }
            None if !is_env_name(key) => {
                return Err(ApiError::invalid(format!(
                    "{key:?} is neither an environment variable name, a {{placeholder}} of the command, nor @patch."
                )));
            }
            None if body.env.contains_key(key) => {
                return Err(ApiError::invalid(format!(
                    "{key} is both in the environment and in the sweep; keep it in one of them."
                )));
            }
            None => {}
        }
        if levels.is_empty() || levels.len() > MAX_LEVELS {
            return Err(ApiError::invalid(format!("{key} needs 1 to {MAX_LEVELS} values.")));
        }
        for (i, level) in levels.iter().enumerate() {
            if let Some(value) = level
                && (value.len() > MAX_VALUE_BYTES || value.contains('\0'))
            {
                return Err(ApiError::invalid(format!("A value of {key} is too long or contains a NUL byte.")));
            }
            if levels[..i].contains(level) {
                let shown = level.as_deref().unwrap_or("unset");
                return Err(ApiError::invalid(format!("{key} has the value {shown:?} twice.")));
            }
        }
        configs = configs.saturating_mul(levels.len());
    }
    if configs > MAX_CONFIGS {
        return Err(ApiError::invalid(format!(
            "The sweep has {configs} configurations; at most {MAX_CONFIGS} (fewer values, or two sweeps)."
        )));
    }
    Ok(())
}

/// The command as a shell transcript line, for the page.
pub fn render(body: &CommandBody) -> String {
    let mut html = String::from("<code class=\"prompt\">$ </code><code>");
    html.push_str(&ammonia::clean_text(&body.command));
    html.push_str("</code>");
    html
}
