//! `sleuth backup DEST` and `sleuth restore SRC --data DIR` for a SQLite
//! notebook: the database as one consistent snapshot (`VACUUM INTO`, taken
//! while the server reads and writes) and the run output files under
//! `runs/`, which only ever grow: a file copied after the snapshot holds at
//! least the bytes the snapshot counts. A run that was running when the
//! snapshot was taken is `interrupted` in the restored notebook, as after any
//! stop. With PostgreSQL everything is in the database: `pg_dump` is the tool,
//! and these commands say so.

use crate::cli::{BackupArgs, DataArg, RestoreArgs};
use crate::db::{Database, Store};
use crate::error::{Context, Error, Result};
use std::path::{Path, PathBuf};
use std::time::Instant;

const DB_FILE: &str = "sleuth.db";
const OUTPUT_DIR: &str = "runs";

fn sqlite_only(store: &DataArg, what: &str) -> Result<PathBuf> {
    match Database::from_flag(store.database.as_deref(), &store.data).map_err(|e| Error::usage(e.to_string()))? {
        Database::Sqlite(dir) => Ok(dir),
        Database::Postgres(_) => Err(Error::usage(format!(
            "with PostgreSQL, Sleuth keeps everything in the database and nothing in --data: {what} it with \
             `pg_dump --format=custom --file=sleuth.dump \"$SLEUTH_DATABASE\"` and \
             `pg_restore --no-owner --dbname=\"$SLEUTH_DATABASE\" sleuth.dump` into an empty database"
        ))),
    }
}

/// Whether `dir` is missing or holds nothing.
fn empty_or_missing(dir: &Path) -> bool {
    std::fs::read_dir(dir).map(|mut entries| entries.next().is_none()).unwrap_or(true)
}

pub async fn backup(args: BackupArgs) -> Result<()> {
    let data = sqlite_only(&args.store, "back")?;
    if !data.join(DB_FILE).is_file() {
        return Err(Error::usage(format!("{} holds no Sleuth notebook (no {DB_FILE})", data.display())));
    }
    let dest = args.dest;
    if !empty_or_missing(&dest) {
        return Err(Error::usage(format!("{} is not empty: back up into a new directory", dest.display())));
    }
    std::fs::create_dir_all(&dest).context(format!("creating {}", dest.display()))?;
    let started = Instant::now();
    let store = Store::open(&Database::Sqlite(data.clone())).await.context("opening the notebook")?;
    store.vacuum_into(&dest.join(DB_FILE)).await.context("copying the database")?;
    store.close().await;
    let db_bytes = std::fs::metadata(dest.join(DB_FILE)).map(|m| m.len()).unwrap_or(0);
    eprintln!("  database: {db_bytes} bytes ({:.1} s)", started.elapsed().as_secs_f64());
    let (files, bytes) = copy_tree(&data.join(OUTPUT_DIR), &dest.join(OUTPUT_DIR), &started)?;
    let copy = Store::open(&Database::Sqlite(dest.clone())).await.context("opening the copy")?;
    let check = copy.integrity().await?;
    let rows: i64 = copy.row_counts().await?.values().sum();
    copy.close().await;
    if check != "ok" {
        return Err(Error::bug(format!("the copy in {} fails SQLite's integrity check: {check}", dest.display())));
    }
    println!(
        "Backed up {} into {}: {rows} rows, {files} output files ({bytes} bytes) in {:.1} s. \
         Put it back with `sleuth restore {} --data NEW_DIR`.",
        data.display(),
        dest.display(),
        started.elapsed().as_secs_f64(),
        dest.display()
    );
    Ok(())
}

pub async fn restore(args: RestoreArgs) -> Result<()> {
    let data = sqlite_only(&args.store, "restore")?;
    let src = args.src;
    if !src.join(DB_FILE).is_file() {
        return Err(Error::usage(format!("{} holds no backup (no {DB_FILE})", src.display())));
    }
    if data.join(DB_FILE).exists() || !empty_or_missing(&data.join(OUTPUT_DIR)) {
        return Err(Error::usage(format!(
            "{} already holds a notebook: restore into an empty --data dir (nothing is overwritten)",
            data.display()
        )));
    }
    std::fs::create_dir_all(&data).context(format!("creating {}", data.display()))?;
    let started = Instant::now();
    // Under another name until whole: a half-copied file is never a notebook.
    let partial = data.join(format!("{DB_FILE}.restoring"));
    std::fs::copy(src.join(DB_FILE), &partial).context("copying the database")?;
    let (files, bytes) = copy_tree(&src.join(OUTPUT_DIR), &data.join(OUTPUT_DIR), &started)?;
    std::fs::rename(&partial, data.join(DB_FILE)).context("putting the database in place")?;
    let store = Store::open(&Database::Sqlite(data.clone())).await.context("opening the restored notebook")?;
    let check = store.integrity().await?;
    let rows: i64 = store.row_counts().await?.values().sum();
    store.close().await;
    if check != "ok" {
        return Err(Error::bug(format!("the restored database fails SQLite's integrity check: {check}")));
    }
    println!(
        "Restored {} into {}: {rows} rows, {files} output files ({bytes} bytes) in {:.1} s. \
         Serve it with `sleuth serve --data {}`.",
        src.display(),
        data.display(),
        started.elapsed().as_secs_f64(),
        data.display()
    );
    Ok(())
}

/// Copies every file under `from` into `to` (made as needed), saying how far
/// it got every two seconds. Returns (files, bytes).
fn copy_tree(from: &Path, to: &Path, started: &Instant) -> Result<(u64, u64)> {
    let mut pending = vec![(from.to_path_buf(), to.to_path_buf())];
    let (mut files, mut bytes, mut said) = (0u64, 0u64, Instant::now());
    while let Some((from, to)) = pending.pop() {
        let entries = match std::fs::read_dir(&from) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e).context(format!("reading {}", from.display())),
        };
        std::fs::create_dir_all(&to).context(format!("creating {}", to.display()))?;
        for entry in entries {
            let entry = entry.context(format!("reading {}", from.display()))?;
            let kind = entry.file_type().context(format!("reading {}", entry.path().display()))?;
            let target = to.join(entry.file_name());
            if kind.is_dir() {
                pending.push((entry.path(), target));
            } else if kind.is_file() {
                bytes += std::fs::copy(entry.path(), &target).context(format!("copying {}", entry.path().display()))?;
                files += 1;
                if said.elapsed().as_secs() >= 2 {
                    eprintln!(
                        "  output: {files} files, {} MB ({:.1} s)",
                        bytes / 1_000_000,
                        started.elapsed().as_secs_f64()
                    );
                    said = Instant::now();
                }
            }
        }
    }
    eprintln!("  output: {files} files, {bytes} bytes ({:.1} s)", started.elapsed().as_secs_f64());
    Ok((files, bytes))
}
