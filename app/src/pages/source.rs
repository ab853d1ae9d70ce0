//! `/runs/{id}/source?file=…&line=…`: where a reference in a run's output
//! (`[custom_all_reduce.py:137]`) points on the run's host, and one button per
//! candidate to open it as a snippet step. Output links come here when the name
//! is ambiguous, when nothing matched, or when there is no JavaScript.
//!
//! Looking for the file runs a script on the host, so it is never done on GET:
//! a link or an image pointing here (in a note, say) shows the reference and a
//! **Search** button; the search is a POST (`find_source`). Its answer comes
//! back as this page's address (`searched=1&c=…`), with or without JavaScript.

use crate::components::PageTitle;
use crate::components::{Ability, Can};
use domain::error::ApiError;
use domain::steps::snippet::{CONTEXT_LINES, SourceCandidates};
use leptos::form::ActionForm;
use leptos::prelude::*;
use leptos_router::hooks::{use_params_map, use_query_map};

/// The reference and the run it is from, without touching the host.
#[server]
pub async fn source_reference(run_id: i64, file: String, line: u64) -> Result<SourceCandidates, ApiError> {
    crate::backend::call(move |notebook, actor| async move {
        if file.trim().is_empty() || line == 0 {
            return Err(ApiError::invalid("The link names no file and line (`?file=decoder.py&line=137`)."));
        }
        let run = notebook.run(&actor, run_id).await?;
        let step = notebook.step(&actor, run.step_id).await?;
        let listed = notebook.list_investigations(&actor).await?;
        let investigation_title =
            listed.into_iter().find(|i| i.id == step.investigation_id).map(|i| i.title).unwrap_or_default();
        Ok(SourceCandidates {
            run_id,
            step_id: step.id,
            investigation_id: step.investigation_id,
            investigation_title,
            host: run.host,
            file,
            line,
            candidates: Vec::new(),
            searched: Vec::new(),
        })
    })
    .await
}

/// Searches the run's host for the file (a remote action: POST only).
#[server]
pub async fn find_source(run_id: i64, file: String, line: u64) -> Result<SourceCandidates, ApiError> {
    let found = crate::backend::call(move |notebook, actor| async move {
        notebook.source_candidates(&actor, run_id, &file, line).await
    })
    .await?;
    leptos_axum::redirect(&domain::steps::snippet::candidates_url(&found));
    Ok(found)
}

/// Opens `file:line` from a run's output as a snippet step in the run's
/// investigation: `path` if given, else the only file the name can mean. Returns
/// where to go: the new step's line, or this page with the choice to make.
#[server]
pub async fn open_reference(run_id: i64, file: String, line: u64, path: String) -> Result<String, ApiError> {
    let opened = crate::backend::call(move |notebook, actor| async move {
        let path = path.trim().to_string();
        let (investigation, host, path) = if path.is_empty() {
            let found = notebook.source_candidates(&actor, run_id, &file, line).await?;
            if found.candidates.len() != 1 {
                return Ok(domain::steps::snippet::candidates_url(&found));
            }
            let path = found.candidates.into_iter().next().unwrap_or_default();
            (found.investigation_id, found.host, path)
        } else {
            let run = notebook.run(&actor, run_id).await?;
            let step = notebook.step(&actor, run.step_id).await?;
            (step.investigation_id, run.host, path)
        };
        let body = domain::steps::snippet::SnippetBody::around(host, path, line);
        let step = notebook.add_step(&actor, &investigation, domain::steps::StepBody::Snippet(body)).await?;
        Ok(format!("/i/{investigation}#{}", domain::steps::snippet::line_anchor(step.id, line)))
    })
    .await?;
    leptos_axum::redirect(&opened);
    Ok(opened)
}

/// What the reader may do in an investigation (the page offers only that).
#[server]
pub async fn investigation_abilities(id: String) -> Result<domain::model::Abilities, ApiError> {
    crate::backend::call(move |notebook, actor| async move { notebook.abilities(&actor, &id).await }).await
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
    let reference = Resource::new(request, |(run, file, line)| async move {
        let found = match (run, line) {
            (Some(run), Some(line)) => source_reference(run, file, line).await?,
            (None, _) => return Err(ApiError::not_found("There is no such run.")),
            (_, None) => return Err(ApiError::invalid("The link names no line (`?file=…&line=137`).")),
        };
        let abilities = investigation_abilities(found.investigation_id.clone()).await?;
        Ok((found, abilities))
    });
    // A search's answer carried in the address (see the module comment).
    let listed = move || {
        let query = query.read();
        (query.get("searched").is_some())
            .then(|| (query.get_all("c").unwrap_or_default(), query.get_all("d").unwrap_or_default()))
    };
    view! {
        <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    super::or_error(reference.await.map(|(mut found, abilities)| {
                        let searched = listed();
                        if let Some((paths, dirs)) = &searched {
                            found.candidates = paths.clone();
                            found.searched = dirs.clone();
                        }
                        view! { <Candidates found abilities searched=searched.is_some()/> }
                    }))
                })}
        </Transition>
    }
}

