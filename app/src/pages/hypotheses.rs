//! The hypotheses of an investigation, at the top of its page: one row per
//! hypothesis with its experiment's numbers and verdict, and the form to add one.

use crate::error::ApiError;
use crate::hypotheses::{Hypothesis, STATUSES, hypothesis_anchor};
use crate::model::Investigation;
use leptos::form::ActionForm;
use leptos::prelude::*;

/// A choice of the form's group selects: every run of a step (`12`), or the
/// runs of one configuration of a sweep step (`12|{"NCCL_PROTO":"LL"}`).
#[cfg(feature = "ssr")]
fn step_group(text: &str) -> Result<Option<crate::hypotheses::RunGroup>, ApiError> {
    use crate::hypotheses::{ConfigPick, RunGroup};
    if let Some((step, config)) = text.split_once('|') {
        let step = crate::backend::required_number("The step", step)?;
        let config = serde_json::from_str(config)
            .map_err(|_| ApiError::invalid("That configuration is not one of the sweep's."))?;
        return Ok(Some(RunGroup { configs: vec![ConfigPick { step, config }], ..RunGroup::default() }));
    }
    let step = crate::backend::form_number("The step", text)?;
    Ok(step.map(|step| RunGroup { steps: vec![step], ..RunGroup::default() }))
}

#[server]
#[allow(clippy::too_many_arguments)]
pub async fn add_hypothesis(
    investigation: String,
    statement: String,
    rationale: String,
    metric: String,
    direction: String,
    expected_pct: String,
    baseline_step: String,
    treatment_step: String,
) -> Result<Hypothesis, ApiError> {
    let expected_pct =
        crate::backend::form_number("The expected size in %", expected_pct.trim().trim_end_matches('%'))?;
    let input = crate::hypotheses::HypothesisInput {
        statement: Some(statement),
        rationale: Some(rationale),
        metric: Some(metric),
        direction: Some(direction),
        expected_pct,
        status: None,
        baseline: step_group(&baseline_step)?,
        treatment: step_group(&treatment_step)?,
        evidence: None,
        version: None,
    };
    crate::backend::notebook()?
        .add_hypothesis(&crate::backend::actor()?, &investigation, input)
        .await
        .inspect_err(crate::backend::set_status)
}

#[server]
pub async fn set_hypothesis_status(id: i64, version: i64, status: String) -> Result<Hypothesis, ApiError> {
    // The version the page showed: a change by someone else since is not overwritten.
    let input =
        crate::hypotheses::HypothesisInput { status: Some(status), version: Some(version), ..Default::default() };
    crate::backend::notebook()?
        .update_hypothesis(&crate::backend::actor()?, id, input)
        .await
        .inspect_err(crate::backend::set_status)
}

/// Links one more step as evidence (`step` from a form select).
#[server]
pub async fn link_evidence(id: i64, step: String) -> Result<Hypothesis, ApiError> {
    let step: i64 = crate::backend::required_number("The step", &step)?;
    let notebook = crate::backend::notebook()?;
    let actor = crate::backend::actor()?;
    let current = notebook.hypothesis(&actor, id).await.inspect_err(crate::backend::set_status)?;
    let mut evidence = current.evidence;
    evidence.push(step);
    // From the version just read: two links at once cannot drop one of them.
    let input = crate::hypotheses::HypothesisInput {
        evidence: Some(evidence),
        version: Some(current.version),
        ..Default::default()
    };
    notebook.update_hypothesis(&actor, id, input).await.inspect_err(crate::backend::set_status)
}

#[server]
pub async fn unlink_evidence(id: i64, step: i64) -> Result<Hypothesis, ApiError> {
    let notebook = crate::backend::notebook()?;
    let actor = crate::backend::actor()?;
    let current = notebook.hypothesis(&actor, id).await.inspect_err(crate::backend::set_status)?;
    let mut evidence = current.evidence;
    evidence.retain(|s| *s != step);
    let input = crate::hypotheses::HypothesisInput {
        evidence: Some(evidence),
        version: Some(current.version),
        ..Default::default()
    };
    notebook.update_hypothesis(&actor, id, input).await.inspect_err(crate::backend::set_status)
}

#[server]
pub async fn delete_hypothesis(id: i64) -> Result<(), ApiError> {
    crate::backend::notebook()?
        .delete_hypothesis(&crate::backend::actor()?, id)
        .await
        .inspect_err(crate::backend::set_status)
}

fn number(value: f64) -> String {
    if value.abs() >= 100.0 { format!("{value:.1}") } else { format!("{value:.2}") }
}

