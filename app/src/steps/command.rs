//! Command steps: a command run on a GPU host over SSH, with its runs.

use crate::components::ActionError;
use domain::error::ApiError;
use domain::model::{Step, short_time};
use domain::runs::{Artifact, OutputTail, Run, RunStatus, ServerPhase, ServerState, human_bytes, human_duration};
pub(crate) use domain::steps::command::*;
use leptos::form::ActionForm;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What the command form sends.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CommandForm {
    pub host: String,
    pub command: String,
    pub env: String,
    pub cwd: String,
    pub timeout_s: String,
    /// The sweep, as `NAME = a, b` lines.
    #[serde(default)]
    pub matrix: String,
    /// A patch step's number, applied for each run; blank: none.
    #[serde(default)]
    pub patch: String,
    /// The checkbox: present (`on`) when ticked.
    #[serde(default)]
    pub telemetry: Option<String>,
    /// A server beside each run: none while its command is blank.
    #[serde(default)]
    pub server_command: String,
    /// `http`, `log` or `tcp`.
    #[serde(default)]
    pub server_ready: String,
    #[serde(default)]
    pub server_ready_value: String,
    #[serde(default)]
    pub server_ready_timeout_s: String,
    #[serde(default)]
    pub server_stop_grace_s: String,
    #[serde(default)]
    pub server_reuse: String,
    /// The engine's `/metrics` URL; blank: not scraped.
    #[serde(default)]
    pub server_metrics_url: String,
    #[serde(default)]
    pub server_metrics_interval_ms: String,
    /// Artifact globs, one per line.
    #[serde(default)]
    pub artifacts: String,
    /// The step's artifact limits as JSON, kept through an edit (the API sets them).
    #[serde(default)]
    pub artifact_limits: String,
    /// Kept as it was (the API sets it), like `artifact_limits`.
    #[serde(default)]
    pub output_limit_bytes: String,
}

#[cfg(feature = "ssr")]
fn body_from_form(form: CommandForm) -> Result<CommandBody, ApiError> {
    let env = parse_env(&form.env)?;
    let matrix = domain::sweeps::parse_matrix(&form.matrix)?;
    let timeout_s = crate::backend::form_number("The timeout in seconds", &form.timeout_s)?;
    Ok(CommandBody {
        host: form.host,
        command: form.command,
        env,
        cwd: Some(form.cwd).filter(|c| !c.trim().is_empty()),
        timeout_s,
        matrix,
        telemetry: form.telemetry.is_some(),
        server: server_from_fields(&ServerFields {
            command: &form.server_command,
            ready: &form.server_ready,
            ready_value: &form.server_ready_value,
            ready_timeout_s: &form.server_ready_timeout_s,
            stop_grace_s: &form.server_stop_grace_s,
            reuse: &form.server_reuse,
            metrics_url: &form.server_metrics_url,
            metrics_interval_ms: &form.server_metrics_interval_ms,
        })?,
        artifacts: globs_from_text(&form.artifacts),
        artifact_limits: serde_json::from_str(&form.artifact_limits).ok(),
        output_limit_bytes: serde_json::from_str(&form.output_limit_bytes).ok(),
        patch: crate::backend::form_number("The patch step", &form.patch)?,
    })
}

#[server]
pub async fn add_command(investigation: String, #[server(flatten)] form: CommandForm) -> Result<Step, ApiError> {
    let body = body_from_form(form)?;
    crate::backend::call(move |notebook, actor| async move {
        notebook.add_step(&actor, &investigation, domain::steps::StepBody::Command(body)).await
    })
    .await
}

#[server]
pub async fn edit_command(
    step_id: i64,
    version: String,
    #[server(flatten)] form: CommandForm,
) -> Result<Step, ApiError> {
    let body = body_from_form(form)?;
    let version = crate::backend::form_number("The version", &version)?;
    let step = crate::backend::call(move |notebook, actor| async move {
        notebook.update_step(&actor, step_id, domain::steps::StepBody::Command(body), version).await
    })
    .await?;
    crate::backend::close_editor(step_id);
    Ok(step)
}

/// A server fn's arguments are its form's fields.
#[server]
#[allow(clippy::too_many_arguments)]
pub async fn start_runs(
    step_id: i64,
    repeat: String,
    warmup: String,
    version: Option<String>,
    /// A sweep's: `interleaved`, `shuffled` or `grouped`; its seed; `continue`
    /// or `stop` after a run that does not succeed.
    order: Option<String>,
    seed: Option<String>,
    on_failure: Option<String>,
    /// One configuration of a sweep to run again, as JSON (`{"NCCL_PROTO":"LL"}`).
    only: Option<String>,
) -> Result<Vec<Run>, ApiError> {
    let only = match only.as_deref().map(str::trim).filter(|o| !o.is_empty()) {
        None => None,
        Some(text) => Some(
            serde_json::from_str::<domain::sweeps::Config>(text)
                .map_err(|_| ApiError::invalid("Not a configuration: write it as JSON, {\"NCCL_PROTO\": \"LL\"}."))?,
        ),
    };
    let order = match order.as_deref().map(str::trim).filter(|o| !o.is_empty()) {
        None => None,
        Some(o) => Some(
            domain::sweeps::Order::parse(o)
                .ok_or_else(|| ApiError::invalid("The order is interleaved, shuffled or grouped."))?,
        ),
    };
    let request = domain::runs::RunRequest {
        repeat: crate::backend::form_number("Repeat", &repeat)?,
        warmup: crate::backend::form_number("Warm-up", &warmup)?,
        version: crate::backend::form_number("The version", version.as_deref().unwrap_or_default())?,
        order,
        seed: crate::backend::form_number("The seed", seed.as_deref().unwrap_or_default())?,
        keep_going: on_failure.as_deref().map(|f| f != "stop"),
        only,
    };
    crate::backend::call(move |notebook, actor| async move { notebook.start_runs(&actor, step_id, request).await })
        .await
}

