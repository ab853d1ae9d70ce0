//! An investigation's members, in its header: who may read, edit, run and
//! share it. Owners change them; everyone who can read it sees them.

use domain::accounts::{Member, RoleChange};
use domain::error::ApiError;
use leptos::form::ActionForm;
use leptos::prelude::*;

#[server]
pub async fn set_member(investigation: String, user: String, role: RoleChange) -> Result<Vec<Member>, ApiError> {
    let change = domain::accounts::MemberChange { user, role };
    crate::backend::call(
        move |notebook, actor| async move { notebook.set_member(&actor, &investigation, change).await },
    )
    .await
}

#[server]
pub async fn member_candidates(investigation: String) -> Result<Vec<String>, ApiError> {
    crate::backend::call(move |notebook, actor| async move { notebook.member_candidates(&actor, &investigation).await })
        .await
}

/// The list comes with the investigation, and a change draws the page anew like
/// every other header form.
#[component]
pub fn Members(investigation: String, members: Vec<Member>) -> impl IntoView {
    let set = ServerAction::<SetMember>::new();
    // Whom to give a role: the members (to change theirs) and the team's other users, by name.
    let current: Vec<(String, &str)> = members.iter().map(|m| (m.user.clone(), m.role.as_str())).collect();
    // Asked only by an owner: anyone else would be refused, and a refusal sets the page's status.
    let owner = crate::components::abilities().own;
    let candidates = {
        let investigation = investigation.clone();
        Resource::new(
            || (),
            move |_| {
                let investigation = investigation.clone();
                async move { if owner { member_candidates(investigation).await } else { Ok(Vec::new()) } }
            },
        )
    };
    let users = move || {
        let current = current.clone();
        Suspend::new(async move {
            let others = candidates.await.unwrap_or_default();
            view! {
                <select name="user" required aria-label="User">
                    <option value="" selected>"choose a user…"</option>
                    {(!others.is_empty()).then(|| view! {
                        <optgroup label="add">{others.into_iter().map(|name| view! { <option value=name.clone()>{name.clone()}</option> }).collect_view()}</optgroup>
                    })}
                    <optgroup label="change">{current.into_iter().map(|(name, role)| view! {
                        <option value=name.clone()>{format!("{name} ({role})")}</option>
                    }).collect_view()}</optgroup>
                </select>
            }
        })
    };
    // The count stays visible when the page refresh closes the form.
    let summary = format!("Members ({})…", members.len());
    let items = members
        .into_iter()
        .map(|m| {
            let name = m.user.clone();
            view! { <li data-member=name><strong>{m.user}</strong> " " <span class="tag">{m.role.as_str()}</span></li> }
        })
        .collect_view();
    view! {
        <details class="inline-form members" id="members">
            <summary class="button">{summary}</summary>
            // A popover over the page, not a row in the toolbar: the buttons beside it stay clickable.
            <div class="popover">
            <ul class="member-list">{items}</ul>
            <crate::components::Can what=crate::components::Ability::Own>
            <ActionForm action=set attr:class="inline">
                <input type="hidden" name="investigation" value=investigation/>
                <Suspense fallback=|| view! { <select name="user" aria-label="User" disabled><option>"…"</option></select> }>{users}</Suspense>
                <select name="role" aria-label="Role">
                    <option value="viewer">"viewer (read)"</option>
                    <option value="editor">"editor (+ notes, steps, hypotheses)"</option>
                    <option value="runner">"runner (+ run on hosts)"</option>
                    <option value="owner">"owner (+ share, delete)"</option>
                    <option value="none">"remove"</option>
                </select>
                <button type="submit">"Set role"</button>
                <crate::components::ActionError action=set/>
            </ActionForm>
            </crate::components::Can>
            </div>
        </details>
    }
}
