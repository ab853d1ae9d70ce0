//! `sleuth serve`: open the store, bind, serve until Ctrl-C or SIGTERM.

use crate::cli::ServeArgs;
use crate::db::{Backend, Database, Store};
use crate::notebook::Notebook;
use crate::output::Outputs;
use crate::router;
use crate::runs::{Live, Runner};
use crate::ssh::{KnownHosts, Pool};
use crate::state::AppState;
use leptos::config::{Env, LeptosOptions};
use std::path::Path;
use std::sync::Arc;

/// The bundle name the build produces: `pkg/sleuth.js`, `pkg/sleuth_bg.wasm`, `pkg/sleuth.css`.
pub const OUTPUT_NAME: &str = "sleuth";

/// How `serve` was asked to run.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// `--database`: where the store lives; `None` is SQLite in the data dir.
    pub database: Option<Database>,
    pub trust_on_first_use: bool,
    /// `--no-auth`: every request is the local admin (loopback only; checked by `run`).
    pub no_auth: bool,
    /// `--secure-cookies`: served over https (behind a proxy).
    pub secure_cookies: bool,
    /// No search index kept (the ssh benchmark measures ingest alone; the
    /// search benchmark measures what indexing costs it).
    pub no_search_index: bool,
    /// `--min-free`: the room new runs need (`None`: the default floor).
    pub min_free: Option<crate::operations::MinFree>,
    /// `--telemetry-linger`: how long a host's GPU sampler stays after its
    /// last run (`None`: [`crate::telemetry::sampler::LINGER`]).
    pub telemetry_linger: Option<std::time::Duration>,
    /// `--public-url`: where people open Sleuth; webhook messages link there.
    pub public_url: Option<String>,
    /// `--webhook-allow`: inside ranges webhooks may reach.
    pub webhook_allow: Vec<ipnet::IpNet>,
    /// `--watch-min-every`: the shortest watch schedule (`None`: the default).
    pub watch_min_every_s: Option<u64>,
}

/// A running Sleuth's state, and the handles under it that tools and
/// benchmarks watch (requests see only `state`).
pub struct Opened {
    pub state: AppState,
    pub store: Store,
    pub live: Arc<Live>,
    pub outputs: Outputs,
    /// For the shutdown: it drains the runs.
    pub runner: Arc<Runner>,
}

/// Everything a running Sleuth needs, from a data dir and a built site.
pub async fn state(data: &Path, site: &Path, options: Options) -> Result<AppState, crate::db::OpenError> {
    Ok(open(data, site, options).await?.state)
}

/// [`state`], with the handles under it.
pub async fn open(data: &Path, site: &Path, options: Options) -> Result<Opened, crate::db::OpenError> {
    crate::operations::set_data_dir(data);
    let trust_on_first_use = options.trust_on_first_use;
    // Known hosts and run output live here whichever store holds the rest.
    std::fs::create_dir_all(data)
        .map_err(|source| crate::db::OpenError::DataDir { path: data.display().to_string(), source })?;
    let database = options.database.clone().unwrap_or_else(|| Database::Sqlite(data.to_path_buf()));
    let store = Store::open(&database).await?;
    let known_hosts = KnownHosts::new(Arc::new(crate::hosts::keys::StoredKeys::new(store.clone())));
    import_known_hosts(&known_hosts, &data.join("known_hosts")).await;
    let pool = Arc::new(Pool::new(known_hosts, trust_on_first_use));
    let outputs = Outputs::for_store(&store, data.join("runs"));
    let live = Arc::new(Live::default());
    let runner = Arc::new(
        Runner::new(store.clone(), pool.clone(), live.clone(), outputs.clone(), !options.no_search_index)
            .with_floor(options.min_free)
            .with_telemetry_linger(options.telemetry_linger),
    );
    match store.backend() {
        // One server per SQLite file: whatever is unfinished was left by its
        // previous process.
        Backend::Sqlite => {
            match store.interrupt_unfinished_runs().await {
                Ok(ids) if !ids.is_empty() => {
                    tracing::warn!(?ids, "runs left open by the last server are now `interrupted`")
                }
                Ok(_) => {}
                Err(e) => tracing::error!("cannot mark unfinished runs: {e}"),
            }
            // Servers those runs (or earlier ones) left running on their hosts.
            let runner = runner.clone();
            tokio::spawn(async move { runner.stop_orphans().await });
        }
        // Replicas share the database: only runs whose replica stopped renewing
        // its lease are over (db/replicas.rs).
        Backend::Postgres => {
            if let Err(e) = store.renew_lease().await {
                tracing::error!("cannot take a replica lease: {e}");
            }
            runner.spawn_leases();
            // Output an older release kept in files; output an earlier process
            // held for a database that stayed away.
            crate::output::import_old_files(&store, &data.join("runs")).await;
            crate::output::held::replay(&store, &data.join("runs"), true).await;
            let orphans = runner.clone();
            tokio::spawn(async move { orphans.stop_orphans().await });
            crate::runs::bridge::spawn(&store, &live, &outputs);
        }
    }
    let leptos = LeptosOptions::builder()
        .output_name(OUTPUT_NAME)
        .site_root(site.to_string_lossy().as_ref())
        .site_pkg_dir("pkg")
        .env(Env::PROD)
        .build();
    let auth = Arc::new(crate::auth::Auth::new(store.clone(), options.no_auth, options.secure_cookies));
    let access = crate::policy::Access::new(store.clone());
    let index = runner.index();
    let watching = crate::watches::Settings {
        public_url: options.public_url.clone(),
        webhook_allow: options.webhook_allow.clone(),
        min_every_s: options.watch_min_every_s.unwrap_or(crate::watches::MIN_EVERY_S),
    };
    let notebook = Notebook::new(store.clone(), pool, runner.clone(), outputs.clone(), watching);
    let notebook = Arc::new(crate::guarded::Guarded::new(notebook, access, live.clone(), index, auth.clone()));
    let public_server_fns = crate::router::public_server_fns();
    // Watched steps run on their schedules (each firing claimed in the database).
    crate::watches::spawn(notebook.clone(), store.clone());
    Ok(Opened { state: AppState { notebook, leptos, auth, public_server_fns }, store, live, outputs, runner })
}

