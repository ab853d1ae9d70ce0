//! The hypotheses of an investigation, at the top of its page: one row per
//! hypothesis with its experiment's numbers and verdict, and the form to add one.

use domain::error::ApiError;
use domain::hypotheses::{Direction, Hypothesis, HypothesisStatus, hypothesis_anchor};
use domain::model::Investigation;
use leptos::form::ActionForm;
use leptos::prelude::*;

/// A choice of the form's group selects: every run of a step (`12`), or the
/// runs of one configuration of a sweep step (`12|{"NCCL_PROTO":"LL"}`).
#[cfg(feature = "ssr")]
fn step_group(text: &str) -> Result<Option<domain::hypotheses::RunGroup>, ApiError> {
    use domain::hypotheses::{ConfigPick, RunGroup};
    if let Some((step, config)) = text.split_once('|') {
        let step = crate::backend::required_number("The step", step)?;
        let config = serde_json::from_str(config)
            .map_err(|_| ApiError::invalid("That configuration is not one of the sweep's."))?;
        return Ok(Some(RunGroup { configs: vec![ConfigPick { step, config }], ..RunGroup::default() }));
    }
    let step = crate::backend::form_number("The step", text)?;
    Ok(step.map(|step| RunGroup { steps: vec![step], ..RunGroup::default() }))
}

/// A group select when editing: `keep` leaves the group as it is (one the
/// selects cannot show), empty clears it, else as [`step_group`].
#[cfg(feature = "ssr")]
fn edited_group(text: &str) -> Result<Option<domain::hypotheses::RunGroup>, ApiError> {
    match text {
        "keep" => Ok(None),
        "" => Ok(Some(domain::hypotheses::RunGroup::default())),
        _ => step_group(text),
    }
}

/// An arm's narrowing as the edit form gives it: a window's ends (RFC 3339,
/// or `2026-12-06 15:00` read as UTC), a launch (its first run, `#12` or
/// `12`), runs left out (`#3, 7`), and whether watch runs join.
#[cfg(feature = "ssr")]
struct Narrowing {
    from: String,
    to: String,
    launch: String,
    exclude: String,
    watch: Option<String>,
}

#[cfg(feature = "ssr")]
impl Narrowing {
    /// `group` with this narrowing in place of its own.
    fn apply(self, mut group: domain::hypotheses::RunGroup) -> Result<domain::hypotheses::RunGroup, ApiError> {
        let (from, to) = (form_time(&self.from), form_time(&self.to));
        group.window = (from.is_some() || to.is_some()).then_some(domain::hypotheses::Window { from, to });
        group.launch =
            crate::backend::form_number("The launch's first run", self.launch.trim().trim_start_matches('#'))?;
        group.exclude = run_list(&self.exclude)?;
        group.include_watch_runs = self.watch.is_some();
        Ok(group)
    }
}

/// A time typed in the form: as given when it has a zone (the store checks
/// it is RFC 3339), else UTC (`2026-12-06 15:00` → `2026-12-06T15:00:00Z`).
#[cfg(feature = "ssr")]
fn form_time(text: &str) -> Option<String> {
    let text = text.trim().replacen(' ', "T", 1);
    if text.is_empty() {
        return None;
    }
    let zoned = text.ends_with('Z') || text.get(19..).is_some_and(|rest| rest.contains(['+', '-']));
    Some(match (zoned, text.len()) {
        (true, _) => text,
        (false, 16) => format!("{text}:00Z"),
        (false, _) => format!("{text}Z"),
    })
}

/// `#3, 7 #9` → `[3, 7, 9]`.
#[cfg(feature = "ssr")]
fn run_list(text: &str) -> Result<Vec<i64>, ApiError> {
    text.split([',', ' ', ';'])
        .map(|part| part.trim().trim_start_matches('#'))
        .filter(|part| !part.is_empty())
        .map(|part| {
            part.parse::<i64>().ok().filter(|id| *id > 0).ok_or_else(|| {
                crate::backend::with_status::<()>(Err(ApiError::invalid(format!(
                    "{part:?} is not a run number: list runs to leave out as #3, #7."
                ))))
                .unwrap_err()
            })
        })
        .collect()
}

