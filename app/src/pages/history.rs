//! `/i/{id}/history?step=S[&metric=M&config=C&better=higher|lower]`: a step's
//! runs of a metric in order, where it changed (each change with the runs
//! either side and what differed between them), and the numbers.

use crate::components::PageTitle;
use domain::error::ApiError;
use domain::history::History;
use leptos::prelude::*;
use leptos_router::hooks::{use_params_map, use_query_map};

#[server]
pub async fn load_history(step: i64, metric: String, config: String, better: String) -> Result<History, ApiError> {
    crate::backend::call(move |notebook, actor| async move {
        let some = |text: String| Some(text).filter(|t| !t.trim().is_empty());
        let better =
            match some(better) {
                Some(text) => Some(domain::history::Better::parse(text.trim()).ok_or_else(|| {
                    ApiError::invalid(format!("better= is `higher` or `lower`, not {:?}.", text.trim()))
                })?),
                None => None,
            };
        let query = domain::history::HistoryQuery { metric: some(metric), config: some(config), better };
        // A sweep's history is of one configuration: without one, the page
        // lists them to choose from (the API says so with a 422).
        if query.config.is_none()
            && let domain::steps::StepBody::Command(body) = notebook.step(&actor, step).await?.body
        {
            let configs: Vec<String> =
                domain::sweeps::configurations(&body.matrix).iter().map(domain::sweeps::config_label).collect();
            if configs.len() > 1 {
                let metric = query.metric.clone().unwrap_or_else(|| "output_throughput".into());
                return Ok(History {
                    step_id: step,
                    better: domain::history::Better::of(&metric),
                    metric,
                    unit: None,
                    config: None,
                    runs: Vec::new(),
                    changes: Vec::new(),
                    svg: None,
                    configs,
                });
            }
        }
        notebook.history(&actor, step, &query).await
    })
    .await
}

#[component]
pub fn HistoryPage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let investigation = move || params.read().get("id").unwrap_or_default();
    let asked = move || {
        let q = query.read();
        let step = q.get("step").and_then(|s| s.parse::<i64>().ok());
        (
            step,
            q.get("metric").unwrap_or_default(),
            q.get("config").unwrap_or_default(),
            q.get("better").unwrap_or_default(),
        )
    };
    let found = Resource::new(asked, |(step, metric, config, better)| async move {
        match step {
            Some(step) => load_history(step, metric, config, better).await,
            None => Err(ApiError::invalid("Name the step: ?step=3.")),
        }
    });
    view! {
        <PageTitle text="History · Sleuth"/>
        <nav class="crumbs">
            <a href="/">"Investigations"</a> " / " <a href=move || format!("/i/{}", investigation())>"investigation"</a>
            " / " <span>"history"</span>
        </nav>
        // Always there: an error names what the runs have, and the next try is here.
        <form class="inline history-form" method="get">
            <input type="hidden" name="step" value=move || asked().0.map(|s| s.to_string()).unwrap_or_default()/>
            <label>"metric " <input name="metric" value=move || asked().1 placeholder="output_throughput"/></label>
            <label>"configuration " <input name="config" value=move || asked().2 placeholder="(a sweep's, e.g. NCCL_PROTO=LL)"/></label>
            <button type="submit">"Show"</button>
        </form>
        <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || Suspend::new(async move {
                super::or_error(found.await.map(|h| view! { <Whole h investigation=investigation()/> }))
            })}
        </Transition>
    }
}

#[component]
fn Whole(h: History, investigation: String) -> impl IntoView {
    let choosing = h.config.is_none() && h.configs.len() > 1 && h.runs.is_empty();
    let unit = h.unit.clone().unwrap_or_default();
    let better = match h.better {
        domain::history::Better::Higher => "higher is better",
        domain::history::Better::Lower => "lower is better",
    };
    let config_links = (h.config.is_none() && h.configs.len() > 1).then(|| {
        h.configs
            .iter()
            .map(|c| {
                let href = format!(
                    "?step={}&metric={}&config={}",
                    h.step_id,
                    super::search::encode(&h.metric),
                    super::search::encode(c)
                );
                view! { <a href=href><code>{c.clone()}</code></a> " " }
            })
            .collect_view()
    });
    let changes = h
        .changes
        .iter()
        .map(|c| {
            let differs = if c.between.differs.is_empty() {
                "nothing Sleuth records differs between them (host, facts, env, command)".to_string()
            } else {
                c.between.differs.join("; ")
            };
            view! {
                <li class=format!("change {}", c.direction) data-run=c.run_id>
                    <strong>{c.direction.as_str()}</strong> " from run " <a href=format!("/runs/{}", c.run_id)>{format!("#{}", c.run_id)}</a>
                    ": " {domain::metrics::figure(c.before_mean)} " → " {domain::metrics::figure(c.after_mean)} " " {unit.clone()}
                    {format!(" ({:+.1} %, p = {:.3})", c.delta_pct, c.p_value)}
                    <br/><span class="muted">"between " <a href=format!("/runs/{}", c.between.before_run)>{format!("#{}", c.between.before_run)}</a>
                    " and " <a href=format!("/runs/{}", c.between.after_run)>{format!("#{}", c.between.after_run)}</a> ": " {differs}</span>
                </li>
            }
        })
        .collect_view();
    let none = h.changes.is_empty();
    let rows = h
        .runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            view! {
                <tr><td class="num">{i + 1}</td><td><a href=format!("/runs/{}", r.run_id)>{format!("#{}", r.run_id)}</a></td>
                    <td class="num">{domain::metrics::figure(r.value)}</td><td class="muted">{r.at.clone().unwrap_or_default()}</td></tr>
            }
        })
        .collect_view();
    let step_href = format!("/i/{investigation}#step-{}", h.step_id);
    view! {
        <section class="panel history-page">
            <h1>"History of step " {h.step_id}</h1>
            <p class="muted">{h.metric.clone()} " · " {better} {h.config.clone().map(|c| format!(" · {c}"))}
                {(!choosing).then(|| format!(" · {} runs", h.runs.len()))} " · " <a href=step_href>"the step"</a></p>
            {config_links.map(|links| view! {
                <p class="history-configs">{if choosing { "A sweep's history is of one configuration at a time; choose one: " } else { "Its configurations: " }} {links}</p>
            })}
            {h.svg.clone().map(|svg| view! {
                <figure class="chart history"><div class="svg" inner_html=svg></div>
                    <figcaption class="muted">"Each run in order; grey: each stretch's mean; a red line: a regression begins, blue: an improvement."</figcaption>
                </figure>
            })}
            {if choosing {
                ().into_any()
            } else if none {
                view! { <p class="history-none">"No change: the runs vary within their noise (or by less than 2 %)."</p> }.into_any()
            } else {
                view! { <ul class="history-changes">{changes}</ul> }.into_any()
            }}
            <details class="history-runs" hidden=choosing><summary>"The values"</summary>
                <div class="table-scroll"><table class="groups-table">
                    <thead><tr><th class="num">"#"</th><th>"run"</th><th class="num">{h.metric.clone()}</th><th>"started"</th></tr></thead>
                    <tbody>{rows}</tbody>
                </table></div>
            </details>
        </section>
    }
}
