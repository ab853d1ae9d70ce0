//! Extracting a finished run's measurements into the store.

use super::custom::Extractor;
use crate::db::Store;
use crate::error::{Context, Result};
use crate::output::{OutputKey, Outputs};

/// Benchmarks print their results at the end: of a longer output, the last
/// this many bytes are read. (32 MB here made a gigabyte's ingest peak 30 MB
/// higher than the ingest itself needs.)
pub const READ_BYTES: u64 = 8 * 1024 * 1024;

/// Runs every extractor (built-in, and the investigation's own) over the run's
/// output and replaces what was stored for it. Returns how many were found.
pub async fn for_run(store: &Store, outputs: &Outputs, investigation: &str, run: i64) -> Result<usize> {
    let len = outputs.len(run).await.context(format!("reading the output length of run {run}"))?;
    let from = len.saturating_sub(READ_BYTES);
    let (bytes, _) = outputs.read_range(run, from, READ_BYTES).await.context(format!("reading run {run}'s output"))?;
    let definitions = store.extractors(investigation).await?;
    // Its server's log, for the investigation's own extractors (`model loaded in
    // (\d+) s`): what they find there is keyed `server`.
    let logs = store.logs_of_runs(&[run]).await?;
    let server_log = match logs.iter().find(|l| l.kind == "server") {
        Some(log) => {
            let key = OutputKey::Log(log.id);
            let len = outputs.len(key).await.context(format!("reading run {run}'s server log"))?;
            let from = len.saturating_sub(READ_BYTES);
            outputs.read_range(key, from, READ_BYTES).await.context(format!("reading run {run}'s server log"))?.0
        }
        None => Vec::new(),
    };
    let found = tokio::task::spawn_blocking(move || {
        let text = String::from_utf8_lossy(&bytes);
        let server_text = String::from_utf8_lossy(&server_log);
        let mut found = super::extract(&text);
        for d in definitions {
            // Stored definitions were checked when added; a failing one is skipped, not fatal.
            if let Ok(extractor) = Extractor::new(&d.name, &d.pattern, &d.unit) {
                found.extend(extractor.extract(&text));
                found.extend(extractor.extract(&server_text).into_iter().map(|mut m| {
                    m.key = Some(m.key.map_or_else(|| "server".to_string(), |k| format!("server {k}")));
                    m
                }));
            }
        }
        found
    })
    .await
    .context("extracting measurements")?;
    // The run's artifacts that are result files the readers know.
    let mut found = found;
    found.extend(from_artifacts(outputs, logs).await);
    // The GPUs' telemetry during the run, as numbers like the output's; then
    // what the investigation's formulas make of all of them.
    let samples = store.samples(run).await?;
    found.extend(crate::telemetry::summary::summarize(&samples));
    let defs = derived_defs(store, investigation).await?;
    let config = store.run(run).await?.and_then(|r| r.config);
    let settings = config
        .and_then(|c| serde_json::from_str::<app::sweeps::Config>(&c).ok())
        .map(|c| super::derived::settings_of(&c))
        .unwrap_or_default();
    let derived = super::derived::apply(&defs, &found, &settings);
    found.extend(derived);
    store.replace_run_measurements(investigation, run, &found).await?;
    Ok(found.len())
}

/// Measurements from the run's artifacts that are report files a reader
/// knows (`crate::reports`); the rest are left alone.
async fn from_artifacts(outputs: &Outputs, logs: Vec<crate::db::LogRow>) -> Vec<app::metrics::Measurement> {
    let mut found = Vec::new();
    for log in logs.into_iter().filter(|l| l.kind == "artifact") {
        match crate::reports::of_output(outputs, OutputKey::Log(log.id), &log.name).await {
            Some(Ok(report)) => found.extend(report.measurements),
            Some(Err(note)) => tracing::info!(log = log.id, "report not read: {note}"),
            None => {}
        }
    }
    found
}

/// The investigation's derived metrics.
pub async fn derived_defs(store: &Store, investigation: &str) -> crate::db::StoreResult<Vec<app::metrics::DerivedDef>> {
    Ok(store
        .derived(investigation)
        .await?
        .into_iter()
        .map(|(name, unit, formula, constants)| app::metrics::DerivedDef {
            name,
            unit,
            formula,
            constants: serde_json::from_str(&constants).unwrap_or_default(),
        })
        .collect())
}
