use crate::ssh::quote::is_env_name;
use app::error::ApiError;
use app::hosts::is_host_name;
use app::steps::command::{CommandBody, MAX_COMMAND_BYTES, MAX_ENV_VARS, MAX_TIMEOUT_S};

const MAX_VALUE_BYTES: usize = 8 * 1024;
const MAX_CWD_BYTES: usize = 4096;

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
    Ok(body)
}

/// The command as a shell transcript line, for the page.
pub fn render(body: &CommandBody) -> String {
    let mut html = String::from("<code class=\"prompt\">$ </code><code>");
    html.push_str(&ammonia::clean_text(&body.command));
    html.push_str("</code>");
    html
}
