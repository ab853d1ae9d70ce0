//! What was measured across an investigation: its chart by configuration, the
//! numbers entered by hand, and where the numbers come from — the
//! investigation's own extractors and derived metrics.

use domain::error::ApiError;
use domain::metrics::figure as number;
use domain::model::Investigation;
use leptos::form::ActionForm;
use leptos::prelude::*;

#[server]
pub async fn add_manual_measurement(
    investigation: String,
    metric: String,
    value: String,
    unit: String,
    stddev: String,
    label: String,
    note: String,
) -> Result<(), ApiError> {
    use crate::backend::{form_number, required_number};
    let new = domain::metrics::NewMeasurement {
        metric,
        value: required_number("The value", &value)?,
        unit,
        stddev: form_number("The stddev", &stddev)?,
        note: Some(note),
        label: Some(label),
    };
    crate::backend::call(move |notebook, actor| async move {
        notebook.add_measurement(&actor, &investigation, new).await.map(|_| ())
    })
    .await
}

#[server]
pub async fn delete_manual_measurement(id: i64) -> Result<(), ApiError> {
    crate::backend::call(move |notebook, actor| async move { notebook.delete_measurement(&actor, id).await }).await
}

/// What was measured across the investigation: its chart by configuration, the
/// numbers entered by hand, and the investigation's own extractors.
#[component]
pub fn MeasurementsSection(inv: std::sync::Arc<Investigation>) -> impl IntoView {
    let overview = inv.overview.clone().map(|o| {
        let others = o
            .metrics
            .iter()
            .map(|m| {
                let href = format!("/i/{}/chart?metric={}", inv.id, super::search::encode(m));
                view! { <a href=href>{m.clone()}</a> " " }
            })
            .collect_view();
        let svg_href = (!super::outsider()).then(|| {
            format!("/api/v1/investigations/{}/chart.svg?metric={}", inv.id, super::search::encode(&o.metric))
        });
        view! {
            <OverviewFigure o=o.clone() svg_href/>
            {(!o.metrics.is_empty() && !super::outsider()).then(|| view! { <p class="muted">"Other metrics as charts: " {others}</p> })}
        }
    });
    view! {
        <section class="overview" aria-label="Measurements">
            <h2>"Measurements"</h2>
            {match overview {
                Some(o) => o.into_any(),
                None => view! {
                    <p class="muted">"Run a benchmark twice (or enter numbers by hand) and its chart appears here."</p>
                }.into_any(),
            }}
            {inv.rates.clone().map(|r| view! { <RateSweeps chart=r/> })}
            <super::definitions::SloForm investigation=inv.id.clone() slo=inv.slo.clone()/>
            <ManualMeasurements inv=inv.clone()/>
            <super::definitions::Extractors investigation=inv.id.clone() defs=inv.extractors.clone()/>
            <super::definitions::DerivedMetrics investigation=inv.id.clone() defs=inv.derived.clone()/>
        </section>
    }
    .into_any()
}

/// A metric by configuration: its chart and its table of groups against the baseline.
#[component]
pub fn OverviewFigure(o: domain::metrics::Overview, svg_href: Option<String>) -> impl IntoView {
    let groups = o
        .groups
        .iter()
        .map(|g| {
            let s = &g.summary;
            view! {
                <tr>
                    <td><code>{g.label.clone()}</code></td>
                    <td class="num">{s.n}</td>
                    <td class="num">{number(s.mean)}</td>
                    <td class="num">{s.stddev.map(number).unwrap_or_else(|| "—".into())}</td>
                    <td class="num">{format!("{:+.1} %", (s.mean - o.baseline) / o.baseline * 100.0)}</td>
                </tr>
            }
        })
        .collect_view();
    // The team's page: each run's dot opens its run (a share link's reader has no run pages).
    let svg = if super::outsider() { o.svg.clone() } else { with_run_links(&o.svg, &o.points) };
    view! {
        <figure class="chart overview" id="overview-chart">
            <div class="svg" inner_html=svg></div>
            <figcaption>
                <code>{o.metric.clone()}</code> " by configuration; dashed line: " {o.baseline_label.clone()}
                {svg_href.map(|href| view! { " · " <a href=href>"SVG"</a> })}
            </figcaption>
        </figure>
        <div class="table-scroll">
            <table class="groups-table">
                <thead><tr>
                    <th>"configuration"</th><th class="num">"n"</th><th class="num">{format!("mean {}", o.unit)}</th>
                    <th class="num">"stddev"</th><th class="num">"vs baseline"</th>
                </tr></thead>
                <tbody>{groups}</tbody>
            </table>
        </div>
    }
}