/// How much "show more" adds above a run's output.
pub const EARLIER_BYTES: u64 = 64 * 1024;

#[server]
pub async fn earlier_output(run_id: i64, before: u64) -> Result<domain::runs::OutputTail, ApiError> {
    crate::backend::call(move |notebook, actor| async move {
        notebook.output_before(&actor, run_id, before, EARLIER_BYTES).await
    })
    .await
}

#[server]
pub async fn cancel_sweep(sweep_id: i64) -> Result<domain::sweeps::Sweep, ApiError> {
    crate::backend::call(move |notebook, actor| async move { notebook.cancel_sweep(&actor, sweep_id).await }).await
}

/// The newest sweep among a step's runs, and how far it got: (sweep, line).
fn sweep_progress(runs: &[Run]) -> Option<(i64, bool, String)> {
    let sweep = runs.iter().filter_map(|r| r.sweep_id).max()?;
    let of: Vec<&Run> = runs.iter().filter(|r| r.sweep_id == Some(sweep)).collect();
    let done = of.iter().filter(|r| r.status.is_finished()).count();
    let failed = of.iter().filter(|r| r.status.is_finished() && r.status != RunStatus::Succeeded).count();
    let running = of.iter().find(|r| r.status == RunStatus::Running);
    let line = match running {
        _ if done == of.len() && failed > 0 => format!("sweep done: {} runs, {failed} not succeeded", of.len()),
        _ if done == of.len() => format!("sweep done: {} runs", of.len()),
        Some(run) => format!("sweep {} of {} · running {}", done + 1, of.len(), run.config_label()),
        None => format!("sweep {} of {} · queued", done + 1, of.len()),
    };
    Some((sweep, done < of.len(), line))
}

#[server]
pub async fn cancel_run(run_id: i64) -> Result<Run, ApiError> {
    crate::backend::call(move |notebook, actor| async move { notebook.cancel_run(&actor, run_id).await }).await
}

/// Cancels runs in the order given (`run_ids`: comma-separated), each as
/// `cancel_run` would; a batch's queued runs go first.
#[server]
pub async fn cancel_runs(run_ids: String) -> Result<Vec<Run>, ApiError> {
    let ids = run_ids
        .split(',')
        .map(|id| id.trim().parse::<i64>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| ApiError::bad_request(format!("Not a list of run ids: {run_ids:?}")))?;
    crate::backend::call(move |notebook, actor| async move {
        let mut cancelled = Vec::with_capacity(ids.len());
        for id in ids {
            cancelled.push(notebook.cancel_run(&actor, id).await?);
        }
        Ok(cancelled)
    })
    .await
}

#[component]
pub fn CommandContent(step: Step, editing: bool) -> impl IntoView {
    let domain::steps::StepBody::Command(body) = step.body.clone() else {
        return ().into_any();
    };
    let html = step.html.clone().unwrap_or_default();
    let label = domain::runs::config_label(&body.env.clone().into_iter().collect::<Vec<_>>());
    // The run running now (a batch's queued runs wait behind it), else the newest.
    let shown = domain::runs::shown_run(&step.runs).cloned();
    let queued: Vec<i64> = shown
        .as_ref()
        .map(|s| domain::runs::queued_besides(&step.runs, s).iter().map(|r| r.id).collect())
        .unwrap_or_default();
    let sweep = sweep_progress(&step.runs);
    let configs = domain::sweeps::configurations(&body.matrix).len();
    // A watch runs and judges one configuration of a sweep.
    let watchable: Vec<String> = if configs > 1 {
        domain::sweeps::configurations(&body.matrix).iter().map(domain::sweeps::config_label).collect()
    } else {
        Vec::new()
    };
    let settings: Vec<String> = body
        .matrix
        .iter()
        .map(|(key, levels)| {
            let unset = if key == domain::sweeps::PATCH_KEY { "none" } else { "(unset)" };
            let values: Vec<&str> = levels.iter().map(|l| l.as_deref().unwrap_or(unset)).collect();
            format!("{} ∈ {{{}}}", domain::sweeps::placeholder(key).unwrap_or(key), values.join(", "))
        })
        .collect();
    let step_id = step.id;
    let version = step.version;
    let history = step.runs;
    let command = if editing {
        view! { <CommandEditor step_id version body=body.clone()/> }.into_any()
    } else {
        view! {
            <div class="command-meta">
                <span class="host" title="Host">{body.host.clone()}</span>
                <span class="env" title="Environment">{label}</span>
                {body.cwd.clone().map(|c| view! { <span class="cwd" title="Working directory">"cd " {c}</span> })}
                {body.timeout_s.map(|t| view! { <span class="timeout">"timeout " {t} " s"</span> })}
                {(!body.telemetry).then(|| view! { <span class="muted">"no GPU telemetry"</span> })}
                {body.patch.map(|p| view! { <span class="tag with-patch">"with patch " {p}</span> })}
            </div>
            {(configs > 0).then(|| view! {
                <p class="sweep-matrix">
                    "Sweep of " {configs} " configurations: "
                    {settings.iter().map(|s| view! { <code>{s.clone()}</code> " " }).collect_view()}
                    {(configs > 1 && !crate::pages::outsider()).then(|| view! {
                        <a class="quiet frontier-link" href=format!("/i/{}/frontier?step={step_id}", step.investigation_id)>"frontier"</a>
                    })}
                </p>
            })}
            <div class="command-wrap">
                <pre class="command-line" inner_html=html></pre>
                <crate::components::CopyButton text=body.command.clone() label="Copy"/>
            </div>
            {body.server.clone().map(|server| view! { <ServerSpecLine server/> })}
            {(!body.artifacts.is_empty()).then(|| view! {
                <p class="artifact-globs muted">"keeps from $SLEUTH_RUN_DIR: "
                    {body.artifacts.iter().map(|g| view! { <code>{g.clone()}</code> " " }).collect_view()}
                </p>
            })}
        }
        .into_any()
    };
    view! {
        {command}
        <RunControls step_id version shown=shown.clone() queued=queued.clone() sweeping={configs > 0} sweep=sweep
            asked=domain::runs::last_asked(&history) default_order=body.default_order()/>
        {shown.map(|run| view! { <RunOutput run queued=queued.len()/> })}
        <RunHistory runs=history investigation=step.investigation_id.clone()/>
        <crate::components::Can what=crate::components::Ability::Run>
            <super::watch::WatchForm step_id configs=watchable.clone()/>
        </crate::components::Can>
    }
    .into_any()
}

