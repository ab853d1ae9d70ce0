//! `/`: every investigation, newest first, and the form that starts one.

use crate::api::{CreateInvestigation, list_investigations};
use crate::components::PageTitle;
use crate::components::{ActionError, StatusBadge};
use domain::model::{InvestigationSummary, limits};
use leptos::form::ActionForm;
use leptos::prelude::*;

#[component]
pub fn HomePage() -> impl IntoView {
    let investigations = Resource::new(|| (), |_| list_investigations());
    view! {
        <PageTitle text="Investigations · Sleuth"/>
        <div class="page-head">
            <h1>"Investigations"</h1>
        </div>
        <NewInvestigation/>
        <Transition fallback=|| view! { <p class="muted">"Loading investigations…"</p> }>
                {move || Suspend::new(async move {
                    super::or_error(investigations.await.map(|list| view! { <InvestigationTable list/> }))
                })}
        </Transition>
    }
}

#[component]
fn NewInvestigation() -> impl IntoView {
    let create = ServerAction::<CreateInvestigation>::new();
    view! {
        <details class="panel new-investigation" open=true>
            <summary>"New investigation"</summary>
            <ActionForm action=create attr:class="stacked">
                <label>
                    "Title"
                    <input
                        id="new-title"
                        name="title"
                        required
                        maxlength=limits::TITLE_CHARS
                        placeholder="vLLM TP=8 decode stuck at 57.5 tok/s"
                    />
                </label>
                <label>
                    <span>"Question " <span class="muted">"(optional)"</span></span>
                    <textarea
                        id="new-question"
                        name="question"
                        rows="2"
                        maxlength=limits::QUESTION_CHARS
                        placeholder="What are you trying to find out?"
                    ></textarea>
                </label>
                <ActionError action=create/>
                <div class="form-actions">
                    <button type="submit" class="primary">"Create investigation"</button>
                </div>
            </ActionForm>
        </details>
    }
}

#[component]
fn InvestigationTable(list: Vec<InvestigationSummary>) -> impl IntoView {
    if list.is_empty() {
        return view! {
            <p class="empty">
                "No investigations yet. Start one above with the question you are trying to answer."
            </p>
        }
        .into_any();
    }
    let rows = list
        .into_iter()
        .map(|inv| {
            view! {
                <tr>
                    <td class="title-cell">
                        <a href=inv.url.clone()>{inv.title.clone()}</a>
                        <div class="muted question">{inv.question.clone()}</div>
                        {inv.alerts.iter().map(|a| view! { <div class="watch-alert">{a.clone()}</div> }).collect_view()}
                    </td>
                    <td><StatusBadge status=inv.status/></td>
                    <td class="num">{inv.step_count}</td>
                    <td class="time"><crate::components::Time at=inv.updated_at.clone()/></td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <table class="list investigations">
            <thead>
                <tr>
                    <th>"Title"</th>
                    <th>"Status"</th>
                    <th class="num">"Steps"</th>
                    <th>"Updated"</th>
                </tr>
            </thead>
            <tbody>{rows}</tbody>
        </table>
    }
    .into_any()
}
