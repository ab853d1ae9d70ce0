//! Signing in, the first admin's setup, and one's API tokens. Sign-in and setup
//! are plain forms posted to `/auth/…` (the server answers with a redirect and
//! the session cookie), so they work before the bundle loads.

use crate::components::PageTitle;
use domain::accounts::{ApiToken, AuditEntry, NewApiToken, User};
use domain::error::ApiError;
use leptos::form::ActionForm;
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

/// Who is signed in; `None` without accounts (`--no-auth`).
#[server]
pub async fn whoami() -> Result<Option<User>, ApiError> {
    if !crate::backend::accounts()?.enabled() {
        return Ok(None);
    }
    crate::backend::current_user().map(Some)
}

#[server]
pub async fn list_tokens() -> Result<Vec<ApiToken>, ApiError> {
    crate::backend::call_accounts(move |accounts, actor| async move { accounts.tokens(&actor).await }).await
}

#[server]
pub async fn create_token(label: String) -> Result<NewApiToken, ApiError> {
    crate::backend::call_accounts(move |accounts, actor| async move { accounts.create_token(&actor, &label).await })
        .await
}

#[server]
pub async fn revoke_token(id: i64) -> Result<(), ApiError> {
    crate::backend::call_accounts(move |accounts, actor| async move { accounts.revoke_token(&actor, id).await }).await
}

#[server]
pub async fn audit_entries() -> Result<Vec<AuditEntry>, ApiError> {
    crate::backend::call_accounts(move |accounts, actor| async move { accounts.audit_log(&actor, 500).await }).await
}

/// The top bar's corner: the signed-in name, tokens, and signing out.
#[component]
pub fn SignedIn() -> impl IntoView {
    let me = Resource::new(|| (), |_| whoami());
    let unread = Resource::new(|| (), |_| super::comments::unread_mentions());
    view! {
        <Suspense fallback=|| ()>
            {move || Suspend::new(async move {
                match me.await {
                    Ok(Some(user)) => view! {
                        {user.admin.then(|| view! { <a href="/users">"Users"</a> <a href="/audit">"Audit"</a> })}
                        {match unread.await.unwrap_or(0) {
                            0 => view! { <a href="/mentions" class="mentions-link">"Mentions"</a> }.into_any(),
                            n => view! { <a href="/mentions" class="mentions-link unread">"Mentions " <span class="count">{n}</span></a> }.into_any(),
                        }}
                        <a href="/tokens" class="me" title="Your API tokens">{user.name}</a>
                        <form method="post" action="/auth/logout" class="inline sign-out">
                            <button type="submit" class="quiet">"Sign out"</button>
                        </form>
                    }
                    .into_any(),
                    _ => ().into_any(),
                }
            })}
        </Suspense>
    }
}

fn query(name: &'static str) -> impl Fn() -> String + Copy {
    let q = use_query_map();
    move || q.read().get(name).unwrap_or_default()
}

#[component]
pub fn LoginPage() -> impl IntoView {
    let (error, name, next) = (query("error"), query("name"), query("next"));
    let setup = Resource::new(|| (), |()| awaiting_setup());
    view! {
        <PageTitle text="Sign in · Sleuth"/>
        <section class="narrow-page">
            <h1>"Sign in"</h1>
            {move || (!error().is_empty()).then(|| view! { <p class="error" role="alert">{error()}</p> })}
            <form method="post" action="/auth/login" class="stacked" id="sign-in">
                <input type="hidden" name="next" value=next/>
                <label>"Name" <input name="name" required autocomplete="username" value=name autofocus/></label>
                <label>"Password" <input name="password" type="password" required autocomplete="current-password"/></label>
                <div class="form-actions"><button type="submit" class="primary">"Sign in"</button></div>
            </form>
            <Transition fallback=|| ()>
                {move || Suspend::new(async move {
                    match setup.await {
                        Ok(true) => view! {
                            <p class="notice setup-hint">"Nobody has an account here yet. The first admin is made with the one-time "
                                <code>"/setup?token=…"</code> " link Sleuth printed when it started (or, on the server, "
                                <code>"sleuth user add NAME --admin --password-stdin"</code> ")."</p>
                        }.into_any(),
                        _ => view! {
                            <p class="muted">"No account? Ask an admin of this Sleuth: they add you on the Users page and send you a sign-in link."</p>
                        }.into_any(),
                    }
                })}
            </Transition>
        </section>
    }
}

