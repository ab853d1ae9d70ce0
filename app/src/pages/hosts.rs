//! `/hosts`: the GPU hosts Sleuth can reach, their host keys, and connection tests.

use crate::api::list_hosts;
use crate::components::PageTitle;
use crate::components::{ActionError, Confirm};
use domain::error::ApiError;
use domain::hosts::{ConnectionReport, Host};
use leptos::form::ActionForm;
use leptos::prelude::*;

#[cfg(feature = "ssr")]
fn optional(text: String) -> Option<String> {
    Some(text.trim().to_string()).filter(|t| !t.is_empty())
}

/// The host form's fields, as the notebook takes them.
#[cfg(feature = "ssr")]
fn host_from_form(
    name: String,
    hostname: String,
    port: String,
    user: String,
    identity_file: String,
    proxy_jump: String,
) -> Result<domain::hosts::NewHost, ApiError> {
    let port = crate::backend::form_number::<u16>("The port (1–65535)", &port)?;
    Ok(domain::hosts::NewHost {
        name,
        hostname,
        port,
        user,
        identity_file: optional(identity_file),
        proxy_jump: optional(proxy_jump),
    })
}

#[server]
pub async fn add_host(
    name: String,
    hostname: String,
    port: String,
    user: String,
    identity_file: String,
    proxy_jump: String,
) -> Result<Host, ApiError> {
    let new = host_from_form(name, hostname, port, user, identity_file, proxy_jump)?;
    crate::backend::call(move |notebook, actor| async move { notebook.add_host(&actor, new).await }).await
}

#[server]
pub async fn update_host(
    name: String,
    hostname: String,
    port: String,
    user: String,
    identity_file: String,
    proxy_jump: String,
) -> Result<Host, ApiError> {
    let new = host_from_form(name.clone(), hostname, port, user, identity_file, proxy_jump)?;
    crate::backend::call(move |notebook, actor| async move { notebook.update_host(&actor, &name, new).await }).await
}

/// The price form's text: a number in any currency, or blank to remove it.
#[server]
pub async fn set_host_price(name: String, price: String) -> Result<Host, ApiError> {
    let price = crate::backend::with_status(domain::hosts::price_from_form(&price).map_err(ApiError::from))?;
    let patch = domain::hosts::HostPatch { price_per_hour: Some(price), ..Default::default() };
    crate::backend::call(move |notebook, actor| async move { notebook.patch_host(&actor, &name, patch).await }).await
}

/// The retention form: days to keep run directories (blank: 7) and a cap in MB (blank: none).
#[server]
pub async fn set_run_dirs(name: String, keep_days: String, max_mb: String) -> Result<Host, ApiError> {
    let (days, mb) =
        crate::backend::with_status(domain::hosts::run_dirs_from_form(&keep_days, &max_mb).map_err(ApiError::from))?;
    let patch =
        domain::hosts::HostPatch { run_dirs_keep_days: Some(days), run_dirs_max_mb: Some(mb), ..Default::default() };
    crate::backend::call(move |notebook, actor| async move { notebook.patch_host(&actor, &name, patch).await }).await
}

#[server]
pub async fn import_hosts(path: String, text: String) -> Result<domain::hosts::ImportReport, ApiError> {
    let source =
        domain::hosts::HostImport { path: optional(path).filter(|_| text.trim().is_empty()), text: optional(text) };
    crate::backend::call(move |notebook, actor| async move { notebook.import_hosts(&actor, source).await }).await
}

/// Whether writes are refused (everyone), and the server's state (admins).
#[server]
pub async fn server_status() -> Result<domain::hosts::ServerStatus, ApiError> {
    // Asked by every page's banner, the sign-in and share-link pages too: no
    // one signed in is told nothing (and the page keeps its own status).
    if crate::backend::actor().is_err() {
        return Ok(domain::hosts::ServerStatus::default());
    }
    crate::backend::call(move |notebook, actor| async move { notebook.server_status(&actor).await }).await
}

/// An admin settles a dirty patch: `restore` puts the originals back, else it is accepted as it is.
#[server]
pub async fn settle_patch(name: String, run: i64, restore: Option<String>) -> Result<(), ApiError> {
    let restore = restore.is_some();
    crate::backend::call(move |notebook, actor| async move {
        notebook.settle_host_patch(&actor, &name, run, restore).await.map(drop)
    })
    .await
}

