//! Patch steps: a diff against files on a host, drawn line by line (as text),
//! its files with their bases, and a dry run on the host.

use domain::error::ApiError;
use domain::model::Step;
use domain::steps::patch::{FileState, PatchCheck};
use leptos::form::ActionForm;
use leptos::prelude::*;

#[server]
pub async fn add_patch(
    investigation: String,
    host: String,
    diff: String,
    #[server(default)] caches: String,
    #[server(default)] expect: String,
) -> Result<Step, ApiError> {
    let caches = caches.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_string).collect();
    // `-text`: must not appear; `+text` or plain text: must.
    let expect = expect
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| match l.strip_prefix('-') {
            Some(rest) => domain::steps::patch::Expectation { text: rest.trim().to_string(), present: false },
            None => {
                domain::steps::patch::Expectation { text: l.trim_start_matches('+').trim().to_string(), present: true }
            }
        })
        .collect();
    let body = domain::steps::patch::PatchBody { host, diff, files: Vec::new(), caches, expect };
    crate::backend::call(move |notebook, actor| async move {
        notebook.add_step(&actor, &investigation, domain::steps::StepBody::Patch(body)).await
    })
    .await
}

#[server]
pub async fn check_patch(step_id: i64) -> Result<PatchCheck, ApiError> {
    crate::backend::call(move |notebook, actor| async move { notebook.check_patch(&actor, step_id).await }).await
}

/// The class a diff line is drawn with.
fn line_class(line: &str) -> &'static str {
    if line.starts_with("+++") || line.starts_with("---") {
        "diff-file"
    } else if line.starts_with("@@") {
        "diff-hunk"
    } else if line.starts_with('+') {
        "diff-add"
    } else if line.starts_with('-') {
        "diff-del"
    } else {
        "diff-ctx"
    }
}

fn short(hash: &str) -> String {
    hash.chars().take(12).collect()
}

#[component]
pub fn PatchContent(step: Step) -> impl IntoView {
    let domain::steps::StepBody::Patch(body) = step.body.clone() else {
        return ().into_any();
    };
    let (added, removed) = body.counts();
    let files = body
        .files
        .iter()
        .map(|f| {
            let base = f.base.clone().unwrap_or_default();
            view! {
                <li>
                    <code class="path">{f.path.clone()}</code>
                    " " <span class="diff-add">"+" {f.added}</span> " " <span class="diff-del">"−" {f.removed}</span>
                    " · base " <code title=base.clone()>{short(&base)}</code>
                </li>
            }
        })
        .collect_view();
    let lines = body.diff.lines().map(|l| view! { <div class=line_class(l)>{l.to_string()}</div> }).collect_view();
    view! {
        <div class="snippet-meta">
            <span class="host">{body.host.clone()}</span>
            <span class="muted">{body.files.len()} " file(s) · +" {added} " −" {removed}</span>
        </div>
        <ul class="patch-files">{files}</ul>
        {(!body.caches.is_empty()).then(|| view! {
            <p class="muted patch-caches">"clears " {body.caches.iter().map(|c| view! { <code>{c.clone()}</code> " " }).collect_view()}</p>
        })}
        {(!body.expect.is_empty()).then(|| view! {
            <p class="muted patch-expect">"expects "
                {body.expect.iter().map(|e| view! { <code>{if e.present { "" } else { "no " }} {format!("{:?}", e.text)}</code> " " }).collect_view()}
                "in each patched run's log"</p>
        })}
        <pre class="diff">{lines}</pre>
        <crate::components::Can what=crate::components::Ability::Run>
            <CheckOnHost step_id=step.id/>
        </crate::components::Can>
    }
    .into_any()
}

/// Whether the patch applies on its host now: asked once the page is drawn
/// (a dry run reads the files' hashes, one command), and again on "Check
/// again". Its answer is in nothing the server renders, so this is an island.
#[island]
fn CheckOnHost(step_id: i64) -> impl IntoView {
    let check = crate::components::island_action::<CheckPatch>();
    // In the browser only: the page is not held up by a host.
    Effect::new(move |first: Option<()>| {
        if first.is_none() {
            check.dispatch(CheckPatch { step_id });
        }
    });
    let pending = check.pending();
    let result = move || {
        check.value().get().and_then(Result::ok).map(|checked| {
            let rows = checked
                .files
                .into_iter()
                .map(|f| {
                    let class = if f.state == FileState::Applies { "ok" } else { "warning" };
                    view! { <li class=class><code class="path">{f.path}</code> ": " {f.text}</li> }
                })
                .collect_view();
            view! {
                <div class="patch-check">
                    <p class=if checked.applies { "ok" } else { "warning" }>
                        {if checked.applies { "Applies on the host now" } else { "Does not apply on the host now" }}
                    </p>
                    <ul>{rows}</ul>
                </div>
            }
        })
    };
    view! {
        <div class="snippet-controls">
            <ActionForm action=check attr:class="inline">
                <input type="hidden" name="step_id" value=step_id/>
                <button type="submit" class="quiet check-patch">
                    {move || if check.value().with(Option::is_some) { "Check again" } else { "Check on host" }}
                </button>
                {move || pending.get().then(|| view! { <span class="muted">" checking on the host…"</span> })}
                <crate::components::ActionError action=check/>
            </ActionForm>
        </div>
        {result}
    }
}