/// Whether nobody has an account yet (anyone may ask).
#[server]
pub async fn awaiting_setup() -> Result<bool, ApiError> {
    let accounts = crate::backend::accounts()?;
    crate::backend::with_status(accounts.awaiting_setup().await)
}

/// Whether the first-admin setup link still works (anyone may ask: the token is the right).
#[server]
pub async fn setup_link_works(token: String) -> Result<bool, ApiError> {
    let accounts = crate::backend::accounts()?;
    crate::backend::with_status(accounts.setup_link_works(&token).await)
}

/// Whom a one-time sign-in link is for, while it works.
#[server]
pub async fn sign_in_link_for(token: String) -> Result<Option<String>, ApiError> {
    let accounts = crate::backend::accounts()?;
    crate::backend::with_status(accounts.sign_in_link_user(&token).await)
}

/// The setup form, or, for a link used already, a page that says so.
#[component]
pub fn SetupPage() -> impl IntoView {
    let token = query("token");
    let works = Resource::new(token, setup_link_works);
    view! {
        <PageTitle text="Set up Sleuth"/>
        <section class="narrow-page">
            <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match works.await {
                        Ok(true) => view! { <SetupForm/> }.into_any(),
                        _ => view! {
                            <h1>"This setup link was used"</h1>
                            <p>"Sleuth has its first admin already (or the link is more than a day old). "
                               <a href="/login">"Sign in"</a> ", or ask an admin for a sign-in link."</p>
                        }.into_any(),
                    }
                })}
            </Transition>
        </section>
    }
}

#[component]
fn SetupForm() -> impl IntoView {
    let (token, error, name) = (query("token"), query("error"), query("name"));
    view! {
            <h1>"Create the first admin"</h1>
            <p class="muted">"This link was printed when Sleuth started with no users; it works once."</p>
            {move || (!error().is_empty()).then(|| view! { <p class="error" role="alert">{error()}</p> })}
            <form method="post" action="/auth/setup" class="stacked" id="setup">
                <input type="hidden" name="token" value=token/>
                <label>"Name" <input name="name" required autocomplete="username" value=name/></label>
                <label>"Password " <span class="muted">"(10 characters or more)"</span>
                    <input name="password" type="password" required minlength="10" autocomplete="new-password"/>
                </label>
                <div class="form-actions"><button type="submit" class="primary">"Create admin and sign in"</button></div>
            </form>
    }
}

/// A one-time sign-in link's page: its user chooses a password and is signed
/// in; a link that no longer works says so instead of showing the form.
#[component]
pub fn WelcomePage() -> impl IntoView {
    let token = query("token");
    let user = Resource::new(token, sign_in_link_for);
    view! {
        <PageTitle text="Welcome · Sleuth"/>
        <section class="narrow-page">
            <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match user.await {
                        Ok(Some(name)) => view! { <WelcomeForm name/> }.into_any(),
                        _ => view! {
                            <h1>"This sign-in link does not work any more"</h1>
                            <p>"It was used already, replaced by a newer one, or is older than 7 days. "
                               "Ask an admin for a new one, or " <a href="/login">"sign in"</a> "."</p>
                        }.into_any(),
                    }
                })}
            </Transition>
        </section>
    }
}

#[component]
fn WelcomeForm(name: String) -> impl IntoView {
    let (token, error) = (query("token"), query("error"));
    view! {
        <h1>{format!("Welcome, {name}")}</h1>
        <p class="muted">"Choose your password; this link then stops working. You sign in as "<strong>{name.clone()}</strong>"."</p>
        {move || (!error().is_empty()).then(|| view! { <p class="error" role="alert">{error()}</p> })}
        <form method="post" action="/auth/welcome" class="stacked" id="welcome">
            <input type="hidden" name="token" value=token/>
            <input type="text" name="name" value=name.clone() autocomplete="username" hidden/>
            <label>"Password " <span class="muted">"(10 characters or more)"</span>
                <input name="password" type="password" required minlength="10" autocomplete="new-password" autofocus/>
            </label>
            <div class="form-actions"><button type="submit" class="primary">"Choose password and sign in"</button></div>
        </form>
    }
}

#[component]
pub fn TokensPage() -> impl IntoView {
    let revoke = ServerAction::<RevokeToken>::new();
    let tokens = Resource::new(|| (), |_| list_tokens());
    view! {
        <PageTitle text="API tokens · Sleuth"/>
        <section class="narrow-page">
            <h1>"API tokens"</h1>
            <p class="muted">"For scripts: every " <code>"/api/v1"</code> " route takes " <code>"Authorization: Bearer TOKEN"</code> " (" <a href="/api/v1/openapi.html" rel="external">"the API reference"</a> ", as " <a href="/api/v1/openapi.json" rel="external">"OpenAPI"</a> "); from a terminal, " <code>"sleuth login URL"</code> " keeps one."</p>
            <NewToken/>
            <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
                        {move || Suspend::new(async move {
                        super::or_error(tokens.await.map(|list| view! { <TokenList list revoke/> }))
                    })}
                </Transition>
        </section>
    }
}

