//! `/replays/{id}`: an investigation replayed on another host or with other
//! versions, beside its original — each hypothesis' conclusion on both, the
//! snippets read again, what differs between the hosts, and the runs.

use crate::components::PageTitle;
use domain::error::ApiError;
use domain::replays::Replay;
use leptos::form::ActionForm;
use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

/// "Replay on…": `env` one `NAME=value` a line; a blank host keeps each step's own.
#[server]
pub async fn replay_investigation_form(
    investigation: String,
    #[server(default)] host: String,
    #[server(default)] env: String,
    #[server(default)] repeat: String,
) -> Result<Replay, ApiError> {
    let mut vars = std::collections::BTreeMap::new();
    for line in env.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let Some((name, value)) = line.split_once('=') else {
            return crate::backend::with_status(Err(ApiError::invalid(format!(
                "{line:?}: write each variable as NAME=value, one a line."
            ))));
        };
        vars.insert(name.trim().to_string(), value.trim().to_string());
    }
    let request = domain::replays::ReplayRequest {
        host: Some(host).filter(|h| !h.trim().is_empty()),
        env: vars,
        steps: None,
        repeat: crate::backend::form_number("Repeats", &repeat)?,
    };
    let replay = crate::backend::call(move |notebook, actor| async move {
        notebook.replay_investigation(&actor, &investigation, request).await
    })
    .await?;
    // Its progress and result are its page.
    leptos_axum::redirect(&replay.url);
    Ok(replay)
}

/// The form in an investigation's toolbar.
#[component]
pub fn ReplayForm(investigation: String) -> impl IntoView {
    let replay = ServerAction::<ReplayInvestigationForm>::new();
    view! {
        <details class="inline-form replay-form">
            <summary class="button">"Replay on…"</summary>
            <ActionForm action=replay attr:class="stacked">
                <input type="hidden" name="investigation" value=investigation/>
                <p class="muted hint">"Copies this investigation into a new one of yours, runs its command steps there, \
                    and judges each hypothesis again beside the original."</p>
                <div class="row">
                    <label>"Host " <span class="muted">"(blank: each step's own)"</span> <input name="host" maxlength="100"/></label>
                    <label class="narrow">"Repeats" <input name="repeat" inputmode="numeric" value="1"/></label>
                </div>
                <label>"Env " <span class="muted">"(NAME=value, one a line; set over each command's own)"</span>
                    <textarea name="env" rows="2" placeholder="VLLM_VERSION=0.9.2"></textarea>
                </label>
                <crate::components::ActionError action=replay/>
                <div class="form-actions"><button type="submit" class="primary">"Replay"</button></div>
            </ActionForm>
        </details>
    }
}

#[server]
pub async fn load_replay(id: i64) -> Result<Replay, ApiError> {
    crate::backend::call(move |notebook, actor| async move { notebook.replay(&actor, id).await }).await
}

#[component]
pub fn ReplayPage() -> impl IntoView {
    let params = use_params_map();
    let id = move || params.read().get("id").and_then(|id| id.parse::<i64>().ok());
    let replay = Resource::new(id, |id| async move {
        match id {
            Some(id) => load_replay(id).await,
            None => Err(ApiError::not_found("There is no such replay.")),
        }
    });
    view! {
        <PageTitle text="Replay · Sleuth"/>
        <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || Suspend::new(async move { super::or_error(replay.await.map(|r| view! { <Whole r/> })) })}
        </Transition>
    }
}

#[component]
fn Whole(r: Replay) -> impl IntoView {
    let env: Vec<String> = r.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let finished = r.runs.iter().filter(|run| run.status.is_finished()).count();
    let hypotheses = r
        .hypotheses
        .iter()
        .map(|h| {
            let same = match h.same_conclusion {
                Some(true) => "same conclusion",
                Some(false) => "a different conclusion",
                None => "not judged on both (too few runs, or not measured)",
            };
            view! {
                <tr data-same=h.same_conclusion.map(|s| s.to_string())>
                    <td>{h.statement.clone()} <span class="muted">{h.metric.clone().map(|m| format!(" ({m})"))}</span></td>
                    <td>{h.original_verdict.clone().unwrap_or_else(|| "—".into())}</td>
                    <td>{h.replayed_verdict.clone().unwrap_or_else(|| "—".into())}</td>
                    <td class="replay-same">{same}</td>
                </tr>
            }
        })
        .collect_view();
    let snippets = r
        .snippets
        .iter()
        .map(|s| {
            view! { <li><code>{s.path.clone().unwrap_or_default()}</code> ": " {s.source.as_str()}
            {s.note.clone().map(|n| view! { <span class="muted">{format!(" — {n}")}</span> })}</li> }
        })
        .collect_view();
    let runs = r
        .runs
        .iter()
        .map(|run| view! { <a href=format!("/runs/{}", run.id)>{format!("#{}", run.id)}</a> " " })
        .collect_view();
    view! {
        <nav class="crumbs">
            <a href="/">"Investigations"</a> " / "
            {match &r.original {
                Some(id) => view! { <a href=format!("/i/{id}")>{r.original_title.clone()}</a> }.into_any(),
                None => view! { <span title=r.original_url.clone()>{r.original_title.clone()} " (from another Sleuth)"</span> }.into_any(),
            }}
            " / " <span>"replay " {r.id}</span>
        </nav>
        <section class="panel replay-page">
            <h1>"Replay " {r.id} " · " {r.status.as_str()}</h1>
            <p class="muted">
                {r.host.clone().map(|h| format!("On {h}")).unwrap_or_else(|| "On each step's own host".into())}
                {(!env.is_empty()).then(|| format!(", with {}", env.join(", ")))}
                {format!(" · {finished} of {} runs finished · ", r.runs.len())}
                <a href=format!("/i/{}", r.investigation)>"the replay's investigation"</a>
            </p>
            {(!r.host_facts.is_empty()).then(|| view! { <p class="notice">"The hosts differ: " {r.host_facts.join("; ")}</p> })}
            {(!r.notes.is_empty()).then(|| view! {
                <ul class="replay-notes">{r.notes.iter().map(|n| view! { <li class="warning">{n.clone()}</li> }).collect_view()}</ul>
            })}
            <div class="table-scroll"><table class="groups-table replay-table">
                <thead><tr><th>"hypothesis"</th><th>"original"</th><th>"replayed"</th><th></th></tr></thead>
                <tbody>{hypotheses}</tbody>
            </table></div>
            {(!r.snippets.is_empty()).then(|| view! { <h2>"Source read again"</h2><ul class="replay-snippets">{snippets}</ul> })}
            <p class="replay-runs">"Runs: " {runs}</p>
        </section>
    }
}
