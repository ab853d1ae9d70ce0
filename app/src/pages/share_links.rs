//! The owners' **Share…** panel in an investigation's header: view-only links
//! made (label, expiry, hosts hidden), listed and revoked.

use domain::error::ApiError;
use domain::model::short_time;
use domain::shares::{CreatedShareLink, LinkState, ShareLink};
use leptos::form::ActionForm;
use leptos::prelude::*;

#[server]
pub async fn create_share_link(
    investigation: String,
    label: String,
    expires: String,
    hide_hosts: Option<String>,
) -> Result<CreatedShareLink, ApiError> {
    let expires_in_days = match expires.as_str() {
        "never" => None,
        days => Some(days.parse().map_err(|_| ApiError::invalid(format!("Not a number of days: {days:?}.")))?),
    };
    let new = domain::shares::NewShareLink { label: Some(label), expires_in_days, hide_hosts: hide_hosts.is_some() };
    crate::backend::call(
        move |notebook, actor| async move { notebook.create_share_link(&actor, &investigation, new).await },
    )
    .await
}

#[server]
pub async fn revoke_share_link(id: i64) -> Result<ShareLink, ApiError> {
    crate::backend::call(move |notebook, actor| async move { notebook.revoke_share_link(&actor, id).await }).await
}

/// Owners' panel: create a link (label, expiry, hide hosts), see and revoke links.
#[component]
pub fn SharePanel(investigation: String, links: Vec<ShareLink>) -> impl IntoView {
    let revoke = ServerAction::<RevokeShareLink>::new();
    let count = links.iter().filter(|l| l.state == LinkState::Active).count();
    let any = !links.is_empty();
    let rows = links
        .into_iter()
        .rev()
        .map(|l| {
            let expires = l.expires_at.as_deref().map_or_else(|| "never".to_string(), short_time);
            let active = l.state == LinkState::Active;
            view! {
                <tr data-link=l.id data-state=l.state.as_str()>
                    <td>{if l.label.is_empty() { "(no label)".to_string() } else { l.label.clone() }}</td>
                    <td>{l.created_by.clone()} " · " <crate::components::Time at=l.created_at.clone()/></td>
                    <td>{expires}</td>
                    <td>{if l.hide_hosts { "hidden" } else { "shown" }}</td>
                    <td><span class=format!("tag link-{}", l.state.as_str())>{l.state.as_str()}</span></td>
                    <td>
                        {active.then(|| view! {
                            <ActionForm action=revoke attr:class="inline">
                                <input type="hidden" name="id" value=l.id/>
                                <button type="submit" class="danger quiet">"Revoke"</button>
                                <crate::components::ActionError action=revoke/>
                            </ActionForm>
                        })}
                    </td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <details class="inline-form share" id="share">
            <summary class="button">{format!("Share ({count})…")}</summary>
            <div class="popover">
            <NewShareLink investigation/>
            {any.then(|| view! {
                <table class="share-links">
                    <thead><tr><th>"Label"</th><th>"Created"</th><th>"Expires"</th><th>"Hosts"</th><th>"State"</th><th></th></tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            })}
            </div>
        </details>
    }
}

/// The form that makes a link, and the link it made: its URL is shown this
/// once and is in nothing the server renders later, so this is an island. The
/// page is drawn anew with the link in its list; the island, whose props did
/// not change, keeps its place and what it shows (`browser::islands`).
#[island]
fn NewShareLink(investigation: String) -> impl IntoView {
    let create = crate::components::island_action::<CreateShareLink>();
    let created = create.value();
    let form = crate::components::refresh_page_on_success(create);
    let fresh = move || {
        created.get().and_then(Result::ok).map(|link| {
            let url = absolute(&link.url);
            view! {
                <div class="notice created-link">
                    <p>"Copy this link now: it is shown only once. Add " <code>"#step-N"</code>
                        " or " <code>"#step-N-L130-L180"</code> " to point at a step or lines."</p>
                    <crate::components::LinkToCopy url label="The new link"/>
                </div>
            }
        })
    };
    view! {
        {fresh}
        <ActionForm node_ref=form action=create attr:class="stacked">
            <input type="hidden" name="investigation" value=investigation/>
            <div class="row">
                <label>"Label" <input name="label" maxlength="100" placeholder="for the vLLM maintainers"/></label>
                <label class="narrow">"Works for"
                    <select name="expires">
                        <option value="1">"1 day"</option>
                        <option value="7" selected=true>"7 days"</option>
                        <option value="30">"30 days"</option>
                        <option value="never">"until revoked"</option>
                    </select>
                </label>
            </div>
            <label class="check"><input type="checkbox" name="hide_hosts" value="on"/> " Hide host names and addresses"</label>
            <crate::components::ActionError action=create/>
            <div class="form-actions"><button type="submit" class="primary">"Create view-only link"</button></div>
        </ActionForm>
    }
}

/// The link with this server's origin (known in the browser; the island shows
/// links only after a click there).
pub(crate) fn absolute(path: &str) -> String {
    #[cfg(feature = "hydrate")]
    if let Ok(origin) = window().location().origin() {
        return format!("{origin}{path}");
    }
    path.to_string()
}
