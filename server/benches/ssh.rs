//! Sleuth's pooled SSH runs against OpenSSH's client, same sshd, same run.
//!
//! (a) latency of running `true`: a Sleuth run (queue → channel on the pooled
//!     connection → exit → recorded) vs `ssh -S <ControlMaster socket> host true`
//!     vs a fresh `ssh host true`;
//! (b) ingesting 1 GB of output: a Sleuth run of `head -c 1000000000 /dev/zero`
//!     (every byte written to the run's output file) vs the same command through
//!     the ControlMaster into /dev/null, with the growth of this process's peak RSS;
//! (c) the same on PostgreSQL (a team server: every byte committed to the
//!     database), against a scratch cluster (`tools/pg-scratch`, or the one
//!     `SLEUTH_TEST_POSTGRES` names) — skipped, saying why, without PostgreSQL;
//! (d) on PostgreSQL again, output that does not compress much (random bytes in
//!     base64, 1 GB of text): zeros compress to nothing, real logs in between.
//!
//! Prints medians and ratios. Needs Debian's openssh-server and openssh-client.

#[allow(dead_code)] // not every benchmark uses every part of the peer
mod peer;

use domain::runs::RunRequest;
use domain::steps::{StepBody, command::CommandBody};
use peer::{Actor, Peer, Postgres, median, ms, quick, status_kb, timed};
use std::time::{Duration, Instant};

/// Runs the step once through Sleuth and waits for the run to finish.
async fn sleuth_run(peer: &Peer, step: i64) -> Duration {
    let (state, mut events) = (&peer.state, peer.live.subscribe());
    let started = Instant::now();
    let runs = state.notebook.start_runs(&Actor::local(), step, RunRequest::default()).await.expect("start");
    let id = runs[0].id;
    loop {
        let event = events.recv().await.expect("events");
        if event.run.id == id && event.run.status.is_finished() {
            assert_eq!(event.run.status.as_str(), "succeeded", "{:?}", event.run);
            return started.elapsed();
        }
    }
}

/// The same through the JSON API, as a script does it: `POST /steps/{id}/runs`,
/// then `GET /runs/{id}?wait=30`, which answers as soon as the run has ended.
async fn api_run(router: &axum::Router, step: i64) -> Duration {
    use tower::ServiceExt;
    let started = Instant::now();
    let post = axum::http::Request::post(format!("/api/v1/steps/{step}/runs"))
        .body(axum::body::Body::empty())
        .expect("request");
    let response = router.clone().oneshot(post).await.expect("infallible");
    let body = http_body_util::BodyExt::collect(response.into_body()).await.expect("body").to_bytes();
    let runs: serde_json::Value = serde_json::from_slice(&body).expect("runs");
    let id = runs[0]["id"].as_i64().expect("a run id");
    let wait = axum::http::Request::get(format!("/api/v1/runs/{id}?wait=30")).body(axum::body::Body::empty());
    let response = router.clone().oneshot(wait.expect("request")).await.expect("infallible");
    let body = http_body_util::BodyExt::collect(response.into_body()).await.expect("body").to_bytes();
    let run: serde_json::Value = serde_json::from_slice(&body).expect("the run");
    assert_eq!(run["status"], "succeeded", "{run}");
    started.elapsed()
}

fn command_step(command: &str) -> StepBody {
    StepBody::Command(CommandBody {
        host: "bench".into(),
        command: command.into(),
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
    })
}

