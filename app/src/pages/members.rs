//! An investigation's members, in its header: who may read, edit, run and
//! share it. Owners change them; everyone who can read it sees them.

use crate::accounts::Member;
use crate::error::ApiError;
use leptos::form::ActionForm;
use leptos::prelude::*;

#[server]
pub async fn members(investigation: String) -> Result<Vec<Member>, ApiError> {
    crate::backend::notebook()?.members(&investigation).await.inspect_err(crate::backend::set_status)
}

#[server]
pub async fn set_member(investigation: String, user: String, role: String) -> Result<Vec<Member>, ApiError> {
    let member = Member { user, role };
    crate::backend::notebook()?.set_member(&investigation, member).await.inspect_err(crate::backend::set_status)
}

#[component]
pub fn Members(investigation: String) -> impl IntoView {
    let set = ServerAction::<SetMember>::new();
    let id = investigation.clone();
    let list = Resource::new(move || set.version().get(), move |_| members(id.clone()));
    let form = crate::components::reset_on_success(set);
    view! {
        <details class="inline-form members" id="members">
            <summary class="button">"Members…"</summary>
            <Transition fallback=|| ()>
                <ErrorBoundary fallback=super::error_fallback>
                    {move || Suspend::new(async move {
                        list.await.map(|members| {
                            let items = members
                                .into_iter()
                                .map(|m| {
                                    let name = m.user.clone();
                                    view! { <li data-member=name><strong>{m.user}</strong> " " <span class="tag">{m.role}</span></li> }
                                })
                                .collect_view();
                            view! { <ul class="member-list">{items}</ul> }
                        })
                    })}
                </ErrorBoundary>
            </Transition>
            <ActionForm action=set node_ref=form attr:class="inline">
                <input type="hidden" name="investigation" value=investigation/>
                <input name="user" required placeholder="user name" aria-label="User"/>
                <select name="role" aria-label="Role">
                    <option value="viewer">"viewer (read)"</option>
                    <option value="editor">"editor (+ notes, steps, hypotheses)"</option>
                    <option value="runner">"runner (+ run on hosts)"</option>
                    <option value="owner">"owner (+ share, delete)"</option>
                    <option value="none">"remove"</option>
                </select>
                <button type="submit">"Set role"</button>
            </ActionForm>
            <crate::components::ActionError action=set/>
        </details>
    }
    .into_any()
}
