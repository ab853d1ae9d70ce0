//! Serving experiments' costs, each against a peer in the same run:
//!
//! (a) a run of `true` with GPU telemetry on, on a host whose `nvidia-smi` (a
//!     fake, first in the run's PATH) takes ~80 ms to start as the real one
//!     does, vs `ssh -S <ControlMaster socket> host true` (goal <= 1.2x) and vs
//!     the same run with telemetry off (goal <= 1.1x): the host's one sampler
//!     must stay off the run's critical path; with a bare login shell, and with
//!     one that does ~130 ms of CPU work first (a conda init);
//! (b) how long after a server starts answering `/health` with 200 Sleuth
//!     notices (goal <= 100 ms): `tools/fake-vllm/serve.py --ready-file` writes
//!     the moment it flips, the run's `server.ready_at` says when Sleuth saw it;
//! (c) fetching a 1 GB artifact over SFTP vs `scp` of the same file over the
//!     same ControlMaster (goal >= 0.8x throughput), with this process's peak
//!     RSS growth (bounded: the file is never held whole).
//!
//! Prints medians and ratios. Needs Debian's openssh-server and openssh-client.

#[allow(dead_code)] // not every benchmark uses every part of the peer
mod peer;

use domain::runs::{Run, RunRequest};
use domain::steps::{StepBody, command::CommandBody};
use peer::{Actor, Peer, median, ms, quick, status_kb, timed};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Runs the step once and waits for the run to finish; its time and the run.
async fn sleuth_run(peer: &Peer, step: i64) -> (Duration, Run) {
    let (state, mut events) = (&peer.state, peer.live.subscribe());
    let started = Instant::now();
    let runs = state.notebook.start_runs(&Actor::local(), step, RunRequest::default()).await.expect("start");
    let id = runs[0].id;
    loop {
        let event = events.recv().await.expect("events");
        if event.run.id == id && event.run.status.is_finished() {
            let took = started.elapsed();
            // As the API answers it (with its artifacts).
            let mut run = state.notebook.run(&Actor::local(), id).await.expect("the run");
            assert_eq!(run.status.as_str(), "succeeded", "{run:?}");
            // Untimed: what is stored just after the end (the telemetry chart)
            // is off the run's critical path, and on two cores it would
            // otherwise be timed as part of the next run.
            while run.telemetry && !run.telemetry_drawn {
                tokio::time::sleep(Duration::from_millis(5)).await;
                run = state.notebook.run(&Actor::local(), id).await.expect("the run");
            }
            return (took, run);
        }
    }
}

fn step(command: &str, env: BTreeMap<String, String>, telemetry: bool) -> CommandBody {
    CommandBody {
        host: "bench".into(),
        command: command.into(),
        env,
        cwd: None,
        timeout_s: None,
        matrix: Default::default(),
        telemetry,
        server: None,
        artifacts: Vec::new(),
        artifact_limits: None,
        output_limit_bytes: None,
        patch: None,
    }
}

async fn add(peer: &Peer, body: CommandBody) -> i64 {
    let notebook = &peer.state.notebook;
    notebook.add_step(&Actor::local(), &peer.investigation, StepBody::Command(body)).await.expect("step").id
}

/// A fake `nvidia-smi` that starts as slowly as the real one (~80 ms) and then
/// samples as `-lms` and `dmon` do (the fixtures over and over), until it is stopped.
fn slow_nvidia_smi(dir: &std::path::Path) -> std::path::PathBuf {
    let bin = dir.join("fakebin");
    std::fs::create_dir_all(&bin).expect("fakebin");
    let fixtures = server::fixtures::dir().join("gpu-host-h200");
    let script = format!(
        "#!/bin/sh\nsleep 0.08\ncase \"$*\" in\n*dmon*) f='{}' ;;\n*) f='{}' ;;\nesac\n\
         while :; do while IFS= read -r line; do printf '%s\\n' \"$line\"; sleep 0.05; done < \"$f\"; done\n",
        fixtures.join("nvidia-smi-dmon.txt").display(),
        fixtures.join("nvidia-smi-query-loop.csv").display()
    );
    let path = bin.join("nvidia-smi");
    std::fs::write(&path, script).expect("nvidia-smi");
    std::process::Command::new("chmod").arg("+x").arg(&path).status().expect("chmod");
    bin
}

/// CPU work every session's shell does first, as a conda or pyenv init does.
const SLOW_LOGIN: &str = "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done\n";

fn rfc3339_secs(text: &str) -> f64 {
    let t = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).expect("RFC 3339");
    t.unix_timestamp_nanos() as f64 / 1e9
}