/// A hypothesis is judged on one metric: the page asks for it (the API lets a
/// script leave it out and name it later, but not give a blank one).
#[cfg(feature = "ssr")]
fn chosen_metric(metric: &str) -> Result<String, ApiError> {
    crate::backend::with_status(domain::hypotheses::check_metric(metric).map_err(ApiError::from))
}

/// What the add and edit forms say: statement, why, metric, direction and
/// expected % (empty: none), with the two groups already read.
#[cfg(feature = "ssr")]
fn form_input(
    [statement, rationale, metric, direction, expected_pct]: [String; 5],
    baseline: Option<domain::hypotheses::RunGroup>,
    treatment: Option<domain::hypotheses::RunGroup>,
) -> Result<domain::hypotheses::HypothesisInput, ApiError> {
    let expected_pct =
        crate::backend::form_number("The expected size in %", expected_pct.trim().trim_end_matches('%'))?;
    let direction = match direction.trim() {
        "" => None,
        text => Some(Direction::parse(text).ok_or_else(|| {
            crate::backend::with_status::<()>(Err(ApiError::invalid(format!(
                "The expected direction is increase or decrease, not {text:?}."
            ))))
            .unwrap_err()
        })?),
    };
    Ok(domain::hypotheses::HypothesisInput {
        statement: Some(statement),
        rationale: Some(rationale),
        metric: Some(chosen_metric(&metric)?),
        direction: Some(direction),
        expected_pct: Some(expected_pct),
        baseline,
        treatment,
        ..Default::default()
    })
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
    let fields = [statement, rationale, metric, direction, expected_pct];
    let input = form_input(fields, step_group(&baseline_step)?, step_group(&treatment_step)?)?;
    crate::backend::call(
        move |notebook, actor| async move { notebook.add_hypothesis(&actor, &investigation, input).await },
    )
    .await
}

/// Saves an edited hypothesis, if nobody changed it since `version` was shown.
#[server]
#[allow(clippy::too_many_arguments)]
pub async fn edit_hypothesis(
    id: i64,
    version: i64,
    statement: String,
    rationale: String,
    metric: String,
    direction: String,
    expected_pct: String,
    baseline_step: String,
    treatment_step: String,
    baseline_from: String,
    baseline_to: String,
    baseline_launch: String,
    baseline_exclude: String,
    baseline_watch: Option<String>,
    treatment_from: String,
    treatment_to: String,
    treatment_launch: String,
    treatment_exclude: String,
    treatment_watch: Option<String>,
) -> Result<Hypothesis, ApiError> {
    let fields = [statement, rationale, metric, direction, expected_pct];
    let narrowing = [
        Narrowing {
            from: baseline_from,
            to: baseline_to,
            launch: baseline_launch,
            exclude: baseline_exclude,
            watch: baseline_watch,
        },
        Narrowing {
            from: treatment_from,
            to: treatment_to,
            launch: treatment_launch,
            exclude: treatment_exclude,
            watch: treatment_watch,
        },
    ];
    let chosen = [edited_group(&baseline_step)?, edited_group(&treatment_step)?];
    crate::backend::call(move |notebook, actor| async move {
        // `keep`: the arm's runs as they are (picked through the API); the
        // form's narrowing replaces theirs either way.
        let current = notebook.hypothesis(&actor, id).await?;
        let [mut baseline, mut treatment] = chosen;
        let [b, t] = narrowing;
        baseline = Some(b.apply(baseline.unwrap_or(current.baseline))?);
        treatment = Some(t.apply(treatment.unwrap_or(current.treatment))?);
        let input =
            domain::hypotheses::HypothesisInput { version: Some(version), ..form_input(fields, baseline, treatment)? };
        notebook.update_hypothesis(&actor, id, input).await
    })
    .await
}

#[server]
pub async fn set_hypothesis_status(id: i64, version: i64, status: String) -> Result<Hypothesis, ApiError> {
    let setting = crate::backend::with_status(domain::hypotheses::StatusSetting::parse(&status).ok_or_else(|| {
        ApiError::invalid(format!("The status is auto, open, supported, refuted or inconclusive, not {status:?}."))
    }))?;
    // The version the page showed: a change by someone else since is not overwritten.
    let input =
        domain::hypotheses::HypothesisInput { status: Some(setting), version: Some(version), ..Default::default() };
    crate::backend::call(move |notebook, actor| async move { notebook.update_hypothesis(&actor, id, input).await })
        .await
}

