//! `sleuth migrate --from DATA --to postgres://…`: a SQLite notebook into an
//! empty PostgreSQL database, for a team server that outgrows one process.
//! Rows are copied generically (`db::copy`); run output goes from the files
//! under `DATA/runs` into the database's blocks; a `DATA/known_hosts` not yet
//! taken into the store is taken into the target. All of it in one
//! transaction, then checked: the same rows per table and the same output
//! length per run, or the command says what differs.
//!
//! The source is only read (opening it applies this binary's migrations, as
//! `sleuth serve` would), so a failed or unwanted migration leaves the SQLite
//! notebook as it was.

use crate::cli::MigrateArgs;
use crate::db::{Database, Store};
use crate::error::{Context, Error, Result};
use crate::output::{FileBlocks, Outputs};
use crate::ssh::KnownHosts;
use std::time::{Duration, Instant};

pub async fn run(args: MigrateArgs) -> Result<()> {
    let from = args.from;
    if !from.join("sleuth.db").is_file() {
        return Err(Error::usage(format!("{} holds no Sleuth notebook (no sleuth.db)", from.display())));
    }
    let target = Database::from_flag(Some(&args.to), &from).map_err(|e| Error::usage(e.to_string()))?;
    if !matches!(target, Database::Postgres(_)) {
        return Err(Error::usage("--to takes a postgres://user@host/db URL"));
    }
    let started = Instant::now();
    let elapsed = || format!("{:.1} s", started.elapsed().as_secs_f64());
    let source = Store::open(&Database::Sqlite(from.clone())).await.context("opening the source")?;
    let target_store = Store::open(&target).await.context("opening the target")?;
    eprintln!("copying {} into {}", Database::Sqlite(from.clone()).describe(), target.describe());

    let mut copy = target_store.begin_copy().await.context("beginning the copy")?;
    copy.rows_from(&source, |table, rows| eprintln!("  {table}: {rows} rows ({})", elapsed()))
        .await
        .context("copying rows")?;

    let runs = source.run_ids().await?;
    let dir = from.join("runs");
    let (mut bytes, mut last_report) = (0u64, Instant::now());
    for (k, run) in runs.iter().enumerate() {
        let mut blocks = FileBlocks::open(&dir, *run).context(format!("opening run {run}'s output"))?;
        while let Some(file) = blocks.as_mut() {
            let Some(block) = file.next_block().context(format!("reading run {run}'s output"))? else {
                break;
            };
            let copied = copy.output_block(*run, block.start, &block.data, &block.chunks).await;
            copied.context(format!("copying run {run}'s output"))?;
            bytes += block.data.len() as u64;
            if last_report.elapsed() > Duration::from_secs(2) {
                eprintln!("  run output: {} of {} runs, {} MB ({})", k + 1, runs.len(), bytes / 1_000_000, elapsed());
                last_report = Instant::now();
            }
        }
    }
    eprintln!("  run output: {} runs, {bytes} bytes ({})", runs.len(), elapsed());
    copy.commit().await.context("committing the copy")?;
    // Runs marked indexed in the source are not in this database's index yet.
    target_store.forget_index().await?;

    let old_keys = from.join("known_hosts");
    if old_keys.is_file() {
        let keys = KnownHosts::new(std::sync::Arc::new(crate::hosts::keys::StoredKeys::new(target_store.clone())));
        let n = keys.import(&old_keys).await.context(format!("taking in the host keys of {}", old_keys.display()))?;
        eprintln!("  host keys from {}: {n}", old_keys.display());
    }

    // Checked, not assumed.
    let (expected, copied) = (source.row_counts().await?, target_store.row_counts().await?);
    let differ: Vec<String> = expected
        .iter()
        .filter(|(table, n)| copied.get(*table) != Some(n))
        .map(|(table, n)| format!("{table}: {n} in the source, {} copied", copied.get(table).copied().unwrap_or(0)))
        .collect();
    let (files, stored) = (Outputs::Files(dir), Outputs::Store(target_store.clone()));
    let mut outputs_differ = Vec::new();
    for run in &runs {
        let (a, b) = (files.len(*run).await.unwrap_or(0), stored.len(*run).await.unwrap_or(0));
        if a != b {
            outputs_differ.push(format!("run {run}: {a} bytes in files, {b} copied"));
        }
    }
    if !differ.is_empty() || !outputs_differ.is_empty() {
        let differ = [differ, outputs_differ].concat().join("\n");
        return Err(Error::bug(format!("the copy differs from the source:\n{differ}")));
    }
    println!(
        "Copied {} rows in {} tables and {bytes} bytes of output of {} runs in {}. Serve it with \
         `sleuth serve --database …` (SLEUTH_DATABASE); {} is unchanged.",
        expected.values().sum::<i64>(),
        expected.len(),
        runs.len(),
        elapsed(),
        from.display()
    );
    Ok(())
}
