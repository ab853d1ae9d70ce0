//! Accepting connections, so that nobody can wear the server down by
//! holding them: a request's head must arrive within [`HEADER_WITHIN`] (a
//! connection that never finishes one is closed; so is a kept-alive one that
//! sends nothing), and one client address holds at most [`PER_ADDRESS`]
//! connections at once (more are closed at once). On shutdown, no more are
//! accepted and those open finish what they are doing. axum's own `serve`
//! sets no header timeout (hyper's needs a timer), hence this loop.

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tower::Service;

/// How long a request's head may take to arrive (and an idle kept-alive
/// connection may stay).
pub const HEADER_WITHIN: Duration = Duration::from_secs(20);
/// Connections one client address may hold at once (a proxy in front holds
/// them for everyone: raise it with `SLEUTH_CONNECTIONS_PER_ADDRESS`).
pub const PER_ADDRESS: usize = 512;
/// How long open connections may take to finish once the server stops.
const FINISH_WITHIN: Duration = Duration::from_secs(10);

/// Connections open now, for `/metrics`.
static OPEN: AtomicUsize = AtomicUsize::new(0);

pub fn open_connections() -> usize {
    OPEN.load(Ordering::Relaxed)
}

/// One client address's connection, counted while it lives.
struct Slot {
    counts: Arc<Mutex<HashMap<IpAddr, usize>>>,
    ip: IpAddr,
}

impl Slot {
    fn take(counts: &Arc<Mutex<HashMap<IpAddr, usize>>>, ip: IpAddr, most: usize) -> Option<Self> {
        let mut map = counts.lock().ok()?;
        let n = map.entry(ip).or_default();
        if *n >= most {
            return None;
        }
        *n += 1;
        OPEN.fetch_add(1, Ordering::Relaxed);
        Some(Self { counts: counts.clone(), ip })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        OPEN.fetch_sub(1, Ordering::Relaxed);
        if let Ok(mut map) = self.counts.lock()
            && let Some(n) = map.get_mut(&self.ip)
        {
            *n -= 1;
            if *n == 0 {
                map.remove(&self.ip);
            }
        }
    }
}

/// Serves `app` on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    shutdown: impl std::future::Future<Output = ()>,
) -> std::io::Result<()> {
    let most = std::env::var("SLEUTH_CONNECTIONS_PER_ADDRESS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(PER_ADDRESS)
        .max(1);
    let mut builder = Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(HEADER_WITHIN);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let counts: Arc<Mutex<HashMap<IpAddr, usize>>> = Arc::default();
    let mut make = app.into_make_service_with_connect_info::<SocketAddr>();
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors, most often: wait for some to close.
                    tracing::warn!("cannot accept a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Some(slot) = Slot::take(&counts, peer.ip(), most) else {
            tracing::debug!(%peer, "closed: {most} connections from this address already");
            continue;
        };
        let _ = stream.set_nodelay(true);
        let Ok(service) = make.call(peer).await;
        let connection =
            builder.serve_connection_with_upgrades(TokioIo::new(stream), TowerToHyperService::new(service));
        let connection = graceful.watch(connection.into_owned());
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(%peer, "connection: {e}");
            }
            drop(slot);
        });
    }
    drop(listener);
    if tokio::time::timeout(FINISH_WITHIN, graceful.shutdown()).await.is_err() {
        tracing::warn!("connections still open {} s after the shutdown; leaving them", FINISH_WITHIN.as_secs());
    }
    Ok(())
}