/// Links one more step as evidence (`step` from a form select).
#[server]
pub async fn link_evidence(id: i64, step: String) -> Result<Hypothesis, ApiError> {
    let step: i64 = crate::backend::required_number("The step", &step)?;
    crate::backend::call(move |notebook, actor| async move {
        let current = notebook.hypothesis(&actor, id).await?;
        let mut evidence = current.evidence;
        evidence.push(step);
        // From the version just read: two links at once cannot drop one of them.
        let input = domain::hypotheses::HypothesisInput {
            evidence: Some(evidence),
            version: Some(current.version),
            ..Default::default()
        };
        notebook.update_hypothesis(&actor, id, input).await
    })
    .await
}

#[server]
pub async fn unlink_evidence(id: i64, step: i64) -> Result<Hypothesis, ApiError> {
    crate::backend::call(move |notebook, actor| async move {
        let current = notebook.hypothesis(&actor, id).await?;
        let mut evidence = current.evidence;
        evidence.retain(|s| *s != step);
        let input = domain::hypotheses::HypothesisInput {
            evidence: Some(evidence),
            version: Some(current.version),
            ..Default::default()
        };
        notebook.update_hypothesis(&actor, id, input).await
    })
    .await
}

#[server]
pub async fn delete_hypothesis(id: i64) -> Result<(), ApiError> {
    crate::backend::call(move |notebook, actor| async move { notebook.delete_hypothesis(&actor, id).await }).await
}

use domain::metrics::figure as number;

