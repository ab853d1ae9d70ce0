//! Snippet steps: a line range of a source file on a GPU host, kept as
//! snapshots of what was read.

use serde::{Deserialize, Serialize};

/// Most lines one snippet may show.
pub const MAX_LINES: u64 = 5_000;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
}

impl SnippetBody {
    /// A snippet of `path` centred on `line`, with [`CONTEXT_LINES`] either side.
    pub fn around(host: String, path: String, line: u64) -> Self {
        Self {
            host,
            path: Some(path),
            module: None,
            python: None,
            start: Some(line.saturating_sub(CONTEXT_LINES).max(1)),
            end: Some(line + CONTEXT_LINES),
        }
    }
}

/// Lines shown either side of a line opened from a grep hit or a log reference.
pub const CONTEXT_LINES: u64 = 15;

/// Where a source reference in a run's output (`custom_all_reduce.py:137`) may
/// point on the run's host.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SourceCandidates {
    pub run_id: i64,
    pub step_id: i64,
    pub investigation_id: String,
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

use crate::error::ApiError;
use crate::model::{Step, short_time};
use crate::runs::human_bytes;
use leptos::form::ActionForm;
use leptos::prelude::*;

#[server]
pub async fn refresh_snippet(step_id: i64, start: String, end: String) -> Result<Step, ApiError> {
    let number = |s: &str| s.trim().parse::<u64>().ok();
    crate::backend::notebook()?
        .refresh_snippet(&crate::backend::actor()?, step_id, number(&start), number(&end))
        .await
        .inspect_err(crate::backend::set_status)
}

#[server]
pub async fn add_snippet(
    investigation: String,
    host: String,
    path: String,
    start: String,
    end: String,
) -> Result<Step, ApiError> {
    let path = path.trim().to_string();
    // "module:python" is not a path: a module name has no slash.
    let (path, module, python) = if path.starts_with('/') {
        (Some(path), None, None)
    } else {
        let (module, python) = path
            .split_once(' ')
            .map(|(m, p)| (m.to_string(), p.trim().to_string()))
            .unwrap_or((path, "python3".into()));
        (None, Some(module), Some(python))
    };
    let body = SnippetBody {
        host,
        path,
        module,
        python,
        start: crate::backend::form_number("The start line", &start)?,
        end: crate::backend::form_number("The end line", &end)?,
    };
    crate::backend::notebook()?
        .add_step(&crate::backend::actor()?, &investigation, super::StepBody::Snippet(body))
        .await
        .inspect_err(crate::backend::set_status)
}

