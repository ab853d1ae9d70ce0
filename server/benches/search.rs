//! Search at a team's size: 100 investigations of 100 notes (10 000 steps) and
//! 1 GB of vLLM-like log output from two runs against a real sshd, on SQLite and
//! (when a PostgreSQL is at hand) on PostgreSQL. Prints, per backend:
//! - query time p50/p99 (a page of 20 with its total) for a rare word, a common
//!   word and a phrase, against `grep -rlF` over the same output files (the peer:
//!   what finding it costs without an index), in the same run;
//! - the ingest slowdown: the second run's ingest while the indexer works on
//!   the first, against the first's with the indexer idle;
//! - how long indexing took (MB/s) and the index's size against the text indexed.
//!
//! `SLEUTH_BENCH_QUICK=1`: 5 × 20 notes and 2 × 4 MB of output;
//! `SLEUTH_BENCH_SQLITE_ONLY=1`: SQLite alone.

#[allow(dead_code)] // not every benchmark uses every part of the peer
mod peer;

use domain::runs::RunRequest;
use domain::search::SearchRequest;
use domain::steps::{StepBody, command::CommandBody, note::NoteBody};
use peer::{Actor, Peer, Postgres, quick};
use std::sync::Arc;
use std::time::{Duration, Instant};

const RARE: &str = "zyxwvutsrq";
const PHRASE: &str = "\"custom allreduce is disabled\"";
const COMMON: &str = "latency";

fn percentile(samples: &[Duration], p: f64) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    sorted.get(((sorted.len() as f64 - 1.0) * p).round() as usize).copied().unwrap_or_default()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// `lines` lines of a vLLM-ish log (~70 bytes each), the phrase every 100 000
/// lines, the rare word once, in the middle.
fn log_command(lines: u64) -> String {
    format!(
        "awk 'BEGIN {{ srand(7); for (i = 1; i <= {lines}; i++) {{ \
           if (i % 100000 == 50000) print \"WARNING custom_all_reduce.py:137 Custom allreduce is disabled because of PCIe\"; \
           else if (i == {mid}) print \"ERROR {RARE} in worker\"; \
           else printf \"INFO %d model_runner.py:%d step %d latency %.3f ms tokens %d\\n\", i, i % 900, i % 4096, rand() * 40, i % 512 }} }}'",
        mid = lines / 2
    )
}

async fn wait_finished(notebook: &Arc<server::guarded::Guarded>, run: i64) -> domain::runs::Run {
    loop {
        let r = notebook.wait_for_run(&Actor::local(), run, Duration::from_secs(60)).await.expect("run");
        if !matches!(r.status, domain::runs::RunStatus::Queued | domain::runs::RunStatus::Running) {
            return r;
        }
    }
}

async fn search(notebook: &Arc<server::guarded::Guarded>, q: &str) -> domain::search::SearchResults {
    let request = SearchRequest { q: q.into(), ..Default::default() };
    notebook.search(&Actor::local(), request).await.expect("search")
}

