//! Every route Sleuth serves, one per line.

use crate::handlers::{self, health, investigations, steps};
use crate::state::AppState;
use app::{App, model::limits, shell};
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::get;
use leptos::prelude::provide_context;
use leptos_axum::{LeptosRoutes, generate_route_list};
use tower_http::trace::TraceLayer;

pub fn app(state: AppState) -> Router {
    let api = Router::new()
        .route(
            "/investigations",
            get(investigations::list).post(investigations::create),
        )
        .route(
            "/investigations/{id}",
            get(investigations::show)
                .patch(investigations::update)
                .delete(investigations::delete),
        )
        .route(
            "/investigations/{id}/steps",
            axum::routing::post(steps::create),
        )
        .route(
            "/steps/{step_id}",
            get(steps::show).patch(steps::update).delete(steps::delete),
        )
        .fallback(handlers::not_found)
        .method_not_allowed_fallback(handlers::method_not_allowed);

    // Pages and server functions see the same notebook as the API.
    let notebook = state.notebook.clone();
    let context = move || provide_context(notebook.clone());
    let leptos = state.leptos.clone();

    Router::new()
        .route("/healthz", get(health::check))
        .nest("/api/v1", api)
        .leptos_routes_with_context(&state, generate_route_list(App), context, move || {
            shell(leptos.clone())
        })
        .fallback(leptos_axum::file_and_error_handler::<AppState, _>(shell))
        .layer(DefaultBodyLimit::max(limits::REQUEST_BYTES))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}