/// The step's server, in a line: its command and when it is ready.
#[component]
fn ServerSpecLine(server: ServerSpec) -> impl IntoView {
    view! {
        <div class="server-spec">
            <span class="tag">"server"</span>
            <code class="server-command">{server.command.clone()}</code>
            <span class="muted">
                {format!(" {}", server.how())}
            </span>
        </div>
    }
}

#[component]
fn CommandEditor(step_id: i64, version: i64, body: CommandBody) -> impl IntoView {
    let edit = ServerAction::<EditCommand>::new();
    view! {
        <ActionForm action=edit attr:class="command-form stacked" attr:data-ends-edit="">
            <input type="hidden" name="step_id" value=step_id/>
            <input type="hidden" name="version" value=version/>
            <CommandFields body=Some(body)/>
            <ActionError action=edit/>
            <div class="form-actions">
                <button type="submit" class="primary">"Save"</button>
                <a class="button" href=crate::pages::shown::editor_href(step_id, false) data-view="close">"Cancel"</a>
            </div>
        </ActionForm>
    }
}

/// The fields of a command step; the caller's form wraps them.
#[component]
fn CommandFields(body: Option<CommandBody>) -> impl IntoView {
    let body = body.unwrap_or(CommandBody {
        host: String::new(),
        command: String::new(),
        env: BTreeMap::new(),
        cwd: None,
        timeout_s: None,
        matrix: BTreeMap::new(),
        telemetry: true,
        patch: None,
        server: None,
        artifacts: Vec::new(),
        artifact_limits: None,
        output_limit_bytes: None,
    });
    let chosen = body.host.clone();
    view! {
        <label>"Host" <crate::components::HostSelect chosen=chosen/></label>
        <label>
            "Command"
            <textarea name="command" rows="3" required placeholder="vllm bench latency --model … --tensor-parallel-size 8">{crate::components::textarea_text(&body.command)}</textarea>
        </label>
        <label>
            <span>"Environment " <span class="muted">"(NAME=value, one per line)"</span></span>
            <textarea name="env" rows="2" placeholder="NCCL_PROTO=LL">{crate::components::textarea_text(&env_text(&body.env))}</textarea>
        </label>
        <label>
            <span>"Sweep " <span class="muted">"(optional: NAME = a, b, unset or {placeholder} = 1, 8 — one setting per line; every combination runs)"</span></span>
            <textarea name="matrix" rows="2" placeholder="NCCL_PROTO = unset, LL, SIMPLE\n{batch} = 1, 8, 32\n@patch = none, 12">{crate::components::textarea_text(&domain::sweeps::matrix_text(&body.matrix))}</textarea>
        </label>
        <div class="row">
            <label>"Working directory" <input name="cwd" value=body.cwd.clone().unwrap_or_default() placeholder="$SLEUTH_RUN_DIR (the run's own)"/></label>
            <label>"Timeout (s)" <input name="timeout_s" inputmode="numeric" value=body.timeout_s.map(|t| t.to_string()).unwrap_or_default() placeholder="none"/></label>
            <label>"With patch " <span class="muted">"(step #, or sweep @patch = none, 12)"</span>
                <input name="patch" inputmode="numeric" value=body.patch.map(|p| p.to_string()).unwrap_or_default() placeholder="none"/></label>
        </div>
        <label class="check">
            <input type="checkbox" name="telemetry" checked=body.telemetry/>
            " Sample the GPUs while it runs (nvidia-smi)"
        </label>
        <ServerFieldset server=body.server.clone()/>
        <label>
            <span>"Artifacts " <span class="muted">"(files the run leaves in $SLEUTH_RUN_DIR to keep: globs, one per line)"</span></span>
            <textarea name="artifacts" rows="1" placeholder="result.json">{crate::components::textarea_text(&body.artifacts.join("\n"))}</textarea>
        </label>
        <input type="hidden" name="artifact_limits" value=body.artifact_limits.and_then(|l| serde_json::to_string(&l).ok()).unwrap_or_default()/>
        <input type="hidden" name="output_limit_bytes" value=body.output_limit_bytes.map(|l| l.to_string()).unwrap_or_default()/>
    }
}