/// Host keys used to live in `DATA/known_hosts`; a data dir that still has the
/// file has its keys taken into the store once, and the file is renamed so that
/// nobody edits a file that no longer counts.
async fn import_known_hosts(known_hosts: &KnownHosts, file: &Path) {
    if !file.exists() {
        return;
    }
    match known_hosts.import(file).await {
        Ok(n) => {
            let moved = file.with_extension("imported");
            match std::fs::rename(file, &moved) {
                Ok(()) => tracing::info!(
                    "took {n} host keys from {} into the store; the file is now {}",
                    file.display(),
                    moved.display()
                ),
                Err(e) => tracing::warn!("took {n} host keys from {}, but cannot rename it: {e}", file.display()),
            }
        }
        Err(e) => tracing::error!("cannot take in the host keys of {}: {e}", file.display()),
    }
}

pub async fn run(args: ServeArgs) -> crate::error::Result<()> {
    use crate::error::{Context, Error};
    let bundle = args.site.join("pkg").join(format!("{OUTPUT_NAME}.js"));
    if !bundle.exists() {
        tracing::warn!(
            "{} is missing: pages will render but not become interactive. Build the site with `./dev build`.",
            bundle.display()
        );
    }
    if args.no_auth && !args.addr.ip().is_loopback() {
        return Err(Error::usage(format!(
            "--no-auth lets anyone who can reach {} run commands on your hosts; it is allowed on 127.0.0.1 / ::1 only.",
            args.addr
        )));
    }
    let database =
        Database::from_flag(args.database.as_deref(), &args.data).map_err(|e| Error::usage(e.to_string()))?;
    let described = database.describe();
    let options = Options {
        database: Some(database),
        trust_on_first_use: args.trust_on_first_use,
        no_auth: args.no_auth,
        secure_cookies: args.secure_cookies,
        no_search_index: false,
        min_free: args.min_free,
        telemetry_linger: Some(std::time::Duration::from_secs(args.telemetry_linger)),
        webhook_allow: crate::watches::webhook::parse_allow(args.webhook_allow.as_deref().unwrap_or(""))
            .map_err(|e| Error::usage(format!("--webhook-allow: {e}")))?,
        watch_min_every_s: Some(args.watch_min_every.max(1)),
        public_url: match args.public_url.as_deref() {
            Some(url) => Some(crate::watches::base_url(url).ok_or_else(|| {
                Error::usage(format!("--public-url is where people open Sleuth, an http(s):// URL; not {url:?}"))
            })?),
            None => None,
        },
    };
    let Opened { state, live, runner, .. } = open(&args.data, &args.site, options).await.context("starting")?;
    let grace = std::time::Duration::from_secs(args.shutdown_grace);
    let listener = tokio::net::TcpListener::bind(args.addr).await.context(format!("listening on {}", args.addr))?;
    let local = listener.local_addr().context("the address listened on")?;
    // Tests and scripts read this line to find the port when --addr ends in :0.
    println!("Sleuth is running at http://{local}/ (store: {described}; run output in {})", args.data.display());
    match state.auth.setup_token_if_empty().await {
        Ok(Some(token)) => println!(
            "No users yet. Create the first admin at http://{local}/setup?token={token} \
             (this link works once; or run `sleuth user add NAME --admin --password-stdin`)."
        ),
        Ok(None) if args.no_auth => println!("--no-auth: every request is the local admin."),
        Ok(None) => {}
        Err(e) => return Err(e),
    }
    crate::listen::serve(listener, router::app(state), async move {
        shutdown_signal().await;
        // Pages keep being served meanwhile: viewers see the runs end.
        let ended = runner.drain(grace).await;
        if ended > 0 {
            tracing::warn!("{ended} runs were still going after the {} s grace and are `interrupted`", grace.as_secs());
        }
        // Open event streams would hold the shutdown forever.
        live.close();
    })
    .await
    .context("serving")
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
