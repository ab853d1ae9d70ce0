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

mod peer;

use app::steps::{StepBody, snippet::SnippetBody};
use peer::{Peer, median, ms, timed};
use std::time::{Duration, Instant};

/// 10 000 lines of plausible Python: functions, docstrings, strings, comments.
fn python_source() -> String {
    let mut s = String::from("# SPDX-License-Identifier: Apache-2.0\nimport os\nimport torch\n\n");
    let mut n = 0;
    while s.lines().count() < 10_000 {
        n += 1;
        s.push_str(&format!(
            "\n\nclass Communicator{n}:\n    \"\"\"Custom allreduce for group {n}.\n\n    Only full NVLink or two PCIe GPUs.\n    \"\"\"\n\n    def __init__(self, group, device: int = {n}, max_size=8192 * 1024) -> None:\n        self.disabled = True  # until proven otherwise\n        world_size = len(group)\n        if world_size > 2 and not self._is_full_nvlink(group):\n            logger.warning(\"Custom allreduce is disabled because it's not supported on more than two PCIe-only GPUs.\")\n            return\n        self.buffer = torch.empty(max_size, dtype=torch.uint8, device=f\"cuda:{{device}}\")\n        self.disabled = False\n"
        ));
    }
    s.lines().take(10_000).collect::<Vec<_>>().join("\n") + "\n"
}

#[tokio::main]
async fn main() {
    let peer = Peer::start().await;
    let notebook = peer.state.notebook.clone();
    let source = python_source();
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
        })
    };

    // (c) 50 lines
    const N: usize = 20;
    let step = notebook.add_step(&peer.investigation, body()).await.expect("snippet"); // connects, opens SFTP
    assert_eq!(step.snapshots[0].lines.len(), 51);
    assert!(step.snapshots[0].html_lines[0].contains("<span class=\"hl-"), "highlighted");
    let mut sleuth = Vec::new();
    for _ in 0..N {
        let started = Instant::now();
        let step = notebook.add_step(&peer.investigation, body()).await.expect("snippet");
        sleuth.push(started.elapsed());
        assert_eq!(step.snapshots[0].html_lines.len(), 51);
    }
    let mut sed = Vec::new();
    let sed_command = format!("sed -n 130,180p {path}");
    for _ in 0..N {
        sed.push(timed(&mut peer.via_master(&sed_command)));
    }
    let (s, c) = (median(sleuth), median(sed));
    println!("(c) lines 130–180 of a 10 000-line file, median of {N}:");
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
        assert_eq!(html.len(), 10_000);
    }
    let syntect = median(syntect);
    println!("(d) highlighting 10 000 lines (median of 5):");
    println!("    syntect (Sleuth)            {:7.1} ms   {:6.0} lines/ms", ms(syntect), 10_000.0 / ms(syntect));
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