#[server]
pub async fn remove_host(name: String) -> Result<(), ApiError> {
    crate::backend::call(move |notebook, actor| async move { notebook.remove_host(&actor, &name).await }).await
}

#[server]
pub async fn trust_host(name: String, fingerprint: String) -> Result<Host, ApiError> {
    crate::backend::call(move |notebook, actor| async move { notebook.trust_host(&actor, &name, &fingerprint).await })
        .await
}

#[server]
pub async fn test_host(name: String) -> Result<ConnectionReport, ApiError> {
    crate::backend::call(move |notebook, actor| async move { notebook.test_host(&actor, &name).await }).await
}

#[server]
pub async fn set_passphrase(name: String, passphrase: String) -> Result<(), ApiError> {
    crate::backend::call(move |notebook, actor| async move { notebook.set_passphrase(&actor, &name, passphrase).await })
        .await
}

#[component]
pub fn HostsPage() -> impl IntoView {
    let add = ServerAction::<AddHost>::new();
    let hosts = Resource::new(|| (), |_| list_hosts());
    let me = Resource::new(|| (), |_| super::accounts::whoami());
    let status = Resource::new(|| (), |_| server_status());
    view! {
        <PageTitle text="Hosts · Sleuth"/>
        <div class="page-head"><h1>"Hosts"</h1></div>
        <p class="muted">
            "Sleuth connects over SSH from this server, with a key file here or the ssh-agent at SSH_AUTH_SOCK. "
            "It keeps its own known_hosts: the first connection to a host shows the host key's fingerprint, "
            "and nothing runs until you confirm it."
        </p>
        <Transition fallback=|| view! { <p class="muted">"Loading hosts…"</p> }>
                {move || Suspend::new(async move {
                    super::or_error(hosts.await.map(|hosts| {
                        if hosts.is_empty() {
                            view! { <p class="empty">"No hosts yet: an admin adds the GPU box you are investigating here."</p> }.into_any()
                        } else {
                            hosts.into_iter().map(|host| view! { <HostCard host/> }).collect_view().into_any()
                        }
                    }))
                })}
        </Transition>
        // Adding and importing hosts are admins' (the forms name files on this server).
        <Suspense fallback=|| ()>
            {move || Suspend::new(async move {
                // Without accounts (`--no-auth`) everyone is the local admin.
                let admin = me.await.map(|u| u.is_none_or(|u| u.admin)).unwrap_or(false);
                admin.then(|| view! {
                <details class="panel" id="add-host" open=true>
                    <summary>"Add a host"</summary>
                    <ActionForm action=add attr:class="stacked host-form">
                        <div class="row">
                            <label>"Name" <input name="name" required placeholder="h200-box" pattern="[A-Za-z0-9._\\-]+"/></label>
                            <label>"Hostname" <input name="hostname" required placeholder="10.0.0.12 or gpu1.example.com"/></label>
                            <label class="narrow">"Port" <input name="port" inputmode="numeric" placeholder="22"/></label>
                            <label>"User" <input name="user" required placeholder="ubuntu"/></label>
                        </div>
                        <div class="row">
                            <label><span>"Key file on this server " <span class="muted">"(empty: ssh-agent)"</span></span>
                                <input name="identity_file" placeholder="~/.ssh/id_ed25519"/></label>
                            <label><span>"ProxyJump host " <span class="muted">"(optional)"</span></span>
                                <input name="proxy_jump" placeholder="bastion"/></label>
                        </div>
                        <ActionError action=add/>
                        <div class="form-actions"><button type="submit" class="primary">"Add host"</button></div>
                    </ActionForm>
                </details>
                <details class="panel" id="import-hosts">
                    <summary>"Import from ssh_config"</summary>
                    <ImportHosts/>
                </details>
                })
            })}
        </Suspense>
        <Suspense fallback=|| ()>
            {move || Suspend::new(async move {
                status.await.ok().and_then(|s| s.detail).map(|detail| view! { <ServerState detail/> })
            })}
        </Suspense>
    }
}

