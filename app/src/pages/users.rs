//! The team's users, for admins: add one (they get a one-time sign-in link,
//! not a password sent around), reset one (a new link; the old password stops
//! working), make or unmake admins, remove. Everyone else gets a 403 page.

use crate::components::{Confirm, PageTitle};
use domain::accounts::{SignInLink, TeamUser};
use domain::error::ApiError;
use leptos::form::ActionForm;
use leptos::prelude::*;

#[server]
pub async fn list_team_users() -> Result<Vec<TeamUser>, ApiError> {
    crate::backend::call_accounts(move |accounts, actor| async move { accounts.team_users(&actor).await }).await
}

/// `admin` is the checkbox: present ("on") or absent.
#[server]
pub async fn add_team_user(name: String, admin: Option<String>) -> Result<SignInLink, ApiError> {
    let new = domain::accounts::NewUser { name, admin: admin.is_some() };
    crate::backend::call_accounts(move |accounts, actor| async move { accounts.add_team_user(&actor, new).await }).await
}

#[server]
pub async fn reset_team_user(name: String) -> Result<SignInLink, ApiError> {
    crate::backend::call_accounts(move |accounts, actor| async move { accounts.reset_team_user(&actor, &name).await })
        .await
}

#[server]
pub async fn set_team_admin(name: String, admin: bool) -> Result<TeamUser, ApiError> {
    crate::backend::call_accounts(
        move |accounts, actor| async move { accounts.set_team_admin(&actor, &name, admin).await },
    )
    .await
}

#[server]
pub async fn remove_team_user(name: String) -> Result<(), ApiError> {
    crate::backend::call_accounts(move |accounts, actor| async move { accounts.remove_team_user(&actor, &name).await })
        .await
}

#[component]
pub fn UsersPage() -> impl IntoView {
    let users = Resource::new(|| (), |_| list_team_users());
    let me = Resource::new(|| (), |_| super::accounts::whoami());
    view! {
        <PageTitle text="Users · Sleuth"/>
        <section class="narrow-page users-page">
            <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    let Ok(Some(me)) = me.await else {
                        return view! {
                            <h1>"Users"</h1>
                            <p class="notice">"Sleuth runs without accounts here (" <code>"--no-auth"</code>
                               ", on this machine only): there are no users to manage. Start it without "
                               <code>"--no-auth"</code> " to give a team accounts."</p>
                        }.into_any();
                    };
                    let me = me.name;
                    super::or_error(users.await.map(|list| view! {
                        <h1>"Users"</h1>
                        <p class="muted">
                            "Add someone and send them the sign-in link it gives: they choose their own password. "
                            "Investigations are shared with them from each investigation's Members."
                        </p>
                        <AddUser/>
                        <UserTable list me/>
                    }))
                })}
            </Transition>
        </section>
    }
}

/// A new sign-in link, shown this once, with a copy button.
#[component]
fn FreshLink(link: SignInLink, #[prop(into)] what: String) -> impl IntoView {
    let url = super::share_links::absolute(&link.url);
    view! {
        <div class="notice created-link" role="status">
            <p>{what} " Send " <strong>{link.user.name.clone()}</strong> " this link (it works once and expires "
                <crate::components::Time at=link.expires_at.clone()/> "; it is shown only now):"</p>
            <crate::components::LinkToCopy url label="The sign-in link"/>
        </div>
    }
}

