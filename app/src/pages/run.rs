//! `/runs/{id}`: one run whole, whichever it is of its step. What it ran
//! (command, environment, configuration, host and its facts), how it went
//! (status, times, error), and what it left (output with "show more", the
//! server's log, files, measurements, telemetry), with links to its step and
//! to the step's other runs. The output of a run still going follows live.

use crate::components::{PageTitle, Time};
use crate::steps::command::{RunOutput, RunStatusBadge};
use domain::error::ApiError;
use domain::hosts::HostFacts;
use domain::run_pages::{RunLink, RunPage};
use domain::runs::human_duration;
use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

/// How many of the step's runs the page lists around this one.
const AROUND: usize = 15;

#[server]
pub async fn load_run_page(run_id: i64) -> Result<RunPage, ApiError> {
    crate::backend::call(move |notebook, actor| async move { notebook.run_page(&actor, run_id).await }).await
}

#[component]
pub fn RunPageView() -> impl IntoView {
    let params = use_params_map();
    let id = move || params.read().get("id").and_then(|id| id.parse::<i64>().ok());
    let page = Resource::new(id, |id| async move {
        match id {
            Some(id) => load_run_page(id).await,
            None => Err(ApiError::not_found("There is no such run.")),
        }
    });
    view! {
        <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || Suspend::new(async move { super::or_error(page.await.map(|page| view! { <Whole page/> })) })}
        </Transition>
    }
}

#[component]
fn Whole(page: RunPage) -> impl IntoView {
    provide_context(page.abilities);
    let run = page.run.clone();
    let step = format!("/i/{}#step-{}", page.investigation_id, run.step_id);
    let crumb = crate::pages::crumb_title(&page.investigation_title, &page.investigation_id);
    let of_step = page.runs.len();
    let (previous, next) = (page.previous().cloned(), page.next().cloned());
    let around: Vec<RunLink> = page.around(AROUND).to_vec();
    let previous_id = previous.as_ref().map(|p| p.id);
    let each_config = page
        .one_of_each_config()
        .map(|ids| format!("/compare?runs={}", ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",")));
    let place = match (run.sweep_index, domain::runs::batch_position(&run)) {
        (Some(i), batch) if batch.is_empty() => format!("{i} of its sweep"),
        (Some(i), batch) => format!("{i} of its sweep · {batch}"),
        (None, batch) => batch,
    };
    view! {
        <PageTitle text=format!("Run {} · {} · Sleuth", run.id, crumb)/>
        <nav class="crumbs">
            <a href="/">"Investigations"</a> " / "
            <a href=format!("/i/{}", page.investigation_id) title=page.investigation_id.clone()>{crumb.clone()}</a> " / "
            <a href=step.clone()>"step " {page.step_position}</a> " / "
            <span>"run " {run.id}</span>
        </nav>
        <section class="panel run-page" data-run-page=run.id>
            <header class="run-page-head">
                <h1>"Run " {run.id} " " <RunStatusBadge status=run.status/></h1>
                {match run.origin {
                    domain::runs::RunOrigin::Person => ().into_any(),
                    domain::runs::RunOrigin::Watch { id } => view! {
                        <p class="notice run-origin" data-origin="watch">"Made by watch " {id}
                            " on its schedule: it joins no hypothesis and no frontier unless one asks for watch runs."</p>
                    }.into_any(),
                    domain::runs::RunOrigin::Replay { id } => view! {
                        <p class="notice run-origin" data-origin="replay">"Made by "
                            <a href=format!("/replays/{id}")>{format!("replay {id}")}</a> "."</p>
                    }.into_any(),
                }}
                <nav class="run-nav">
                    {previous.map(|p| view! { <a rel="prev" href=format!("/runs/{}", p.id)>"← run " {p.id}</a> })}
                    <a href=step>{format!("{of_step} run{} of step {}", if of_step == 1 { "" } else { "s" }, page.step_position)}</a>
                    {next.map(|n| view! { <a rel="next" href=format!("/runs/{}", n.id)>"run " {n.id} " →"</a> })}
                    {previous_id.map(|p| view! { <a class="compare-previous" href=format!("/compare?runs={p},{}", run.id)>"compare with run " {p}</a> })}
                    {each_config.map(|href| view! { <a class="compare-configs" href=href>"compare its configurations"</a> })}
                </nav>
            </header>
            <dl class="run-facts">
                <dt>"Command"</dt>
                <dd><div class="command-wrap"><pre class="command-line">{run.command.clone()}</pre>
                    <crate::components::CopyButton text=run.command.clone() label="Copy"/></div></dd>
                <dt>"Host"</dt><dd><span class="host">{run.host.clone()}</span></dd>
                {(!run.env.is_empty()).then(|| view! {
                    <dt>"Environment"</dt><dd><code>{domain::runs::config_label(&run.env)}</code></dd>
                })}
                {run.config.as_ref().map(|c| view! {
                    <dt>"Configuration"</dt><dd><code>{domain::sweeps::config_label(c)}</code></dd>
                })}
                {(!place.is_empty()).then(|| view! { <dt>"Place"</dt><dd>{place.clone()}</dd> })}
                {run.cwd.clone().map(|cwd| view! { <dt>"Working directory"</dt><dd><code>{cwd}</code></dd> })}
                {run.run_dir.clone().map(|dir| view! { <dt>"Run directory"</dt><dd><code>{dir}</code></dd> })}
                <dt>"Queued"</dt><dd><Time at=run.queued_at.clone()/>{run.who.clone().map(|w| view! { " by " <span class="who">{w}</span> })}</dd>
                {run.started_at.clone().map(|at| view! { <dt>"Started"</dt><dd><Time at/></dd> })}
                {run.finished_at.clone().map(|at| view! {
                    <dt>"Finished"</dt><dd><Time at/>{run.duration_ms.map(|ms| format!(" · took {}", human_duration(ms)))}</dd>
                })}
                {run.timeout_s.map(|t| view! { <dt>"Timeout"</dt><dd>{t} " s"</dd> })}
            </dl>
            {page.facts.clone().map(|facts| view! { <Facts facts id=run.facts_id/> })}
            <RunOutput run=run.clone() queued=0 whole=true/>
            {page.engine.clone().map(|engine| view! { <Engine engine run=run.id/> })}
            {(of_step > 1).then(|| view! { <Siblings runs=around this=run.id total=of_step/> })}
        </section>
    }
}