/// The server's own state, for its admins: the data disk against the
/// free-space floor, the store's failures, and the pooled SSH connections.
#[component]
fn ServerState(detail: domain::hosts::ServerDetail) -> impl IntoView {
    use domain::runs::human_bytes;
    let low = matches!((detail.disk_free_bytes, detail.min_free_bytes), (Some(free), Some(floor)) if free < floor);
    let disk = match (detail.disk_free_bytes, detail.disk_size_bytes) {
        (Some(free), Some(size)) => format!("{} free of {}", human_bytes(free), human_bytes(size)),
        _ => "unknown".to_string(),
    };
    let errors = detail.store_errors_full + detail.store_errors_unavailable + detail.store_errors_other;
    let refused_full = detail.last_full_at.is_some();
    view! {
        <section class="panel server-state" id="server-state">
            <h2>"This server"</h2>
            <table class="facts">
                <tr><th>"Data directory"</th><td><code>{detail.data_dir.unwrap_or_else(|| "unknown".into())}</code></td></tr>
                <tr class:warn=low><th>"Data disk"</th><td>{disk}
                    {detail.min_free_bytes.map(|floor| format!(" · new runs need {} (--min-free)", human_bytes(floor)))}
                    {low.then_some(" · new runs are refused")}</td></tr>
                <tr class:warn=refused_full><th>"Store errors since start"</th><td>
                    {if errors == 0 { "none".to_string() } else { format!(
                        "{} disk full, {} database unreachable, {} other",
                        detail.store_errors_full, detail.store_errors_unavailable, detail.store_errors_other) }}
                    {detail.last_full_at.map(|at| format!(" · last refused for a full disk at {}", domain::model::short_time(&at)))}
                </td></tr>
                <tr><th>"SSH connections"</th><td>
                    {if detail.connections.is_empty() { "none yet".to_string() } else {
                        detail.connections.iter().map(|(host, open)| format!("{host} {}", if *open { "open" } else { "closed" }))
                            .collect::<Vec<_>>().join(", ") }}
                </td></tr>
            </table>
            <p class="muted">"The same as Prometheus text at " <a href="/metrics">"/metrics"</a> "."</p>
        </section>
    }
}

/// The import form and what it imported and skipped: an island, since its
/// report is in nothing the server renders later (the hosts it added are, in
/// the list the page is drawn anew with).
#[island]
fn ImportHosts() -> impl IntoView {
    let import = crate::components::island_action::<ImportHosts>();
    let form = crate::components::refresh_page_on_success(import);
    view! {
        <ActionForm node_ref=form action=import attr:class="stacked">
            <label><span>"A file on this server"</span><input name="path" value="~/.ssh/config"/></label>
            <label><span>"or its text " <span class="muted">"(wins when filled)"</span></span>
                <textarea name="text" rows="4" placeholder="Host h200-box\n  HostName 10.0.0.12\n  User ubuntu"></textarea></label>
            <ActionError action=import/>
            {move || import.value().with(|v| match v {
                Some(Ok(report)) => Some(view! {
                    <p class="import-report">
                        "Imported: " {if report.imported.is_empty() { "nothing".to_string() } else {
                            report.imported.iter().map(|h| h.name.clone()).collect::<Vec<_>>().join(", ")
                        }}
                    </p>
                    <ul class="muted">{report.skipped.iter().map(|s| view! { <li>{s.clone()}</li> }).collect_view()}</ul>
                }),
                _ => None,
            })}
            <div class="form-actions"><button type="submit">"Import hosts"</button></div>
        </ActionForm>
    }
}

