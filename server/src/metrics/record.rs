//! Extracting a finished run's measurements into the store.

use super::custom::Extractor;
use crate::db::{NewReport, Store};
use crate::error::{Context, Result};
use crate::output::{OutputKey, Outputs};
use crate::reports::Report;

/// Benchmarks print their results at the end: of a longer output, the last
/// this many bytes are read. (32 MB here made a gigabyte's ingest peak 30 MB
/// higher than the ingest itself needs.)
pub const READ_BYTES: u64 = 8 * 1024 * 1024;
/// Requests a run's timeline draws at most.
const TIMELINE_POINTS: usize = 4000;

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
    let server_log = match logs.iter().find(|l| l.kind == crate::db::LogKind::Server) {
        Some(log) => {
            let key = OutputKey::Log(log.id);
            let len = outputs.len(key).await.context(format!("reading run {run}'s server log"))?;
            let from = len.saturating_sub(READ_BYTES);
            outputs.read_range(key, from, READ_BYTES).await.context(format!("reading run {run}'s server log"))?.0
        }
        None => Vec::new(),
    };
    let output = bytes.clone();
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
    // The run's report files: its artifacts, and its output if it is one.
    let mut found = found;
    found.extend(reports(store, outputs, investigation, run, &output, &logs).await?);
    // The GPUs' telemetry during the run, as numbers like the output's; then
    // what the investigation's formulas make of all of them.
    let samples = store.samples(run).await?;
    found.extend(crate::telemetry::summary::summarize(&samples));
    let row = store.run(run).await?;
    // What else was on its GPUs, and their clocks held down.
    if let Some(row) = &row {
        found.extend(contention(store, row, &samples).await?);
    }
    // The engine's own account of the run (its /metrics), counters as the run's share.
    found.extend(crate::engine::measurements(store, run).await?);
    // What its throughput costs, at its host's price now.
    let price = match &row {
        Some(row) => store.host(&row.host).await?.and_then(|h| h.price_per_hour),
        None => None,
    };
    found.extend(super::cost::of_run(&found, price));
    let defs = derived_defs(store, investigation).await?;
    let config: Option<domain::sweeps::Config> =
        crate::error::stored_opt(row.and_then(|r| r.config).as_deref(), || format!("run {run}'s configuration"))?;
    let settings = config.map(|c| super::derived::settings_of(&c)).unwrap_or_default();
    let derived = super::derived::apply(&defs, &found, &settings);
    found.extend(derived);
    store.replace_run_measurements(investigation, run, &found).await?;
    Ok(found.len())
}

/// [`crate::telemetry::contention::measurements`] for a run: its processes
/// are those of its directory and of the run that started its server.
async fn contention(
    store: &Store,
    row: &crate::db::RunRow,
    samples: &[(u32, domain::telemetry::Sample)],
) -> Result<Vec<domain::metrics::Measurement>> {
    use crate::error::stored_opt;
    let (seen, _) = store.telemetry_info(row.id).await?.unwrap_or_default();
    let what = || format!("run {}'s telemetry GPUs", row.id);
    let Some(seen) = stored_opt::<crate::telemetry::contention::Stored>(seen.as_deref(), what)? else {
        return Ok(Vec::new());
    };
    // Stored as `~/.sleuth/runs/12-0a1b2c3d`; the sampler says the name.
    let name = |dir: Option<String>| dir.and_then(|d| d.rsplit('/').next().map(str::to_string));
    let mut own: Vec<String> = name(row.run_dir.clone()).into_iter().collect();
    let server: Option<domain::runs::ServerState> =
        stored_opt(row.server.as_deref(), || format!("run {}'s server", row.id))?;
    if let Some(starter) = server.and_then(|s| s.started_by_run).filter(|s| *s != row.id) {
        own.extend(name(store.run(starter).await?.and_then(|r| r.run_dir)));
    }
    Ok(crate::telemetry::contention::measurements(&seen, &own, samples))
}