/// A server started before each run and stopped after (`vllm serve` beside
/// `vllm bench serve`); open when the step has one.
#[component]
fn ServerFieldset(server: Option<ServerSpec>) -> impl IntoView {
    let open = server.is_some();
    let (ready, ready_value) = server.as_ref().map(|s| ready_fields(&s.ready)).unwrap_or(("http", String::new()));
    let reuse = server.as_ref().map(|s| s.reuse).unwrap_or_default();
    let metrics = server.as_ref().and_then(|s| s.metrics.clone());
    let metrics_url = metrics.as_ref().map(|m| m.url.clone()).unwrap_or_default();
    let metrics_every = metrics.map(|m| m.interval_ms.to_string()).unwrap_or_default();
    let seconds = |s: Option<u64>| s.map(|s| s.to_string()).unwrap_or_default();
    view! {
        <details class="server-fields" open=open>
            <summary>"Server beside each run " <span class="muted">"(optional)"</span></summary>
            <label>
                <span>"Server command " <span class="muted">"(same env and {placeholders} as the command; its log is kept beside the run)"</span></span>
                <textarea name="server_command" rows="2" placeholder="e.g. vllm serve meta-llama/Llama-3.1-8B --port 8000">{crate::components::textarea_text(&server.as_ref().map(|s| s.command.clone()).unwrap_or_default())}</textarea>
            </label>
            <div class="row">
                <label>"Ready when"
                    <select name="server_ready">
                        <option value="http" selected={ready == "http"}>"GET answers 200 (URL, asked on the host)"</option>
                        <option value="log" selected={ready == "log"}>"a log line matches (regex)"</option>
                        <option value="tcp" selected={ready == "tcp"}>"a port accepts (number)"</option>
                    </select>
                </label>
                <label>"URL, pattern or port" <input name="server_ready_value" value=ready_value placeholder="e.g. http://127.0.0.1:8000/health"/></label>
            </div>
            <div class="row">
                <label>"Ready within (s)" <input name="server_ready_timeout_s" inputmode="numeric" value=seconds(server.as_ref().map(|s| s.ready_timeout_s)) placeholder=DEFAULT_READY_TIMEOUT_S.to_string()/></label>
                <label>"SIGTERM → SIGKILL (s)" <input name="server_stop_grace_s" inputmode="numeric" value=seconds(server.as_ref().map(|s| s.stop_grace_s)) placeholder=DEFAULT_STOP_GRACE_S.to_string()/></label>
                <label>"One server"
                    <select name="server_reuse">
                        <option value="run" selected={reuse == Reuse::Run}>"per run"</option>
                        <option value="config" selected={reuse == Reuse::Config}>"per configuration (kept across its repeats)"</option>
                    </select>
                </label>
            </div>
            <div class="row">
                <label>"Engine metrics " <span class="muted">"(Prometheus /metrics, asked on the host while each run goes)"</span>
                    <input name="server_metrics_url" value=metrics_url placeholder="e.g. http://127.0.0.1:8000/metrics"/></label>
                <label>"every (ms)" <input name="server_metrics_interval_ms" inputmode="numeric" value=metrics_every placeholder=DEFAULT_METRICS_INTERVAL_MS.to_string()/></label>
            </div>
        </details>
    }
}

/// "Add a command" at the end of the timeline.
#[component]
pub fn AddCommand(investigation: String) -> impl IntoView {
    let add = ServerAction::<AddCommand>::new();
    view! {
        <details class="add-step" id="add-command">
            <summary>"Add a command"</summary>
            <ActionForm action=add attr:class="command-form stacked">
                <input type="hidden" name="investigation" value=investigation/>
                <CommandFields body=None/>
                <ActionError action=add/>
                <div class="form-actions"><button type="submit" class="primary">"Add command"</button></div>
            </ActionForm>
        </details>
    }
}

