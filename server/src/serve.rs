//! `sleuth serve`: open the store, bind, serve until Ctrl-C or SIGTERM.

use crate::cli::ServeArgs;
use crate::notebook::Service;
use crate::runs::{Live, Runner};
use crate::ssh::{KnownHosts, Pool};
use crate::state::AppState;
use crate::{db::Store, router};
use leptos::config::{Env, LeptosOptions};
use std::path::Path;
use std::sync::Arc;

/// The bundle name the build produces: `pkg/sleuth.js`, `pkg/sleuth_bg.wasm`, `pkg/sleuth.css`.
pub const OUTPUT_NAME: &str = "sleuth";

/// Everything a running Sleuth needs, from a data dir and a built site.
pub async fn state(data: &Path, site: &Path, trust_on_first_use: bool) -> Result<AppState, crate::db::OpenError> {
    let store = Store::open(data).await?;
    match store.interrupt_unfinished_runs().await {
        Ok(ids) if !ids.is_empty() => tracing::warn!(?ids, "runs left open by the last server are now `interrupted`"),
        Ok(_) => {}
        Err(e) => tracing::error!("cannot mark unfinished runs: {e}"),
    }
    let pool = Arc::new(Pool::new(KnownHosts::new(data.join("known_hosts")), trust_on_first_use));
    let runner = Arc::new(Runner::new(store.clone(), pool.clone(), Arc::new(Live::default()), data.join("runs")));
    let leptos = LeptosOptions::builder()
        .output_name(OUTPUT_NAME)
        .site_root(site.to_string_lossy().as_ref())
        .site_pkg_dir("pkg")
        .env(Env::PROD)
        .build();
    Ok(AppState { notebook: Arc::new(Service::new(store, pool, runner.clone())), runner, leptos })
}

pub async fn run(args: ServeArgs) -> Result<(), String> {
    let bundle = args.site.join("pkg").join(format!("{OUTPUT_NAME}.js"));
    if !bundle.exists() {
        tracing::warn!(
            "{} is missing: pages will render but not become interactive. Build the site with `./dev build`.",
            bundle.display()
        );
    }
    let state = state(&args.data, &args.site, args.trust_on_first_use).await.map_err(|e| e.to_string())?;
    let listener =
        tokio::net::TcpListener::bind(args.addr).await.map_err(|e| format!("cannot listen on {}: {e}", args.addr))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    // Tests and scripts read this line to find the port when --addr ends in :0.
    println!("Sleuth is running at http://{local}/ (data in {})", args.data.display());
    let live = state.runner.live().clone();
    axum::serve(listener, router::app(state))
        .with_graceful_shutdown(async move {
            shutdown_signal().await;
            // Open event streams would hold the shutdown forever.
            live.close();
        })
        .await
        .map_err(|e| format!("server error: {e}"))
}

async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!("cannot listen for Ctrl-C: {e}");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut sigterm) => {
                sigterm.recv().await;
            }
            Err(e) => {
                tracing::error!("cannot listen for SIGTERM: {e}");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
    tracing::info!("shutting down");
}
