//! A run's scrapes kept as series: what is stored while it runs, what the
//! API gives, and the scrapes [`super::exposition::measurements`] reads, made back from it.
//!
//! A series' value is kept when it changes, and at the run's first and last
//! scrape: between two kept values it held the first (a step line loses
//! nothing). A vLLM exposition has hundreds of series, most of them histogram
//! buckets that stay still while the server is idle; kept at every scrape, an
//! hour's run at 1 s would be a million rows. Stored as text chunks, a few
//! seconds of scrapes each (`Recorder::take`), one line per fact:
//!
//! ```text
//! t 1200                        a scrape, at t_ms 1200 of the run
//! s 3 gauge ["vllm:num_requests_waiting",[["model_name","m"]]]
//! v 3 2                         series 3 is 2 at the scrape above
//! ```

use super::exposition::{Exposition, Kind, PromSample, Scrape};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// One series of a run, as `GET /api/v1/runs/{id}/engine` gives it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Series {
    pub metric: String,
    pub labels: BTreeMap<String, String>,
    #[serde(rename = "type")]
    pub kind: Kind,
    pub samples: Vec<Point>,
}

/// A value at `t_ms` from the run's start (negative: before its command
/// started, the scrape its counters count from). `null`: NaN or infinite.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Point {
    pub t_ms: i64,
    pub value: Option<f64>,
}

/// A run's engine signals: its series, and what the scraping said.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct EngineSeries {
    pub series: Vec<Series>,
    pub notes: Vec<String>,
}

/// The engine as a run's page shows it: its timeline, what the scraping
/// said, and every series it kept, in a line each.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct EngineView {
    pub svg: Option<String>,
    pub notes: Vec<String>,
    pub series: Vec<SeriesLine>,
    /// How many series there are in all (`series` lists the first few hundred).
    pub total: usize,
}

/// A series in a line: `name{labels}`, its kind, and its range over the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct SeriesLine {
    pub name: String,
    pub kind: Kind,
    pub first: Option<f64>,
    pub last: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub values: usize,
}

impl SeriesLine {
    pub fn of(series: &Series) -> Self {
        let labels: Vec<String> = series.labels.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
        let name = if labels.is_empty() {
            series.metric.clone()
        } else {
            format!("{}{{{}}}", series.metric, labels.join(","))
        };
        let values: Vec<f64> = series.samples.iter().filter_map(|p| p.value).collect();
        Self {
            name,
            kind: series.kind,
            first: values.first().copied(),
            last: values.last().copied(),
            min: values.iter().copied().reduce(f64::min),
            max: values.iter().copied().reduce(f64::max),
            values: series.samples.len(),
        }
    }
}

type SeriesKey = (String, Vec<(String, String)>);

#[derive(Clone, Copy)]
struct Last {
    /// The value last written, and when.
    written: f64,
    written_t: i64,
    /// The value last seen, and when.
    seen: f64,
    seen_t: i64,
}

/// Turns scrapes into chunks to store, as they come.
#[derive(Default)]
pub struct Recorder {
    index: HashMap<SeriesKey, usize>,
    last: Vec<Last>,
    last_t: Option<i64>,
    pending: String,
    /// Values seen and values written, for the notes and the size test.
    pub seen: usize,
    pub written: usize,
}

impl Recorder {
    /// A scrape at `t_ms`: its new series named, its changed values written.
    pub fn push(&mut self, t_ms: i64, e: &Exposition) {
        use std::fmt::Write;
        let _ = writeln!(self.pending, "t {t_ms}");
        let first = self.last_t.is_none();
        self.last_t = Some(t_ms);
        for s in &e.samples {
            self.seen += 1;
            let key = (s.name.clone(), s.labels.clone());
            let at = match self.index.get(&key) {
                Some(at) => *at,
                None => {
                    let at = self.last.len();
                    let named = serde_json::json!([s.name, s.labels]);
                    let _ = writeln!(self.pending, "s {at} {} {named}", kind_of(e, &s.name).name());
                    self.index.insert(key, at);
                    self.last.push(Last { written: f64::NAN, written_t: i64::MIN, seen: s.value, seen_t: t_ms });
                    at
                }
            };
            let last = &mut self.last[at];
            last.seen = s.value;
            last.seen_t = t_ms;
            if first || last.written_t == i64::MIN || last.written.to_bits() != s.value.to_bits() {
                let _ = writeln!(self.pending, "v {at} {}", s.value);
                last.written = s.value;
                last.written_t = t_ms;
                self.written += 1;
            }
        }
    }

    /// The chunk to store now, if anything came since the last.
    pub fn take(&mut self) -> Option<String> {
        (!self.pending.is_empty()).then(|| std::mem::take(&mut self.pending))
    }