async fn bench(label: &str, database: Option<server::db::Database>) {
    let peer = Peer::start_on(database).await;
    let notebook = peer.state.notebook.clone();
    let actor = Actor::local();
    let (investigations, notes) = if quick() { (5, 20) } else { (100, 100) };
    let output_bytes: u64 = if quick() { 4 << 20 } else { 512 << 20 };
    let lines = output_bytes / 70;

    // The team's notes.
    let started = Instant::now();
    let mut note_bytes = 0u64;
    for i in 0..investigations {
        let inv = notebook
            .create_investigation(
                &actor,
                domain::model::NewInvestigation { title: format!("investigation {i} of the PCIe box"), question: None },
            )
            .await
            .expect("investigation")
            .id;
        for n in 0..notes {
            let body = format!(
                "Note {n}: decode at {} tok/s with NCCL_PROTO={}; the allreduce takes {} µs per call, {} calls per token.",
                50 + n % 20,
                ["LL", "LL128", "SIMPLE"][n % 3],
                10 + n % 7,
                156
            );
            note_bytes += body.len() as u64;
            notebook.add_step(&actor, &inv, StepBody::Note(NoteBody { body })).await.expect("note");
        }
    }
    let notes_took = started.elapsed();

    // Two runs of log output: the first with the indexer idle, the second while it indexes the first.
    let step = StepBody::Command(CommandBody {
        host: "bench".into(),
        command: log_command(lines),
        env: [("NCCL_PROTO".to_string(), "LL".to_string())].into(),
        cwd: None,
        timeout_s: None,
        matrix: Default::default(),
        telemetry: false,
        server: None,
        artifacts: Vec::new(),
        artifact_limits: None,
        output_limit_bytes: None,
        patch: None,
    });
    let step = notebook.add_step(&actor, &peer.investigation, step).await.expect("step").id;
    let store = peer.store.clone();
    let idle = async || {
        while store.runs_waiting_for_index().await.expect("count") > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // The notes' index settles a moment after the last change.
        tokio::time::sleep(Duration::from_millis(600)).await;
    };
    idle().await;
    let size_before = store.search_index_bytes().await.unwrap_or(-1);
    let mut ingest = Vec::new();
    let mut total_bytes = 0;
    let index_started = Instant::now();
    for _ in 0..2 {
        let t = Instant::now();
        let run = notebook.start_runs(&actor, step, RunRequest::default()).await.expect("start")[0].id;
        let done = wait_finished(&notebook, run).await;
        assert_eq!(done.status, domain::runs::RunStatus::Succeeded, "{:?}", done.error);
        ingest.push(t.elapsed());
        total_bytes += done.output_bytes();
    }
    let ingested_at = Instant::now();
    idle().await;
    let indexing = ingested_at.elapsed();
    let index_span = index_started.elapsed();
    let size = store.search_index_bytes().await.unwrap_or(-1);

    // Queries: a page of 20 and its total, as the search box asks.
    let rounds = if quick() { 3 } else { 30 };
    let outputs_dir = peer.outputs.dir().map(std::path::Path::to_path_buf);
    println!(
        "search, {label}: {} steps, {} MB of output in 2 runs{}",
        investigations * notes + 1,
        total_bytes >> 20,
        if quick() { " (quick mode: not for perf.md)" } else { "" }
    );
    println!("    notes added and indexed in {:.1} s", notes_took.as_secs_f64());
    for (name, q, word) in
        [("rare word", RARE, RARE), ("common word", COMMON, COMMON), ("phrase", PHRASE, "Custom allreduce is disabled")]
    {
        let first = search(&notebook, q).await;
        assert!(first.total > 0, "{q} found nothing");
        let mut times = Vec::new();
        for _ in 0..rounds {
            let t = Instant::now();
            search(&notebook, q).await;
            times.push(t.elapsed());
        }
        let grep = outputs_dir.as_ref().map(|dir| {
            let mut g = Vec::new();
            for _ in 0..rounds.min(5) {
                let t = Instant::now();
                let out = std::process::Command::new("grep").args(["-rlF", word]).arg(dir).output().expect("grep");
                assert!(out.status.success(), "grep found {word:?}");
                g.push(t.elapsed());
            }
            percentile(&g, 0.5)
        });
        println!(
            "    {name:12} {:>8} results   p50 {:7.1} ms   p99 {:7.1} ms{}",
            first.total,
            ms(percentile(&times, 0.5)),
            ms(percentile(&times, 0.99)),
            grep.map_or(String::new(), |g| format!(
                "   grep -rlF p50 {:7.1} ms ({:.3}x)",
                ms(g),
                ms(percentile(&times, 0.5)) / ms(g)
            ))
        );
    }
    println!(
        "    ingest of run 1 (indexer idle) {:.2} s, of run 2 (indexer busy with run 1) {:.2} s: {:.2}x",
        ingest[0].as_secs_f64(),
        ingest[1].as_secs_f64(),
        ingest[1].as_secs_f64() / ingest[0].as_secs_f64()
    );
    let indexed = total_bytes + note_bytes;
    println!(
        "    indexed {} MB in {:.1} s after the runs ended ({:.1} s from the first run's start; {:.0} MB/s over that span)",
        indexed >> 20,
        indexing.as_secs_f64(),
        index_span.as_secs_f64(),
        (indexed as f64 / 1e6) / index_span.as_secs_f64()
    );
    if size >= 0 {
        println!(
            "    index size {} MB ({} MB before the output) = {:.2}x the text indexed (target <= 1.5x)",
            size >> 20,
            size_before >> 20,
            size as f64 / indexed as f64
        );
    }
}

#[tokio::main]
async fn main() {
    bench("SQLite", None).await;
    if std::env::var_os("SLEUTH_BENCH_SQLITE_ONLY").is_some() {
        return;
    }
    match Postgres::start() {
        Ok(postgres) => {
            let database = postgres.database().await;
            bench("PostgreSQL", Some(database)).await;
        }
        Err(why) => println!("search, PostgreSQL: skipped ({why})"),
    }
}
