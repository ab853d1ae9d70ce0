//! How an investigation turns output into numbers beyond the built-in
//! extractors: its own extractors (a regex per metric) and derived metrics (a
//! formula over the others).

use domain::error::ApiError;
use leptos::form::ActionForm;
use leptos::prelude::*;

#[server]
pub async fn add_extractor(investigation: String, name: String, pattern: String, unit: String) -> Result<(), ApiError> {
    let def = domain::metrics::ExtractorDef { name, pattern, unit };
    crate::backend::call(move |notebook, actor| async move {
        notebook.add_extractor(&actor, &investigation, def).await.map(|_| ())
    })
    .await
}

#[server]
pub async fn remove_extractor(investigation: String, name: String) -> Result<(), ApiError> {
    crate::backend::call(move |notebook, actor| async move {
        notebook.remove_extractor(&actor, &investigation, &name).await
    })
    .await
}

#[server]
pub async fn add_derived(
    investigation: String,
    name: String,
    unit: String,
    formula: String,
    constants: String,
) -> Result<(), ApiError> {
    // `weights_gb = 6.4, gpus = 8` (commas or new lines between).
    let mut parsed = std::collections::BTreeMap::new();
    for part in constants.split([',', '\n']).map(str::trim).filter(|p| !p.is_empty()) {
        let Some((k, v)) = part.split_once('=') else {
            return Err(ApiError::invalid(format!("A constant is NAME = number, not {part:?}.")));
        };
        parsed.insert(k.trim().to_string(), crate::backend::required_number(k.trim(), v.trim())?);
    }
    let def = domain::metrics::DerivedDef { name, unit, formula, constants: parsed };
    crate::backend::call(move |notebook, actor| async move {
        notebook.add_derived(&actor, &investigation, def).await.map(|_| ())
    })
    .await
}

#[server]
pub async fn remove_derived(investigation: String, name: String) -> Result<(), ApiError> {
    crate::backend::call(
        move |notebook, actor| async move { notebook.remove_derived(&actor, &investigation, &name).await },
    )
    .await
}

#[server]
pub async fn set_slo(investigation: String, text: String) -> Result<(), ApiError> {
    let input = domain::distributions::SloInput { text };
    crate::backend::call(move |notebook, actor| async move {
        notebook.set_slo(&actor, &investigation, input).await.map(|_| ())
    })
    .await
}

/// The investigation's SLO: goodput and each rate sweep's knee follow from it.
#[component]
pub(super) fn SloForm(investigation: String, slo: Option<domain::distributions::SloView>) -> impl IntoView {
    let set = ServerAction::<SetSlo>::new();
    let (text, described) = match &slo {
        Some(s) => (s.text.clone(), s.description.clone()),
        None => (String::new(), "none yet".to_string()),
    };
    view! {
        <details class="add-step" id="slo" open=slo.is_some()>
            <summary>"SLO: " <span class="slo-text">{described}</span></summary>
            <p class="muted">"Bounds on per-request latencies, joined by “and”. Runs with per-request samples get goodput (the share of requests meeting every bound, and that share of req/s); a sweep over rates gets its knee: the highest rate whose percentiles (p99 unless “at p90”…) meet it."</p>
            <crate::components::Can what=crate::components::Ability::Edit>
            <ActionForm action=set attr:class="stacked">
                <input type="hidden" name="investigation" value=investigation/>
                <label>"SLO " <input name="text" value=text placeholder="TTFT <= 200 ms and TPOT <= 50 ms"/></label>
                <crate::components::ActionError action=set/>
                <div class="form-actions"><button type="submit" class="primary">"Save SLO"</button></div>
            </ActionForm>
            </crate::components::Can>
        </details>
    }
}