#[component]
fn HostCard(host: Host) -> impl IntoView {
    let remove = ServerAction::<RemoveHost>::new();
    let update = ServerAction::<UpdateHost>::new();
    let price = ServerAction::<SetHostPrice>::new();
    let retention = ServerAction::<SetRunDirs>::new();
    let edit = host.clone();
    let name = host.name.clone();
    let address = format!(
        "{}@{}{}",
        host.user,
        host.hostname,
        if host.port == 22 { String::new() } else { format!(":{}", host.port) }
    );
    // The key file is a path on the server: admins' business only.
    let auth = host
        .can_manage
        .then(|| host.identity_file.clone().map(|f| format!("key {f}")).unwrap_or_else(|| "ssh-agent".to_string()));
    let (section_id, edit_id) = (format!("host-{name}"), format!("edit-host-{name}"));
    let (facts_name, remove_name, price_name) = (name.clone(), name.clone(), name.clone());
    let price_value = host.price_per_hour.map(|p| p.to_string()).unwrap_or_default();
    let (days_value, cap_value) =
        (host.run_dirs.keep_days.to_string(), host.run_dirs.max_mb.map(|mb| mb.to_string()).unwrap_or_default());
    let retention_name = name.clone();
    let manage = host.can_manage.then(|| {
        view! {
            <details class="inline-form" id=edit_id>
                <summary class="button">"Edit…"</summary>
                <div class="popover">
                <ActionForm action=update attr:class="stacked">
                    <input type="hidden" name="name" value=edit.name.clone()/>
                    <label>"Hostname" <input name="hostname" required value=edit.hostname.clone()/></label>
                    <label>"Port" <input name="port" inputmode="numeric" value=edit.port.to_string()/></label>
                    <label>"User" <input name="user" required value=edit.user.clone()/></label>
                    <label><span>"Key file " <span class="muted">"(empty: ssh-agent)"</span></span>
                        <input name="identity_file" value=edit.identity_file.clone().unwrap_or_default()/></label>
                    <label>"ProxyJump host" <input name="proxy_jump" value=edit.proxy_jump.clone().unwrap_or_default()/></label>
                    <ActionError action=update/>
                    <div class="form-actions"><button type="submit" class="primary">"Save"</button></div>
                </ActionForm>
                <ActionForm action=price attr:class="stacked host-price">
                    <input type="hidden" name="name" value=price_name/>
                    <label><span>"Price per hour " <span class="muted">"(any currency; empty: none)"</span></span>
                        <input name="price" inputmode="decimal" value=price_value/></label>
                    <p class="muted">"Runs on this host with a throughput get their cost per million generated tokens from it."</p>
                    <ActionError action=price/>
                    <div class="form-actions"><button type="submit">"Save price"</button></div>
                </ActionForm>
                <ActionForm action=retention attr:class="stacked host-run-dirs-form">
                    <input type="hidden" name="name" value=retention_name/>
                    <label><span>"Keep run directories " <span class="muted">"(days; empty: 7)"</span></span>
                        <input name="keep_days" inputmode="numeric" value=days_value/></label>
                    <label><span>"Cap on them " <span class="muted">"(MB; empty: none)"</span></span>
                        <input name="max_mb" inputmode="numeric" value=cap_value/></label>
                    <p class="muted">"Swept after runs, at most hourly: older ones go, then the oldest until they fit. A deleted run's directory goes with it."</p>
                    <ActionError action=retention/>
                    <div class="form-actions"><button type="submit">"Save retention"</button></div>
                </ActionForm>
                </div>
            </details>
            <Confirm label="Remove…" prompt="Remove this host? Steps that use it keep their history.">
                <ActionForm action=remove attr:class="inline">
                    <input type="hidden" name="name" value=remove_name/>
                    <button type="submit" class="danger">"Remove host"</button>
                    <ActionError action=remove/>
                </ActionForm>
            </Confirm>
        }
    });
    view! {
        <section class="panel host" id=section_id data-host=name.clone()>
            <div class="host-head">
                <h2>{name.clone()}</h2>
                <code>{address}</code>
                {auth.map(|a| view! { <span class="muted">{a}</span> })}
                {host.proxy_jump.clone().map(|j| view! { <span class="muted">"via " {j}</span> })}
                {host.price_per_hour.map(|p| view! { <span class="muted host-price-shown">{domain::hosts::price_text(p)}</span> })}
                <span class="spacer"></span>
                {manage}
            </div>
            <p class="muted host-run-dirs">{domain::hosts::run_dirs_text(&host.run_dirs)}</p>
            {(!host.patches.is_empty()).then(|| view! { <HostPatches host=name.clone() patches=host.patches.clone() can_manage=host.can_manage/> })}
            // Kept across redraws even when its keys changed: it shows them itself.
            <div class="host-connection" data-island-key=format!("host-{name}")>
                <HostConnection
                    name=name.clone()
                    trusted=host.trusted_keys.clone()
                    pending=host.pending_key.clone()
                    can_trust=host.can_manage
                    can_use=host.can_use
                />
            </div>
            {if host.can_use {
                view! { <FactsPanel name=facts_name/> }.into_any()
            } else {
                view! { <p class="muted">"Testing this host and reading its facts need the runner role in an investigation and a place on the host's list: ask an admin."</p> }.into_any()
            }}
        </section>
    }
}

