//! `/compare?runs=A,B[,…]`: runs side by side. What they ran with and on
//! (the rows that differ first), and every metric they share: each run's
//! value, its change against the first run, and whether that change is more
//! than the noise of each configuration's repeats. A form asks for other runs.

use crate::components::PageTitle;
use crate::steps::command::RunStatusBadge;
use domain::error::ApiError;
use domain::run_pages::{ChartAxis, ComparedMetric, Difference, RunsCompared};
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

#[server]
pub async fn load_comparison(runs: String) -> Result<RunsCompared, ApiError> {
    crate::backend::call(move |notebook, actor| async move {
        let ids = domain::run_pages::compared_runs(&runs)?;
        notebook.compare_runs(&actor, ids).await
    })
    .await
}

#[component]
pub fn ComparePage() -> impl IntoView {
    let query = use_query_map();
    let runs = move || query.read().get("runs").unwrap_or_default();
    let compared = Resource::new(runs, |runs| async move { load_comparison(runs).await });
    view! {
        <PageTitle text="Compare runs · Sleuth"/>
        <nav class="crumbs"><a href="/">"Investigations"</a> " / " <span>"compare runs"</span></nav>
        <form class="compare-form inline" method="get" action="/compare">
            <label>"Runs " <input name="runs" value=runs placeholder="3,7" required/></label>
            <button type="submit">"Compare"</button>
        </form>
        <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || Suspend::new(async move { super::or_error(compared.await.map(|c| view! { <Compared c/> })) })}
        </Transition>
    }
}

#[component]
fn Compared(c: RunsCompared) -> impl IntoView {
    let ids: Vec<String> = c.runs.iter().map(|r| r.id.to_string()).collect();
    let head = c
        .runs
        .iter()
        .map(|r| {
            view! {
                <th class="compared-run">
                    <a href=format!("/runs/{}", r.id)>"run " {r.id}</a> " " <RunStatusBadge status=r.status/>
                    {r.origin.label().map(|by| view! { " " <span class="tag origin">{by}</span> })}
                    <span class="muted step-of">
                        <a href=format!("/i/{}#step-{}", r.investigation_id, r.step_id)>
                            {crate::pages::crumb_title(&r.investigation_title, &r.investigation_id)} " · step " {r.step_position}
                        </a>
                    </span>
                    <span class="muted repeats">{domain::runs::counted(r.repeats.len() as u64, "run", "runs")} " of its configuration"</span>
                    <crate::guards::Guards guards=r.guards.clone()/>
                </th>
            }
        })
        .collect_view();
    let columns = c.runs.len();
    view! {
        <PageTitle text=format!("Runs {} compared · Sleuth", ids.join(", "))/>
        <section class="panel compare-page">
            <h1>"Runs " {ids.join(", ")}</h1>
            <p class="muted">"Each is compared with run " {ids[0].clone()} ". A change is more than noise when the 95 % interval over both configurations' repeats leaves out zero."</p>
            <div class="table-scroll">
            <table class="compare-table">
                <thead><tr><th></th>{head}</tr></thead>
                <Rows title="Ran with" rows=c.settings columns/>
                <Rows title="On a host with" rows=c.facts columns/>
                <tbody class="compare-metrics">
                    <tr class="section"><th colspan=columns + 1>"Measurements"</th></tr>
                    {c.metrics.into_iter().map(|m| view! { <MetricRow m/> }).collect_view()}
                </tbody>
            </table>
            </div>
            {(!c.unshared.is_empty()).then(|| view! {
                <p class="muted unshared">"Only some of the runs have: " {c.unshared.join(", ")}</p>
            })}
            {(!c.cdfs.is_empty()).then(|| view! {
                <h2>"Distributions"</h2>
                <p class="muted">"Each run's requests, as the share at or under each value; the first run grey."</p>
                <div class="compare-charts">
                    {c.cdfs.into_iter().map(|chart| {
                        let metric = chart.metric.clone();
                        let axis = match chart.axis { ChartAxis::Log => "log", ChartAxis::Linear => "linear" };
                        // A log chart carries its linear twin; two radios switch them
                        // in CSS, so the switch works before (and without) the bundle.
                        let switch = chart.linear_svg.map(|linear| {
                            let name = format!("axis-{}", chart.metric);
                            view! {
                                <div class="svg linear" inner_html=linear></div>
                                <fieldset class="axis-switch">
                                    <legend class="visually-hidden">"Value axis"</legend>
                                    <label><input type="radio" class="log" name=name.clone() checked/>" log axis"</label>
                                    <label><input type="radio" class="linear" name=name/>" linear axis"</label>
                                </fieldset>
                            }
                        });
                        view! {
                            <figure class="compare-cdf" data-metric=metric data-axis=axis>
                                <div class="svg main" inner_html=chart.svg></div>
                                {switch}
                                <figcaption class="muted"><code>{chart.metric}</code> " (" {chart.unit} ")"</figcaption>
                            </figure>
                        }
                    }).collect_view()}
                </div>
            })}
            {c.telemetry_svg.map(|svg| view! {
                <h2>"GPU telemetry"</h2>
                <p class="muted">"Seconds since each run started; each line the mean of its run's GPUs."</p>
                <figure class="compare-telemetry"><div class="svg" inner_html=svg></div></figure>
            })}
        </section>
    }
}

