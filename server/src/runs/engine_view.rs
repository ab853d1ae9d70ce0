//! The run page's engine panel: the engine's signals over the run, the GPUs'
//! utilisation under them, each request's TTFT placed on the same axis, and
//! the series listed (`crate::engine` keeps what they are drawn from).

use crate::charts::TimelinePanel;
use crate::db::Store;
use domain::engine::series::{EngineView, SeriesLine};

/// Series a run page lists (the API gives them all).
const LISTED: usize = 300;
/// Gauges of the engine's own, beyond the signals, drawn on the timeline.
const OTHER_PANELS: usize = 3;

/// The run page's engine: its signals over the run with the GPUs'
/// utilisation under them, its series listed. `None` when it was not scraped.
pub async fn view(store: &Store, run: i64, sampled: bool) -> crate::error::Result<Option<EngineView>> {
    let notes: Vec<String> = match store.engine_notes(run).await? {
        Some(notes) => crate::error::stored(&notes, || format!("run {run}'s engine notes"))?,
        None => return Ok(None),
    };
    let recorded = crate::engine::recorded(store, run).await?;
    let telemetry = if sampled { Some(crate::telemetry::of_run(store, run, true).await?) } else { None };
    let scrapes = recorded.scrapes();
    let over_time = |names: &[&str], scale: f64| -> Vec<(f64, f64)> {
        scrapes.iter().filter_map(|s| Some((s.t_ms as f64 / 1000.0, s.signal(names)? * scale))).collect()
    };
    let mut panels = vec![
        TimelinePanel {
            title: "engine".into(),
            max: None,
            dots: false,
            lines: vec![
                ("requests waiting".into(), over_time(&domain::engine::WAITING, 1.0)),
                ("requests running".into(), over_time(&domain::engine::RUNNING, 1.0)),
            ],
        },
        TimelinePanel {
            title: "KV cache".into(),
            max: Some(100.0),
            dots: false,
            lines: vec![("used %".into(), over_time(&domain::engine::KV_USAGE, 100.0))],
        },
    ];
    if let Some(telemetry) = &telemetry {
        let line = crate::charts::TelemetryLine { label: "", telemetry };
        panels.push(TimelinePanel {
            title: "GPUs".into(),
            max: Some(100.0),
            dots: false,
            lines: vec![("SM util % (mean over GPUs)".into(), line.gpu_util())],
        });
    }
    if let Some(requests) = requests_on_axis(store, run, &scrapes).await? {
        panels.insert(1, requests);
    }
    for (name, points) in recorded.other_gauges().into_iter().take(OTHER_PANELS) {
        panels.push(TimelinePanel { title: "engine".into(), max: None, dots: false, lines: vec![(name, points)] });
    }
    let svg = match crate::charts::timeline(&panels) {
        Ok(svg) => svg,
        Err(e) => {
            tracing::error!(run, "cannot draw the engine's timeline: {e}");
            None
        }
    };
    let series = recorded.series();
    Ok(Some(EngineView {
        svg,
        notes,
        total: series.len(),
        series: series.iter().take(LISTED).map(SeriesLine::of).collect(),
    }))
}

/// Each request's TTFT at its start, where its report file timed them. A
/// client's clock is not the run's: its first request is placed at the
/// engine's first scrape with a request waiting or running (so within one
/// scrape interval of where it was).
async fn requests_on_axis(
    store: &Store,
    run: i64,
    scrapes: &[domain::engine::Scrape],
) -> crate::error::Result<Option<TimelinePanel>> {
    let Some(text) = store.request_timeline(run).await? else { return Ok(None) };
    let requests: Vec<(f64, f64)> = crate::error::stored(&text, || format!("run {run}'s request timeline"))?;
    let busy = |s: &&domain::engine::Scrape| {
        s.signal(&domain::engine::WAITING).unwrap_or(0.0) + s.signal(&domain::engine::RUNNING).unwrap_or(0.0) > 0.0
    };
    let Some(first) = scrapes.iter().filter(|s| s.t_ms >= 0).find(busy) else { return Ok(None) };
    let at = first.t_ms as f64 / 1000.0;
    Ok(Some(TimelinePanel {
        title: "requests (first placed at the engine's first busy scrape)".into(),
        max: None,
        dots: true,
        lines: vec![("TTFT ms by start".into(), requests.into_iter().map(|(s, ms)| (at + s, ms)).collect())],
    }))
}
