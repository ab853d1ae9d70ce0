//! `/i/{id}/frontier?step=S[&maximize=M&minimize=N]`: a sweep's configurations
//! as throughput against latency — which nothing beats on both, and the best
//! that meets the investigation's SLO — with the numbers under the chart.

use crate::components::PageTitle;
use domain::error::ApiError;
use domain::frontier::Frontier;
use leptos::prelude::*;
use leptos_router::hooks::{use_params_map, use_query_map};

#[server]
pub async fn load_frontier(step: i64, maximize: String, minimize: String) -> Result<Frontier, ApiError> {
    crate::backend::call(move |notebook, actor| async move {
        let query = domain::frontier::FrontierQuery {
            maximize: Some(maximize).filter(|m| !m.trim().is_empty()),
            minimize: Some(minimize).filter(|m| !m.trim().is_empty()),
            include_watch_runs: None,
        };
        notebook.frontier(&actor, step, &query).await
    })
    .await
}

#[component]
pub fn FrontierPage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let investigation = move || params.read().get("id").unwrap_or_default();
    let asked = move || {
        let q = query.read();
        let step = q.get("step").and_then(|s| s.parse::<i64>().ok());
        (step, q.get("maximize").unwrap_or_default(), q.get("minimize").unwrap_or_default())
    };
    let found = Resource::new(asked, |(step, maximize, minimize)| async move {
        match step {
            Some(step) => load_frontier(step, maximize, minimize).await,
            None => Err(ApiError::invalid("Name the sweep's step: ?step=3.")),
        }
    });
    view! {
        <PageTitle text="Frontier · Sleuth"/>
        <nav class="crumbs">
            <a href="/">"Investigations"</a> " / " <a href=move || format!("/i/{}", investigation())>"investigation"</a>
            " / " <span>"frontier"</span>
        </nav>
        // Always there: a metric the runs lack is an error that names those they have, and the next try is here.
        <form class="inline frontier-form" method="get">
            <input type="hidden" name="step" value=move || asked().0.map(|s| s.to_string()).unwrap_or_default()/>
            <label>"maximize " <input name="maximize" value=move || asked().1 placeholder="output_throughput"/></label>
            <label>"minimize " <input name="minimize" value=move || asked().2 placeholder="ttft_ms_p99"/></label>
            <button type="submit">"Draw"</button>
        </form>
        <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || Suspend::new(async move {
                super::or_error(found.await.map(|f| view! { <Whole f investigation=investigation()/> }))
            })}
        </Transition>
    }
}

#[component]
fn Whole(f: Frontier, investigation: String) -> impl IntoView {
    let interval = |ci: Option<(f64, f64)>| {
        ci.map(|(lo, hi)| format!(" ({} … {})", domain::metrics::figure(lo), domain::metrics::figure(hi)))
            .unwrap_or_default()
    };
    let rows = f
        .points
        .iter()
        .map(|p| {
            let meets = match p.meets_slo {
                Some(true) => "meets",
                Some(false) => "misses",
                None => "—",
            };
            let step_href = format!("/i/{investigation}#step-{}", f.step_id);
            view! {
                <tr class:on-frontier=p.on_frontier data-label=p.label.clone()>
                    <td><code>{p.label.clone()}</code></td>
                    <td class="num">{p.n}</td>
                    <td class="num">{domain::metrics::figure(p.maximize)} <span class="muted">{interval(p.maximize_ci)}</span></td>
                    <td class="num">{domain::metrics::figure(p.minimize)} <span class="muted">{interval(p.minimize_ci)}</span></td>
                    <td>{if p.on_frontier { "on it" } else { "beaten" }}</td>
                    <td>{meets}
                        {p.hazards.clone().map(|h| view! { <span class="guard warn frontier-hazard" title=h.clone()>" ⚠ guards"</span> <div class="muted guard-evidence">{h}</div> })}</td>
                    <td>{p.runs.iter().map(|r| view! { <a href=format!("/runs/{r}")>{format!("#{r}")}</a> " " }).collect_view()}
                        <a class="quiet" href=step_href.clone()>"step"</a></td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <section class="panel frontier-page">
            <h1>"Frontier of step " {f.step_id}</h1>
            <p class="muted">{f.maximize.clone()} " against " {f.minimize.clone()}</p>
            <p class="frontier-best">
                {match (&f.best_under_slo, &f.why) {
                    (Some(best), _) => view! { "Best under " {f.slo.clone().unwrap_or_default()} ": " <code>{best.clone()}</code> }.into_any(),
                    (None, Some(why)) => view! { <span class="notice">{why.clone()}</span> }.into_any(),
                    (None, None) => ().into_any(),
                }}
            </p>
            <figure class="chart frontier"><div class="svg" inner_html=f.svg.clone()></div>
                <figcaption class="muted">"Each configuration's means over its runs, with 95 % intervals; the blue line joins those no other beats on both; a ring: meets the SLO."</figcaption>
            </figure>
            <div class="table-scroll">
                <table class="groups-table frontier-table">
                    <thead><tr>
                        <th>"configuration"</th><th class="num">"n"</th><th class="num">{f.maximize.clone()}</th>
                        <th class="num">{f.minimize.clone()}</th><th>"frontier"</th><th>"SLO"</th><th>"runs"</th>
                    </tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
        </section>
    }
}
