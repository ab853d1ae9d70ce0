//! `/s/{token}`: one investigation as a view-only share link shows it, to
//! anyone who has the link, without an account and without any form.

use domain::error::ApiError;
use domain::model::SharedView;
use domain::model::short_time;
use leptos::prelude::*;
use leptos_meta::Meta;
use leptos_router::hooks::use_params_map;

/// Reachable without signing in (the token is the right to read).
#[server(endpoint = "shared_investigation")]
pub async fn shared_investigation(token: String, steps: String) -> Result<SharedView, ApiError> {
    let window = domain::model::StepWindow::parse(&steps);
    crate::backend::call_public(move |notebook| async move { notebook.shared(&token, Some(&window)).await }).await
}

#[component]
pub fn SharedPage() -> impl IntoView {
    let params = use_params_map();
    let token = params.with_untracked(|p| p.get("token").unwrap_or_default());
    let shown = super::shown::Shown::provide();
    provide_context(super::Outsider);
    let export = format!("/api/v1/shared/{token}/export");
    let asked = token.clone();
    let shared = Resource::new(move || (), move |_| shared_investigation(asked.clone(), shown.window.query()));
    view! {
        // The token is in the URL: keep it out of search engines and out of the
        // Referer header of links the notes point to.
        <Meta name="robots" content="noindex"/>
        <Meta name="referrer" content="no-referrer"/>
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
                {move || {
                    let (export, token) = (export.clone(), token.clone());
                    Suspend::new(async move {
                        super::or_error(shared.await.map(|view| {
                            let notice = terms(&view);
                            // Whole output and files through the link's own routes,
                            // unless it hides hosts (see `RunFiles`).
                            let files = (!view.hide_hosts).then(|| format!("/api/v1/shared/{token}/runs"));
                            provide_context(crate::steps::command::RunFiles(files));
                            view! { <super::investigation::InvestigationView inv=view.investigation notice export/> }
                        }))
                    })
                }}
        </Suspense>
    }
}

/// "A view-only link shared by ada · until … · host addresses hidden".
fn terms(view: &SharedView) -> String {
    let mut text = format!("A view-only link shared by {}", view.shared_by);
    text.push_str(&match &view.expires_at {
        Some(at) => format!(", working until {}", short_time(at)),
        None => ", with no expiry".into(),
    });
    if view.hide_hosts {
        text.push_str("; host names and addresses are hidden");
    }
    text.push('.');
    text
}
