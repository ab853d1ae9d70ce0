//! Snippet steps: a line range of a source file on a GPU host, kept as
//! snapshots of what was read.

use domain::error::ApiError;
use domain::model::{Step, short_time};
use domain::runs::human_bytes;
use domain::steps::snippet::*;
use leptos::form::ActionForm;
use leptos::prelude::*;

#[server]
pub async fn refresh_snippet(step_id: i64, start: String, end: String) -> Result<Step, ApiError> {
    let number = |s: &str| s.trim().parse::<u64>().ok();
    crate::backend::call(move |notebook, actor| async move {
        notebook.refresh_snippet(&actor, step_id, number(&start), number(&end)).await
    })
    .await
}

/// "Edit these lines": the shown lines, edited, saved as a patch step after the snippet.
#[server]
pub async fn edit_lines(step_id: i64, text: String) -> Result<Step, ApiError> {
    crate::backend::call(move |notebook, actor| async move { notebook.patch_snippet(&actor, step_id, &text).await })
        .await
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
        marked: Vec::new(),
    };
    crate::backend::call(move |notebook, actor| async move {
        notebook.add_step(&actor, &investigation, domain::steps::StepBody::Snippet(body)).await
    })
    .await
}

#[component]
pub fn SnippetContent(step: Step) -> impl IntoView {
    let domain::steps::StepBody::Snippet(body) = step.body.clone() else {
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
    let mut annotations_after: std::collections::HashMap<u64, Vec<(Annotation, bool)>> = Default::default();
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
                <tr id=anchor.clone() data-line=n class:marked=body.marked.contains(&n)>
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
            <EditLines step_id lines=snapshot.lines.clone() sha256=snapshot.sha256.clone()/>
        </crate::components::Can>
    }
    .into_any()
}

/// "Edit these lines": the shown range as text to change; saving makes a
/// patch step right after the snippet, against this snapshot's sha256.
#[component]
fn EditLines(step_id: i64, lines: Vec<String>, sha256: Option<String>) -> impl IntoView {
    let save = ServerAction::<EditLines>::new();
    let rows = lines.len().clamp(3, 30);
    let text = lines.join("\n");
    view! {
        <details class="edit-lines">
            <summary>"Edit these lines"</summary>
            <ActionForm action=save attr:class="stacked">
                <input type="hidden" name="step_id" value=step_id/>
                <textarea name="text" rows=rows spellcheck="false" class="code">{crate::components::textarea_text(&text)}</textarea>
                <p class="muted">"Saved as a patch step after this one, against the file as fetched"
                    {sha256.map(|s| format!(" (sha256 {}…)", &s[..12.min(s.len())]))}
                    "; running it applies the patch on the host and puts the file back after."</p>
                <crate::components::ActionError action=save/>
                <div class="form-actions"><button type="submit" class="primary">"Save as a patch"</button></div>
            </ActionForm>
        </details>
    }
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
