//! Snippet steps: a line range of a source file on a GPU host, kept as
//! snapshots of what was read.

use serde::{Deserialize, Serialize};

/// Most lines one snippet may show.
pub const MAX_LINES: u64 = 5_000;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SnippetBody {
    pub host: String,
    /// An absolute path on the host…
    #[serde(default)]
    pub path: Option<String>,
    /// …or a Python module, resolved to its file by `python` on the host.
    #[serde(default)]
    pub module: Option<String>,
    #[serde(default)]
    pub python: Option<String>,
    /// 1-based, inclusive; both absent means the whole file (up to 1 MB).
    #[serde(default)]
    pub start: Option<u64>,
    #[serde(default)]
    pub end: Option<u64>,
    /// Lines marked in the shown range: the grep hit or log reference the
    /// snippet was opened from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub marked: Vec<u64>,
}

impl SnippetBody {
    /// A snippet of `path` centred on `line` (marked), with [`CONTEXT_LINES`] either side.
    pub fn around(host: String, path: String, line: u64) -> Self {
        Self {
            host,
            path: Some(path),
            module: None,
            python: None,
            start: Some(line.saturating_sub(CONTEXT_LINES).max(1)),
            end: Some(line + CONTEXT_LINES),
            marked: vec![line],
        }
    }
}

/// Lines shown either side of a line opened from a grep hit or a log reference.
pub const CONTEXT_LINES: u64 = 15;

/// Where a source reference in a run's output (`custom_all_reduce.py:137`) may
/// point on the run's host.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct SourceCandidates {
    pub run_id: i64,
    pub step_id: i64,
    pub investigation_id: String,
    /// Its title, for the page's breadcrumb.
    #[serde(default)]
    pub investigation_title: String,
    pub host: String,
    /// The reference as written in the output.
    pub file: String,
    pub line: u64,
    /// Existing files on the host it may name, most likely first.
    pub candidates: Vec<String>,
    /// The directories that were searched for a bare or relative name.
    pub searched: Vec<String>,
}

/// The page that finds a run's source reference on its host and opens it:
/// `/runs/12/source?file=custom_all_reduce.py&line=137`. Opening it searches
/// nothing: the search is a remote action, started by the page's button (a POST).
pub fn source_url(run_id: i64, file: &str, line: u64) -> String {
    format!("/runs/{run_id}/source?file={}&line={line}", url_component(file))
}

/// The same page showing the result of a search (`searched=1`, one `c=` per
/// candidate, one `d=` per directory searched), where a search made without JavaScript, or an output link whose
/// name matched several files, lands.
pub fn candidates_url(found: &SourceCandidates) -> String {
    let mut url = source_url(found.run_id, &found.file, found.line);
    url.push_str("&searched=1");
    for path in &found.candidates {
        url.push_str("&c=");
        url.push_str(&url_component(path));
    }
    for dir in &found.searched {
        url.push_str("&d=");
        url.push_str(&url_component(dir));
    }
    url
}

/// Percent-encodes all but unreserved characters and `/`.
fn url_component(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for b in text.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => encoded.push(b as char),
            _ => encoded.push_str(&format!("%{b:02X}")),
        }
    }
    encoded
}

/// One fetch of the file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Snapshot {
    pub id: i64,
    pub path: String,
    pub start: u64,
    pub end: u64,
    pub lines: Vec<String>,
    /// The same lines highlighted (escaped HTML), for pages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub html_lines: Vec<String>,
    pub total_lines: Option<u64>,
    pub size: u64,
    /// RFC 3339.
    pub mtime: Option<String>,
    pub sha256: Option<String>,
    pub notes: Vec<String>,
    pub fetched_at: String,
}

/// Markdown written beside lines of a snippet step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Annotation {
    pub id: i64,
    pub step_id: i64,
    /// 1-based, inclusive line numbers of the file.
    pub start: u64,
    pub end: u64,
    /// Markdown as written.
    pub body: String,
    /// The same, rendered and sanitized on the server.
    pub html: String,
    /// Who wrote it, as they signed it (accounts come with team use).
    pub author: Option<String>,
    /// Stable link: `/i/{id}#annotation-{annotation_id}`.
    pub url: String,
    /// The snapshot the author was looking at.
    pub snapshot_id: Option<i64>,
    /// The file changed (sha256) since that snapshot; the lines may have moved.
    pub outdated: bool,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NewAnnotation {
    pub start: u64,
    pub end: u64,
    pub body: String,
    #[serde(default)]
    pub author: Option<String>,
}

/// A partial update of an annotation: absent fields stay.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct AnnotationPatch {
    #[serde(default)]
    pub start: Option<u64>,
    #[serde(default)]
    pub end: Option<u64>,
    #[serde(default)]
    pub body: Option<String>,
}

/// Longest annotation body, in characters.
pub const ANNOTATION_CHARS: usize = 20_000;

/// The anchor of a line of a step: `step-12-L130`.
pub fn line_anchor(step_id: i64, line: u64) -> String {
    format!("step-{step_id}-L{line}")
}

/// The anchor of a line range, GitHub style: `step-12-L130-L180` (one line: `step-12-L130`).
pub fn range_anchor(step_id: i64, start: u64, end: u64) -> String {
    if start == end { line_anchor(step_id, start) } else { format!("step-{step_id}-L{start}-L{end}") }
}

pub fn annotation_anchor(annotation_id: i64) -> String {
    format!("annotation-{annotation_id}")
}

/// What a URL fragment points at inside snippets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Focus {
    /// Lines `start..=end` of a step.
    Lines {
        step_id: i64,
        start: u64,
        end: u64,
    },
    Annotation(i64),
}

impl Focus {
    /// Reads `step-12-L130`, `step-12-L130-L180` (either order) and `annotation-7`,
    /// with or without the leading `#`.
    pub fn parse(fragment: &str) -> Option<Self> {
        let fragment = fragment.strip_prefix('#').unwrap_or(fragment);
        if let Some(id) = fragment.strip_prefix("annotation-") {
            return id.parse().ok().map(Self::Annotation);
        }
        let rest = fragment.strip_prefix("step-")?;
        let (step, lines) = rest.split_once("-L")?;
        let step_id = step.parse().ok()?;
        let (a, b): (u64, u64) = match lines.split_once("-L") {
            Some((a, b)) => (a.parse().ok()?, b.parse().ok()?),
            None => {
                let a: u64 = lines.parse().ok()?;
                (a, a)
            }
        };
        if a == 0 || b == 0 {
            return None;
        }
        Some(Self::Lines { step_id, start: a.min(b), end: a.max(b) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_name_lines_ranges_and_annotations() {
        assert_eq!(Focus::parse("#step-12-L130"), Some(Focus::Lines { step_id: 12, start: 130, end: 130 }));
        assert_eq!(Focus::parse("step-12-L130-L180"), Some(Focus::Lines { step_id: 12, start: 130, end: 180 }));
        assert_eq!(Focus::parse("#step-12-L180-L130"), Some(Focus::Lines { step_id: 12, start: 130, end: 180 }));
        assert_eq!(Focus::parse("#annotation-7"), Some(Focus::Annotation(7)));
        for bad in ["#step-12", "#step-x-L1", "#step-12-L0", "#step-12-L5-Lx", "#annotation-", "", "#L130"] {
            assert_eq!(Focus::parse(bad), None, "{bad}");
        }
        assert_eq!(range_anchor(12, 130, 180), "step-12-L130-L180");
        assert_eq!(range_anchor(12, 137, 137), "step-12-L137");
    }
}