#[component]
pub fn HypothesesSection(inv: Investigation) -> impl IntoView {
    // Every step (folded ones too) as "#3 note · Custom allreduce is disabled…", for evidence.
    let labels = inv.step_labels();
    let steps: Vec<(i64, String)> =
        labels.iter().map(|s| (s.id, format!("#{} {} · {}", s.position, s.kind, s.headline))).collect();
    let rows = inv.hypotheses.iter().cloned().map(|h| view! { <HypothesisRow h steps=steps.clone()/> }).collect_view();
    let charts = inv
        .hypotheses
        .iter()
        .filter_map(|h| {
            let svg = h.chart_svg.clone()?;
            let verdict = h.comparison.as_ref().map(|c| c.verdict.clone()).unwrap_or_default();
            Some(view! {
                <figure class="chart" id=format!("chart-{}", h.id)>
                    <div class="svg" inner_html=svg></div>
                    <figcaption><a href=format!("#{}", hypothesis_anchor(h.id))>{h.statement.clone()}</a> " — " {verdict}</figcaption>
                </figure>
            })
        })
        .collect_view();
    let empty = inv.hypotheses.is_empty();
    // Command steps, for choosing the runs of each side.
    let commands: Vec<(String, String)> = labels
        .iter()
        .filter_map(|s| {
            let config = s.config.as_ref()?;
            let mut label = format!("#{} {}", s.position, s.headline);
            if !config.is_empty() {
                label = format!("{label} [{config}]");
            }
            Some((s, label))
        })
        .flat_map(|(s, label)| {
            // A sweep: every run of it, or one configuration's.
            let picks = s.sweep.iter().map(move |config| {
                let value = format!("{}|{}", s.id, serde_json::to_string(config).unwrap_or_default());
                (value, format!("#{} · {}", s.position, crate::sweeps::config_label(config)))
            });
            std::iter::once((s.id.to_string(), label)).chain(picks).collect::<Vec<_>>()
        })
        .collect();
    view! {
        <section class="hypotheses" aria-label="Hypotheses">
            <h2>"Hypotheses"</h2>
            {(!empty).then(|| view! {
                <div class="table-scroll">
                    <table class="hypotheses-table">
                        <thead>
                            <tr>
                                <th>"status"</th><th>"hypothesis"</th><th>"metric"</th>
                                <th class="num">"baseline"</th><th class="num">"treatment"</th>
                                <th class="num">"delta"</th><th>"verdict"</th><th></th>
                            </tr>
                        </thead>
                        <tbody>{rows}</tbody>
                    </table>
                </div>
                <div class="charts">{charts}</div>
            })}
            <crate::components::Can what=crate::components::Ability::Edit><AddHypothesis investigation=inv.id.clone() commands/></crate::components::Can>
        </section>
    }
}

