//! Calculator steps: the back-of-the-envelope numbers that decide where to look.
//! - bandwidth roofline: is decode limited by reading the weights from HBM?
//! - collective budget: how much of a token's time goes to allreduces?
//!
//! The arithmetic is here (shared), so the server renders results and the page
//! shows them without JavaScript.

use domain::error::ApiError;
use domain::metrics::StoredMeasurement;
use domain::model::Step;
pub(crate) use domain::steps::calculator::*;
use leptos::form::ActionForm;
use leptos::prelude::*;

#[server]
#[allow(clippy::too_many_arguments)]
pub async fn add_bandwidth(
    investigation: String,
    gpu: String,
    peak_tb_s: String,
    gpus: String,
    weights_gb: String,
    active_params_b: String,
    bytes_per_param: String,
    tok_s: String,
    tok_s_from: String,
    #[server(default)] mem_util_from: String,
) -> Result<Step, ApiError> {
    use crate::backend::{form_number as number, required_number as required};
    let body = Bandwidth {
        tok_s_from: linked(&tok_s_from)?,
        mem_util_from: linked(&mem_util_from)?,
        mem_util_pct: None,
        gpu,
        peak_tb_s: number("Peak TB/s", &peak_tb_s)?,
        gpus: required("GPUs", &gpus)?,
        weights_gb: number("Weights GB", &weights_gb)?,
        active_params_b: number("Active parameters", &active_params_b)?,
        bytes_per_param: number("Bytes per parameter", &bytes_per_param)?,
        tok_s: number("The measured tok/s", &tok_s)?.unwrap_or(0.0),
    };
    crate::backend::call(move |notebook, actor| async move {
        notebook
            .add_step(&actor, &investigation, domain::steps::StepBody::Calculator(CalculatorBody::Bandwidth(body)))
            .await
    })
    .await
}

#[server]
pub async fn add_collective(
    investigation: String,
    layers: String,
    per_layer: String,
    latency_us: String,
    latency_from: String,
    tok_s: String,
    tok_s_from: String,
) -> Result<Step, ApiError> {
    use crate::backend::{form_number as number, required_number as required};
    let body = Collective {
        layers: required("Layers", &layers)?,
        per_layer: required("Collectives per layer", &per_layer)?,
        latency_us: number("The latency of one collective", &latency_us)?.unwrap_or(0.0),
        latency_from: linked(&latency_from)?,
        tok_s: number("tok/s", &tok_s)?,
        tok_s_from: linked(&tok_s_from)?,
    };
    crate::backend::call(move |notebook, actor| async move {
        notebook
            .add_step(&actor, &investigation, domain::steps::StepBody::Calculator(CalculatorBody::Collective(body)))
            .await
    })
    .await
}

/// A form's measurement choice: empty (typed instead) or a measurement id.
#[cfg(feature = "ssr")]
fn linked(field: &str) -> Result<Option<MeasuredFrom>, ApiError> {
    let id: Option<i64> = crate::backend::form_number("The measurement", field)?;
    Ok(id.map(|measurement| MeasuredFrom {
        measurement,
        metric: String::new(),
        key: None,
        run: None,
        step: None,
        value: 0.0,
        unit: String::new(),
    }))
}