/// The form that makes a token, and the token it made, shown this once: an
/// island, since the token is in nothing the server renders later. The page is
/// drawn anew with the token in its list, and the island keeps its place.
#[island]
fn NewToken() -> impl IntoView {
    let create = crate::components::island_action::<CreateToken>();
    let form = crate::components::refresh_page_on_success(create);
    let value = create.value();
    let fresh = move || {
        value.get().and_then(Result::ok).map(|t| {
            view! {
                <div class="new-token" role="status">
                    <p>"Your new token (shown this once; send it as " <code>"Authorization: Bearer …"</code> "):"</p>
                    <pre><code class="token">{t.token}</code></pre>
                </div>
            }
        })
    };
    view! {
        {fresh}
        <ActionForm node_ref=form action=create attr:class="inline" attr:id="create-token">
            <input name="label" required maxlength="100" placeholder="what it is for (e.g. CI benchmarks)"/>
            <button type="submit" class="primary">"Create token"</button>
            <crate::components::ActionError action=create/>
        </ActionForm>
    }
}

#[component]
fn TokenList(list: Vec<ApiToken>, revoke: ServerAction<RevokeToken>) -> impl IntoView {
    if list.is_empty() {
        return view! { <p class="muted">"No tokens yet."</p> }.into_any();
    }
    let rows = list
        .into_iter()
        .map(|t| {
            let state = match (&t.revoked_at, &t.last_used_at) {
                (Some(r), _) => format!("revoked {}", domain::model::short_time(r)),
                (None, Some(u)) => format!("last used {}", domain::model::short_time(u)),
                (None, None) => "never used".into(),
            };
            let active = t.revoked_at.is_none();
            view! {
                <tr data-token=t.id>
                    <td>{t.label}</td>
                    <td class="muted"><crate::components::Time at=t.created_at.clone()/></td>
                    <td class="muted">{state}</td>
                    <td>{active.then(|| view! {
                        <ActionForm action=revoke attr:class="inline">
                            <input type="hidden" name="id" value=t.id/>
                            <button type="submit" class="danger">"Revoke"</button>
                            <crate::components::ActionError action=revoke/>
                        </ActionForm>
                    })}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <table class="tokens">
            <thead><tr><th>"label"</th><th>"created"</th><th></th><th></th></tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
    .into_any()
}

/// Every remote action, newest first (admins). The exports are the API's.
#[component]
pub fn AuditPage() -> impl IntoView {
    let entries = Resource::new(|| (), |_| audit_entries());
    view! {
        <PageTitle text="Audit log · Sleuth"/>
        <h1>"Audit log"</h1>
        <p class="muted">
            "Every command run, snippet fetch, grep, source search, host test, facts capture and host-key trust. "
            "Export: " <a href="/api/v1/audit?format=csv&limit=100000">"CSV"</a> " · "
            <a href="/api/v1/audit?format=json&limit=100000">"JSON"</a>
        </p>
        <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
                {move || Suspend::new(async move { super::or_error(entries.await.map(|list| view! { <AuditTable list/> })) })}
        </Transition>
    }
}

#[component]
fn AuditTable(list: Vec<AuditEntry>) -> impl IntoView {
    let rows = list
        .into_iter()
        .map(|e| {
            let env: Vec<String> = e.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let action = e.action.clone();
            view! {
                <tr data-action=action>
                    <td class="muted"><crate::components::Time at=e.at.clone()/></td>
                    <td>{e.who}</td>
                    <td><code>{e.action}</code></td>
                    <td>{e.host.unwrap_or_default()}</td>
                    <td><code class="target">{e.target}</code>{(!env.is_empty()).then(|| view! { <div class="muted env">{env.join(" ")}</div> })}</td>
                    <td>{e.outcome.unwrap_or_default()}</td>
                    <td>{e.run_id.map(|r| format!("#{r}")).unwrap_or_default()}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="table-scroll">
            <table class="audit">
                <thead><tr><th>"when"</th><th>"who"</th><th>"action"</th><th>"host"</th><th>"what"</th><th>"outcome"</th><th>"run"</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
    .into_any()
}
