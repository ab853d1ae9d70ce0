//! Reading source on a host: Sleuth's snippet path against the OpenSSH client and
//! Pygments, same machine, same run.
//!
//! (c) lines 130–180 of a 10 000-line Python file: a whole Sleuth snippet step
//!     (SFTP read on the pooled connection, sha256 and line count, SQLite, syntect
//!     highlighting, the step as the API returns it) vs
//!     `ssh -S <ControlMaster socket> host sed -n 130,180p FILE`, median of 20;
//! (d) highlighting all 10 000 lines with syntect vs Pygments' HTML formatter on
//!     the same text (timed inside Python, so interpreter start-up is not counted).
//!
//! Needs Debian's openssh-server and openssh-client; (d) needs python3 with pygments.

#[allow(dead_code)] // not every benchmark uses every part of the peer
mod peer;

use domain::steps::{StepBody, snippet::SnippetBody};
use peer::{Actor, Peer, median, ms, quick, timed};
use std::time::{Duration, Instant};

/// `lines` lines of plausible Python: functions, docstrings, strings, comments.
fn python_source(lines: usize) -> String {
    let mut s = String::from("# SPDX-License-Identifier: Apache-2.0\nimport os\nimport torch\n\n");
    let mut n = 0;
    while s.lines().count() < lines {
        n += 1;
        s.push_str(&format!(
            "\n\nclass Communicator{n}:\n    \"\"\"Custom allreduce for group {n}.\n\n    Only full NVLink or two PCIe GPUs.\n    \"\"\"\n\n    def __init__(self, group, device: int = {n}, max_size=8192 * 1024) -> None:\n        self.disabled = True  # until proven otherwise\n        world_size = len(group)\n        if world_size > 2 and not self._is_full_nvlink(group):\n            logger.warning(\"Custom allreduce is disabled because it's not supported on more than two PCIe-only GPUs.\")\n            return\n        self.buffer = torch.empty(max_size, dtype=torch.uint8, device=f\"cuda:{{device}}\")\n        self.disabled = False\n"
        ));
    }
    s.lines().take(lines).collect::<Vec<_>>().join("\n") + "\n"
}

#[tokio::main]
async fn main() {
    let peer = Peer::start().await;
    let (notebook, actor) = (peer.state.notebook.clone(), Actor::local());
    // Quick mode: a few iterations on a 1 000-line file.
    let (n, file_lines, tag) = if quick() { (3, 1_000, " (quick mode: not for perf.md)") } else { (20, 10_000, "") };
    let source = python_source(file_lines);
    let path = peer.sshd.dir.path().join("custom_all_reduce.py");
    std::fs::write(&path, &source).expect("source file");
    let path = path.display().to_string();
    let body = || {
        StepBody::Snippet(SnippetBody {
            host: "bench".into(),
            path: Some(path.clone()),
            module: None,
            python: None,
            start: Some(130),
            end: Some(180),
            marked: Vec::new(),
        })
    };

    // (c) 50 lines
    let step = notebook.add_step(&actor, &peer.investigation, body()).await.expect("snippet"); // connects, opens SFTP
    assert_eq!(step.snapshots[0].lines.len(), 51);
    assert!(step.snapshots[0].html_lines[0].contains("<span class=\"hl-"), "highlighted");
    let mut sleuth = Vec::new();
    for _ in 0..n {
        let started = Instant::now();
        let step = notebook.add_step(&actor, &peer.investigation, body()).await.expect("snippet");
        sleuth.push(started.elapsed());
        assert_eq!(step.snapshots[0].html_lines.len(), 51);
    }
    let mut sed = Vec::new();
    let sed_command = format!("sed -n 130,180p {path}");
    for _ in 0..n {
        sed.push(timed(&mut peer.via_master(&sed_command)));
    }
    let (s, c) = (median(sleuth), median(sed));
    println!("(c) lines 130–180 of a {file_lines}-line file, median of {n}{tag}:");
    println!("    Sleuth snippet step (fetch + sha256 + store + highlight) {:7.1} ms", ms(s));
    println!(
        "    ssh -S cm host sed -n 130,180p FILE                       {:7.1} ms   Sleuth / ssh = {:.2}x (target <= 0.5)",
        ms(c),
        ms(s) / ms(c)
    );

    // (d) 10 000 lines
    let lines: Vec<String> = source.lines().map(str::to_string).collect();
    let mut syntect = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        let html = server::snippets::highlight::highlight("x.py", None, &lines);
        syntect.push(started.elapsed());
        assert_eq!(html.len(), file_lines);
    }
    let syntect = median(syntect);
    println!("(d) highlighting {file_lines} lines (median of 5){tag}:");
    println!(
        "    syntect (Sleuth)            {:7.1} ms   {:6.0} lines/ms",
        ms(syntect),
        file_lines as f64 / ms(syntect)
    );
    let program = "import sys, time\nfrom pygments import highlight\nfrom pygments.lexers import PythonLexer\n\
        from pygments.formatters import HtmlFormatter\ntext = open(sys.argv[1]).read()\ntimes = []\n\
        for _ in range(5):\n    t = time.perf_counter()\n    highlight(text, PythonLexer(), HtmlFormatter())\n\
        \n    times.append(time.perf_counter() - t)\nprint(sorted(times)[2])";
    match std::process::Command::new("python3").args(["-c", program, &path]).output() {
        Ok(out) if out.status.success() => {
            let secs: f64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or(f64::NAN);
            let pygments = Duration::from_secs_f64(secs);
            println!(
                "    Pygments (HtmlFormatter)    {:7.1} ms   syntect / Pygments = {:.2}x",
                ms(pygments),
                ms(syntect) / ms(pygments)
            );
        }
        _ => println!("    Pygments not available (python3 -c 'import pygments' failed): no peer for (d)"),
    }
}