/// Patches runs left on the host: a dirty one refuses new runs there until an
/// admin restores it (the originals back, verified) or accepts it as it is.
#[component]
fn HostPatches(host: String, patches: Vec<domain::steps::patch::PatchOnHost>, can_manage: bool) -> impl IntoView {
    let settle = ServerAction::<SettlePatch>::new();
    let rows = patches
        .into_iter()
        .map(|p| {
            let dirty = p.patch.state == domain::steps::patch::ArmState::Dirty;
            let forms = (dirty && can_manage).then(|| {
                let (host, again) = (host.clone(), host.clone());
                view! {
                    <ActionForm action=settle attr:class="inline">
                        <input type="hidden" name="name" value=again/>
                        <input type="hidden" name="run" value=p.run/>
                        <input type="hidden" name="restore" value="on"/>
                        <button type="submit" class="restore-patch">"Restore the originals"</button>
                    </ActionForm>
                    <ActionForm action=settle attr:class="inline">
                        <input type="hidden" name="name" value=host/>
                        <input type="hidden" name="run" value=p.run/>
                        <button type="submit" class="quiet accept-patch">"Accept as it is"</button>
                    </ActionForm>
                }
            });
            view! {
                <li class=if dirty { "warning" } else { "" } data-run=p.run>
                    <a href=format!("/runs/{}", p.run)>"run " {p.run}</a> ": patch " {p.patch.step} " " {p.patch.state.as_str()}
                    " — " {p.patch.text.clone()} " " {forms}
                </li>
            }
        })
        .collect_view();
    view! {
        <div class="notice host-patches">
            <p>"Patches on this host (a dirty one refuses new runs here until an admin settles it):"</p>
            <ul>{rows}</ul>
            <ActionError action=settle/>
        </div>
    }
}

/// The fingerprint in a "host key not known yet" error (`SHA256:…`).
fn offered_fingerprint(message: &str) -> Option<String> {
    let at = message.find("SHA256:")?;
    let fingerprint: String = message[at..].chars().take_while(|c| !c.is_whitespace() && *c != ')').collect();
    Some(fingerprint.trim_end_matches(['.', ',', ';']).to_string())
}