fn fmt(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

#[component]
pub fn CalculatorContent(step: Step) -> impl IntoView {
    let domain::steps::StepBody::Calculator(body) = step.body.clone() else {
        return ().into_any();
    };
    let rows: Vec<(String, String)>;
    // Inputs that may come from a measurement: the source is shown and linked.
    let mut linked_rows: Vec<(String, String, Option<MeasuredFrom>)> = Vec::new();
    let (title, results): (&str, Vec<(String, String)>) = match &body {
        CalculatorBody::Bandwidth(b) => {
            let gpu = match b.peak_tb_s() {
                Some(p) if b.gpu == "custom" => format!("custom, {p} TB/s"),
                Some(p) => format!("{} ({p} TB/s)", b.gpu),
                None => b.gpu.clone(),
            };
            let bytes = match (b.weights_gb, b.active_params_b, b.bytes_per_param) {
                (Some(gb), _, _) => format!("{gb} GB of weights"),
                (None, Some(p), Some(bpp)) => format!("{p} B active params × {bpp} bytes"),
                _ => "?".into(),
            };
            rows = vec![
                ("GPU".into(), format!("{} × {gpu}", b.gpus)),
                ("read per token".into(), format!("{bytes} ÷ {} GPUs", b.gpus)),
            ];
            linked_rows.push(("measured".into(), format!("{} tok/s", fmt(b.tok_s)), b.tok_s_from.clone()));
            if let Some(pct) = b.mem_util_pct {
                linked_rows.push((
                    "nvidia-smi memory busy".into(),
                    format!("{pct:.0} % of the time"),
                    b.mem_util_from.clone(),
                ));
            }
            let r = b.result();
            (
                "Bandwidth roofline",
                r.map(|r| {
                    vec![
                        ("time per token".into(), format!("{} ms", fmt(r.ms_per_token))),
                        ("read per token per GPU".into(), format!("{} GB", fmt(r.bytes_per_token_per_gpu / 1e9))),
                        ("achieved per GPU".into(), format!("{} of {} GB/s", fmt(r.achieved_gb_s), fmt(r.peak_gb_s))),
                        (
                            "share of peak".into(),
                            match r.measured_mem_util_pct {
                                Some(busy) => format!("{:.0} % (memory busy {busy:.0} % of the time)", r.pct_of_peak),
                                None => format!("{:.0} %", r.pct_of_peak),
                            },
                        ),
                        ("bandwidth-bound ceiling".into(), format!("{} tok/s", fmt(r.ceiling_tok_s))),
                    ]
                })
                .unwrap_or_default(),
            )
        }
        CalculatorBody::Collective(c) => {
            rows = vec![("layers × collectives".into(), format!("{} × {}", c.layers, c.per_layer))];
            linked_rows.push(("latency of one".into(), format!("{} µs", fmt(c.latency_us)), c.latency_from.clone()));
            let speed = c.tok_s.map(|t| format!("{} tok/s", fmt(t))).unwrap_or_else(|| "—".into());
            linked_rows.push(("measured".into(), speed, c.tok_s_from.clone()));
            let r = c.result();
            let mut results = vec![
                ("calls per token".into(), r.calls_per_token.to_string()),
                ("in collectives per token".into(), format!("{} ms", fmt(r.ms_per_token))),
            ];
            if let (Some(share), Some(t)) = (r.share_pct, c.tok_s) {
                results.push(("share of the token time".into(), format!("{share:.0} % of {} ms", fmt(1000.0 / t))));
            }
            // A profile's count beside the prediction: "measured 160 calls, 41 % of 18.1 ms".
            let measured = match &step.results {
                Some(crate::steps::calculator::CalculatorResults::Collective(r)) => r.measured.clone(),
                _ => None,
            };
            if let Some(m) = measured {
                let share = match (m.share_pct, m.step_ms) {
                    (Some(p), Some(ms)) => format!(", {p:.0} % of {} ms", fmt(ms)),
                    (Some(p), None) => format!(", {p:.0} %"),
                    _ => String::new(),
                };
                results.push((
                    "measured by a profile".into(),
                    format!("{} calls per step{share} (run {})", fmt(m.calls_per_step), m.run),
                ));
            }
            ("Collective budget", results)
        }
    };
    let table = |rows: Vec<(String, String)>| {
        rows.into_iter().map(|(k, v)| view! { <tr><th>{k}</th><td>{v}</td></tr> }).collect_view()
    };
    let linked = linked_rows
        .into_iter()
        .map(|(k, v, from)| {
            let source = from.map(|f| {
                let text = f.describe();
                match f.href() {
                    Some(href) => view! { <a class="measured-from" href=href>{text}</a> }.into_any(),
                    None => view! { <span class="measured-from">{text}</span> }.into_any(),
                }
            });
            view! { <tr><th>{k}</th><td>{v} {source}</td></tr> }
        })
        .collect_view();
    view! {
        <div class="calculator">
            <h3>{title}</h3>
            <div class="calc-grid">
                <table class="calc inputs"><tbody>{table(rows)}{linked}</tbody></table>
                <table class="calc results"><tbody>{table(results)}</tbody></table>
            </div>
        </div>
    }
    .into_any()
}

/// Measurements offered per input.
const CHOICES: usize = 200;

/// A select of the investigation's measurements that fit an input (by unit);
/// the empty choice means "use the typed number".
fn measurement_choice(name: &'static str, measurements: &[StoredMeasurement], units: &[&str]) -> AnyView {
    let fitting: Vec<&StoredMeasurement> =
        measurements.iter().filter(|m| units.iter().any(|u| m.measurement.unit.eq_ignore_ascii_case(u))).collect();
    let left_out = fitting.len().saturating_sub(CHOICES);
    // The newest: a thousand runs' numbers would be tens of thousands of options.
    let options = fitting[left_out..]
        .iter()
        .rev()
        .map(|m| {
            let x = &m.measurement;
            let key = x.key.as_ref().map(|k| format!(" at {k}")).unwrap_or_default();
            let origin = match m.run_id {
                Some(run) => format!("run #{run}"),
                None => m.label.clone().unwrap_or_else(|| "by hand".into()),
            };
            let text = format!("{}{key} = {} {} · {origin}", x.metric, fmt(x.value), x.unit);
            view! { <option value=m.id.to_string()>{text}</option> }
        })
        .collect_view();
    view! {
        <select name=name>
            <option value="">"— the typed number —"</option>
            {options}
        </select>
        {(left_out > 0).then(|| view! { <span class="muted">{format!("the newest {CHOICES}; {left_out} older ones by id through the API")}</span> })}
    }
    .into_any()
}

const SPEED_UNITS: [&str; 3] = ["tok/s", "tokens/s", "t/s"];
const LATENCY_UNITS: [&str; 4] = ["us", "µs", "ms", "s"];

#[component]
pub fn AddCalculator(investigation: String, inv: std::sync::Arc<domain::model::Investigation>) -> impl IntoView {
    let measurements = &inv.measurements;
    let roofline_speed = measurement_choice("tok_s_from", measurements, &SPEED_UNITS);
    let mem_util: Vec<StoredMeasurement> =
        measurements.iter().filter(|m| m.measurement.metric == "mem_util_mean").cloned().collect();
    let roofline_mem = measurement_choice("mem_util_from", &mem_util, &["%"]);
    let budget_latency = measurement_choice("latency_from", measurements, &LATENCY_UNITS);
    let budget_speed = measurement_choice("tok_s_from", measurements, &SPEED_UNITS);
    let bandwidth = ServerAction::<AddBandwidth>::new();
    let collective = ServerAction::<AddCollective>::new();
    let inv2 = investigation.clone();
    view! {
        <details class="add-step" id="add-calculator">
            <summary>"Add a calculator"</summary>
            <h4>"Bandwidth roofline"</h4>
            <ActionForm action=bandwidth attr:class="stacked" attr:id="add-bandwidth">
                <input type="hidden" name="investigation" value=investigation/>
                <div class="row">
                    <label>"GPU"
                        <select name="gpu">
                            {GPU_PRESETS.iter().map(|(n, tb)| view! { <option value=*n>{format!("{n} ({tb} TB/s)")}</option> }).collect_view()}
                            <option value="custom">"custom"</option>
                        </select>
                    </label>
                    <label class="narrow">"peak TB/s (custom)" <input name="peak_tb_s" inputmode="decimal"/></label>
                    <label class="narrow">"GPUs (TP)" <input name="gpus" inputmode="numeric" value="1" required/></label>
                </div>
                <div class="row">
                    <label class="narrow">"weights GB" <input name="weights_gb" inputmode="decimal" placeholder="140"/></label>
                    <label class="narrow">"or active params (B)" <input name="active_params_b" inputmode="decimal" placeholder="37"/></label>
                    <label class="narrow">"× bytes/param" <input name="bytes_per_param" inputmode="decimal" placeholder="1"/></label>
                    <label class="narrow">"measured tok/s" <input name="tok_s" inputmode="decimal" placeholder="57.5"/></label>
                    <label>"or from a measurement" {roofline_speed}</label>
                </div>
                <div class="row">
                    <label>"memory utilisation measured by nvidia-smi (optional)" {roofline_mem}</label>
                </div>
                <crate::components::ActionError action=bandwidth/>
                <div class="form-actions"><button type="submit" class="primary">"Add roofline"</button></div>
            </ActionForm>
            <h4>"Collective budget"</h4>
            <ActionForm action=collective attr:class="stacked" attr:id="add-collective">
                <input type="hidden" name="investigation" value=inv2/>
                <div class="row">
                    <label class="narrow">"layers" <input name="layers" inputmode="numeric" required placeholder="78"/></label>
                    <label class="narrow">"collectives per layer" <input name="per_layer" inputmode="numeric" value="2" required/></label>
                    <label class="narrow">"µs per collective" <input name="latency_us" inputmode="decimal" placeholder="40"/></label>
                    <label>"or from a measurement (e.g. an all-reduce sweep at the message size)"
                        {budget_latency}
                    </label>
                </div>
                <div class="row">
                    <label class="narrow">"measured tok/s" <input name="tok_s" inputmode="decimal" placeholder="57.5"/></label>
                    <label>"or from a measurement" {budget_speed}</label>
                </div>
                <crate::components::ActionError action=collective/>
                <div class="form-actions"><button type="submit" class="primary">"Add budget"</button></div>
            </ActionForm>
        </details>
    }
    .into_any()
}
