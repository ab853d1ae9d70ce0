//! Every route Sleuth serves: the API, merged from each resource's own
//! `routes()` (atuin-server's `router.rs` does the same), then sign-in, the
//! pages and the built files.

use crate::handlers::{
    self, annotations, audit, auth, comments, extract, health, highlight, hosts, hypotheses, investigations,
    measurements, replays, runs, search, shares, steps, users, watches,
};
use crate::openapi::{self, Routes};
use crate::state::AppState;
use app::{App, shell};
use axum::Router;
use axum::body::Body;
use axum::extract::DefaultBodyLimit;
use axum::http::Request;
use domain::model::limits;
use leptos::prelude::provide_context;
use leptos_axum::{AxumRouteListing, LeptosRoutes, generate_route_list};
use std::convert::Infallible;
use std::sync::OnceLock;
use tower::Service;
use tower_http::services::ServeDir;
use tower_http::trace::TraceLayer;

/// Every request's span: a number (to find all its lines), the method and the
/// path only, with share-link tokens cut: a log line must hold nothing that
/// grants access (the setup link's `?token=`, a share link's `/s/{token}`).
/// At info level, so an error logged while answering (`crate::error`) says
/// which request it was.
fn request_span(request: &Request<Body>) -> tracing::Span {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    tracing::info_span!("request", n, method = %request.method(), path = %loggable_path(request.uri().path()))
}

pub fn loggable_path(path: &str) -> String {
    for prefix in ["/s/", "/api/v1/shared/"] {
        if let Some(rest) = path.strip_prefix(prefix)
            && !rest.is_empty()
        {
            return format!("{prefix}…");
        }
    }
    path.to_string()
}

/// Every API route, by resource: each handler module says its own
/// (`routes()`), documented by construction (`openapi::Routes`).
pub fn api_routes() -> Routes {
    Routes::default()
        .merge(openapi::routes())
        .merge(investigations::routes())
        .merge(steps::routes())
        .merge(comments::routes())
        .merge(shares::routes())
        .merge(search::routes())
        .merge(runs::routes())
        .merge(measurements::routes())
        .merge(hypotheses::routes())
        .merge(replays::routes())
        .merge(watches::routes())
        .merge(annotations::routes())
        .merge(extract::routes())
        .merge(audit::routes())
        .merge(users::routes())
        .merge(hosts::routes())
        .merge(health::routes())
}

pub fn app(state: AppState) -> Router {
    let api = api_routes().into_router();
    let mut document = aide::openapi::OpenApi::default();
    let api = api.finish_api(&mut document);
    let document = openapi::Document::of(openapi::finish(document, "/api/v1"));
    let api = api
        .layer(axum::Extension(document))
        .fallback(handlers::not_found)
        .method_not_allowed_fallback(handlers::method_not_allowed);

    // Pages and server functions see the same notebook as the API.
    let notebook: std::sync::Arc<dyn domain::ports::Notebook> = state.notebook.clone();
    let accounts: std::sync::Arc<dyn domain::ports::Accounts> = state.notebook.clone();
    let context = move || {
        provide_context(notebook.clone());
        provide_context(accounts.clone());
        crate::headers::provide_page_policy();
    };
    let leptos = state.leptos.clone();

    // The built site (bundle, CSS, public/), and the app's 404 page for anything else.
    // Not `leptos_axum::file_and_error_handler`: it turns every non-200 file response
    // into the 404 page, so a browser revalidating its cached bundle (304) got a 404
    // and the page never hydrated.
    let not_found = {
        let leptos = leptos.clone();
        let render = leptos_axum::render_app_to_stream_with_context(context.clone(), move || shell(leptos.clone()));
        tower::service_fn(move |request: Request<Body>| {
            let render = render.clone();
            async move { Ok::<_, Infallible>(render(request).await) }
        })
    };
    let files =
        ServeDir::new(&*state.leptos.site_root).precompressed_gzip().precompressed_br().fallback(not_found.clone());
    // A path no file can have (a name longer than NAME_MAX, a NUL) is an error
    // from `open` that ServeDir answers with 500: it names no file, so it gets
    // the 404 page.
    let static_files = tower::service_fn(move |request: Request<Body>| {
        let (mut files, mut not_found) = (files.clone(), not_found.clone());
        async move {
            let mut retry = Request::new(Body::empty());
            *retry.method_mut() = request.method().clone();
            *retry.uri_mut() = request.uri().clone();
            *retry.headers_mut() = request.headers().clone();
            let response = files.call(request).await?;
            if response.status().is_server_error() {
                tracing::debug!(path = %loggable_path(retry.uri().path()), status = %response.status(), "no such file");
                return not_found.call(retry).await;
            }
            Ok(response.map(Body::new))
        }
    });

    Router::new()
        .route("/healthz", axum::routing::get(health::check))
        .route("/metrics", axum::routing::get(health::metrics))
        .route("/auth/login", axum::routing::post(auth::sign_in))
        .route("/auth/logout", axum::routing::post(auth::sign_out))
        .route("/auth/setup", axum::routing::post(auth::setup))
        .route("/auth/welcome", axum::routing::post(auth::welcome))
        .route("/highlight.css", axum::routing::get(highlight::stylesheet_css))
        .nest("/api/v1", api)
        .leptos_routes_with_context(&state, page_routes(), context, move || shell(leptos.clone()))
        .fallback_service(static_files)
        // Who is asking, and refusing cross-site changes: before anything else runs.
        .layer(axum::middleware::from_fn_with_state(state.clone(), crate::auth::middleware::guard))
        // Before the guard, which reads sessions: while the database is away.
        .layer(axum::middleware::from_fn_with_state(state.clone(), crate::handlers::health::refuse_while_unreachable))
        .layer(DefaultBodyLimit::max(limits::REQUEST_BYTES))
        .layer(axum::middleware::from_fn(crate::error::server_fn_status))
        .layer(axum::middleware::from_fn(crate::headers::secure))
        .layer(TraceLayer::new_for_http().make_span_with(request_span))
        .with_state(state)
}

/// The server functions reachable without signing in (`auth::middleware`
/// reads them from `AppState`): those that tell the sign-in, setup and share
/// pages whether their link works.
pub(crate) fn public_server_fns() -> [&'static str; 4] {
    use leptos::server_fn::ServerFn;
    [
        <app::pages::shared::SharedInvestigation as ServerFn>::PATH,
        <app::pages::accounts::SignInLinkFor as ServerFn>::PATH,
        <app::pages::accounts::SetupLinkWorks as ServerFn>::PATH,
        <app::pages::accounts::AwaitingSetup as ServerFn>::PATH,
    ]
}

/// The app's page routes, worked out once per process. leptos finds them by
/// running the app with resource loading suppressed through a process-global
/// flag, and a page whose data starts loading meanwhile waits for it forever
/// (leptos-rs/leptos#4773): with a router built per test, a page render in one
/// test hung while another test built its router.
fn page_routes() -> Vec<AxumRouteListing> {
    static ROUTES: OnceLock<Vec<AxumRouteListing>> = OnceLock::new();
    ROUTES.get_or_init(|| generate_route_list(App)).clone()
}

#[cfg(test)]
mod tests {
    #[test]
    fn logged_paths_hold_no_share_tokens() {
        assert_eq!(super::loggable_path("/s/abcDEF123_-"), "/s/…");
        assert_eq!(super::loggable_path("/api/v1/shared/abc"), "/api/v1/shared/…");
        assert_eq!(super::loggable_path("/i/abc"), "/i/abc");
    }
}