/// The engine's own account of the run: its queue, KV cache and the GPUs
/// on the run's time axis, what the scraping said, and every series it kept.
#[component]
fn Engine(engine: domain::engine::series::EngineView, run: i64) -> impl IntoView {
    let number = |v: Option<f64>| v.map(domain::metrics::figure).unwrap_or_else(|| "—".into());
    let listed = engine.series.len();
    view! {
        <section class="run-engine">
            <h2>"Engine"</h2>
            {engine.notes.into_iter().map(|n| view! { <p class="note">{n}</p> }).collect_view()}
            {engine.svg.map(|svg| view! {
                <p class="muted">"Seconds since the run's command started; the engine's values hold until the next change."</p>
                <div class="engine-chart" inner_html=svg></div>
            })}
            {(engine.total > 0).then(|| view! {
                <details class="engine-series">
                    <summary>{format!("{} series from its /metrics", engine.total)}
                        {(listed < engine.total).then(|| format!(" (the first {listed})"))}</summary>
                    <table class="series-table">
                        <thead><tr><th>"series"</th><th>"type"</th><th>"first"</th><th>"last"</th><th>"min"</th><th>"max"</th><th>"values kept"</th></tr></thead>
                        <tbody>
                            {engine.series.into_iter().map(|s| view! {
                                <tr><td><code>{s.name}</code></td><td>{format!("{:?}", s.kind).to_lowercase()}</td>
                                    <td>{number(s.first)}</td><td>{number(s.last)}</td><td>{number(s.min)}</td><td>{number(s.max)}</td><td>{s.values}</td></tr>
                            }).collect_view()}
                        </tbody>
                    </table>
                    <p><a href=format!("/api/v1/runs/{run}/engine")>"every series and value (JSON)"</a></p>
                </details>
            })}
        </section>
    }
}

/// The host as it was when the run started.
#[component]
fn Facts(facts: HostFacts, id: Option<i64>) -> impl IntoView {
    let gpus = facts.gpu_summary();
    let mut said: Vec<String> = Vec::new();
    if !gpus.is_empty() {
        said.push(gpus);
    }
    said.extend(facts.interconnect.clone());
    said.extend(facts.driver.clone().map(|d| format!("driver {d}")));
    said.extend(facts.cuda.clone().map(|c| format!("CUDA {c}")));
    said.extend(facts.cpu_model.clone());
    let packages = facts.packages.iter().map(|(name, version)| format!("{name} {version}")).collect::<Vec<_>>();
    view! {
        <p class="run-host-facts">
            <span class="tag">"host"</span> " " {said.join(" · ")}
            {(!packages.is_empty()).then(|| view! { " · " <span class="muted">{packages.join(", ")}</span> })}
            {id.map(|id| view! { " " <a class="quiet" href=format!("/api/v1/facts/{id}")>"all facts (JSON)"</a> })}
        </p>
    }
}

/// The step's runs around this one, each a link to its page.
#[component]
fn Siblings(runs: Vec<RunLink>, this: i64, total: usize) -> impl IntoView {
    let shown = runs.len();
    view! {
        <details class="run-siblings" open>
            <summary>{if shown < total { format!("{shown} of the step's {total} runs, around this one") } else { format!("The step's {total} runs") }}</summary>
            <ol class="run-links">
                {runs.into_iter().map(|r| {
                    let current = r.id == this;
                    view! {
                        <li class:current=current>
                            {if current {
                                view! { <span aria-current="page">"run " {r.id}</span> }.into_any()
                            } else {
                                view! { <a href=format!("/runs/{}", r.id)>"run " {r.id}</a> }.into_any()
                            }}
                            " " <RunStatusBadge status=r.status/> " " <span class="muted">{r.label}</span>
                            {(!current).then(|| view! { " " <a class="quiet" href=format!("/compare?runs={this},{}", r.id)>"compare"</a> })}
                        </li>
                    }
                }).collect_view()}
            </ol>
        </details>
    }
}