/// "Add a patch" at the end of the timeline: a pasted diff, its bases read
/// from the host.
#[component]
pub fn AddPatch(investigation: String) -> impl IntoView {
    let add = ServerAction::<AddPatch>::new();
    view! {
        <details class="add-step" id="add-patch">
            <summary>"Add a patch"</summary>
            <ActionForm action=add attr:class="stacked">
                <input type="hidden" name="investigation" value=investigation/>
                <div class="row">
                    <label>"Host" <crate::components::HostSelect/></label>
                </div>
                <label>
                    <span>"Diff " <span class="muted">"(as diff -u or git diff prints it: absolute paths, or relative ones found where python3 on the host imports from)"</span></span>
                    <textarea name="diff" rows="10" required spellcheck="false"
                        placeholder="--- /usr/lib/python3/dist-packages/vllm/…/custom_all_reduce.py\n+++ /usr/lib/python3/dist-packages/vllm/…/custom_all_reduce.py\n@@ -140,3 +140,3 @@"></textarea>
                </label>
                <div class="row">
                    <label class="wide">
                        <span>"Caches to clear " <span class="muted">"(one path a line; before and after each patched run)"</span></span>
                        <textarea name="caches" rows="2" spellcheck="false" placeholder="~/.cache/vllm/torch_compile_cache"></textarea>
                    </label>
                    <label class="wide">
                        <span>"Expect in the log " <span class="muted">"(one a line; -text: must not appear)"</span></span>
                        <textarea name="expect" rows="2" spellcheck="false" placeholder="-Custom allreduce is disabled"></textarea>
                    </label>
                </div>
                <crate::components::ActionError action=add/>
                <div class="form-actions"><button type="submit" class="primary">"Save patch"</button></div>
            </ActionForm>
        </details>
    }
}

/// The patch a run ran with, and its proof: each file's hashes from its base
/// to what was written, what was there at the end, and what was put back.
#[component]
pub fn RunPatchProof(patch: domain::steps::patch::RunPatch) -> impl IntoView {
    use domain::steps::patch::ArmState;
    let unfit = patch.unfit();
    let ok = matches!(patch.state, ArmState::Applied | ArmState::Reverted | ArmState::Applying) && unfit.is_none();
    let hash = |h: &Option<String>| h.as_deref().map(short).unwrap_or_else(|| "—".into());
    let rows = patch
        .files
        .iter()
        .map(|f| {
            let held = f.at_end.is_none() || f.at_end == f.applied;
            view! {
                <tr>
                    <td><code class="path">{f.path.clone()}</code></td>
                    <td><code title=f.base.clone()>{short(&f.base)}</code></td>
                    <td><code>{hash(&f.applied)}</code></td>
                    <td class=if held { "" } else { "warning" }><code>{hash(&f.at_end)}</code></td>
                    <td><code>{hash(&f.reverted)}</code></td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <details class="run-patch" data-state=patch.state.as_str()>
            <summary class=if ok { "ok" } else { "warning" }>
                "patch " {patch.step}
                " · " {patch.state.as_str()} " · " {patch.text.clone()}
                {unfit.map(|why| format!(" Not counted by hypotheses: {why}."))}
            </summary>
            {(!patch.caches_cleared.is_empty()).then(|| view! {
                <p class="muted">"caches cleared: " {patch.caches_cleared.join(", ")}</p>
            })}
            {(!patch.expectations.is_empty()).then(|| view! {
                <ul class="expectations">{patch.expectations.iter().map(|e| view! {
                    <li class=if e.met { "ok" } else { "warning" }>
                        {format!("{:?} {}", e.text, match (e.present, e.found_in.as_deref()) {
                            (true, Some(place)) => format!("found in the {place}"),
                            (true, None) => "expected, never appeared".to_string(),
                            (false, Some(place)) => format!("should be gone, but is in the {place}"),
                            (false, None) => "gone, as expected".to_string(),
                        })}
                    </li>
                }).collect_view()}</ul>
            })}
            <table class="list"><thead><tr>
                <th>"File"</th><th>"base"</th><th>"written"</th><th>"at the end"</th><th>"put back"</th>
            </tr></thead><tbody>{rows}</tbody></table>
        </details>
    }
}