/// The host's keys and connection: the trusted key, a key offered at first
/// contact as a question (not an error) with "Trust this key" — after which
/// the test runs again by itself — and "Test connection" with what it found:
/// how long it took and what the host is, or why it failed, with a passphrase
/// field when the key needs one. An island: reports are in nothing the server
/// renders, and it shows a key trusted here at once, without a redraw.
#[island]
fn HostConnection(
    name: String,
    trusted: Vec<String>,
    pending: Option<String>,
    can_trust: bool,
    can_use: bool,
) -> impl IntoView {
    let test = crate::components::island_action::<TestHost>();
    let trust = crate::components::island_action::<TrustHost>();
    let passphrase = crate::components::island_action::<SetPassphrase>();
    let value = test.value();
    let trusted = RwSignal::new(trusted);
    let offered = RwSignal::new(pending);
    // A first contact's key, from the test's answer.
    Effect::new(move |_| {
        value.with(|v| {
            if let Some(Err(e)) = v
                && e.code == domain::error::ErrorCode::HostKeyUnknown
                && let Some(fingerprint) = offered_fingerprint(&e.message)
            {
                offered.set(Some(fingerprint));
            }
        });
    });
    // Trusted: shown as trusted, and tested again at once.
    let again = name.clone();
    Effect::new(move |_| {
        if let Some(Ok(host)) = trust.value().get() {
            trusted.set(host.trusted_keys.clone());
            offered.set(None);
            test.dispatch(TestHost { name: again.clone() });
        }
    });
    // A test changes what the page around the island says of the host (its
    // connection, a key it offered): that is drawn anew, the island kept.
    Effect::new(move |_| {
        if value.with(Option::is_some) {
            crate::components::redraw_page();
        }
    });
    // An unlocked key is tried at once.
    let unlocked = passphrase.value();
    let retry = name.clone();
    Effect::new(move |_| {
        if unlocked.with(|v| matches!(v, Some(Ok(())))) {
            test.dispatch(TestHost { name: retry.clone() });
        }
    });
    let needs_passphrase =
        move || value.with(|v| matches!(v, Some(Err(e)) if e.code == domain::error::ErrorCode::NeedsPassphrase));
    let (pass_name, trust_name, host_name) = (name.clone(), name.clone(), name.clone());
    let question = move || {
        offered.get().map(|fingerprint| {
            let trust_name = trust_name.clone();
            let host_name = host_name.clone();
            view! {
                <div class="trust question" role="status">
                    <p><strong>"First connection to " {host_name} "."</strong> " It presents the host key "
                       <code class="fingerprint pending">{fingerprint.clone()}</code> ". Is that its key? Compare with "
                       <code>"ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub"</code> " on the host. Nothing runs there until it is trusted."</p>
                    {if can_trust {
                        view! {
                            <ActionForm action=trust attr:class="inline">
                                <input type="hidden" name="name" value=trust_name/>
                                <input type="hidden" name="fingerprint" value=fingerprint/>
                                <button type="submit" class="primary trust-button">"Trust this key"</button>
                                <ActionError action=trust/>
                            </ActionForm>
                        }.into_any()
                    } else {
                        view! { <p class="muted">"An admin confirms host keys."</p> }.into_any()
                    }}
                </div>
            }
        })
    };
    view! {
        <p class="keys">
            {move || {
                let keys = trusted.get();
                if keys.is_empty() {
                    view! { <span class="muted">"No trusted host key yet."</span> }.into_any()
                } else {
                    view! { <span>"Trusted key: " {keys.into_iter().map(|k| view! { <code class="fingerprint">{k}</code> " " }).collect_view()}</span> }.into_any()
                }
            }}
        </p>
        {question}
        {can_use.then(|| view! {
        <div class="connection">
            <ActionForm action=test attr:class="inline">
                <input type="hidden" name="name" value=name/>
                <button type="submit" class="test-button">"Test connection"</button>
            </ActionForm>
            {move || needs_passphrase().then(|| {
                let pass_name = pass_name.clone();
                view! {
                    <ActionForm action=passphrase attr:class="inline passphrase">
                        <input type="hidden" name="name" value=pass_name/>
                        <input type="password" name="passphrase" placeholder="Key passphrase (kept in memory only)" autocomplete="off"/>
                        <button type="submit">"Unlock key"</button>
                        <ActionError action=passphrase/>
                    </ActionForm>
                }
            })}
            {move || value.with(|v| match v {
                Some(Ok(report)) => Some(view! {
                    <dl class="report">
                        <dt>"Latency"</dt><dd>{format!("{:.1} ms", report.latency_ms)}</dd>
                        <dt>"uname -a"</dt><dd><code>{report.uname.clone()}</code></dd>
                        <dt>"nvidia-smi"</dt><dd>{report.nvidia_smi.clone().unwrap_or_else(|| "not found".into())}</dd>
                    </dl>
                }.into_any()),
                // A first contact is the question above, not an error.
                Some(Err(e)) if e.code == domain::error::ErrorCode::HostKeyUnknown => None,
                Some(Err(e)) => Some(view! { <p class="error" role="alert"><crate::components::Said text=e.message.clone()/></p> }.into_any()),
                None => None,
            })}
        </div>
        })}
    }
}

#[server]
pub async fn host_facts(name: String) -> Result<Option<domain::hosts::HostFacts>, ApiError> {
    crate::backend::call(move |notebook, actor| async move { notebook.facts(&actor, &name).await }).await
}

#[server]
pub async fn capture_host_facts(name: String, python: String) -> Result<domain::hosts::HostFacts, ApiError> {
    let python = Some(python).filter(|p| !p.trim().is_empty());
    crate::backend::call(move |notebook, actor| async move { notebook.capture_facts(&actor, &name, python).await })
        .await
}