#[component]
fn RunControls(
    step_id: i64,
    version: i64,
    /// The run the card shows (`runs::shown_run`) and the runs queued behind it.
    shown: Option<Run>,
    queued: Vec<i64>,
    /// The step has a matrix: runs go over every configuration.
    sweeping: bool,
    /// The newest sweep: (id, still going, progress line).
    sweep: Option<(i64, bool, String)>,
    /// What the row asked last, offered again.
    asked: Option<domain::runs::Asked>,
    /// The order when the runs do not tell (grouped with a kept server).
    default_order: domain::sweeps::Order,
) -> impl IntoView {
    use domain::sweeps::Order;
    let (repeat, warmup) = asked.map_or((1, 0), |a| (a.repeat, a.warmup));
    let order = asked.and_then(|a| a.order).unwrap_or(default_order);
    let kept = default_order == Order::Grouped;
    let start = ServerAction::<StartRuns>::new();
    let cancel = ServerAction::<CancelRun>::new();
    let cancel_all = ServerAction::<CancelSweep>::new();
    let cancel_batch = ServerAction::<CancelRuns>::new();
    let active = shown.filter(|r| !r.status.is_finished());
    let going = sweep.as_ref().filter(|(_, going, _)| *going).map(|(id, _, _)| *id);
    view! {
        {sweep.map(|(_, going, line)| view! {
            <p class="sweep-progress" data-going=going.to_string()>{line}</p>
        })}
        <crate::components::Can what=crate::components::Ability::Run>
        <div class="run-controls">
            <ActionForm action=start attr:class="inline run-form">
                <input type="hidden" name="step_id" value=step_id/>
                // What the runner sees is what runs: a changed command is refused.
                <input type="hidden" name="version" value=version/>
                <button type="submit" class="primary run-button">{if sweeping { "Run sweep" } else { "Run" }}</button>
                <label class="small">{if sweeping { "repeat each" } else { "repeat" }} <input name="repeat" class="num-input" inputmode="numeric" value=repeat/></label>
                <label class="small">"+ warm-up" <input name="warmup" class="num-input" inputmode="numeric" value=warmup/></label>
                {sweeping.then(|| view! {
                    <label class="small" title=kept.then_some("The server is kept across a configuration's runs: grouped starts it once per configuration, interleaved at every run.")>"order"
                        <select name="order">
                            {[Order::Interleaved, Order::Shuffled, Order::Grouped].map(|o| view! {
                                <option value=o.as_str() selected=o == order>{o.as_str()}</option>
                            }).collect_view()}
                        </select>
                    </label>
                    {(kept && order != Order::Grouped).then(|| view! {
                        <span class="small muted kept-note">"the kept server restarts at every change of configuration"</span>
                    })}
                    <label class="small">"seed" <input name="seed" class="num-input" inputmode="numeric" placeholder="random"/></label>
                    <label class="small">"after a failure"
                        <select name="on_failure">
                            <option value="continue" selected>"go on"</option>
                            <option value="stop">"stop"</option>
                        </select>
                    </label>
                })}
                <ActionError action=start/>
            </ActionForm>
            {active.clone().map(|run| {
                let alone = queued.is_empty();
                view! {
                <ActionForm action=cancel attr:class="inline">
                    <input type="hidden" name="run_id" value=run.id/>
                    <button type="submit" class="danger cancel-button" title=format!("Cancel run {}", run.id)>
                        {if alone { "Cancel this run".to_string() } else { format!("Cancel run {} only", run.id) }}
                    </button>
                    <ActionError action=cancel/>
                </ActionForm>
                }
            })}
            // The rest of a batch (a sweep has its own button).
            {(!queued.is_empty() && going.is_none()).then(|| {
                // Queued first, so the batch does not start one of them meanwhile.
                let ids: Vec<String> = queued.iter().rev().chain(active.as_ref().map(|r| &r.id)).map(i64::to_string).collect();
                view! {
                    <ActionForm action=cancel_batch attr:class="inline">
                        <input type="hidden" name="run_ids" value=ids.join(",")/>
                        <button type="submit" class="danger cancel-batch">
                            {format!("Cancel the rest of the batch ({})", domain::runs::counted(ids.len() as u64, "run", "runs"))}
                        </button>
                        <ActionError action=cancel_batch/>
                    </ActionForm>
                }
            })}
            {going.map(|sweep| view! {
                <ActionForm action=cancel_all attr:class="inline">
                    <input type="hidden" name="sweep_id" value=sweep/>
                    <button type="submit" class="danger cancel-sweep">"Cancel sweep"</button>
                    <ActionError action=cancel_all/>
                </ActionForm>
            })}
        </div>
        </crate::components::Can>
    }
}

#[component]
pub fn RunStatusBadge(status: RunStatus) -> impl IntoView {
    view! { <span class=format!("badge run-{}", status.as_str())>{status.as_str().replace('_', " ")}</span> }
}