/// The chart with a link over each run's dot, to its page, titled with its value.
pub(crate) fn with_run_links(svg: &str, points: &[domain::metrics::ChartPoint]) -> String {
    let Some(end) = svg.rfind("</svg>") else { return svg.to_string() };
    let mut linked = String::with_capacity(svg.len() + points.len() * 120);
    linked.push_str(&svg[..end]);
    for p in points {
        linked.push_str(&format!(
            "<a href=\"/runs/{run}\" class=\"run-dot\"><circle cx=\"{x}\" cy=\"{y}\" r=\"6\" fill=\"transparent\"><title>run {run}: {value}</title></circle></a>",
            run = p.run,
            x = p.x,
            y = p.y,
            value = domain::metrics::figure(p.value),
        ));
    }
    linked.push_str(&svg[end..]);
    linked
}

/// Latency against load per configuration, with each one's knee.
#[component]
fn RateSweeps(chart: domain::distributions::RateChart) -> impl IntoView {
    let rows = chart
        .lines
        .iter()
        .map(|l| {
            let knee = match l.knee {
                Some(k) => format!("{} req/s", domain::metrics::figure(k)),
                None => "—".into(),
            };
            view! { <tr><td>{l.label.clone()}</td><td class="num">{l.points}</td><td class="num knee">{knee}</td></tr> }
        })
        .collect_view();
    view! {
        <figure class="chart rates" id="rates">
            <div class="svg" inner_html=chart.svg.clone()></div>
            <figcaption>{format!("{} p50 (solid) and p99 (dashed) against the achieved request rate; a ring marks the knee.", chart.metric)}</figcaption>
        </figure>
        <div class="table-scroll">
            <table class="groups-table">
                <thead><tr><th>"configuration"</th><th class="num">"rates"</th><th class="num">"knee (SLO met up to)"</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
}

#[component]
fn ManualMeasurements(inv: std::sync::Arc<Investigation>) -> impl IntoView {
    let investigation = inv.id.clone();
    let add = ServerAction::<AddManualMeasurement>::new();
    let delete = ServerAction::<DeleteManualMeasurement>::new();
    let manual: Vec<_> = inv.measurements.iter().filter(|m| m.run_id.is_none()).cloned().collect();
    let count = manual.len();
    let rows = manual
        .into_iter()
        .map(|m| {
            let x = m.measurement;
            let spread = x.stddev.map(|s| format!(" ± {}", number(s))).unwrap_or_default();
            view! {
                <li data-measurement=m.id>
                    <code>{x.metric}</code> " = " {format!("{}{spread} {}", number(x.value), x.unit)}
                    {m.label.map(|l| view! { " " <span class="tag">{l}</span> })}
                    {m.note.map(|n| view! { " " <span class="muted">{n}</span> })}
                    <crate::components::Can what=crate::components::Ability::Edit>
                    <ActionForm action=delete attr:class="inline">
                        <input type="hidden" name="id" value=m.id/>
                        <button type="submit" class="quiet">"Delete"</button>
                    </ActionForm>
                    </crate::components::Can>
                </li>
            }
        })
        .collect_view();
    view! {
        <details class="add-step" id="manual-measurements">
            <summary>{format!("Numbers entered by hand ({count})")}</summary>
            <p class="muted">"Measured elsewhere (another tool, a colleague's run): say where in the note. A label groups it in the chart."</p>
            <ul class="manual">{rows}</ul>
            <crate::components::Can what=crate::components::Ability::Edit>
            <ActionForm action=add attr:class="stacked">
                <input type="hidden" name="investigation" value=investigation/>
                <div class="row">
                    <label>"Metric" <input name="metric" required placeholder="output_throughput"/></label>
                    <label class="narrow">"Value" <input name="value" required inputmode="decimal" placeholder="57.5"/></label>
                    <label class="narrow">"± stddev" <input name="stddev" inputmode="decimal"/></label>
                    <label class="narrow">"Unit" <input name="unit" placeholder="tok/s"/></label>
                    <label>"Configuration label" <input name="label" placeholder="NCCL_PROTO=LL"/></label>
                </div>
                <label>"Note" <input name="note" placeholder="nsys profile on the host, 8×PCIe, 2026-11-29"/></label>
                <crate::components::ActionError action=add/>
                <crate::components::ActionError action=delete/>
                <div class="form-actions"><button type="submit" class="primary">"Add number"</button></div>
            </ActionForm>
            </crate::components::Can>
        </details>
    }
    .into_any()
}