#[tokio::main]
async fn main() {
    // Ingest alone: the search benchmark measures what indexing adds.
    let peer = Peer::start_with(None, false).await;
    let (state, notebook, investigation) = (&peer.state, peer.state.notebook.clone(), &peer.investigation);
    let actor = Actor::local();
    // Quick mode: the same paths on 10 MB and a few iterations.
    let (n, bytes) = if quick() { (3, 10_000_000_u64) } else { (20, 1_000_000_000) };
    let ingest = format!("head -c {bytes} /dev/zero");
    let size = if quick() { "10 MB (quick mode: not for perf.md)" } else { "1 GB" };
    let true_step = notebook.add_step(&actor, investigation, command_step("true")).await.expect("step").id;
    let gigabyte = notebook.add_step(&actor, investigation, command_step(&ingest)).await.expect("step").id;

    // (a) latency of `true`
    sleuth_run(&peer, true_step).await; // connects the pool
    let mut sleuth = Vec::new();
    for _ in 0..n {
        sleuth.push(sleuth_run(&peer, true_step).await);
    }
    let router = server::app(state.clone());
    let mut api = Vec::new();
    for _ in 0..n {
        api.push(api_run(&router, true_step).await);
    }
    let mut controlmaster = Vec::new();
    for _ in 0..n {
        controlmaster.push(timed(&mut peer.via_master("true")));
    }
    let mut fresh = Vec::new();
    for _ in 0..n / 2 {
        fresh.push(timed(&mut peer.fresh("true")));
    }
    let (s, a, c, f) = (median(sleuth), median(api), median(controlmaster), median(fresh));
    println!("(a) `true`, median of {n}:");
    println!("    Sleuth pooled run        {:8.1} ms", ms(s));
    println!(
        "    Sleuth via the API       {:8.1} ms   (POST, then GET ?wait=30) API / ControlMaster = {:.2}x (target <= 1.0)",
        ms(a),
        ms(a) / ms(c)
    );
    println!(
        "    ssh via ControlMaster    {:8.1} ms   Sleuth / ControlMaster = {:.2}x (target <= 1.0)",
        ms(c),
        ms(s) / ms(c)
    );
    println!(
        "    fresh ssh                {:8.1} ms   fresh / Sleuth = {:.2}x faster (target >= 2.5)",
        ms(f),
        ms(f) / ms(s)
    );

    // (b) 1 GB of output, to files (SQLite's server)
    println!("(b) {size} of output, SQLite (output in files):");
    ingest_vs_ssh(&peer, gigabyte, bytes, &ingest, 0.8).await;

    // (c) the same on PostgreSQL
    match Postgres::start() {
        Ok(postgres) => {
            let peer = Peer::start_with(Some(postgres.database().await), false).await;
            let step = command_step(&ingest);
            let gigabyte = peer.state.notebook.add_step(&actor, &peer.investigation, step).await.expect("step").id;
            sleuth_run(&peer, gigabyte).await; // connects the pool; a first ingest warms the cluster
            println!("(c) {size} of output, PostgreSQL (output committed to the database):");
            ingest_vs_ssh(&peer, gigabyte, bytes, &ingest, 0.5).await;
            let random = format!("head -c {} /dev/urandom | base64 -w 100", bytes / 4 * 3);
            let step = command_step(&random);
            let step = peer.state.notebook.add_step(&actor, &peer.investigation, step).await.expect("step").id;
            println!("(d) {size} of base64 text, PostgreSQL:");
            // Base64 makes 4 characters of 3 bytes, and `-w 100` a newline every 100.
            ingest_vs_ssh(&peer, step, bytes + bytes / 100, &random, 0.5).await;
        }
        Err(why) => println!("(c) PostgreSQL: skipped ({why})"),
    }
}

/// Sleuth ingesting the step's output vs OpenSSH's ControlMaster into /dev/null,
/// one after the other on the same sshd, and this process's peak RSS growth.
async fn ingest_vs_ssh(peer: &Peer, step: i64, bytes: u64, command: &str, target: f64) {
    let _ = std::fs::write("/proc/self/clear_refs", "5"); // resets the peak RSS counter
    let rss_before = status_kb("VmRSS:");
    let sleuth = sleuth_run(peer, step).await;
    let peak_growth = status_kb("VmHWM:").saturating_sub(rss_before);
    let ssh = timed(&mut peer.via_master(command));
    let rate = |d: Duration| bytes as f64 / 1e6 / d.as_secs_f64();
    println!("    Sleuth run               {:8.2} s  {:6.0} MB/s", sleuth.as_secs_f64(), rate(sleuth));
    println!(
        "    ssh via ControlMaster    {:8.2} s  {:6.0} MB/s   Sleuth / ssh throughput = {:.2}x (target >= {target})",
        ssh.as_secs_f64(),
        rate(ssh),
        rate(sleuth) / rate(ssh)
    );
    println!("    peak RSS growth during the Sleuth run: {} MB (target <= 64)", peak_growth / 1024);
}