/// The newest run: its status line and the end of its output. In the browser
/// (`browser::output`) the output grows while the run goes (`data-status`,
/// from byte `data-end`), "show more" adds earlier output above (before byte
/// `data-first`), and a source reference in it opens as a snippet step.
#[component]
pub fn RunOutput(
    run: Run,
    /// How many runs of the step wait behind it.
    queued: usize,
    /// On the run's own page: its server's log and measurements open.
    #[prop(optional)]
    whole: bool,
) -> impl IntoView {
    let (html, start, end) = run.tail.clone().map(|t| (t.html, t.start, t.end)).unwrap_or_default();
    let summary = run_summary(&run);
    let position = domain::runs::batch_position(&run);
    let run_id = run.id;
    let earlier_from = start.saturating_sub(EARLIER_BYTES);
    let files = RunFiles::current();
    // The team's pages follow a running run live; a share link's reader sees it as it was drawn.
    let follow = files.page(run_id).is_some().then_some("");
    view! {
        <div class="run" data-run=run.id data-status=run.status.as_str() data-first=start data-end=end data-follow=follow>
            <div class="run-head">
                <RunStatusBadge status=run.status/>
                <span class="run-id">"run " {run.id}</span>
                {(!position.is_empty()).then(|| view! { <span class="muted position">{position}</span> })}
                {(queued > 0).then(|| view! { <span class="muted queue">{format!("{queued} queued after it")}</span> })}
                {run.waiting.clone().map(|w| view! { <span class="notice run-waiting">{w}</span> })}
                <span class="muted">{summary}</span>
                {run.host_quiet_s.map(|s| view! {
                    <span class="host-quiet" title="The host has not answered a ping since; it is given up after about 40 s">
                        {format!("no data from {} for {s} s", run.host)}
                    </span>
                })}
                <span class="spacer"></span>
                <span class="muted bytes">{human_bytes(end)}</span>
                <button type="button" class="copy quiet" data-copy-output="" title="Copy the output shown here">"Copy"</button>
                {files.url(run.id, "/output?download=1").map(|href| view! { <a href=href class="quiet">"raw"</a> })}
            </div>
            {run.error.clone().map(|e| view! { <p class="run-error">{e}</p> })}
            {run.patch.clone().map(|patch| view! { <super::patch::RunPatchProof patch/> })}
            <crate::guards::Guards guards=run.guards.clone()/>
            {run.config.as_ref().map(|c| view! {
                <div class="run-config">"configuration " <code>{domain::sweeps::config_label(c)}</code>
                    " " <AgainForm step_id=run.step_id config=c.clone()/></div>
            })}
            {run.server.clone().map(|state| view! { <ServerBeside run_id state tail=run.server_tail.clone() before=run.server_before.clone() files=files.clone() open=whole/> })}
            <Measurements found=run.measurements.clone() open=whole/>
            <Artifacts artifacts=run.artifacts.clone() notes=run.artifact_notes.clone() reports=run.reports.clone() run_dir=run.run_dir.clone() files=files.clone()/>
            {run.telemetry_svg.clone().map(|svg| view! {
                <details class="telemetry" open>
                    <summary>"GPU telemetry " {files.url(run_id, "/telemetry").map(|href| view! { <a href=href class="quiet">"JSON"</a> })}</summary>
                    <div class="svg" inner_html=svg></div>
                </details>
            })}
            {(!run.telemetry_notes.is_empty()).then(|| view! {
                <ul class="telemetry-notes muted">{run.telemetry_notes.iter().map(|n| view! { <li>{n.clone()}</li> }).collect_view()}</ul>
            })}
            {(start > 0).then(|| match (files.url(run_id, &format!("/output?offset={earlier_from}&limit={}", start - earlier_from)), files.url(run_id, "/output")) {
                (Some(earlier), Some(all)) => view! {
                    <p class="muted earlier">
                        <span class="earlier-bytes">{human_bytes(start)}</span> " earlier — "
                        // Without JavaScript, the raw bytes just before what is shown.
                        <a class="load-earlier" href=earlier>"show more"</a>
                        " · "
                        <a href=all>"show all (raw)"</a>
                    </p>
                }.into_any(),
                _ => view! { <p class="muted earlier">{human_bytes(start)} " earlier, not shown through this link"</p> }.into_any(),
            })}
            <pre class="output">
                <code class="earlier-output"></code>
                <code inner_html=html></code>
                <code class="live"></code>
            </pre>
        </div>
    }
}

/// "run again": this configuration of the sweep once more, with the step's
/// command as it is now (a sweep of one configuration, one run).
#[component]
fn AgainForm(step_id: i64, config: domain::sweeps::Config) -> impl IntoView {
    let start = ServerAction::<StartRuns>::new();
    let only = serde_json::to_string(&config).unwrap_or_default();
    view! {
        <crate::components::Can what=crate::components::Ability::Run>
            <ActionForm action=start attr:class="inline again-form">
                <input type="hidden" name="step_id" value=step_id/>
                <input type="hidden" name="repeat" value="1"/>
                <input type="hidden" name="warmup" value="0"/>
                <input type="hidden" name="only" value=only/>
                <button type="submit" class="quiet run-again" title="Run this configuration once more, with the step's command as it is now">"run again"</button>
                <ActionError action=start/>
            </ActionForm>
        </crate::components::Can>
    }
}

/// Where a run's whole output, server log, telemetry and files are read: the
/// API for the team, a share link's own routes for its readers (no sign-in),
/// nowhere for a link that hides hosts (whole files are not vetted for host
/// names). Provided by the page; the team's API by default.
#[derive(Clone, Debug)]
pub struct RunFiles(pub Option<String>);

impl RunFiles {
    pub const TEAM: &'static str = "/api/v1/runs";

    pub fn current() -> Self {
        use_context::<RunFiles>().unwrap_or_else(|| RunFiles(Some(Self::TEAM.into())))
    }

    /// `{base}/{run}{rest}`, where files are offered.
    pub fn url(&self, run: i64, rest: &str) -> Option<String> {
        self.0.as_ref().map(|base| format!("{base}/{run}{rest}"))
    }

    /// The run's page, for the team; a share link's reader has the step only.
    pub fn page(&self, run: i64) -> Option<String> {
        (self.0.as_deref() == Some(Self::TEAM)).then(|| format!("/runs/{run}"))
    }

    /// A URL the server wrote under the team's API, under this base.
    pub fn rebase(&self, url: &str) -> Option<String> {
        let base = self.0.as_ref()?;
        Some(match url.strip_prefix(Self::TEAM) {
            Some(rest) => format!("{base}{rest}"),
            None => url.to_string(),
        })
    }
}