/// The host's newest captured facts — GPUs, how they are linked, CPU, versions —
/// and a button to capture them again.
#[component]
fn FactsPanel(name: String) -> impl IntoView {
    let capture = ServerAction::<CaptureHostFacts>::new();
    let key = name.clone();
    let facts = Resource::new(move || key.clone(), host_facts);
    view! {
        <details class="facts" open=true>
            <summary>"Facts"</summary>
            <Suspense fallback=|| view! { <p class="muted">"Loading facts…"</p> }>
                {move || Suspend::new(async move {
                    match facts.await {
                        Ok(Some(f)) => view! { <FactsView facts=f/> }.into_any(),
                        Ok(None) => view! { <p class="muted">"Not captured yet."</p> }.into_any(),
                        Err(e) => view! { <p class="error"><crate::components::Said text=e.message/></p> }.into_any(),
                    }
                })}
            </Suspense>
            <ActionForm action=capture attr:class="inline capture-facts">
                <input type="hidden" name="name" value=name/>
                <input name="python" placeholder="python3 (or /root/ml-env/bin/python)" aria-label="Python for package versions"/>
                <button type="submit">"Capture facts"</button>
                <ActionError action=capture/>
            </ActionForm>
        </details>
    }
}

#[component]
fn FactsView(facts: domain::hosts::HostFacts) -> impl IntoView {
    let gpus = facts
        .gpus
        .iter()
        .map(|g| {
            let link = match (g.pcie_gen, g.pcie_width) {
                (Some(gen_), Some(w)) => format!("PCIe {gen_} ×{w}"),
                _ => String::new(),
            };
            let memory = g.memory_mib.map(|m| format!("{:.0} GiB", m as f64 / 1024.0)).unwrap_or_default();
            view! { <tr><td>{g.index}</td><td>{g.name.clone()}</td><td class="num">{memory}</td><td>{link}</td></tr> }
        })
        .collect_view();
    let topology = facts.topology.clone().map(|t| {
        let header = t.devices.iter().map(|d| view! { <th>{d.clone()}</th> }).collect_view();
        let rows = t
            .devices
            .iter()
            .zip(&t.links)
            .map(|(d, row)| {
                let cells = row.iter().map(|c| view! { <td data-link=c.clone()>{c.clone()}</td> }).collect_view();
                view! { <tr><th>{d.clone()}</th>{cells}</tr> }
            })
            .collect_view();
        view! { <table class="topology"><thead><tr><th></th>{header}</tr></thead><tbody>{rows}</tbody></table> }
            .into_any()
    });
    let packages = facts.packages.iter().map(|(p, v)| format!("{p} {v}")).collect::<Vec<_>>().join(" · ");
    view! {
        <dl class="facts-list">
            {facts.interconnect.clone().map(|i| view! { <dt>"GPU links"</dt><dd class="interconnect">{i}</dd> }.into_any())}
            {facts.peer_access().map(|p| view! { <dt>"peer access"</dt><dd class="peer-access">{p}</dd> }.into_any())}
            {(!facts.gpus.is_empty()).then(|| view! {
                <dt>"GPUs"</dt>
                <dd><table class="gpus"><tbody>{gpus}</tbody></table></dd>
            }.into_any())}
            {topology.map(|t| view! { <dt>"topology"</dt><dd>{t}</dd> }.into_any())}
            {facts.driver.clone().map(|d| view! { <dt>"driver"</dt><dd>{d} {facts.cuda.clone().map(|c| format!(" · CUDA {c}"))}</dd> })}
            {facts.cpu_model.clone().map(|c| view! {
                <dt>"CPU"</dt>
                <dd>{c} {facts.sockets.map(|s| format!(" · {s} socket(s)"))} {facts.numa_nodes.map(|n| format!(" · {n} NUMA node(s)"))}</dd>
            })}
            {facts.python.clone().map(|p| view! { <dt>"python"</dt><dd>{p} {(!packages.is_empty()).then(|| format!(" · {packages}"))}</dd> })}
        </dl>
        {facts.notes.iter().map(|n| view! { <p class="notice">{n.clone()}</p> }).collect_view()}
        <p class="muted">"Captured " <crate::components::Time at=facts.captured_at.clone()/></p>
    }
    .into_any()
}
