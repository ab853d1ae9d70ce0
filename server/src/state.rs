use crate::guarded::Guarded;
use axum::extract::FromRef;
use leptos::config::LeptosOptions;
use std::sync::Arc;

/// What every request can reach: the notebook only through its policy layer
/// (there is no runner, store or access check here to reach around it), and
/// accounts for signing in.
#[derive(Clone)]
pub struct AppState {
    pub notebook: Arc<Guarded>,
    pub leptos: LeptosOptions,
    /// Accounts, sessions, API tokens (see `crate::auth`).
    pub auth: Arc<crate::auth::Auth>,
    /// The server functions anyone may call (`router::public_server_fns`).
    pub public_server_fns: [&'static str; 4],
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos.clone()
    }
}
