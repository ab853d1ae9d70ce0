//! `/replays/{id}`: an investigation replayed on another host or with other
//! versions, beside its original — each hypothesis' conclusion on both, the
//! snippets read again, what differs between the hosts, and the runs.

use crate::components::PageTitle;
use crate::error::ApiError;
use crate::replays::Replay;
use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

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
            <div class="table-scroll"><table class="groups-table replay-table">
                <thead><tr><th>"hypothesis"</th><th>"original"</th><th>"replayed"</th><th></th></tr></thead>
                <tbody>{hypotheses}</tbody>
            </table></div>
            {(!r.snippets.is_empty()).then(|| view! { <h2>"Source read again"</h2><ul class="replay-snippets">{snippets}</ul> })}
            <p class="replay-runs">"Runs: " {runs}</p>
        </section>
    }
}