    /// The run ended: the last scrape's values that were not written (they had
    /// not changed), so every series ends where the run did; then the rest.
    pub fn finish(&mut self) -> Option<String> {
        use std::fmt::Write;
        if let Some(t) = self.last_t {
            let mut repeated = String::new();
            for (at, last) in self.last.iter_mut().enumerate() {
                if last.seen_t == t && last.written_t < t {
                    let _ = writeln!(repeated, "v {at} {}", last.seen);
                    last.written_t = t;
                    self.written += 1;
                }
            }
            if !repeated.is_empty() {
                let _ = writeln!(self.pending, "t {t}");
                self.pending.push_str(&repeated);
            }
        }
        self.take()
    }
}

/// A family's kind, for one of its series (`x_bucket` is of histogram `x`).
fn kind_of(e: &Exposition, name: &str) -> Kind {
    if let Some(kind) = e.kinds.get(name) {
        return *kind;
    }
    ["_bucket", "_sum", "_count", "_total", "_created"]
        .iter()
        .find_map(|suffix| name.strip_suffix(suffix).and_then(|family| e.kinds.get(family)))
        .copied()
        .unwrap_or(Kind::Untyped)
}

/// One series as recorded: name and labels, kind, and its (t_ms, value) in order.
type Recording = (SeriesKey, Kind, Vec<(i64, f64)>);

/// What a run's stored chunks hold: its series (values as written) and when
/// each scrape was.
#[derive(Clone, Debug, Default)]
pub struct Recorded {
    series: Vec<Recording>,
    times: Vec<i64>,
}

impl Recorded {
    /// Reads chunks in the order they were stored. A line it cannot read is
    /// skipped (Sleuth wrote them; a torn write loses only that line).
    pub fn read<'a>(chunks: impl IntoIterator<Item = &'a str>) -> Self {
        let mut recorded = Self::default();
        let mut ids: HashMap<usize, usize> = HashMap::new();
        let mut t = 0i64;
        for line in chunks.into_iter().flat_map(str::lines) {
            let mut parts = line.splitn(3, ' ');
            match (parts.next(), parts.next(), parts.next()) {
                (Some("t"), Some(at), None) => {
                    if let Ok(at) = at.parse() {
                        t = at;
                        if recorded.times.last() != Some(&t) {
                            recorded.times.push(t);
                        }
                    }
                }
                (Some("s"), Some(id), Some(rest)) => {
                    let (Ok(id), Some((kind, named))) = (id.parse::<usize>(), rest.split_once(' ')) else { continue };
                    if let Ok((name, labels)) = serde_json::from_str::<(String, Vec<(String, String)>)>(named) {
                        ids.insert(id, recorded.series.len());
                        recorded.series.push(((name, labels), Kind::from_name(kind), Vec::new()));
                    }
                }
                (Some("v"), Some(id), Some(value)) => {
                    let (Ok(id), Ok(value)) = (id.parse::<usize>(), value.parse::<f64>()) else { continue };
                    if let Some(at) = ids.get(&id) {
                        let points = &mut recorded.series[*at].2;
                        if points.last().is_none_or(|(last, _)| *last < t) {
                            points.push((t, value));
                        }
                    }
                }
                _ => {}
            }
        }
        recorded
    }

    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }

    /// How many values are kept, over every series.
    pub fn values(&self) -> usize {
        self.series.iter().map(|s| s.2.len()).sum()
    }

    /// The series as the API gives them, in the order they first came.
    pub fn series(&self) -> Vec<Series> {
        self.series
            .iter()
            .map(|((name, labels), kind, points)| Series {
                metric: name.clone(),
                labels: labels.iter().cloned().collect(),
                kind: *kind,
                samples: points
                    .iter()
                    .map(|(t_ms, value)| Point { t_ms: *t_ms, value: value.is_finite().then_some(*value) })
                    .collect(),
            })
            .collect()
    }

    /// The gauges no signal reads (an engine's own, or a newer vLLM's), as
    /// step lines: (name, points in seconds).
    pub fn other_gauges(&self) -> Vec<(String, Vec<(f64, f64)>)> {
        self.series
            .iter()
            .filter(|((name, _), kind, _)| *kind == Kind::Gauge && !super::exposition::is_signal(name))
            .map(|((name, labels), _, points)| {
                let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
                let name = if labels.is_empty() { name.clone() } else { format!("{name}{{{}}}", labels.join(",")) };
                (name, steps(points))
            })
            .collect()
    }

    /// The scrapes again, as [`super::exposition::measurements`] reads them: the signals
    /// at every scrape, and every series at the one counters count from (the
    /// last before the run, else its first) and at the last.
    pub fn scrapes(&self) -> Vec<Scrape> {
        let whole_at = [
            self.times.iter().rposition(|t| *t < 0).or((!self.times.is_empty()).then_some(0)),
            self.times.len().checked_sub(1),
        ];
        let mut cursors = vec![0usize; self.series.len()];
        let mut out = Vec::with_capacity(self.times.len());
        for (i, t) in self.times.iter().enumerate() {
            let whole = whole_at.contains(&Some(i));
            let mut exposition = Exposition::default();
            for (at, ((name, labels), kind, points)) in self.series.iter().enumerate() {
                if !whole && !super::exposition::is_signal(name) {
                    continue;
                }
                // The value as of `t`: the last written at or before it.
                let cursor = &mut cursors[at];
                while *cursor + 1 < points.len() && points[*cursor + 1].0 <= *t {
                    *cursor += 1;
                }
                let Some((since, value)) = points.get(*cursor) else { continue };
                if *since > *t {
                    continue;
                }
                exposition.kinds.entry(name.clone()).or_insert(*kind);
                exposition.samples.push(PromSample {
                    name: name.clone(),
                    labels: labels.clone(),
                    value: *value,
                    timestamp_ms: None,
                });
            }
            out.push(Scrape { t_ms: *t, exposition });
        }
        out
    }
}

