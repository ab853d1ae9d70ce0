//! `/runs/{id}/source?file=…&line=…`: where a reference in a run's output
//! (`[custom_all_reduce.py:137]`) points on the run's host, and one button per
//! candidate to open it as a snippet step. Output links come here when the name
//! is ambiguous, when nothing matched, or when there is no JavaScript.

use crate::error::ApiError;
use crate::steps::snippet::{CONTEXT_LINES, SourceCandidates};
use leptos::form::ActionForm;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

#[server]
pub async fn find_source(run_id: i64, file: String, line: u64) -> Result<SourceCandidates, ApiError> {
    crate::backend::notebook()?.source_candidates(run_id, &file, line).await.inspect_err(crate::backend::set_status)
}

/// Opens `file:line` from a run's output as a snippet step in the run's
/// investigation: `path` if given, else the only file the name can mean. Returns
/// where to go: the new step's line, or this page when there is a choice to make.
#[server]
pub async fn open_reference(run_id: i64, file: String, line: u64, path: String) -> Result<String, ApiError> {
    let notebook = crate::backend::notebook()?;
    let opened = async {
        let path = path.trim().to_string();
        let (investigation, host, path) = if path.is_empty() {
            let found = notebook.source_candidates(run_id, &file, line).await?;
            if found.candidates.len() != 1 {
                return Ok(crate::steps::snippet::source_url(run_id, &file, line));
            }
            let path = found.candidates.into_iter().next().unwrap_or_default();
            (found.investigation_id, found.host, path)
        } else {
            let run = notebook.run(run_id).await?;
            let step = notebook.step(run.step_id).await?;
            (step.investigation_id, run.host, path)
        };
        let body = crate::steps::snippet::SnippetBody::around(host, path, line);
        let step = notebook.add_step(&investigation, crate::steps::StepBody::Snippet(body)).await?;
        Ok(format!("/i/{investigation}#{}", crate::steps::snippet::line_anchor(step.id, line)))
    }
    .await
    .inspect_err(crate::backend::set_status)?;
    if crate::backend::is_plain_form_post() {
        leptos_axum::redirect(&opened);
    }
    Ok(opened)
}

#[component]
pub fn SourcePage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let request = move || {
        let run = params.read().get("id").and_then(|id| id.parse::<i64>().ok());
        let query = query.read();
        (run, query.get("file").unwrap_or_default(), query.get("line").and_then(|l| l.parse::<u64>().ok()))
    };
    let found = Resource::new(request, |(run, file, line)| async move {
        match (run, line) {
            (Some(run), Some(line)) => find_source(run, file, line).await,
            (None, _) => Err(ApiError::not_found("There is no such run.")),
            (_, None) => Err(ApiError::invalid("The link names no line (`?file=…&line=137`).")),
        }
    });
    view! {
        <Transition fallback=|| view! { <p class="muted">"Looking for the file on the host…"</p> }>
            <ErrorBoundary fallback=super::error_fallback>
                {move || Suspend::new(async move { found.await.map(|found| view! { <Candidates found/> }) })}
            </ErrorBoundary>
        </Transition>
    }
}

#[component]
fn Candidates(found: SourceCandidates) -> impl IntoView {
    let open = ServerAction::<OpenReference>::new();
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        if let Some(Ok(url)) = open.value().get() {
            crate::live::go_to(&url);
        }
    });
    let reference = format!("{}:{}", found.file, found.line);
    let back = format!("/i/{}#step-{}", found.investigation_id, found.step_id);
    let lines = format!("lines {}–{}", found.line.saturating_sub(CONTEXT_LINES).max(1), found.line + CONTEXT_LINES);
    let count = found.candidates.len();
    let rows = found
        .candidates
        .iter()
        .map(|path| {
            view! {
                <li class="candidate">
                    <code>{path.clone()}</code>
                    <OpenButton open run_id=found.run_id file=found.file.clone() line=found.line path=path.clone()
                        label=format!("Open {lines}")/>
                </li>
            }
        })
        .collect_view();
    let searched = found.searched.join("\n");
    view! {
        <Title text=format!("{reference} · Sleuth")/>
        <nav class="crumbs">
            <a href="/">"Investigations"</a> " / " <a href=back.clone()>{found.investigation_id.clone()}</a> " / "
            <span>"run " {found.run_id}</span>
        </nav>
        <section class="panel source-page">
            <h1><code>{reference.clone()}</code></h1>
            <p class="muted">
                "A reference in the output of " <a href=back>"run " {found.run_id}</a> " on "
                <span class="host">{found.host.clone()}</span> "."
            </p>
            {match count {
                0 => view! {
                    <p class="notice">{format!("No file matching {} was found on {}.", found.file, found.host)}</p>
                }.into_any(),
                1 => view! { <p>"One file matches:"</p> }.into_any(),
                n => view! { <p>{format!("{n} files match; which one did the program run?")}</p> }.into_any(),
            }}
            <ul class="candidates">{rows}</ul>
            <details class="searched">
                <summary>{format!("Searched {} director{}", found.searched.len(), if found.searched.len() == 1 { "y" } else { "ies" })}</summary>
                <pre>{searched}</pre>
            </details>
            <ActionForm action=open attr:class="stacked other-path">
                <input type="hidden" name="run_id" value=found.run_id/>
                <input type="hidden" name="file" value=found.file.clone()/>
                <input type="hidden" name="line" value=found.line/>
                <label>"Another path on " {found.host.clone()}
                    <input name="path" required placeholder="/root/ml-env/lib/python3.12/site-packages/vllm/…/custom_all_reduce.py"/>
                </label>
                <div class="form-actions"><button type="submit">"Open this file"</button></div>
            </ActionForm>
            <crate::components::ActionError action=open/>
        </section>
    }
}

#[component]
fn OpenButton(
    open: ServerAction<OpenReference>,
    run_id: i64,
    file: String,
    line: u64,
    path: String,
    label: String,
) -> impl IntoView {
    view! {
        <ActionForm action=open attr:class="inline">
            <input type="hidden" name="run_id" value=run_id/>
            <input type="hidden" name="file" value=file/>
            <input type="hidden" name="line" value=line/>
            <input type="hidden" name="path" value=path/>
            <button type="submit" class="primary">{label}</button>
        </ActionForm>
    }
}
