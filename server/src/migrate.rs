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
use crate::output::{FileBlocks, OutputKey, Outputs};
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
    let logs = source.log_ids().await?;
    let dir = from.join("runs");
    let (mut bytes, mut last_report) = (0u64, Instant::now());
    // Each run's output, then each log kept with a run (server logs, artifacts).
    let keys: Vec<OutputKey> =
        runs.iter().map(|r| OutputKey::Run(*r)).chain(logs.iter().map(|l| OutputKey::Log(*l))).collect();
    for (k, key) in keys.iter().enumerate() {
        let mut blocks = FileBlocks::open(&dir, *key).context(format!("opening the output of {key:?}"))?;
        while let Some(file) = blocks.as_mut() {
            let Some(block) = file.next_block().context(format!("reading the output of {key:?}"))? else {
                break;
            };
            let copied = copy.output_block(*key, block.start, &block.data, &block.chunks).await;
            copied.context(format!("copying the output of {key:?}"))?;
            bytes += block.data.len() as u64;
            if last_report.elapsed() > Duration::from_secs(2) {
                eprintln!(
                    "  output: {} of {} runs and logs, {} MB ({})",
                    k + 1,
                    keys.len(),
                    bytes / 1_000_000,
                    elapsed()
                );
                last_report = Instant::now();
            }
        }
    }
    eprintln!(
        "  run output: {} runs, and {} server logs and artifacts, {bytes} bytes ({})",
        runs.len(),
        logs.len(),
        elapsed()
    );
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
    let (files, stored) = (Outputs::Files(dir.clone()), Outputs::Store { store: target_store.clone(), held: dir });
    let mut outputs_differ = Vec::new();
    for key in &keys {
        let (a, b) = (files.len(*key).await.unwrap_or(0), stored.len(*key).await.unwrap_or(0));
        if a != b {
            outputs_differ.push(format!("{key:?}: {a} bytes in files, {b} copied"));
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
