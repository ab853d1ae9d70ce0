//! `sleuth run` from a terminal against `ssh -S <ControlMaster socket> host`,
//! the same command on the same loopback sshd, in one run:
//!
//! (a) a command that prints 200 MB of 100-byte lines, to /dev/null: the
//!     throughput ratio (goal >= 0.5x: output goes host → Sleuth → store →
//!     event → client, where ssh has one hop), and every byte arrives;
//! (b) `true`: the fixed cost of a step added, a run queued, followed and
//!     ended, against a ControlMaster session (the figure an engineer feels
//!     for a quick check).
//!
//! Prints medians and ratios. Needs Debian's openssh-server and openssh-client.

#[allow(dead_code)] // not every benchmark uses every part of the peer
mod peer;

use peer::{Peer, median, ms, quick};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `sleuth run …` against the server at `url`; its time, stdout's length and the run's number.
fn sleuth_run(url: &str, investigation: &str, command: &str) -> (Duration, u64, i64) {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_sleuth"))
        .args(["run", "--investigation", investigation, "--host", "bench", "--", command])
        .env("SLEUTH_URL", url)
        .env("HOME", std::env::temp_dir())
        .env("RUST_LOG", "warn")
        .output()
        .expect("sleuth run");
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "sleuth run {command}: {:?} {stderr}", out.status);
    let run = stderr.split("sleuth: run ").nth(1).and_then(|r| r.split(' ').next()).and_then(|n| n.parse().ok());
    (took, out.stdout.len() as u64, run.expect("sleuth run names its run"))
}

fn ssh_run(peer: &Peer, command: &str) -> (Duration, u64) {
    let started = Instant::now();
    let out = peer.via_master(command).stderr(Stdio::inherit()).output().expect("ssh");
    let took = started.elapsed();
    assert!(out.status.success(), "ssh {command}: {:?}", out.status);
    (took, out.stdout.len() as u64)
}

#[tokio::main]
async fn main() {
    let peer = Peer::start_with(None, false).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let url = format!("http://{}", listener.local_addr().expect("its address"));
    let app = server::app(peer.state.clone()).into_make_service_with_connect_info::<std::net::SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let investigation = peer.investigation.clone();

    // (a) throughput. The client is another process; this one serves.
    let mb: u64 = if quick() { 5 } else { 200 };
    let bytes = mb << 20;
    let lines = format!("head -c {} /dev/zero | tr '\\0' x | fold -w 99", bytes / 100 * 99);
    // `fold` adds no newline after the last line.
    let expected = bytes / 100 * 100 - 1;
    let rounds = if quick() { 1 } else { 3 };
    let (mut ours, mut theirs, mut runs) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (url, investigation, command) = (url.clone(), investigation.clone(), lines.clone());
        let (took, got, run) =
            tokio::task::spawn_blocking(move || sleuth_run(&url, &investigation, &command)).await.expect("client");
        assert_eq!(got, expected, "sleuth run wrote every byte of the output");
        ours.push(took);
        // How long the run itself took on the server, from the command's start
        // to its end: where the time goes (ingest, or the client behind it).
        let run = peer.state.notebook.run(&peer::Actor::local(), run).await.expect("the run");
        runs.push(Duration::from_millis(run.duration_ms.unwrap_or(0)));
        let (took, got) = ssh_run(&peer, &lines);
        assert_eq!(got, expected, "ssh wrote every byte");
        theirs.push(took);
    }
    let (ours, theirs, runs) = (median(ours), median(theirs), median(runs));
    let rate = |d: Duration| mb as f64 / d.as_secs_f64();
    println!("    the run itself (its command's start to its end, on the server): {:.0} ms", ms(runs));
    println!(
        "(a) {mb} MB of output: sleuth run {:.0} ms ({:.0} MB/s), ssh -S cm {:.0} ms ({:.0} MB/s): \
         throughput {:.2}x ssh (goal >= 0.5x)",
        ms(ours),
        rate(ours),
        ms(theirs),
        rate(theirs),
        theirs.as_secs_f64() / ours.as_secs_f64()
    );

    // (b) the fixed cost of a quick command.
    let n = if quick() { 2 } else { 15 };
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for _ in 0..n {
        let (url, investigation) = (url.clone(), investigation.clone());
        ours.push(
            tokio::task::spawn_blocking(move || sleuth_run(&url, &investigation, "true").0).await.expect("client"),
        );
        theirs.push(ssh_run(&peer, "true").0);
    }
    let (ours, theirs) = (median(ours), median(theirs));
    println!(
        "(b) `true`, median of {n}: sleuth run {:.0} ms (a new step, its run, followed to the end), \
         ssh -S cm {:.0} ms: {:.2}x",
        ms(ours),
        ms(theirs),
        ours.as_secs_f64() / theirs.as_secs_f64()
    );
}