/// The investigation's derived metrics, each formula shown as written.
#[component]
pub(super) fn DerivedMetrics(investigation: String, defs: Vec<domain::metrics::DerivedDef>) -> impl IntoView {
    let add = ServerAction::<AddDerived>::new();
    let remove = ServerAction::<RemoveDerived>::new();
    let count = defs.len();
    let rows = defs
        .into_iter()
        .map(|d| {
            let investigation = investigation.clone();
            let (name, described) = (d.name.clone(), d.describe());
            view! {
                <li data-derived=d.name.clone()>
                    <code>{described}</code>
                    <crate::components::Can what=crate::components::Ability::Edit>
                    <ActionForm action=remove attr:class="inline">
                        <input type="hidden" name="investigation" value=investigation/>
                        <input type="hidden" name="name" value=name/>
                        <button type="submit" class="quiet">"Remove"</button>
                    </ActionForm>
                    </crate::components::Can>
                </li>
            }
        })
        .collect_view();
    view! {
        <details class="add-step" id="derived">
            <summary>{format!("Derived metrics ({count})")}</summary>
            <p class="muted">"A formula over each run's measurements (+ − × ÷, parentheses, numbers, metric names, your constants), computed for every finished run — e.g. hbm_gbps = output_throughput * weights_gb / gpus."</p>
            <ul class="derived">{rows}</ul>
            <crate::components::Can what=crate::components::Ability::Edit>
            <ActionForm action=add attr:class="stacked">
                <input type="hidden" name="investigation" value=investigation.clone()/>
                <div class="row">
                    <label class="narrow">"Name" <input name="name" required placeholder="hbm_gbps"/></label>
                    <label class="wide">"Formula" <input name="formula" required placeholder="output_throughput * weights_gb / gpus"/></label>
                    <label class="narrow">"Unit" <input name="unit" placeholder="GB/s"/></label>
                </div>
                <label>"Constants " <input name="constants" placeholder="weights_gb = 27.83, gpus = 8"/></label>
                <crate::components::ActionError action=add/>
                <crate::components::ActionError action=remove/>
                <div class="form-actions"><button type="submit" class="primary">"Add derived metric"</button></div>
            </ActionForm>
            </crate::components::Can>
        </details>
    }
    .into_any()
}

/// The investigation's own extractors: for output no built-in one knows.
#[component]
pub(super) fn Extractors(investigation: String, defs: Vec<domain::metrics::ExtractorDef>) -> impl IntoView {
    let add = ServerAction::<AddExtractor>::new();
    let remove = ServerAction::<RemoveExtractor>::new();
    let count = defs.len();
    let rows = defs
        .into_iter()
        .map(|d| {
            let investigation = investigation.clone();
            let name = d.name.clone();
            view! {
                <li data-extractor=d.name.clone()>
                    <code>{d.name.clone()}</code> " = " <code>{d.pattern.clone()}</code> " " <span class="muted">{d.unit.clone()}</span>
                    <crate::components::Can what=crate::components::Ability::Edit>
                    <ActionForm action=remove attr:class="inline">
                        <input type="hidden" name="investigation" value=investigation/>
                        <input type="hidden" name="name" value=name/>
                        <button type="submit" class="quiet">"Remove"</button>
                    </ActionForm>
                    </crate::components::Can>
                </li>
            }
        })
        .collect_view();
    view! {
        <details class="add-step" id="extractors">
            <summary>{format!("Your extractors ({count})")}</summary>
            <p class="muted">"A regex with one capture group, run over every finished run's output (existing runs are read again)."</p>
            <ul class="extractors">{rows}</ul>
            <crate::components::Can what=crate::components::Ability::Edit>
            <ActionForm action=add attr:class="stacked">
                <input type="hidden" name="investigation" value=investigation.clone()/>
                <div class="row">
                    <label class="narrow">"Name" <input name="name" required placeholder="decode"/></label>
                    <label class="wide">"Regex" <input name="pattern" required placeholder=r"decode throughput: ([\d.]+) tok/s"/></label>
                    <label class="narrow">"Unit" <input name="unit" placeholder="tok/s"/></label>
                </div>
                <crate::components::ActionError action=add/>
                <crate::components::ActionError action=remove/>
                <div class="form-actions"><button type="submit" class="primary">"Add extractor"</button></div>
            </ActionForm>
            </crate::components::Can>
        </details>
    }
    .into_any()
}
