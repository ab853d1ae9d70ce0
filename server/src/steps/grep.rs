use domain::error::ApiError;
use domain::hosts::is_host_name;
use domain::steps::grep::{DEFAULT_MAX_HITS, GrepBody, MAX_HITS};

pub fn validate(mut body: GrepBody) -> Result<GrepBody, ApiError> {
    body.host = body.host.trim().to_string();
    if !is_host_name(&body.host) {
        return Err(ApiError::invalid("Choose a host to search on."));
    }
    if body.pattern.is_empty() || body.pattern.len() > 1000 || body.pattern.contains(['\0', '\n']) {
        return Err(ApiError::invalid("The pattern must be one line of at most 1000 bytes."));
    }
    body.path = body.path.trim().to_string();
    if !body.path.starts_with('/') || body.path.contains('\0') {
        return Err(ApiError::invalid("Give an absolute path (starting with /) to search in."));
    }
    if body.regex
        && let Err(e) = crate::user_regex::compile(&body.pattern, false)
        && (body.pattern.contains(['(', '[']) || matches!(e, crate::user_regex::PatternError::TooBig))
    {
        // The host's grep decides what matches; this catches obvious typos early,
        // and patterns too large to mark hits with here.
        return Err(ApiError::invalid(format!("{:?} is not a valid regular expression: {e}.", body.pattern)));
    }
    body.glob = body.glob.map(|g| g.trim().to_string()).filter(|g| !g.is_empty());
    let max = body.max_hits.unwrap_or(DEFAULT_MAX_HITS);
    if !(1..=MAX_HITS).contains(&max) {
        return Err(ApiError::invalid(format!("max_hits must be from 1 to {MAX_HITS}.")));
    }
    body.max_hits = Some(max);
    Ok(body)
}