/// Values kept at changes, as a line that holds each until the next.
pub fn steps(points: &[(i64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len() * 2);
    for (i, (t, v)) in points.iter().enumerate() {
        if i > 0 {
            out.push((*t as f64 / 1000.0, points[i - 1].1));
        }
        out.push((*t as f64 / 1000.0, *v));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scrape(waiting: f64, tokens: f64, buckets: [f64; 2]) -> Exposition {
        super::super::exposition::parse(&format!(
            "# TYPE vllm:num_requests_waiting gauge\n\
             vllm:num_requests_waiting{{model_name=\"m\"}} {waiting}\n\
             # TYPE vllm:generation_tokens_total counter\n\
             vllm:generation_tokens_total{{model_name=\"m\"}} {tokens}\n\
             # TYPE vllm:time_to_first_token_seconds histogram\n\
             vllm:time_to_first_token_seconds_bucket{{le=\"0.1\"}} {}\n\
             vllm:time_to_first_token_seconds_bucket{{le=\"+Inf\"}} {}\n\
             vllm:time_to_first_token_seconds_count {}\n",
            buckets[0], buckets[1], buckets[1]
        ))
    }

    /// Written back and read again, the measurements are those of the scrapes
    /// themselves, while only changes are stored.
    #[test]
    fn kept_as_changes_and_read_back_whole() {
        let scrapes: Vec<Scrape> = [
            (-300, scrape(0.0, 1000.0, [5.0, 5.0])),
            (200, scrape(3.0, 1000.0, [5.0, 5.0])),
            (1200, scrape(3.0, 1100.0, [7.0, 8.0])),
            (2200, scrape(0.0, 1250.0, [9.0, 10.0])),
            (3200, scrape(0.0, 1250.0, [9.0, 10.0])),
        ]
        .into_iter()
        .map(|(t_ms, exposition)| Scrape { t_ms, exposition })
        .collect();
        let mut recorder = Recorder::default();
        let mut chunks = Vec::new();
        for (i, s) in scrapes.iter().enumerate() {
            recorder.push(s.t_ms, &s.exposition);
            if i % 2 == 1 {
                chunks.extend(recorder.take());
            }
        }
        chunks.extend(recorder.finish());
        assert_eq!(recorder.seen, 25);
        // The first scrape's 5, then only changes (1, 4, 5, 0), and the last scrape's 5 again.
        assert_eq!(recorder.written, 20);
        let recorded = Recorded::read(chunks.iter().map(String::as_str));
        assert_eq!(
            super::super::exposition::measurements(&recorded.scrapes()),
            super::super::exposition::measurements(&scrapes)
        );
        let series = recorded.series();
        let waiting = series.iter().find(|s| s.metric == "vllm:num_requests_waiting").expect("kept");
        assert_eq!((waiting.kind, waiting.labels.get("model_name").map(String::as_str)), (Kind::Gauge, Some("m")));
        let points: Vec<(i64, Option<f64>)> = waiting.samples.iter().map(|p| (p.t_ms, p.value)).collect();
        assert_eq!(points, [(-300, Some(0.0)), (200, Some(3.0)), (2200, Some(0.0)), (3200, Some(0.0))]);
        let bucket = series.iter().find(|s| s.metric == "vllm:time_to_first_token_seconds_bucket").expect("kept");
        assert_eq!(bucket.kind, Kind::Histogram);
    }

    #[test]
    fn a_torn_chunk_loses_only_its_lines() {
        let recorded =
            Recorded::read(["t 5\ns 0 gauge [\"a\",[]]\nv 0 1\nv 0", "s 1 gauge [broken\nv 1 2\nt 9\nv 0 NaN\n"]);
        let series = recorded.series();
        assert_eq!(series.len(), 1);
        assert_eq!(series[0].samples, [Point { t_ms: 5, value: Some(1.0) }, Point { t_ms: 9, value: None }]);
    }
}