#[component]
fn HypothesisRow(h: Hypothesis, steps: Vec<(i64, String)>) -> impl IntoView {
    let set_status = ServerAction::<SetHypothesisStatus>::new();
    let link = ServerAction::<LinkEvidence>::new();
    let unlink = ServerAction::<UnlinkEvidence>::new();
    let label_of = |id: i64| steps.iter().find(|(s, _)| *s == id).map(|(_, l)| l.clone());
    let evidence = h
        .evidence
        .iter()
        .filter_map(|id| Some((*id, label_of(*id)?)))
        .map(|(step, label)| {
            view! {
                <li>
                    <a href=format!("#step-{step}")>{label}</a>
                    <crate::components::Can what=crate::components::Ability::Edit>
                    <ActionForm action=unlink attr:class="inline">
                        <input type="hidden" name="id" value=h.id/>
                        <input type="hidden" name="step" value=step/>
                        <button type="submit" class="quiet" title="Unlink this evidence">"×"</button>
                    </ActionForm>
                    </crate::components::Can>
                </li>
            }
        })
        .collect_view();
    let linkable = steps
        .iter()
        .filter(|(id, _)| !h.evidence.contains(id))
        .map(|(id, label)| view! { <option value=*id>{label.clone()}</option> })
        .collect_view();
    let provenance = h.provenance.clone().map(|p| {
        let warnings = p.warnings.into_iter().map(|w| view! { <p class="warning">{w}</p> }).collect_view();
        view! { <div class="provenance"><p class="muted">{p.summary}</p>{warnings}</div> }
    });
    let delete = ServerAction::<DeleteHypothesis>::new();
    let unit = h.unit.clone().unwrap_or_default();
    let side = |g: Option<&crate::metrics::GroupSummary>| {
        g.map(|g| format!("{} {unit} (n={})", number(g.mean), g.n)).unwrap_or_else(|| "—".into())
    };
    let c = h.comparison.clone();
    let expected = match (&h.direction, h.expected_pct) {
        (Some(d), Some(p)) => Some(format!("expects {} {p} %", if d == "increase" { "+" } else { "−" })),
        (Some(d), None) => Some(format!("expects an {d}")),
        _ => None,
    };
    let against = match h.as_expected {
        Some(true) => Some(("as-expected", "as expected")),
        Some(false) => Some(("against", "opposite of expected")),
        None => None,
    };
    let id = h.id;
    let status = h.status.clone();
    let options =
        STATUSES.iter().map(|s| view! { <option value=*s selected=*s == status>{*s}</option> }).collect_view();
    view! {
        <tr id=hypothesis_anchor(h.id) data-status=h.status.clone()>
            <td>
                {if crate::components::abilities().edit {
                    view! {
                        <ActionForm action=set_status attr:class="inline status-form">
                            <input type="hidden" name="id" value=id/>
                            <input type="hidden" name="version" value=h.version/>
                            <select name="status" aria-label="Status">
                                {options}
                            </select>
                            <button type="submit" class="quiet">"Set"</button>
                        </ActionForm>
                    }.into_any()
                } else {
                    view! { <span class="tag status">{status.clone()}</span> }.into_any()
                }}
            </td>
            <td class="statement">
                <a href=format!("#{}", hypothesis_anchor(h.id))>{h.statement.clone()}</a>
                {expected.map(|e| view! { <span class="muted expected">{e}</span> })}
                {(!h.rationale.is_empty()).then(|| view! {
                    <details class="rationale"><summary>"why"</summary><div class="markdown" inner_html=h.rationale_html.clone()></div></details>
                })}
                <ul class="evidence" aria-label="Evidence">{evidence}</ul>
                <crate::components::Can what=crate::components::Ability::Edit>
                <details class="link-evidence">
                    <summary class="quiet">"link evidence"</summary>
                    <ActionForm action=link attr:class="inline">
                        <input type="hidden" name="id" value=id/>
                        <select name="step" aria-label="Step">{linkable}</select>
                        <button type="submit">"Link"</button>
                    </ActionForm>
                    <crate::components::ActionError action=link/>
                </details>
                </crate::components::Can>
            </td>
            <td><code>{h.metric.clone().unwrap_or_else(|| "—".into())}</code></td>
            <td class="num">{side(c.as_ref().map(|c| &c.baseline))}</td>
            <td class="num">{side(c.as_ref().map(|c| &c.treatment))}</td>
            <td class="num">{c.as_ref().map(|c| format!("{:+.1} %", c.delta_pct)).unwrap_or_else(|| "—".into())}</td>
            <td class="verdict" data-outcome=c.as_ref().map(|c| c.outcome.clone())>
                {c.as_ref().map(|c| c.verdict.clone()).unwrap_or_else(|| {
                    if h.metric.is_none() { "no metric chosen".into() } else { "no runs with this metric yet".into() }
                })}
                {against.map(|(class, text)| view! { <span class=format!("tag {class}")>{text}</span> })}
                {provenance}
            </td>
            <td>
                <crate::components::Can what=crate::components::Ability::Edit>
                <crate::components::Confirm label="Delete…" prompt="Delete this hypothesis? Its runs stay.">
                    <ActionForm action=delete attr:class="inline">
                        <input type="hidden" name="id" value=id/>
                        <button type="submit" class="danger">"Delete hypothesis"</button>
                    </ActionForm>
                </crate::components::Confirm>
                </crate::components::Can>
            </td>
        </tr>
    }
    .into_any()
}

#[component]
fn AddHypothesis(investigation: String, commands: Vec<(String, String)>) -> impl IntoView {
    let add = ServerAction::<AddHypothesis>::new();
    let options = move |commands: &Vec<(String, String)>| {
        commands.iter().map(|(id, label)| view! { <option value=id.clone()>{label.clone()}</option> }).collect_view()
    };
    let (baseline_options, treatment_options) = (options(&commands), options(&commands));
    view! {
        <details class="add-step" id="add-hypothesis">
            <summary>"Add a hypothesis"</summary>
            <ActionForm action=add attr:class="stacked">
                <input type="hidden" name="investigation" value=investigation/>
                <label>"Hypothesis" <input name="statement" required maxlength="500" placeholder="NCCL allreduce (156 calls per token) is the bottleneck"/></label>
                <label>"Why " <span class="muted">"(Markdown)"</span>
                    <textarea name="rationale" rows="3" placeholder="Custom allreduce is disabled on more than two PCIe-only GPUs; 13 % of HBM bandwidth…"></textarea>
                </label>
                <div class="row">
                    <label>"Metric" <input name="metric" placeholder="output_throughput"/></label>
                    <label class="narrow">"Expect"
                        <select name="direction">
                            <option value="">"—"</option>
                            <option value="increase">"increase"</option>
                            <option value="decrease">"decrease"</option>
                        </select>
                    </label>
                    <label class="narrow">"by %" <input name="expected_pct" inputmode="decimal" placeholder="15"/></label>
                </div>
                <div class="row">
                    <label>"Baseline runs: the runs of"
                        <select name="baseline_step"><option value="">"—"</option>{baseline_options}</select>
                    </label>
                    <label>"Treatment runs: the runs of"
                        <select name="treatment_step"><option value="">"—"</option>{treatment_options}</select>
                    </label>
                </div>
                <crate::components::ActionError action=add/>
                <div class="form-actions"><button type="submit" class="primary">"Add hypothesis"</button></div>
            </ActionForm>
        </details>
    }
    .into_any()
}