#[component]
pub fn HypothesesSection(inv: std::sync::Arc<Investigation>) -> impl IntoView {
    // Every step (folded ones too) as "#3 note · Custom allreduce is disabled…", for evidence.
    let labels = inv.step_labels();
    let steps: Vec<(i64, String)> =
        labels.iter().map(|s| (s.id, format!("#{} {} · {}", s.position, s.kind, s.headline))).collect();
    // The metrics measured here, offered when a hypothesis names its metric.
    let metrics: std::collections::BTreeSet<&str> = inv
        .measurements
        .iter()
        .map(|m| m.measurement.metric.as_str())
        .chain(
            inv.steps.iter().flat_map(|s| s.runs.iter()).flat_map(|r| r.measurements.iter().map(|m| m.metric.as_str())),
        )
        .collect();
    let metrics: Vec<String> = metrics.into_iter().map(str::to_owned).collect();
    let charts = inv
        .hypotheses
        .iter()
        .filter_map(|h| {
            let svg = h.chart_svg.clone()?;
            let svg = if super::outsider() { svg } else { super::measurements::with_run_links(&svg, &h.chart_points) };
            let verdict = h
                .distribution
                .as_ref()
                .map(|d| d.verdict.clone())
                .or_else(|| h.comparison.as_ref().map(|c| c.verdict.clone()))
                .unwrap_or_default();
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
                (value, format!("#{} · {}", s.position, domain::sweeps::config_label(config)))
            });
            std::iter::once((s.id.to_string(), label)).chain(picks).collect::<Vec<_>>()
        })
        .collect();
    let rows = inv
        .hypotheses
        .iter()
        .cloned()
        .map(|h| view! { <HypothesisRow h steps=steps.clone() commands=commands.clone()/> })
        .collect_view();
    view! {
        <section class="hypotheses" aria-label="Hypotheses">
            <datalist id="hypothesis-metrics">
                {metrics.into_iter().map(|m| view! { <option value=m></option> }).collect_view()}
            </datalist>
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
fn HypothesisRow(h: Hypothesis, steps: Vec<(i64, String)>, commands: Vec<(String, String)>) -> impl IntoView {
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
    let profiles = h.profile_diff.clone().map(|diff| view! { <ProfileDiffView diff/> });
    let delete = ServerAction::<DeleteHypothesis>::new();
    let editor = view! { <EditHypothesis h=h.clone() commands/> };
    let unit = h.unit.clone().unwrap_or_default();
    let side = |g: Option<&domain::metrics::GroupSummary>| {
        g.map(|g| format!("{} {unit} (n={})", number(g.mean), g.n)).unwrap_or_else(|| "—".into())
    };
    let c = h.comparison.clone();
    // On a sampled percentile the bootstrap over requests is the verdict; the
    // per-run means are not shown beside it.
    let d = h.distribution.clone();
    let pooled = |value: f64, runs: usize, requests: usize| {
        format!("{} {unit} ({runs} run{}, {requests} req)", number(value), if runs == 1 { "" } else { "s" })
    };
    let (baseline_text, treatment_text, delta_text, outcome, verdict) = match (&d, &c) {
        (Some(d), _) => (
            pooled(d.baseline, d.runs.0, d.requests.0),
            pooled(d.treatment, d.runs.1, d.requests.1),
            format!("{:+.1} %", d.delta_pct),
            Some(d.outcome.as_str()),
            Some(d.verdict.clone()),
        ),
        (None, Some(c)) => (
            side(Some(&c.baseline)),
            side(Some(&c.treatment)),
            format!("{:+.1} %", c.delta_pct),
            Some(c.outcome.as_str()),
            Some(c.verdict.clone()),
        ),
        (None, None) => ("—".into(), "—".into(), "—".into(), None, None),
    };
    // The pooled percentile is not the mean of the runs' own percentiles the
    // measurements table shows: say both, so the two numbers do not disagree silently.
    let per_run = |g: &domain::metrics::GroupSummary| {
        format!("of all requests pooled; the runs' own values average {} {unit}", number(g.mean))
    };
    let (baseline_note, treatment_note) = match (&d, &c) {
        (Some(_), Some(c)) => (Some(per_run(&c.baseline)), Some(per_run(&c.treatment))),
        _ => (None, None),
    };
    let expected = match (h.direction, h.expected_pct) {
        (Some(d), Some(p)) => Some(format!("expects {} {p} %", if d == Direction::Increase { "+" } else { "−" })),
        (Some(d), None) => Some(format!("expects an {}", d.as_str())),
        _ => None,
    };
    let against = match h.as_expected {
        Some(true) => Some(("as-expected", "as expected")),
        Some(false) => Some(("against", "opposite of expected")),
        None => None,
    };
    let id = h.id;
    let status = h.status;
    // "auto" follows the verdict; a person's choice stays until they pick auto again.
    let auto_label = format!("auto: {}", if h.status_set { "from the verdict" } else { status.as_str() });
    let options = view! {
        <option value="auto" selected=!h.status_set>{auto_label}</option>
        {HypothesisStatus::ALL
            .iter()
            .map(|s| view! { <option value=s.as_str() selected=h.status_set && *s == status>{s.as_str()}</option> })
            .collect_view()}
    };
    let status_source = if h.status_set { "set by a person" } else { "follows the verdict" };
    let used = |values: &[(i64, f64)]| {
        let ids: Vec<i64> = values.iter().map(|(r, _)| *r).collect();
        if ids.is_empty() { "none".to_string() } else { domain::hypotheses::run_ranges(&ids) }
    };
    let arms_used =
        format!("runs used — baseline: {}; treatment: {}", used(&h.baseline_values), used(&h.treatment_values));
    let narrowed: Vec<String> = [("baseline", &h.baseline), ("treatment", &h.treatment)]
        .iter()
        .filter_map(|(side, g)| {
            let n = g.narrowed();
            (!n.is_empty()).then(|| format!("{side}: {}", n.join("; ")))
        })
        .collect();
    let verdict_change = h.verdict_change.clone();
    view! {
        <tr id=hypothesis_anchor(h.id) data-status=status.as_str() data-status-set=h.status_set.to_string()>
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
                    view! { <span class="tag status">{status.as_str()}</span> }.into_any()
                }}
                <span class="muted status-source">{status_source}</span>
            </td>
            <td class="statement">
                <a href=format!("#{}", hypothesis_anchor(h.id))>{h.statement.clone()}</a>
                {expected.map(|e| view! { <span class="muted expected">{e}</span> })}
                {h.metric_note.clone().map(|n| view! { <p class="notice metric-note">{n}</p> })}
                {(!h.patches.is_empty()).then(|| view! {
                    <ul class="hypothesis-patches" aria-label="Patches">
                        {h.patches.iter().map(|p| view! {
                            <li>{p.arms.clone()} ": " <a href=p.url.clone()>"patch " {p.step}</a> " "
                                <code class="path">{p.files.join(", ")}</code>
                                " " <span class="diff-add">"+" {p.added}</span> " " <span class="diff-del">"−" {p.removed}</span></li>
                        }).collect_view()}
                    </ul>
                })}
                {(!h.left_out.is_empty()).then(|| view! {
                    <ul class="notice left-out" aria-label="Runs not counted">
                        {h.left_out.iter().map(|l| view! {
                            <li>"run " <a href=format!("/runs/{}", l.run)>{l.run}</a> " not counted: " {l.why.clone()}</li>
                        }).collect_view()}
                    </ul>
                })}
                {h.hazards.clone().map(|text| view! { <p class="notice hazards">"⚠ Hazards: " {text}</p> })}
                {(h.trusted == Some(true)).then(|| view! { <p class="muted trusted">"Trusted: no guard warns over the runs it used."</p> })}
                <crate::guards::Guards guards=h.guards.clone()/>
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
            <td data-label="metric"><code>{h.metric.clone().unwrap_or_else(|| "—".into())}</code></td>
            <td class="num" data-label="baseline">{baseline_text}
                {baseline_note.map(|n| view! { <span class="pooled-note muted">{n}</span> })}</td>
            <td class="num" data-label="treatment">{treatment_text}
                {treatment_note.map(|n| view! { <span class="pooled-note muted">{n}</span> })}</td>
            <td class="num" data-label="delta">{delta_text}</td>
            <td class="verdict" data-outcome=outcome data-noise=d.as_ref().map(|_| "bootstrap")>
                {verdict.unwrap_or_else(|| {
                    if h.metric.is_none() { "no metric chosen".into() } else { "no runs with this metric yet".into() }
                })}
                {against.map(|(class, text)| view! { <span class=format!("tag {class}")>{text}</span> })}
                {verdict_change.map(|c| view! {
                    <p class="notice verdict-change" title=format!("since {}", c.now.at)>{c.text}</p>
                })}
                <p class="muted arms-used">{arms_used}</p>
                {(!narrowed.is_empty()).then(|| view! { <p class="muted arms-narrowed">{narrowed.join(" · ")}</p> })}
                {provenance}
                {profiles}
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
        // The editor spans the table: a form in the last cell would be a sliver.
        <crate::components::Can what=crate::components::Ability::Edit>
        <tr class="hypothesis-editor"><td colspan="8">{editor}</td></tr>
        </crate::components::Can>
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
                    <label>"Metric" <input name="metric" required list="hypothesis-metrics" placeholder="e.g. output_throughput"/></label>
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

/// The value a group select shows for `group`: a step's runs, one
/// configuration of a sweep, none; or `keep` for a group the selects cannot
/// show (runs picked one by one, through the API).
fn group_choice(group: &domain::hypotheses::RunGroup) -> String {
    // Its narrowing (window, launch, runs left out, watch runs) has fields of its own.
    match (group.runs.as_slice(), group.steps.as_slice(), group.configs.as_slice()) {
        ([], [], []) => String::new(),
        ([], [step], []) => step.to_string(),
        ([], [], [pick]) => format!("{}|{}", pick.step, serde_json::to_string(&pick.config).unwrap_or_default()),
        _ => "keep".into(),
    }
}

/// Edit a hypothesis in place: its statement, why, metric, expectation and
/// groups; a save by someone else since it was shown is refused, not overwritten.
#[component]
fn EditHypothesis(h: Hypothesis, commands: Vec<(String, String)>) -> impl IntoView {
    let edit = ServerAction::<EditHypothesis>::new();
    let select = move |name: &'static str, label: &'static str, chosen: String| {
        let kept =
            (chosen == "keep").then(|| view! { <option value="keep" selected>"(as chosen through the API)"</option> });
        let options = commands
            .iter()
            .map(|(id, text)| view! { <option value=id.clone() selected=*id == chosen>{text.clone()}</option> })
            .collect_view();
        view! {
            <label>{label}
                <select name=name>{kept}<option value="" selected=chosen.is_empty()>"—"</option>{options}</select>
            </label>
        }
    };
    let (baseline, treatment) = (
        select("baseline_step", "Baseline runs", group_choice(&h.baseline)),
        select("treatment_step", "Treatment runs", group_choice(&h.treatment)),
    );
    let (baseline_narrow, treatment_narrow) =
        (narrowing_fields("baseline", &h.baseline), narrowing_fields("treatment", &h.treatment));
    let direction = h.direction.map(Direction::as_str).unwrap_or_default();
    let directions = ["", "increase", "decrease"]
        .into_iter()
        .map(|d| view! { <option value=d selected=d == direction>{if d.is_empty() { "—" } else { d }}</option> })
        .collect_view();
    view! {
        <details class="edit-hypothesis">
            <summary class="quiet">"Edit…"</summary>
            <ActionForm action=edit attr:class="stacked">
                <input type="hidden" name="id" value=h.id/>
                <input type="hidden" name="version" value=h.version/>
                <label>"Hypothesis" <input name="statement" required maxlength="500" value=h.statement.clone()/></label>
                <label>"Why " <span class="muted">"(Markdown)"</span>
                    <textarea name="rationale" rows="3">{h.rationale.clone()}</textarea>
                </label>
                <div class="row">
                    <label>"Metric" <input name="metric" required list="hypothesis-metrics" value=h.metric.clone().unwrap_or_default()/></label>
                    <label class="narrow">"Expect" <select name="direction">{directions}</select></label>
                    <label class="narrow">"by %" <input name="expected_pct" inputmode="decimal" value=h.expected_pct.map(|p| p.to_string()).unwrap_or_default()/></label>
                </div>
                <div class="row">{baseline}{treatment}</div>
                <div class="row arm-narrowing">{baseline_narrow}{treatment_narrow}</div>
                <crate::components::ActionError action=edit/>
                <div class="form-actions"><button type="submit" class="primary">"Save hypothesis"</button></div>
            </ActionForm>
        </details>
    }
}

/// An arm's narrowing in the edit form, filled with what it has now: only
/// runs started in a window, of one launch, some left out, watch runs or not.
fn narrowing_fields(side: &'static str, group: &domain::hypotheses::RunGroup) -> impl IntoView + use<> {
    let window = group.window.clone().unwrap_or_default();
    let exclude = group.exclude.iter().map(|id| format!("#{id}")).collect::<Vec<_>>().join(", ");
    let launch = group.launch.map(|id| format!("#{id}")).unwrap_or_default();
    view! {
        <fieldset class="narrowing" data-side=side>
            <legend>{format!("Keep the {side} to")}</legend>
            <label>"runs started from " <span class="muted">"(UTC)"</span>
                <input name=format!("{side}_from") value=window.from placeholder="2026-12-06 15:00" autocomplete="off"/></label>
            <label>"until " <span class="muted">"(UTC)"</span>
                <input name=format!("{side}_to") value=window.to placeholder="2026-12-06 18:00" autocomplete="off"/></label>
            <label>"one launch, begun by run"
                <input name=format!("{side}_launch") value=launch placeholder="#12" inputmode="numeric" autocomplete="off"/></label>
            <label>"leaving out runs"
                <input name=format!("{side}_exclude") value=exclude placeholder="#3, #7" autocomplete="off"/></label>
            <label class="check"><input type="checkbox" name=format!("{side}_watch") value="on" checked=group.include_watch_runs/>
                " with the runs of watches"</label>
        </fieldset>
    }
}

/// Which kernels changed between the groups' profiles: the change in a
/// sentence, then categories and the kernels that changed most, baseline
/// against treatment.
#[component]
fn ProfileDiffView(diff: domain::profiles::ProfileDiff) -> impl IntoView {
    let ms = |v: Option<f64>| v.map(domain::metrics::figure).unwrap_or_else(|| "—".into());
    let row = |r: domain::profiles::DiffRow| {
        let change = r.change_ms();
        view! {
            <tr>
                <td><code>{r.name.clone()}</code></td>
                <td class="num">{ms(r.baseline_ms)}</td><td class="num">{ms(r.treatment_ms)}</td>
                <td class="num">{format!("{change:+.3}")}</td>
                <td class="num">{ms(r.baseline_calls)}</td><td class="num">{ms(r.treatment_calls)}</td>
            </tr>
        }
    };
    let head = |what: &'static str| {
        view! {
            <thead><tr><th>{what}</th><th>"baseline ms"</th><th>"treatment ms"</th><th>"change"</th>
                <th>"baseline calls"</th><th>"treatment calls"</th></tr></thead>
        }
    };
    let per = diff.per.clone();
    let runs = format!("runs {:?} against {:?}, ms {per}", diff.baseline_runs, diff.treatment_runs);
    view! {
        <details class="profile-diff">
            <summary>"Profiles: " {diff.summary.clone()}</summary>
            <p class="muted">{runs}</p>
            <table class="profile-table">
                {head("category")}
                <tbody>{diff.categories.into_iter().map(row).collect_view()}</tbody>
            </table>
            <table class="profile-table">
                {head("kernel (most changed first)")}
                <tbody>{diff.kernels.into_iter().map(row).collect_view()}</tbody>
            </table>
        </details>
    }
}

