//! A patch applied and put back on its host — every base checked, originals
//! kept, each file renamed over, every result hashed (`server::patches::host`,
//! two commands on the pooled connection, the texts on stdin) — against the
//! same by hand: the originals copied aside, the new texts untarred from
//! stdin, `sha256sum`; then copied back and `sha256sum`, as two
//! `ssh -S <ControlMaster socket>` commands. Same sshd,
//! same run; a 3-file patch of 1 000-line files. Prints medians and the ratio
//! (#52: ≤ 1.5×).

#[allow(dead_code)] // not every benchmark uses every part of the peer
mod peer;

use peer::{Peer, median, ms, quick};
use server::patches::host::{self, Change, Said, Written};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn sha(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("{:x}", sha2::Sha256::digest(bytes))
}

#[tokio::main]
async fn main() {
    let peer = Peer::start().await;
    let (n, tag) = if quick() { (3, " (quick mode: not for perf.md)") } else { (20, "") };
    let keys = server::ssh::KnownHosts::new(Arc::new(server::hosts::keys::StoredKeys::new(peer.store.clone())));
    let pool = server::ssh::Pool::new(keys, true);
    let target = server::ssh::Target {
        name: "bench".into(),
        hostname: "127.0.0.1".into(),
        port: peer.sshd.port,
        user: peer::sshd::whoami(),
        identity_file: Some(peer.sshd.client_key.clone()),
        jump: None,
    };
    let dir = peer.sshd.dir.path().join("site-packages/vllm");
    std::fs::create_dir_all(&dir).expect("dir");
    let (mut changes, mut written) = (Vec::new(), Vec::new());
    for name in ["custom_all_reduce.py", "parallel_state.py", "communicator.py"] {
        let old: String = (0..1000).map(|i| format!("    x_{i} = compute({i})  # a line of {name}\n")).collect();
        let new = old.replace("x_500 = compute(500)", "x_500 = compute(501)");
        let path = dir.join(name);
        std::fs::write(&path, &old).expect("file");
        let path = path.display().to_string();
        changes.push(Change { path: path.clone(), base: sha(old.as_bytes()), text: new.clone().into_bytes() });
        written.push(Written { path, base: sha(old.as_bytes()), applied: sha(new.as_bytes()) });
    }
    let keep = peer.sshd.dir.path().join("sleuth-run/patch").display().to_string();

    // By hand: the same bytes, over the ControlMaster — the new texts as a tar
    // on the command's stdin (a command line holds at most 128 KiB), the
    // originals copied aside, everything hashed; then copied back and hashed.
    let staged = tempfile::tempdir().expect("temp dir");
    let names: Vec<String> =
        changes.iter().map(|c| c.path.rsplit('/').next().unwrap_or_default().to_string()).collect();
    for (c, name) in changes.iter().zip(&names) {
        std::fs::write(staged.path().join(name), &c.text).expect("staged");
    }
    let tar = std::process::Command::new("tar")
        .arg("cf")
        .arg("-")
        .arg("-C")
        .arg(staged.path())
        .args(&names)
        .output()
        .expect("tar");
    let (dir, list) = (dir.display().to_string(), names.join(" "));
    let apply_by_hand =
        format!("cd {dir} && mkdir -p {keep}.hand && cp -p {list} {keep}.hand/ && tar xf - && sha256sum {list}");
    let revert_by_hand = format!("cd {dir} && cp -p {keep}.hand/* . && sha256sum {list}");
    let by_hand = |command: &str, input: &[u8]| {
        use std::io::Write;
        let started = Instant::now();
        let mut child = peer
            .via_master(command)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("ssh");
        child.stdin.take().expect("stdin").write_all(input).expect("tar to ssh");
        assert!(child.wait().expect("ssh").success(), "{command}");
        started.elapsed()
    };

    // One of each first: the connections are open before anything is timed.
    host::apply(&pool, &target, &keep, &changes).await.expect("apply");
    host::revert(&pool, &target, &keep, &written).await.expect("revert");
    by_hand(&apply_by_hand, &tar.stdout);
    by_hand(&revert_by_hand, &[]);

    let (mut sleuth, mut hand) = (Vec::<Duration>::new(), Vec::<Duration>::new());
    for _ in 0..n {
        let started = Instant::now();
        let applied = host::apply(&pool, &target, &keep, &changes).await.expect("apply");
        assert!(applied.iter().all(|s| matches!(s, Said::Applied(_))), "{applied:?}");
        let reverted = host::revert(&pool, &target, &keep, &written).await.expect("revert");
        assert!(reverted.iter().all(|s| matches!(s, Said::Reverted(_))), "{reverted:?}");
        sleuth.push(started.elapsed());
        hand.push(by_hand(&apply_by_hand, &tar.stdout) + by_hand(&revert_by_hand, &[]));
    }
    let (sleuth, by_hand) = (median(sleuth), median(hand));
    println!("patches: apply + verify + revert of a 3-file patch, median of {n}{tag}");
    println!("    Sleuth (bases checked, originals kept, renamed over, hashed)  {:7.1} ms", ms(sleuth));
    println!(
        "    ssh -S cm: cp aside, tar x, sha256sum; cp back, sha256sum      {:7.1} ms   Sleuth / by hand = {:.2}x (target <= 1.5)",
        ms(by_hand),
        sleuth.as_secs_f64() / by_hand.as_secs_f64()
    );
}
