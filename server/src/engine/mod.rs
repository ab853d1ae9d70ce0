//! The engine's own signals while a run goes: its `/metrics` (vLLM, SGLang,
//! any Prometheus text exposition) asked on the host from the server's being
//! ready to the run's end, kept as series on the run's time axis
//! (`domain::engine::series`), read into measurements when it ends
//! (`crate::metrics::record`).
//!
//! One channel per run runs a small Python loop (`scrape.py`, in
//! `scraper.rs`) (`urllib`, one GET per
//! interval, framed on stdout): no login shell or process per scrape, and a
//! scrape's time is when it arrives here. At the run's end Sleuth writes
//! `last` to its stdin: one more scrape (the counters after the last request),
//! then it exits. A scrape that fails is counted and said in the run's notes;
//! it never fails the run.
//!
//! The run page's panels drawn from these are the run page's
//! (`crate::runs::engine_view`).

mod scraper;

pub use scraper::{KEEP_AT_MOST, MAX_SERIES, Scraping};

use crate::db::Store;
use domain::engine::series::{EngineSeries, Recorded};
use domain::metrics::Measurement;

/// What the run's measurements name as their source.
pub const EXTRACTOR: &str = "engine";

/// The run's stored scrapes, read.
pub async fn recorded(store: &Store, run: i64) -> crate::db::StoreResult<Recorded> {
    let chunks = store.engine_chunks(run).await?;
    Ok(Recorded::read(chunks.iter().map(String::as_str)))
}

/// The run's series and notes (`GET /api/v1/runs/{id}/engine`).
pub async fn series(store: &Store, run: i64) -> crate::error::Result<EngineSeries> {
    let notes = store.engine_notes(run).await?;
    let notes = crate::error::stored_opt(notes.as_deref(), || format!("run {run}'s engine notes"))?.unwrap_or_default();
    Ok(EngineSeries { series: recorded(store, run).await?.series(), notes })
}

/// What the engine said about the run, as measurements (`domain::engine::measurements`).
pub async fn measurements(store: &Store, run: i64) -> crate::db::StoreResult<Vec<Measurement>> {
    let recorded = recorded(store, run).await?;
    if recorded.is_empty() {
        return Ok(Vec::new());
    }
    Ok(domain::engine::measurements(&recorded.scrapes())
        .into_iter()
        .map(|(metric, value, unit, key)| Measurement {
            metric,
            value,
            unit: unit.to_string(),
            extractor: EXTRACTOR.to_string(),
            stddev: None,
            key,
        })
        .collect())
}
