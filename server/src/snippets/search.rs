//! Grep on a host: `grep -rnHIZ` with every argument single-quoted, capped on
//! the host by awk (which also counts all matches), so a search that matches
//! millions of lines sends back only what is shown.

use crate::ssh::{self, Pool, Target, quote::quote};
use domain::error::ApiError;
use domain::steps::grep::{GrepBody, Hit};

pub struct Found {
    pub hits: Vec<Hit>,
    pub total: u64,
    pub error: Option<String>,
}

pub async fn grep(pool: &Pool, target: &Target, body: &GrepBody) -> crate::error::Result<Found> {
    let max = body.max_hits.unwrap_or(domain::steps::grep::DEFAULT_MAX_HITS);
    let nonce: u64 = rand::random();
    let marker = format!("__sleuth_total_{nonce:x}=");
    let mut command =
        format!("grep -rnHIZ --color=never {} -e {}", if body.regex { "-E" } else { "-F" }, quote(&body.pattern));
    if let Some(glob) = &body.glob {
        command.push_str(&format!(" --include={}", quote(glob)));
    }
    let awk = format!("NR <= {max} {{ print }} END {{ printf \"%s%d\\n\", \"{marker}\", NR }}");
    command.push_str(&format!(" -- {} | awk {}", quote(&body.path), quote(&awk)));
    let out = ssh::exec::capture(pool, target, &command, 4 * 1024 * 1024).await?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut total = 0;
    let mut hits = Vec::new();
    for line in text.lines() {
        if let Some(count) = line.strip_prefix(&marker) {
            total = count.trim().parse().unwrap_or(0);
            continue;
        }
        // file NUL line:text
        let Some((file, rest)) = line.split_once('\0') else { continue };
        let Some((number, text)) = rest.split_once(':') else { continue };
        let Ok(number) = number.parse() else { continue };
        hits.push(Hit { file: file.to_string(), line: number, text: text.to_string(), html: String::new() });
    }
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
    let error = (!stderr.is_empty()).then(|| stderr.lines().take(5).collect::<Vec<_>>().join("\n"));
    if total == 0
        && let Some(e) = &error
    {
        if e.contains("No such file or directory") {
            return Err(ApiError::not_found(format!("There is no {:?} on the host.", body.path)).into());
        }
        return Err(ApiError::invalid(format!("grep failed: {e}")).into());
    }
    Ok(Found { hits, total, error })
}

/// What a grep step's hits are marked with: its pattern, compiled once for
/// all the hits of a page.
pub enum Marker<'a> {
    Regex(regex::Regex),
    Plain(&'a str),
    /// A regex only the host's grep understands: hits are shown unmarked.
    Nothing,
}

impl<'a> Marker<'a> {
    pub fn new(pattern: &'a str, regex: bool) -> Self {
        match regex {
            true => crate::user_regex::compile(pattern, false).map_or(Self::Nothing, Self::Regex),
            false => Self::Plain(pattern),
        }
    }
}

/// `text` escaped, with what `marker` matches wrapped in `<mark>`.
pub fn mark(text: &str, marker: &Marker) -> String {
    let ranges: Vec<(usize, usize)> = match marker {
        Marker::Regex(re) => re.find_iter(text).map(|m| (m.start(), m.end())).filter(|(s, e)| s < e).collect(),
        Marker::Plain(pattern) if !pattern.is_empty() => {
            text.match_indices(pattern).map(|(i, m)| (i, i + m.len())).collect()
        }
        _ => Vec::new(),
    };
    let mut html = String::with_capacity(text.len() + 16);
    let mut at = 0;
    for (start, end) in ranges {
        html.push_str(&ammonia::clean_text(&text[at..start]));
        html.push_str("<mark>");
        html.push_str(&ammonia::clean_text(&text[start..end]));
        html.push_str("</mark>");
        at = end;
    }
    html.push_str(&ammonia::clean_text(&text[at..]));
    html
}

#[cfg(test)]
mod tests {
    use super::{Marker, mark};

    #[test]
    fn marks_matches_and_escapes_the_rest() {
        assert_eq!(mark("a <b> a", &Marker::new("a", false)), "<mark>a</mark>&#32;&lt;b&gt;&#32;<mark>a</mark>");
        assert_eq!(mark("x1 y22", &Marker::new(r"\d+", true)), "x<mark>1</mark>&#32;y<mark>22</mark>");
        assert_eq!(mark("plain", &Marker::new("(", true)), "plain");
        assert_eq!(mark("<script>", &Marker::new("", false)), "&lt;script&gt;");
    }
}
