use domain::error::ApiError;
use domain::hosts::is_host_name;
use domain::steps::snippet::{MAX_LINES, SnippetBody};

pub fn validate(mut body: SnippetBody) -> Result<SnippetBody, ApiError> {
    body.host = body.host.trim().to_string();
    if !is_host_name(&body.host) {
        return Err(ApiError::invalid("Choose a host for the snippet."));
    }
    body.path = body.path.map(|p| p.trim_end_matches(['\r', '\n']).to_string()).filter(|p| !p.is_empty());
    body.module = body.module.map(|m| m.trim().to_string()).filter(|m| !m.is_empty());
    match (&body.path, &body.module) {
        (Some(path), None) => {
            if !path.starts_with('/') {
                return Err(ApiError::invalid("Give an absolute path (starting with /)."));
            }
            if path.contains('\0') || path.len() > 4096 {
                return Err(ApiError::invalid("The path is too long or contains a NUL byte."));
            }
        }
        (None, Some(_)) => {
            body.python = Some(
                body.python
                    .take()
                    .map(|p| p.trim().to_string())
                    .filter(|p| !p.is_empty())
                    .unwrap_or_else(|| "python3".into()),
            );
        }
        _ => return Err(ApiError::invalid("Give either `path` or `module` (with `python`).")),
    }
    match (body.start, body.end) {
        (None, None) => {}
        (Some(start), Some(end)) => {
            if start == 0 {
                return Err(ApiError::invalid("Lines are numbered from 1."));
            }
            if start > end {
                return Err(ApiError::invalid(format!("The range starts after it ends ({start} > {end}).")));
            }
            if end - start + 1 > MAX_LINES {
                return Err(ApiError::invalid(format!("Show at most {MAX_LINES} lines at once.")));
            }
        }
        _ => return Err(ApiError::invalid("Give both `start` and `end`, or neither for the whole file.")),
    }
    body.marked.sort_unstable();
    body.marked.dedup();
    if body.marked.len() > MAX_MARKED {
        return Err(ApiError::invalid(format!("Mark at most {MAX_MARKED} lines.")));
    }
    if let Some(&line) =
        body.marked.iter().find(|&&n| n == 0 || body.start.is_some_and(|s| n < s) || body.end.is_some_and(|e| n > e))
    {
        return Err(ApiError::invalid(format!("Marked line {line} is not among the lines shown.")));
    }
    Ok(body)
}

/// The most lines one snippet marks.
const MAX_MARKED: usize = 100;