/// A host's new price, in the costs of its finished runs: only their `cost`
/// measurements change (nothing is read again). Returns the investigations
/// whose runs changed.
pub async fn reprice(store: &Store, host: &str, price: Option<f64>) -> Result<Vec<String>> {
    let runs = store.finished_runs_on_host(host).await?;
    let mut changed: Vec<String> = Vec::new();
    for (run, investigation) in &runs {
        let rows = store.measurements_of_runs(&[*run]).await?;
        let mut found: Vec<domain::metrics::Measurement> = rows
            .iter()
            .filter(|row| row.extractor != super::cost::EXTRACTOR)
            .map(crate::db::MeasurementRow::measurement)
            .collect();
        found.extend(super::cost::of_run(&found, price));
        store.replace_run_measurements(investigation, *run, &found).await?;
        if !changed.contains(investigation) {
            changed.push(investigation.clone());
        }
    }
    Ok(changed)
}

/// The run's artifacts that are report files a reader knows
/// (`crate::reports`), and its output when it is one (`cat result.json`), with
/// what follows from their samples under the investigation's SLO. Every file
/// recognised is listed, with its notes when it could not be read whole.
async fn reports(
    store: &Store,
    outputs: &Outputs,
    investigation: &str,
    run: i64,
    output: &[u8],
    logs: &[crate::db::LogRow],
) -> Result<Vec<domain::metrics::Measurement>> {
    // Per file: its artifact, its name, and what reading it gave (none: not a report).
    type Read = (Option<i64>, String, Option<Result<Report, crate::reports::ReadError>>);
    let mut read: Vec<Read> = Vec::new();
    for log in logs.iter().filter(|l| l.kind == crate::db::LogKind::Artifact) {
        read.push((
            Some(log.id),
            log.name.clone(),
            crate::reports::of_output(outputs, OutputKey::Log(log.id), &log.name).await,
        ));
    }
    if output.len() < READ_BYTES as usize {
        let bytes = output.to_vec();
        let printed =
            tokio::task::spawn_blocking(move || crate::reports::read("output", &bytes[..])).await.ok().flatten();
        read.push((None, "output".into(), printed));
    }
    let slo = store.slo(investigation).await?.and_then(|text| domain::distributions::Slo::parse(&text).ok());
    let mut found = Vec::new();
    let mut kept = Vec::new();
    let mut rows = Vec::new();
    for (log_id, name, outcome) in read {
        match outcome {
            None => {}
            Some(Ok(report)) => {
                rows.push(NewReport {
                    log_id,
                    name,
                    format: Some(report.format.to_string()),
                    notes: report.notes.clone(),
                    metadata: report.metadata.clone(),
                });
                kept.push(report);
            }
            Some(Err(broken)) => rows.push(NewReport {
                log_id,
                name,
                format: None,
                notes: vec![broken.to_string()],
                metadata: Default::default(),
            }),
        }
    }
    let (derived, samples) = crate::reports::derive::derive(&kept, slo.as_ref());
    // When each request started and how long its first token took, for the
    // run's timeline (every `TIMELINE_POINTS`-th of a long one).
    let timeline = kept.iter().find(|r| !r.requests.is_empty()).map(|r| {
        let every = r.requests.len().div_ceil(TIMELINE_POINTS).max(1);
        let points: Vec<[f64; 2]> = r.requests.iter().step_by(every).map(|(s, ms)| [*s, *ms]).collect();
        serde_json::json!(points).to_string()
    });
    store.set_request_timeline(run, timeline.as_deref()).await?;
    for report in kept {
        found.extend(report.measurements);
    }
    found.extend(derived);
    store.replace_run_reports(run, &rows, &samples).await?;
    Ok(found)
}

/// The investigation's derived metrics.
pub async fn derived_defs(store: &Store, investigation: &str) -> Result<Vec<domain::metrics::DerivedDef>> {
    let mut defs = Vec::new();
    for (name, unit, formula, constants) in store.derived(investigation).await? {
        let constants = crate::error::stored(&constants, || format!("derived metric {name}'s constants"))?;
        defs.push(domain::metrics::DerivedDef { name, unit, formula, constants });
    }
    Ok(defs)
}
