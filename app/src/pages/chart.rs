//! `/i/{id}/chart?metric=…[&baseline=…]`: one of the investigation's metrics
//! by configuration, as a page of its own (its chart, its table, the other
//! metrics a click away), where the investigation's "other metrics" links go.

use crate::components::PageTitle;
use domain::error::ApiError;
use domain::metrics::Overview;
use leptos::prelude::*;
use leptos_router::hooks::{use_params_map, use_query_map};

#[server]
pub async fn load_chart(investigation: String, metric: String, baseline: Option<String>) -> Result<Overview, ApiError> {
    crate::backend::call(move |notebook, actor| async move {
        let query = domain::metrics::OverviewQuery { metric: Some(metric.clone()), baseline };
        notebook
            .overview(&actor, &investigation, &query)
            .await?
            .ok_or_else(|| ApiError::not_found(format!("No two runs of this investigation measured {metric}.")))
    })
    .await
}

#[component]
pub fn ChartPage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let id = move || params.read().get("id").unwrap_or_default();
    let asked = move || {
        let q = query.read();
        (id(), q.get("metric").unwrap_or_default(), q.get("baseline").filter(|b| !b.is_empty()))
    };
    let chart = Resource::new(asked, |(id, metric, baseline)| async move { load_chart(id, metric, baseline).await });
    view! {
        <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || Suspend::new(async move {
                super::or_error(chart.await.map(|o| view! { <Whole o investigation=id()/> }))
            })}
        </Transition>
    }
}

#[component]
fn Whole(o: Overview, investigation: String) -> impl IntoView {
    let back = format!("/i/{investigation}");
    let href = |metric: &str| format!("/i/{investigation}/chart?metric={}", super::search::encode(metric));
    let others = o
        .metrics
        .iter()
        .filter(|m| **m != o.metric)
        .map(|m| view! { <a href=href(m)>{m.clone()}</a> " " })
        .collect_view();
    let svg = format!("/api/v1/investigations/{investigation}/chart.svg?metric={}", super::search::encode(&o.metric));
    view! {
        <PageTitle text=format!("{} by configuration · Sleuth", o.metric)/>
        <nav class="crumbs">
            <a href="/">"Investigations"</a> " / " <a href=format!("{back}#measurements")>"measurements"</a>
            " / " <span>{o.metric.clone()}</span>
        </nav>
        <section class="panel chart-page">
            <h1><code>{o.metric.clone()}</code> " by configuration"</h1>
            <super::measurements::OverviewFigure o=o.clone() svg_href=Some(svg)/>
            {(!o.metrics.is_empty()).then(|| view! { <p class="muted">"Other metrics: " {others}</p> })}
        </section>
    }
}