#[tokio::main]
async fn main() {
    let peer = Peer::start_with(None, false).await;
    let n = if quick() { 3 } else { 20 };
    let dir = tempfile::tempdir().expect("temp dir");

    // (a) `true` with telemetry on, on a host with a slow nvidia-smi.
    let bin = slow_nvidia_smi(dir.path());
    let path = BTreeMap::from([("PATH".to_string(), format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display()))]);
    let on = add(&peer, step("true", path.clone(), true)).await;
    let off = add(&peer, step("true", path, false)).await;
    sleuth_run(&peer, off).await; // connects the pool
    // bash's `$BASH_ENV` stands in for a conda/pyenv init: a CPU-bound loop,
    // ~130 ms on this machine's cores, run by every session's shell.
    let logins = [("a bare login shell", ""), ("a login shell doing ~130 ms of CPU work", SLOW_LOGIN)];
    for (login, script) in logins {
        peer.sshd.set_login(script);
        let (mut with, mut without, mut master) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..n {
            with.push(sleuth_run(&peer, on).await.0);
            without.push(sleuth_run(&peer, off).await.0);
            master.push(timed(&mut peer.via_master("true")));
        }
        let (w, o, m) = (median(with), median(without), median(master));
        println!("(a) `true`, median of {n}, {login} (nvidia-smi starts in 80 ms):");
        println!(
            "    Sleuth, telemetry on     {:8.1} ms   on / ControlMaster = {:.2}x (target <= 1.2)   on / off = {:.2}x (target <= 1.1)",
            ms(w),
            ms(w) / ms(m),
            ms(w) / ms(o)
        );
        println!("    Sleuth, telemetry off    {:8.1} ms   off / ControlMaster = {:.2}x", ms(o), ms(o) / ms(m));
        println!("    ssh via ControlMaster    {:8.1} ms", ms(m));
    }
    peer.sshd.set_login("");

    // (b) readiness: from the server answering 200 to Sleuth knowing it.
    let tools = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/fake-vllm"));
    let startup = server::fixtures::dir().join("bench-outputs/vllm_startup_custom_allreduce_issue15340.txt");
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("port").local_addr().expect("addr").port();
    let flipped = dir.path().join("ready-at");
    let mut served = step("true", BTreeMap::new(), false);
    served.server = Some(domain::steps::command::ServerSpec {
        command: format!(
            "python3 {} --port {port} --log {} --load-s 0.7 --ready-file {}",
            tools.join("serve.py").display(),
            startup.display(),
            flipped.display()
        ),
        ready: domain::steps::command::Ready::Http(format!("http://127.0.0.1:{port}/health")),
        ready_timeout_s: 60,
        stop_grace_s: 5,
        reuse: Default::default(),
        metrics: None,
    });
    let served = add(&peer, served).await;
    let (mut lags, mut cycles) = (Vec::new(), Vec::new());
    for _ in 0..n.min(10) {
        let _ = std::fs::remove_file(&flipped);
        let (took, run) = sleuth_run(&peer, served).await;
        let state = run.server.expect("a server");
        let answered: f64 = std::fs::read_to_string(&flipped).expect("ready file").trim().parse().expect("a time");
        let noticed = rfc3339_secs(state.ready_at.as_deref().expect("ready_at"));
        lags.push(Duration::from_secs_f64((noticed - answered).max(0.0)));
        // Beyond the server's own 0.7 s load: start, wait, stop, check.
        cycles.push(took.saturating_sub(Duration::from_millis(700)));
    }
    let (lag, cycle) = (median(lags), median(cycles));
    println!("(b) a server's readiness, median of {}:", n.min(10));
    println!("    noticed after it answered 200   {:6.1} ms   (target <= 100; ms precision)", ms(lag));
    println!("    a run's server lifecycle beyond its load time (start, wait, stop, checks): {:.0} ms", ms(cycle));

    // (c) a 1 GB artifact: Sleuth's SFTP fetch vs scp over the ControlMaster.
    // Made once (untimed); each run hard-links it into its directory, so that
    // "with the fetch − without" is the fetch, not the disk writing 1 GB.
    let bytes: u64 = if quick() { 10_000_000 } else { 1_000_000_000 };
    let source = "\"$HOME/.sleuth/bench-artifact.bin\"";
    let setup = add(&peer, step(&format!("head -c {bytes} /dev/zero > {source}"), BTreeMap::new(), false)).await;
    sleuth_run(&peer, setup).await;
    let link = format!("ln -f {source} big.bin");
    let plain = add(&peer, step(&link, BTreeMap::new(), false)).await;
    let mut kept = step(&link, BTreeMap::new(), false);
    kept.artifacts = vec!["big.bin".into()];
    let kept = add(&peer, kept).await;
    let repeats = if quick() { 1 } else { 3 };
    let (mut fetches, mut scps, mut peak_growth) = (Vec::new(), Vec::new(), 0);
    for _ in 0..repeats {
        let (made, made_run) = sleuth_run(&peer, plain).await;
        let _ = std::fs::write("/proc/self/clear_refs", "5"); // resets the peak RSS counter
        let rss_before = status_kb("VmRSS:");
        let (with_fetch, fetched) = sleuth_run(&peer, kept).await;
        peak_growth = peak_growth.max(status_kb("VmHWM:").saturating_sub(rss_before));
        assert_eq!(fetched.artifacts.first().map(|a| a.size), Some(bytes), "{:?}", fetched.artifact_notes);
        fetches.push(with_fetch.saturating_sub(made));
        let remote = format!("{}/big.bin", made_run.run_dir.expect("a run dir"));
        let local = dir.path().join("scp-copy.bin");
        scps.push(timed(&mut peer.scp_via_master(&remote, &local)));
        let _ = std::fs::remove_file(&local);
    }
    let cleanup = add(&peer, step(&format!("rm -f {source}"), BTreeMap::new(), false)).await;
    sleuth_run(&peer, cleanup).await;
    let (fetch, scp) = (median(fetches), median(scps));
    let rate = |d: Duration| bytes as f64 / 1e6 / d.as_secs_f64().max(1e-9);
    println!("(c) a {} MB artifact, median of {repeats}:", bytes / 1_000_000);
    println!("    Sleuth fetch (run with it − run without) {:7.2} s  {:6.0} MB/s", fetch.as_secs_f64(), rate(fetch));
    println!(
        "    scp via ControlMaster                    {:7.2} s  {:6.0} MB/s   Sleuth / scp throughput = {:.2}x (target >= 0.8)",
        scp.as_secs_f64(),
        rate(scp),
        rate(fetch) / rate(scp)
    );
    println!("    peak RSS growth during the fetch: {} MB (target <= 64)", peak_growth / 1024);
}
