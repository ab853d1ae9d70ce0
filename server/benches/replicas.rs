//! Live output across replicas: how far behind the host a viewer on another
//! replica sees a run's output, against a viewer on the replica that drives it,
//! in the same run.
//!
//! Two Sleuths on one PostgreSQL database (a scratch cluster, or the one
//! `SLEUTH_TEST_POSTGRES` names), each with its own store pool, listener, live
//! state and data dir: A drives a run that prints a line every 50 ms stamped
//! with the host's clock (`date +%s%N`; host and viewers share this machine's
//! clock); one viewer follows the run's SSE stream on A, one on B (which learns
//! of the output through NOTIFY and reads the bytes from the database). Each
//! line's delay is arrival time minus its stamp. Prints p50/p99 for both and
//! B − A (what crossing replicas costs).
//!
//! `SLEUTH_BENCH_QUICK=1`: 20 lines instead of 200.

#[allow(dead_code)] // not every benchmark uses every part of the peer
mod peer;

use domain::runs::RunRequest;
use domain::steps::{StepBody, command::CommandBody};
use http_body_util::BodyExt;
use peer::{Actor, Peer, Postgres, quick};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tower::ServiceExt;

fn now_ns() -> i128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i128)
}

/// Follows the run's output stream on `router` and returns each marked line's
/// delay behind the host (by line number), until the stream ends.
async fn follow(router: axum::Router, run: i64) -> Vec<(u32, Duration)> {
    let request = axum::http::Request::get(format!("/api/v1/runs/{run}/stream?offset=0"))
        .body(axum::body::Body::empty())
        .expect("request");
    let response = router.oneshot(request).await.expect("infallible");
    let mut body = response.into_body();
    let mut delays = Vec::new();
    let mut pending = String::new();
    while let Some(Ok(frame)) = body.frame().await {
        let Some(data) = frame.data_ref() else { continue };
        let arrived = now_ns();
        pending.push_str(&String::from_utf8_lossy(data));
        while let Some(end) = pending.find('\n') {
            let line: String = pending.drain(..=end).collect();
            let mut words = line.trim_end().strip_prefix("data: ").unwrap_or("").split(' ');
            if let (Some("mark"), Some(i), Some(stamp)) = (words.next(), words.next(), words.next())
                && let (Ok(i), Ok(stamp)) = (i.parse(), stamp.parse::<i128>())
            {
                delays.push((i, Duration::from_nanos(u64::try_from(arrived - stamp).unwrap_or(0))));
            }
        }
    }
    delays
}

fn percentile(delays: &[Duration], p: f64) -> Duration {
    let mut sorted = delays.to_vec();
    sorted.sort();
    sorted.get(((sorted.len() as f64 - 1.0) * p).round() as usize).copied().unwrap_or_default()
}

#[tokio::main]
async fn main() {
    let postgres = match Postgres::start() {
        Ok(postgres) => postgres,
        Err(why) => {
            println!("cross-replica live delay: skipped ({why})");
            return;
        }
    };
    let database = postgres.database().await;
    let a = Peer::start_on(Some(database.clone())).await;
    let b_dir = tempfile::tempdir().expect("temp dir");
    let b = Peer::sleuth(&b_dir.path().join("data"), &b_dir.path().join("site"), Some(database)).await;
    let lines = if quick() { 20 } else { 200 };
    let command = format!("for i in $(seq 1 {lines}); do echo \"mark $i $(date +%s%N)\"; sleep 0.05; done");
    let step = StepBody::Command(CommandBody {
        host: "bench".into(),
        command,
        env: Default::default(),
        cwd: None,
        timeout_s: None,
        matrix: Default::default(),
        // Sleuth's own path, as before telemetry; its cost is measured apart.
        telemetry: false,
        server: None,
        artifacts: Vec::new(),
        artifact_limits: None,
        output_limit_bytes: None,
        patch: None,
    });
    let actor = Actor::local();
    let step = a.state.notebook.add_step(&actor, &a.investigation, step).await.expect("step").id;
    // A first run connects the pool and captures the host's facts.
    let warm = a.state.notebook.start_runs(&actor, step, RunRequest::default()).await.expect("start")[0].id;
    follow(server::app(a.state.clone()), warm).await;

    let run = a.state.notebook.start_runs(&actor, step, RunRequest::default()).await.expect("start")[0].id;
    let on_a = tokio::spawn(follow(server::app(a.state.clone()), run));
    let on_b = tokio::spawn(follow(server::app(b.clone()), run));
    let (on_a, on_b) = (on_a.await.expect("viewer on A"), on_b.await.expect("viewer on B"));
    assert_eq!(on_a.len(), lines as usize, "every line reached the viewer on A");
    assert_eq!(on_b.len(), lines as usize, "every line reached the viewer on B");
    // The first lines may be replayed from the store when a viewer connects late.
    let settle = |d: &[(u32, Duration)]| d.iter().filter(|(i, _)| *i > 5).map(|(_, d)| *d).collect::<Vec<_>>();
    let (a_delays, b_delays) = (settle(&on_a), settle(&on_b));
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "live output delay behind the host, {} lines at 20 lines/s{}:",
        a_delays.len(),
        if quick() { " (quick mode: not for perf.md)" } else { "" }
    );
    println!(
        "    viewer on A (drives the run)   p50 {:7.1} ms   p99 {:7.1} ms",
        ms(percentile(&a_delays, 0.5)),
        ms(percentile(&a_delays, 0.99))
    );
    println!(
        "    viewer on B (other replica)    p50 {:7.1} ms   p99 {:7.1} ms (target p99 <= 250)",
        ms(percentile(&b_delays, 0.5)),
        ms(percentile(&b_delays, 0.99))
    );
    println!(
        "    B - A                          p50 {:+7.1} ms   p99 {:+7.1} ms",
        ms(percentile(&b_delays, 0.5)) - ms(percentile(&a_delays, 0.5)),
        ms(percentile(&b_delays, 0.99)) - ms(percentile(&a_delays, 0.99))
    );
}
