//! Grep steps: a pattern searched in a file or directory on a host; each hit
//! opens as a snippet step centered on its line.

use domain::error::ApiError;
use domain::model::Step;
use leptos::form::ActionForm;
use leptos::prelude::*;

#[server]
pub async fn add_grep(
    investigation: String,
    host: String,
    pattern: String,
    path: String,
    regex: Option<String>,
    glob: String,
) -> Result<Step, ApiError> {
    let body = domain::steps::grep::GrepBody {
        host,
        pattern,
        path,
        regex: regex.is_some(),
        glob: Some(glob.trim().to_string()).filter(|g| !g.is_empty()),
        max_hits: None,
    };
    crate::backend::call(move |notebook, actor| async move {
        notebook.add_step(&actor, &investigation, domain::steps::StepBody::Grep(body)).await
    })
    .await
}

#[server]
pub async fn open_hit(investigation: String, host: String, file: String, line: u64) -> Result<Step, ApiError> {
    let body = domain::steps::snippet::SnippetBody::around(host, file, line);
    let into = investigation.clone();
    let step = crate::backend::call(move |notebook, actor| async move {
        notebook.add_step(&actor, &into, domain::steps::StepBody::Snippet(body)).await
    })
    .await?;
    // Without JavaScript, go straight to the line; with it, the page refreshes in place.
    if crate::backend::is_plain_form_post() {
        leptos_axum::redirect(&format!("/i/{investigation}#{}", domain::steps::snippet::line_anchor(step.id, line)));
    }
    Ok(step)
}

#[component]
pub fn GrepContent(step: Step) -> impl IntoView {
    let domain::steps::StepBody::Grep(body) = step.body.clone() else {
        return ().into_any();
    };
    let Some(result) = step.search.clone() else {
        return view! { <p class="muted">"Not searched yet."</p> }.into_any();
    };
    let open = ServerAction::<OpenHit>::new();

    let more = result.total.saturating_sub(result.hits.len() as u64);
    let investigation = step.investigation_id.clone();
    let rows = result
        .hits
        .clone()
        .into_iter()
        .map(|hit| {
            let (investigation, host) = (investigation.clone(), body.host.clone());
            view! {
                <tr>
                    <td class="hit-file"><code>{hit.file.clone()}</code></td>
                    <td class="num">{hit.line}</td>
                    <td class="hit-text"><code inner_html=hit.html></code></td>
                    <td>
                        <crate::components::Can what=crate::components::Ability::Run>
                        <ActionForm action=open attr:class="inline">
                            <input type="hidden" name="investigation" value=investigation/>
                            <input type="hidden" name="host" value=host/>
                            <input type="hidden" name="file" value=hit.file/>
                            <input type="hidden" name="line" value=hit.line/>
                            <button type="submit" class="quiet open-hit">"open"</button>
                        </ActionForm>
                        </crate::components::Can>
                    </td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="snippet-meta">
            <span class="host">{body.host.clone()}</span>
            <code>{format!("grep -rn{} {:?}", if body.regex { "E" } else { "F" }, body.pattern)}</code>
            <code class="path">{body.path.clone()}</code>
            {body.glob.clone().map(|g| view! { <code>"--include=" {g}</code> })}
        </div>
        <p class="muted snippet-facts">{result.total} " matching lines · searched " <crate::components::Time at=result.searched_at.clone()/></p>
        {result.error.clone().map(|e| view! { <p class="notice">{e}</p> })}
        <table class="list hits"><tbody>{rows}</tbody></table>
        {(more > 0).then(|| view! { <p class="notice">{more} " more not shown; narrow the path or the pattern."</p> })}
        <crate::components::ActionError action=open/>
    }
    .into_any()
}

/// "Add a grep" at the end of the timeline.
#[component]
pub fn AddGrep(investigation: String) -> impl IntoView {
    let add = ServerAction::<AddGrep>::new();
    view! {
        <details class="add-step" id="add-grep">
            <summary>"Add a grep"</summary>
            <ActionForm action=add attr:class="stacked">
                <input type="hidden" name="investigation" value=investigation/>
                <div class="row">
                    <label>"Host" <crate::components::HostSelect/></label>
                    <label class="wide">"Pattern" <input name="pattern" required placeholder="Custom allreduce is disabled"/></label>
                    <label class="small"><input type="checkbox" name="regex" value="on"/>" regex"</label>
                </div>
                <div class="row">
                    <label class="wide">"In file or directory" <input name="path" required placeholder="/root/ml-env/lib/python3.12/site-packages/vllm"/></label>
                    <label>"Only files " <input name="glob" placeholder="*.py"/></label>
                </div>
                <crate::components::ActionError action=add/>
                <div class="form-actions"><button type="submit" class="primary">"Search"</button></div>
            </ActionForm>
        </details>
    }
}