#[server]
pub async fn add_extractor(investigation: String, name: String, pattern: String, unit: String) -> Result<(), ApiError> {
    let def = crate::metrics::ExtractorDef { name, pattern, unit };
    crate::backend::notebook()?
        .add_extractor(&crate::backend::actor()?, &investigation, def)
        .await
        .map(|_| ())
        .inspect_err(crate::backend::set_status)
}

#[server]
pub async fn remove_extractor(investigation: String, name: String) -> Result<(), ApiError> {
    crate::backend::notebook()?
        .remove_extractor(&crate::backend::actor()?, &investigation, &name)
        .await
        .inspect_err(crate::backend::set_status)
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
    let def = crate::metrics::DerivedDef { name, unit, formula, constants: parsed };
    crate::backend::notebook()?
        .add_derived(&crate::backend::actor()?, &investigation, def)
        .await
        .map(|_| ())
        .inspect_err(crate::backend::set_status)
}

#[server]
pub async fn remove_derived(investigation: String, name: String) -> Result<(), ApiError> {
    crate::backend::notebook()?
        .remove_derived(&crate::backend::actor()?, &investigation, &name)
        .await
        .inspect_err(crate::backend::set_status)
}

/// The investigation's derived metrics, each formula shown as written.
#[component]
fn DerivedMetrics(investigation: String, defs: Vec<crate::metrics::DerivedDef>) -> impl IntoView {
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
fn Extractors(investigation: String, defs: Vec<crate::metrics::ExtractorDef>) -> impl IntoView {
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
    let new = crate::metrics::NewMeasurement {
        metric,
        value: required_number("The value", &value)?,
        unit,
        stddev: form_number("The stddev", &stddev)?,
        note: Some(note),
        label: Some(label),
    };
    crate::backend::notebook()?
        .add_measurement(&crate::backend::actor()?, &investigation, new)
        .await
        .map(|_| ())
        .inspect_err(crate::backend::set_status)
}

#[server]
pub async fn delete_manual_measurement(id: i64) -> Result<(), ApiError> {
    crate::backend::notebook()?
        .delete_measurement(&crate::backend::actor()?, id)
        .await
        .inspect_err(crate::backend::set_status)
}

/// What was measured across the investigation: its chart by configuration, the
/// numbers entered by hand, and the investigation's own extractors.
#[component]
pub fn MeasurementsSection(inv: Investigation) -> impl IntoView {
    let overview = inv.overview.clone().map(|o| {
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
        let others = o
            .metrics
            .iter()
            .map(|m| {
                let href = format!("/api/v1/investigations/{}/chart.svg?metric={m}", inv.id);
                view! { <a href=href>{m.clone()}</a> " " }
            })
            .collect_view();
        let svg_href = format!("/api/v1/investigations/{}/chart.svg?metric={}", inv.id, o.metric);
        view! {
            <figure class="chart overview" id="overview-chart">
                <div class="svg" inner_html=o.svg.clone()></div>
                <figcaption>
                    <code>{o.metric.clone()}</code> " by configuration; dashed line: " {o.baseline_label.clone()}
                    " · " <a href=svg_href>"SVG"</a>
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
            {(!o.metrics.is_empty()).then(|| view! { <p class="muted">"Other metrics as charts: " {others}</p> })}
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
            <ManualMeasurements investigation=inv.id.clone() measurements=inv.measurements.clone()/>
            <Extractors investigation=inv.id.clone() defs=inv.extractors.clone()/>
            <DerivedMetrics investigation=inv.id.clone() defs=inv.derived.clone()/>
        </section>
    }
    .into_any()
}

#[component]
fn ManualMeasurements(investigation: String, measurements: Vec<crate::metrics::StoredMeasurement>) -> impl IntoView {
    let add = ServerAction::<AddManualMeasurement>::new();
    let delete = ServerAction::<DeleteManualMeasurement>::new();
    let manual: Vec<_> = measurements.into_iter().filter(|m| m.run_id.is_none()).collect();
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