/// The add form and the link it made: an island, since the link is in nothing
/// the server renders later (the page is drawn anew with the user listed; the
/// island keeps its place and what it shows).
#[island]
fn AddUser() -> impl IntoView {
    let add = crate::components::island_action::<AddTeamUser>();
    let value = add.value();
    let form = crate::components::refresh_page_on_success(add);
    // Every link made here stays until the page is left: adding a second
    // person must not take away the first one's link before it was sent.
    let made = RwSignal::new(Vec::<SignInLink>::new());
    Effect::new(move |_| {
        if let Some(Ok(link)) = value.get() {
            made.update(|made| {
                if !made.iter().any(|l| l.url == link.url) {
                    made.insert(0, link);
                }
            });
        }
    });
    // Keyed: each link keeps its own view (and its copy button's "Copied").
    let fresh = view! {
        <For each=move || made.get() key=|link| link.url.clone() let:link>
            <FreshLink link what="Added."/>
        </For>
    };
    view! {
        {fresh}
        <ActionForm node_ref=form action=add attr:class="inline" attr:id="add-user">
            <label>"Name " <input name="name" required maxlength="40" autocomplete="off" placeholder="e.g. carol"
                pattern="[\\p{L}\\p{N}_.\\-]+" title="Letters, digits, _ - or . (how @mentions name them)"/></label>
            <label class="check"><input type="checkbox" name="admin" value="on"/> " admin"</label>
            <button type="submit" class="primary">"Add user"</button>
            <crate::components::ActionError action=add/>
        </ActionForm>
    }
}

/// One row's "New sign-in link": an island per user (its prop, the name, stays
/// the same when the page is drawn anew, so the link stays shown).
#[island]
fn ResetUser(name: String) -> impl IntoView {
    let reset = crate::components::island_action::<ResetTeamUser>();
    let value = reset.value();
    let form = crate::components::refresh_page_on_success(reset);
    let fresh = move || {
        value.get().and_then(Result::ok).map(|link| {
            view! { <FreshLink link what="Their password and sessions no longer work."/> }
        })
    };
    view! {
        <details class="confirm reset-user">
            <summary class="button quiet">"Reset…"</summary>
            <div class="confirm-body">
                <p>{format!("{name}'s password stops working and their sessions end; they choose a new one through a link.")}</p>
                <ActionForm node_ref=form action=reset attr:class="inline">
                    <input type="hidden" name="name" value=name.clone()/>
                    <button type="submit" class="danger">"Reset and make a link"</button>
                    <crate::components::ActionError action=reset/>
                </ActionForm>
            </div>
        </details>
        {fresh}
    }
}

#[component]
fn UserTable(list: Vec<TeamUser>, me: String) -> impl IntoView {
    let set_admin = ServerAction::<SetTeamAdmin>::new();
    let remove = ServerAction::<RemoveTeamUser>::new();
    let rows = list
        .into_iter()
        .map(|u| {
            let itself = u.name == me;
            let state = match &u.link_expires_at {
                Some(at) => view! { <span class="muted">"sign-in link waiting, expires " <crate::components::Time at=at.clone()/></span> }.into_any(),
                None => ().into_any(),
            };
            let name = u.name.clone();
            let reset_name = name.clone();
            let admin_name = name.clone();
            view! {
                <tr data-user=u.name.clone()>
                    <td><strong>{u.name.clone()}</strong>{itself.then_some(" (you)")}</td>
                    <td>{if u.admin { "admin" } else { "member" }}</td>
                    <td class="muted"><crate::components::Time at=u.created_at.clone()/></td>
                    <td>{state}</td>
                    <td class="actions">
                        <ActionForm action=set_admin attr:class="inline">
                            <input type="hidden" name="name" value=admin_name/>
                            <input type="hidden" name="admin" value=(!u.admin).to_string()/>
                            <button type="submit" class="quiet">{if u.admin { "Remove admin" } else { "Make admin" }}</button>
                            <crate::components::ActionError action=set_admin/>
                        </ActionForm>
                        <ResetUser name=reset_name/>
                        {(!itself).then(|| view! {
                            <Confirm label="Remove…" prompt=format!("Remove {name}? Their sessions, API tokens and roles go; what they wrote stays.")>
                                <ActionForm action=remove attr:class="inline">
                                    <input type="hidden" name="name" value=name.clone()/>
                                    <button type="submit" class="danger">{format!("Remove {}", name)}</button>
                                    <crate::components::ActionError action=remove/>
                                </ActionForm>
                            </Confirm>
                        })}
                    </td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="table-scroll">
            <table class="users">
                <thead><tr><th>"name"</th><th>"role"</th><th>"added"</th><th></th><th></th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
}