/// The server beside a run: where it is in its life, what happened to it, and
/// its log (live while the run goes, in `browser::live`).
#[component]
fn ServerBeside(
    run_id: i64,
    state: ServerState,
    tail: Option<OutputTail>,
    /// On a kept server, its log before this run (from the run that started it).
    before: Option<domain::runs::ServerLogBefore>,
    files: RunFiles,
    /// Its log open even when the server has stopped.
    open: bool,
) -> impl IntoView {
    let (html, end) = tail.map(|t| (t.html, t.end)).unwrap_or_default();
    let kept = before.is_some();
    let before = before.map(|b| {
        let from = match files.page(b.run) {
            Some(href) => view! { <a href=format!("{href}#server-{}", b.run)>{format!("run {}", b.run)}</a> }.into_any(),
            None => view! { <span>{format!("run {}", b.run)}</span> }.into_any(),
        };
        view! {
            <p class="muted server-window">"Before this run — the end of its log with " {from} ", which started the server:"</p>
            <pre class="output server-output server-before"><code inner_html=b.tail.html></code></pre>
            <p class="muted server-window">"During this run:"</p>
        }
    });
    let phase = match state.phase {
        ServerPhase::Waiting => "starting",
        ServerPhase::Ready => "ready",
        ServerPhase::Kept => "kept for the next run",
        ServerPhase::Stopped => "stopped",
        ServerPhase::Failed => "failed",
    };
    let waiting = (state.phase == ServerPhase::Waiting).then(|| {
        let waited = state.waited_ms.map(human_duration).unwrap_or_else(|| "just started".into());
        let last = state.last_line.clone().unwrap_or_default();
        view! {
            <p class="server-wait-line" role="status">
                "waiting for the server: " <span class="waited">{waited}</span>
                {(!last.is_empty()).then(|| view! { ", last line: " <code class="last-line">{last}</code> })}
            </p>
        }
    });
    let how = match (state.ready_after_ms, state.started_by_run) {
        (_, Some(by)) => format!("started for run {by}, kept for this one"),
        (Some(ms), None) => format!("ready after {}", human_duration(ms)),
        (None, None) => String::new(),
    };
    let live = !matches!(state.phase, ServerPhase::Stopped | ServerPhase::Failed);
    view! {
        <section class="server-beside" id=format!("server-{run_id}") data-phase=format!("{:?}", state.phase).to_lowercase()>
            <div class="server-head">
                <span class="tag">"server"</span>
                <span class=format!("badge server-{}", format!("{:?}", state.phase).to_lowercase())>{phase}</span>
                <span class="muted">{how}</span>
            </div>
            {waiting}
            {(!state.notes.is_empty()).then(|| view! {
                <ul class="server-notes muted">{state.notes.iter().map(|n| view! { <li>{n.clone()}</li> }).collect_view()}</ul>
            })}
            <details class="server-log" data-end=end data-live=live.then_some("") open=live || open>
                <summary>
                    "Server log " <span class="muted server-bytes">{human_bytes(end)}</span>
                    {(kept && end == 0 && !live).then(|| view! { <span class="muted">" (nothing during this run)"</span> })}
                    " "
                    {files.url(run_id, "/output?stream=server&download=1").map(|href| view! { <a href=href class="quiet">"raw"</a> })}
                </summary>
                {before}
                <pre class="output server-output" class:this-window=kept>
                    <code inner_html=html></code>
                    <code class="live"></code>
                </pre>
            </details>
        </section>
    }
}

/// The files kept from the run's directory, as downloads (never shown inline).
#[component]
fn Artifacts(
    artifacts: Vec<Artifact>,
    mut notes: Vec<String>,
    reports: Vec<domain::runs::ReportInfo>,
    run_dir: Option<String>,
    files: RunFiles,
) -> impl IntoView {
    // What the report readers said, after what fetching the files said.
    notes.extend(reports.iter().flat_map(|r| r.notes.iter().cloned()));
    let read_as = |name: &str| reports.iter().find(|r| r.name == name).and_then(|r| r.format);
    let output_read_as = read_as("output");
    if artifacts.is_empty() && notes.is_empty() && output_read_as.is_none() {
        return ().into_any();
    }
    view! {
        <div class="artifacts">
            <p class="muted">"Files kept from " <code>{run_dir.unwrap_or_else(|| "$SLEUTH_RUN_DIR".into())}</code></p>
            <ul class="artifact-list">
                {artifacts.into_iter().map(|a| view! {
                    <li>
                        {match files.rebase(&a.url) {
                            Some(href) => view! { <a href=href download=a.name.clone() class="artifact-link">{a.name.clone()}</a> }.into_any(),
                            None => view! { <span class="artifact-link">{a.name.clone()}</span> }.into_any(),
                        }}
                        " " <span class="muted">{human_bytes(a.size)}</span>
                        " " <code class="sha256 muted" title="sha256">{a.sha256.chars().take(12).collect::<String>()}</code>
                        {read_as(&a.name).map(|f| view! { " " <span class="tag report" title="read as this tool's report">{f.as_str()}</span> })}
                    </li>
                }).collect_view()}
            </ul>
            {files.0.is_none().then(|| view! {
                <p class="muted files-withheld">"This link hides host names, so it offers none of these files (they may name hosts)."</p>
            })}
            {output_read_as.map(|f| view! { <p class="muted">"The output was read as a report: " <span class="tag report">{f.as_str()}</span></p> })}
            {(!notes.is_empty()).then(|| view! {
                <ul class="artifact-notes muted">{notes.into_iter().map(|n| view! { <li>{n}</li> }).collect_view()}</ul>
            })}
        </div>
    }
    .into_any()
}

fn run_summary(run: &Run) -> String {
    let mut parts = Vec::new();
    if let Some(code) = run.exit_code {
        parts.push(format!("exit {code}"));
    }
    if let Some(sig) = &run.exit_signal {
        parts.push(format!("signal {sig}"));
    }
    if let Some(ms) = run.duration_ms {
        parts.push(human_duration(ms));
    }
    if let Some(started) = &run.started_at {
        parts.push(format!("started {}", short_time(started)));
    }
    // While it runs the count lags what is shown (the bytes beside it are live).
    if run.status.is_finished() {
        parts.push(domain::runs::counted(run.lines, "line", "lines"));
    }
    parts.join(" · ")
}

