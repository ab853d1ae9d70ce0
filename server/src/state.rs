use app::backend::Notebook;
use axum::extract::FromRef;
use leptos::config::LeptosOptions;
use std::sync::Arc;

/// What every request can reach.
#[derive(Clone)]
pub struct AppState {
    pub notebook: Arc<dyn Notebook>,
    /// Run output and live progress, for the streaming and download routes.
    pub runner: Arc<crate::runs::Runner>,
    pub leptos: LeptosOptions,
    /// Accounts, sessions, API tokens (see `crate::auth`).
    pub auth: Arc<crate::auth::Auth>,
    /// Roles, for the few routes that do not go through the notebook (event streams).
    pub access: crate::auth::access::Access,
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos.clone()
    }
}