#[cfg(test)]
mod tests {
    use super::group_choice;
    use domain::hypotheses::{ConfigPick, RunGroup};

    #[test]
    fn the_select_shows_an_arms_runs_and_its_narrowing_has_fields_of_its_own() {
        let pick = ConfigPick { step: 3, config: [("X".to_string(), Some("1".to_string()))].into_iter().collect() };
        let plain = RunGroup { configs: vec![pick.clone()], ..RunGroup::default() };
        assert_eq!(group_choice(&plain), r#"3|{"X":"1"}"#);
        assert_eq!(group_choice(&RunGroup { steps: vec![4], ..RunGroup::default() }), "4");
        let narrowed = [
            RunGroup { launch: Some(9), ..plain.clone() },
            RunGroup { exclude: vec![2], ..plain.clone() },
            RunGroup { include_watch_runs: true, ..plain.clone() },
        ];
        for group in narrowed {
            assert_eq!(group_choice(&group), r#"3|{"X":"1"}"#, "{group:?}");
        }
        assert_eq!(group_choice(&RunGroup { runs: vec![1, 2], ..RunGroup::default() }), "keep", "picked runs");
    }

    #[cfg(feature = "ssr")]
    #[test]
    fn narrowing_as_typed() {
        use super::{Narrowing, form_time, run_list};
        assert_eq!(form_time("2026-12-06 15:00").as_deref(), Some("2026-12-06T15:00:00Z"));
        assert_eq!(form_time("2026-12-06T15:00:30").as_deref(), Some("2026-12-06T15:00:30Z"));
        assert_eq!(form_time(" 2026-12-06T15:00:00+01:00 ").as_deref(), Some("2026-12-06T15:00:00+01:00"));
        assert_eq!(form_time("2026-12-06T15:00:00.250Z").as_deref(), Some("2026-12-06T15:00:00.250Z"));
        assert_eq!(form_time("  "), None);
        assert_eq!(run_list("#3, 7 #9;").unwrap(), vec![3, 7, 9]);
        assert!(run_list("#3, seven").unwrap_err().message.contains("\"seven\" is not a run number"));
        let narrowed = Narrowing {
            from: "2026-12-06 15:00".into(),
            to: String::new(),
            launch: "#12".into(),
            exclude: "#4".into(),
            watch: Some("on".into()),
        }
        .apply(RunGroup { steps: vec![2], exclude: vec![1], ..RunGroup::default() })
        .unwrap();
        assert_eq!(narrowed.steps, vec![2]);
        assert_eq!(narrowed.window.and_then(|w| w.from).as_deref(), Some("2026-12-06T15:00:00Z"));
        assert_eq!((narrowed.launch, narrowed.exclude, narrowed.include_watch_runs), (Some(12), vec![4], true));
        let cleared = Narrowing {
            from: String::new(),
            to: String::new(),
            launch: String::new(),
            exclude: String::new(),
            watch: None,
        }
        .apply(RunGroup { exclude: vec![1], launch: Some(3), ..RunGroup::default() })
        .unwrap();
        assert_eq!(cleared, RunGroup::default(), "emptied fields clear the narrowing");
    }
}