/// Rows of a step's run history on the page: a sweep of a thousand runs
/// would otherwise be a megabyte of table.
const HISTORY_ROWS: usize = 100;

#[component]
fn RunHistory(runs: Vec<Run>, investigation: String) -> impl IntoView {
    if runs.len() < 2 {
        return ().into_any();
    }
    let count = runs.len();
    let step = runs[0].step_id;
    let files = RunFiles::current();
    let rows = runs
        .into_iter()
        .rev()
        .take(HISTORY_ROWS)
        .map(|run| {
            let label = run.config_label();
            view! {
                <tr>
                    <td class="num">{match files.page(run.id) {
                        Some(href) => view! { <a href=href>{run.id}</a> }.into_any(),
                        None => view! { <span>{run.id}</span> }.into_any(),
                    }}</td>
                    <td><RunStatusBadge status=run.status/></td>
                    <td class="env">{label}</td>
                    <td>{domain::runs::batch_position(&run)}
                        {run.origin.label().map(|by| view! { " " <span class="tag origin" title="made by, not by a person">{by}</span> })}</td>
                    <td class="num">{run.exit_code.map(|c| c.to_string()).unwrap_or_default()}</td>
                    <td class="num">{run.duration_ms.map(human_duration).unwrap_or_default()}</td>
                    <td class="num">{human_bytes(run.output_bytes())}</td>
                    <td class="time"><crate::components::Time at=run.queued_at.clone()/></td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <details class="run-history">
            <summary>{count} " runs"</summary>
            {(!crate::pages::outsider()).then(|| view! {
                <p><a class="history-link" href=format!("/i/{investigation}/history?step={step}")>"a metric over these runs, and where it changed"</a></p>
            })}
            <div class="table-scroll">
            <table class="list">
                <thead><tr><th class="num">"Run"</th><th>"Status"</th><th>"Configuration"</th><th></th><th class="num">"Exit"</th><th class="num">"Time"</th><th class="num">"Output"</th><th>"Queued"</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
            </div>
            {(count > HISTORY_ROWS).then(|| view! {
                <p class="muted">{format!("The newest {HISTORY_ROWS} of {count}; every run (and its numbers) in ")}
                    <a href=format!("/api/v1/steps/{step}/runs")>"the API"</a> " and the export."</p>
            })}
        </details>
    }
    .into_any()
}

/// Metrics worth seeing first, in this order; the rest are one click away.
const HEADLINE: &[&str] = &[
    "output_throughput",
    "total_throughput",
    "request_throughput",
    "tg128",
    "pp512",
    "latency_s_avg",
    "ttft_ms_median",
    "tpot_ms_median",
    "gpu_util_mean",
    "mem_util_mean",
    "power_w_mean",
];

/// What the extractors found in a run's output.
#[component]
fn Measurements(
    found: Vec<domain::metrics::Measurement>,
    /// The whole table open, not only the headline chips.
    #[prop(optional)]
    open: bool,
) -> impl IntoView {
    if found.is_empty() {
        return ().into_any();
    }
    let label = |m: &domain::metrics::Measurement| match &m.key {
        Some(key) => format!("{} [{key}]", m.metric),
        None => m.metric.clone(),
    };
    let found: Vec<domain::metrics::Measurement> = domain::metrics::one_each(&found).into_iter().cloned().collect();
    let mut headline: Vec<&domain::metrics::Measurement> = found
        .iter()
        .filter(|m| m.key.is_none() || m.extractor.starts_with("custom:"))
        .filter(|m| {
            HEADLINE.contains(&m.metric.as_str()) || m.extractor.starts_with("custom:") || m.extractor == "derived"
        })
        .collect();
    headline.sort_by_key(|m| HEADLINE.iter().position(|h| *h == m.metric).unwrap_or(HEADLINE.len()));
    headline.truncate(4);
    let chips = headline
        .into_iter()
        .map(|m| {
            let spread = m.stddev.map(|s| format!(" ± {}", crate::components::format_value(s))).unwrap_or_default();
            view! {
                <li class="measure" data-metric=m.metric.clone()>
                    <span class="metric">{label(m)}</span>
                    <span class="value">{crate::components::format_value(m.value)} {spread}</span>
                    <span class="unit">{m.unit.clone()}</span>
                </li>
            }
        })
        .collect_view();
    let rows = found
        .iter()
        .map(|m| {
            view! {
                <tr>
                    <td><code>{label(m)}</code></td>
                    <td class="num">{crate::components::format_value(m.value)}{m.stddev.map(|s| format!(" ± {}", crate::components::format_value(s)))}</td>
                    <td>{m.unit.clone()}</td>
                    <td class="muted">{m.extractor.clone()}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="measurements">
            <ul class="measures">{chips}</ul>
            <details class="all-measurements" open=open>
                <summary>{format!("{} measurement{}", found.len(), if found.len() == 1 { "" } else { "s" })}</summary>
                <div class="table-scroll">
                <table class="measurement-table">
                    <thead><tr><th>"metric"</th><th>"value"</th><th>"unit"</th><th>"extractor"</th></tr></thead>
                    <tbody>{rows}</tbody>
                </table>
                </div>
            </details>
        </div>
    }
    .into_any()
}