#[component]
fn Candidates(found: SourceCandidates, abilities: domain::model::Abilities, searched: bool) -> impl IntoView {
    // Searching the host and opening a file as a step are a runner's.
    provide_context(abilities);
    let open = ServerAction::<OpenReference>::new();
    let search = ServerAction::<FindSource>::new();
    let reference = format!("{}:{}", found.file, found.line);
    let back = format!("/i/{}#step-{}", found.investigation_id, found.step_id);
    let host = found.host.clone();
    let results = searched.then(|| {
        let host = host.clone();
        let found = found.clone();
        {
            let lines =
                format!("lines {}–{}", found.line.saturating_sub(CONTEXT_LINES).max(1), found.line + CONTEXT_LINES);
            let rows = found
                .candidates
                .iter()
                .map(|path| {
                    view! {
                        <li class="candidate">
                            <code>{path.clone()}</code>
                            <OpenButton open run_id=found.run_id file=found.file.clone() line=found.line
                                path=path.clone() label=format!("Open {lines}")/>
                        </li>
                    }
                })
                .collect_view();
            let summary = match found.candidates.len() {
                0 => format!("No file matching {} was found on {host}.", found.file),
                1 => "One file matches:".to_string(),
                n => format!("{n} files match; which one did the program run?"),
            };
            let searched = found.searched.join("\n");
            let dirs = found.searched.len();
            view! {
                <p class=if found.candidates.is_empty() { "notice" } else { "" }>{summary}</p>
                <ul class="candidates">{rows}</ul>
                {(dirs > 0).then(|| view! {
                    <details class="searched">
                        <summary>{format!("Searched {dirs} director{}", if dirs == 1 { "y" } else { "ies" })}</summary>
                        <pre>{searched}</pre>
                    </details>
                })}
            }
        }
    });
    let search_label = format!("{} {host} for {}", if searched { "Search again on" } else { "Search" }, found.file);
    let (file, other_file) = (found.file.clone(), found.file.clone());
    view! {
        <PageTitle text=format!("{reference} · Sleuth")/>
        <nav class="crumbs">
            <a href="/">"Investigations"</a> " / " <a href=back.clone()>{crate::pages::crumb_title(&found.investigation_title, &found.investigation_id)}</a> " / "
            <span>"run " {found.run_id}</span>
        </nav>
        <section class="panel source-page">
            <h1><code>{reference.clone()}</code></h1>
            <p class="muted">
                "A reference in the output of " <a href=back>"run " {found.run_id}</a> " on "
                <span class="host">{host.clone()}</span> "."
            </p>
            {(!abilities.run).then(|| view! {
                <p class="notice read-only">"Finding this file on the host and opening it as a step need the runner role here (ask an owner)."</p>
            })}
            <Can what=Ability::Run>
            <ActionForm action=search attr:class="inline find-source">
                <input type="hidden" name="run_id" value=found.run_id/>
                <input type="hidden" name="file" value=file/>
                <input type="hidden" name="line" value=found.line/>
                <button type="submit" class=if searched { "" } else { "primary" }>{search_label}</button>
                <crate::components::ActionError action=search/>
            </ActionForm>
            {results}
            <ActionForm action=open attr:class="stacked other-path">
                <input type="hidden" name="run_id" value=found.run_id/>
                <input type="hidden" name="file" value=other_file/>
                <input type="hidden" name="line" value=found.line/>
                <label>"Another path on " {host}
                    <input name="path" required placeholder="/root/ml-env/lib/python3.12/site-packages/vllm/…/custom_all_reduce.py"/>
                </label>
                <crate::components::ActionError action=open/>
                <div class="form-actions"><button type="submit">"Open this file"</button></div>
            </ActionForm>
            </Can>
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