#[component]
pub fn SnippetContent(step: Step) -> impl IntoView {
    let super::StepBody::Snippet(body) = step.body.clone() else {
        return ().into_any();
    };
    let Some(snapshot) = step.snapshots.last().cloned() else {
        return view! { <p class="muted">"Not fetched yet."</p> }.into_any();
    };
    let changed =
        step.snapshots.iter().rev().nth(1).filter(|previous| previous.sha256 != snapshot.sha256).map(|previous| {
            format!(
                "The file changed since the previous fetch ({}): sha256 {} → {}.",
                short_time(&previous.fetched_at),
                previous.sha256.as_deref().map(|s| &s[..12.min(s.len())]).unwrap_or("?"),
                snapshot.sha256.as_deref().map(|s| &s[..12.min(s.len())]).unwrap_or("?"),
            )
        });
    let refresh = ServerAction::<RefreshSnippet>::new();
    let step_id = step.id;
    let total = snapshot.total_lines.map(|t| format!(" of {t}")).unwrap_or_default();
    let facts = format!(
        "lines {}–{}{total} · {} · {}fetched {}",
        snapshot.start,
        snapshot.end,
        human_bytes(snapshot.size),
        snapshot.mtime.as_deref().map(|m| format!("modified {} · ", short_time(m))).unwrap_or_default(),
        short_time(&snapshot.fetched_at),
    );
    let mut seen_ranges = std::collections::HashSet::new();
    let mut annotations_after: std::collections::HashMap<u64, Vec<(super::snippet::Annotation, bool)>> =
        Default::default();
    for a in &step.annotations {
        let first_of_range = seen_ranges.insert((a.start, a.end));
        // Annotations of lines no longer shown go after the last line, not away.
        let at = a.end.clamp(snapshot.start, snapshot.end);
        annotations_after.entry(at).or_default().push((a.clone(), first_of_range));
    }
    let rows = snapshot
        .html_lines
        .iter()
        .enumerate()
        .map(|(i, html)| {
            let n = snapshot.start + i as u64;
            let anchor = line_anchor(step_id, n);
            let notes = annotations_after.remove(&n).unwrap_or_default();
            // A click on a line number selects the line (`browser::lines`), Shift
            // extends the selection; without JavaScript it is a link to the line.
            view! {
                <tr id=anchor.clone() data-line=n>
                    <td class="ln"><a href=format!("#{anchor}")>{n}</a></td>
                    <td class="code"><code inner_html=html.clone()></code></td>
                </tr>
                {notes
                    .into_iter()
                    .map(|(annotation, first_of_range)| view! {
                        <tr class="annotation-row">
                            <td colspan="2">
                                <super::annotation::AnnotationView annotation first_of_range/>
                            </td>
                        </tr>
                    })
                    .collect_view()}
            }
            .into_any()
        })
        .collect_view();
    let (start, end) = (snapshot.start, snapshot.end);
    let expand = move |by: u64| (start.saturating_sub(by).max(1).to_string(), (end + by).to_string());
    let (up_start, up_end) = expand(20);
    view! {
        <div class="snippet-meta">
            <span class="host">{body.host.clone()}</span>
            <code class="path">{snapshot.path.clone()}</code>
            {body.module.clone().map(|m| view! { <span class="muted">"(" {m} ")"</span> })}
        </div>
        <p class="muted snippet-facts">
            {facts}
            {snapshot.sha256.clone().map(|s| view! { " · sha256 " <code title=s.clone()>{s[..12.min(s.len())].to_string()}</code> })}
        </p>
        {changed.map(|c| view! { <p class="notice">{c}</p> })}
        {snapshot.notes.iter().map(|n| view! { <p class="notice">{n.clone()}</p> }).collect_view()}
        <div class="code-view hl-code">
            <table class="code-lines" data-step=step_id><tbody>{rows}</tbody></table>
        </div>
        <div class="snippet-controls">
            <crate::components::Can what=crate::components::Ability::Run>
            <ActionForm action=refresh attr:class="inline">
                <input type="hidden" name="step_id" value=step_id/>
                <input type="hidden" name="start" value=up_start/>
                <input type="hidden" name="end" value=up_end/>
                <button type="submit" class="quiet">"± 20 lines"</button>
                <crate::components::ActionError action=refresh/>
            </ActionForm>
            <ActionForm action=refresh attr:class="inline">
                <input type="hidden" name="step_id" value=step_id/>
                <input type="hidden" name="start" value=start.to_string()/>
                <input type="hidden" name="end" value=end.to_string()/>
                <button type="submit" class="quiet">"Refresh"</button>
            </ActionForm>
            </crate::components::Can>
            <span class="muted">{step.snapshots.len()} " snapshot(s)"</span>
        </div>
        <crate::components::Can what=crate::components::Ability::Edit>
            <super::annotation::AnnotateForm step_id shown=(start, end)/>
        </crate::components::Can>
    }
    .into_any()
}

/// "Add a snippet" at the end of the timeline.
#[component]
pub fn AddSnippet(investigation: String) -> impl IntoView {
    let add = ServerAction::<AddSnippet>::new();
    view! {
        <details class="add-step" id="add-snippet">
            <summary>"Add a source snippet"</summary>
            <ActionForm action=add attr:class="stacked">
                <input type="hidden" name="investigation" value=investigation/>
                <div class="row">
                    <label>"Host" <crate::components::HostSelect/></label>
                    <label class="wide">
                        <span>"File " <span class="muted">"(absolute path, or a module and its python)"</span></span>
                        <input name="path" required placeholder="/usr/lib/python3/dist-packages/vllm/…/custom_all_reduce.py  or  vllm.distributed.device_communicators.custom_all_reduce /root/ml-env/bin/python"/>
                    </label>
                    <label class="narrow">"From line" <input name="start" inputmode="numeric" placeholder="130"/></label>
                    <label class="narrow">"To line" <input name="end" inputmode="numeric" placeholder="180"/></label>
                </div>
                <crate::components::ActionError action=add/>
                <div class="form-actions"><button type="submit" class="primary">"Fetch snippet"</button></div>
            </ActionForm>
        </details>
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