/// Rows of settings or facts: those that differ, then the rest folded away.
#[component]
fn Rows(title: &'static str, rows: Vec<Difference>, columns: usize) -> impl IntoView {
    if rows.is_empty() {
        return ().into_any();
    }
    let same = rows.iter().filter(|r| !r.differs).count();
    let row = |r: Difference| {
        view! {
            <tr class:differs=r.differs>
                <th>{r.name}</th>
                {r.values.into_iter().map(|v| match v {
                    Some(v) => view! { <td><code>{v}</code></td> }.into_any(),
                    None => view! { <td class="muted">"—"</td> }.into_any(),
                }).collect_view()}
            </tr>
        }
    };
    let (differ, alike): (Vec<Difference>, Vec<Difference>) = rows.into_iter().partition(|r| r.differs);
    view! {
        <tbody class="compare-rows">
            <tr class="section"><th colspan=columns + 1>{title} <span class="muted">{format!(" · {} differ, {same} the same", differ.len())}</span></th></tr>
            {differ.into_iter().map(row).collect_view()}
        </tbody>
        <tbody class="compare-rows alike">{alike.into_iter().map(row).collect_view()}</tbody>
    }
    .into_any()
}

#[component]
fn MetricRow(m: ComparedMetric) -> impl IntoView {
    let name = match &m.key {
        Some(key) => format!("{} [{key}]", m.metric),
        None => m.metric.clone(),
    };
    let cells = m
        .values
        .iter()
        .enumerate()
        .map(|(i, (value, extractor))| {
            let delta = m.deltas.get(i).copied().flatten();
            let verdict = m.verdicts.get(i).cloned().flatten();
            let outcome = verdict.as_ref().map(|v| v.outcome.as_str()).unwrap_or_default();
            view! {
                <td class="num" data-outcome=outcome title=format!("from {extractor}")>
                    {domain::metrics::figure(*value)}
                    // One percentage per cell: the verdict over the configurations'
                    // repeats when there is one (it starts with its own change), else
                    // this run against the first.
                    {match verdict {
                        Some(v) => view! { <span class="verdict muted">{v.verdict}</span> }.into_any(),
                        None => delta.map(|d| view! { " " <span class="delta">{format!("{}{d:.1} %", if d >= 0.0 { "+" } else { "" })}</span> }).into_any(),
                    }}
                </td>
            }
        })
        .collect_view();
    view! { <tr><th><code>{name}</code> " " <span class="muted">{m.unit}</span></th>{cells}</tr> }
}
