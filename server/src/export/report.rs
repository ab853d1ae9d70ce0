//! A report: the investigation as the API answers it, plus each run's output
//! excerpt — its last lines and every line a measurement's value or a source
//! reference is on, with what was left out counted — and the small formatters
//! both writers share.

use crate::output::{OutputKey, Outputs};
use domain::model::Investigation;

/// Bytes of runs' files and server logs a zip export holds at most; the rest
/// are listed with their size, sha256 and where Sleuth serves them.
pub const ZIP_FILES_BUDGET: u64 = 512 << 20;

/// Lines of each run's end in its excerpt.
pub const TAIL_LINES: usize = 12;
/// Lines of evidence (measured values, source references) per run at most.
pub const EVIDENCE_LINES: usize = 40;
/// Runs per step with an excerpt (the newest); the rest are rows of the table.
pub const RUNS_WITH_EXCERPTS: usize = 12;
/// Lines shown before and after each line of a server log an excerpt keeps.
pub const AROUND_LINES: usize = 2;
/// Bytes of a server log's end read for its excerpt (a model's load can log
/// megabytes; what is wrong is said near the start or the end).
const SERVER_LOG_BYTES: u64 = 1 << 20;

/// A run's output, as much as a report keeps.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Excerpt {
    pub run: i64,
    /// `(1-based line number, text)`, in order; a gap between numbers is elided lines.
    pub lines: Vec<(u64, String)>,
    /// Lines of the output in all (as far as they were read).
    pub total_lines: u64,
    /// Bytes before the part that was read (the report says they were not looked at).
    pub unread_bytes: u64,
    /// Of the run's server log, not its output.
    #[serde(default)]
    pub server_log: bool,
}

pub struct Report {
    pub investigation: Investigation,
    pub excerpts: std::collections::HashMap<i64, Excerpt>,
    /// Of runs' server logs: the lines the investigation points at, with what is around them.
    pub server_logs: std::collections::HashMap<i64, Excerpt>,
    /// Runs' files and server logs (a team's zip export; never a share link's).
    pub attachments: Vec<Attachment>,
    pub comments: bool,
    /// Where it came from, for the header: "Shared by …" or the exporter.
    pub provenance: String,
    pub exported_at: String,
    /// The team's zip holds `provenance.json` (`domain::replays::Manifest`), which a replay reads back.
    pub manifest: Option<domain::replays::Manifest>,
}

/// What of a report a share link hides hosts and people in (`crate::shares`).
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Parts {
    pub investigation: Investigation,
    pub excerpts: Vec<Excerpt>,
    #[serde(default)]
    pub server_logs: Vec<Excerpt>,
}

impl Report {
    pub fn parts(&self) -> Parts {
        Parts {
            investigation: self.investigation.clone(),
            excerpts: self.excerpts.values().cloned().collect(),
            server_logs: self.server_logs.values().cloned().collect(),
        }
    }

    pub fn with_parts(self, parts: Parts) -> Self {
        let excerpts = parts.excerpts.into_iter().map(|e| (e.run, e)).collect();
        let server_logs = parts.server_logs.into_iter().map(|e| (e.run, e)).collect();
        Self { investigation: parts.investigation, excerpts, server_logs, ..self }
    }

    /// Reads the excerpts of `investigation`'s runs: their output's, and their
    /// server logs' where they kept one.
    pub async fn gather(
        investigation: Investigation,
        store: &crate::db::Store,
        outputs: &Outputs,
        comments: bool,
        provenance: String,
    ) -> Self {
        let mut excerpts = std::collections::HashMap::new();
        let mut shown: Vec<i64> = Vec::new();
        for step in &investigation.steps {
            for run in step.runs.iter().rev().take(RUNS_WITH_EXCERPTS) {
                shown.push(run.id);
                match excerpt(outputs, run).await {
                    Ok(Some(e)) => {
                        excerpts.insert(run.id, e);
                    }
                    Ok(None) => {}
                    Err(e) => tracing::warn!(run = run.id, "cannot read output for an export: {e}"),
                }
            }
        }
        let server_logs = server_logs(&investigation, store, outputs, &shown).await;
        let exported_at = crate::time::timestamp(crate::time::now_ms());
        Self {
            investigation,
            excerpts,
            server_logs,
            attachments: Vec::new(),
            comments,
            provenance,
            exported_at,
            manifest: None,
        }
    }

    /// Adds the provenance manifest: every run's host facts as it started.
    pub async fn with_manifest(&mut self, store: &crate::db::Store) -> crate::error::Result<()> {
        let mut facts = std::collections::HashMap::new();
        let ids: std::collections::BTreeSet<i64> =
            self.investigation.steps.iter().flat_map(|s| s.runs.iter().filter_map(|r| r.facts_id)).collect();
        for id in ids {
            if let Some(row) = store.facts(id).await? {
                facts.insert(id, crate::facts::of_row(row)?);
            }
        }
        self.manifest = Some(domain::replays::manifest_of(&self.investigation, &facts, self.exported_at.clone()));
        Ok(())
    }

    /// Adds the runs' artifacts and server logs, their bytes while they fit in
    /// `budget` (newest steps' runs first as they come; the rest listed with
    /// their size and sha256, to download from Sleuth).
    pub async fn attach(&mut self, store: &crate::db::Store, outputs: &Outputs, budget: u64) {
        let runs: Vec<i64> = self.investigation.steps.iter().flat_map(|s| s.runs.iter().map(|r| r.id)).collect();
        let logs = match store.logs_of_runs(&runs).await {
            Ok(logs) => logs,
            Err(e) => return tracing::warn!("cannot list runs' files for an export: {e}"),
        };
        let mut used = 0u64;
        for log in logs {
            let (path, what) = match log.kind {
                crate::db::LogKind::Artifact => {
                    (format!("runs/run-{}/files/{}", log.run_id, log.name), log.name.clone())
                }
                crate::db::LogKind::Server => (format!("runs/run-{}/server.log", log.run_id), "server log".to_string()),
            };
            let size = u64::try_from(log.size).unwrap_or(0);
            let size = if log.kind == crate::db::LogKind::Server {
                outputs.len(OutputKey::Log(log.id)).await.unwrap_or(size)
            } else {
                size
            };
            let bytes = if used + size <= budget {
                match outputs.read_range(OutputKey::Log(log.id), 0, size).await {
                    Ok((bytes, _)) => {
                        used += bytes.len() as u64;
                        Some(bytes)
                    }
                    Err(e) => {
                        tracing::warn!(run = log.run_id, "cannot read {what} for an export: {e}");
                        None
                    }
                }
            } else {
                None
            };
            let url = format!("/api/v1/runs/{}/artifacts/{}", log.run_id, log.id);
            let url = if log.kind == crate::db::LogKind::Server {
                format!("/api/v1/runs/{}/output?stream=server", log.run_id)
            } else {
                url
            };
            self.attachments.push(Attachment { run: log.run_id, path, what, size, sha256: log.sha256, url, bytes });
        }
    }
}

/// A run's file or server log in an export.
pub struct Attachment {
    pub run: i64,
    /// Where it is in the zip.
    pub path: String,
    /// Its name in the run's directory, or "server log".
    pub what: String,
    pub size: u64,
    pub sha256: Option<String>,
    /// Where Sleuth serves it.
    pub url: String,
    /// `None`: over the export's budget (or unreadable), listed only.
    pub bytes: Option<Vec<u8>>,
}

/// A file name from the title: letters, digits and dashes, with the id.
pub fn file_stem(title: &str, id: &str) -> String {
    let mut stem = String::new();
    for c in title.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            stem.push(c);
        } else if !stem.ends_with('-') && !stem.is_empty() {
            stem.push('-');
        }
        if stem.len() >= 48 {
            break;
        }
    }
    let stem = stem.trim_matches('-');
    if stem.is_empty() { format!("sleuth-{id}") } else { format!("{stem}-{id}") }
}

/// Whether `line` shows `value` as a number (not inside a longer one).
fn shows_value(line: &str, value: f64) -> bool {
    let mut forms = vec![format!("{value}")];
    if value.fract() != 0.0 {
        for digits in 1..=3 {
            forms.push(format!("{value:.digits$}"));
        }
    }
    let digit = |c: Option<char>| c.is_some_and(|c| c.is_ascii_digit());
    forms.iter().any(|form| {
        line.match_indices(form.as_str()).any(|(at, _)| {
            let before = line[..at].chars().next_back();
            let mut after = line[at + form.len()..].chars();
            let (a1, a2) = (after.next(), after.next());
            // Not the end of a longer number, nor its start ("12" in "125", "57.5" in "1.57.5").
            let continues_before = digit(before) || before == Some('.');
            let continues_after = digit(a1) || (a1 == Some('.') && digit(a2));
            !(continues_before || continues_after)
        })
    })
}

pub(super) async fn excerpt(outputs: &Outputs, run: &domain::runs::Run) -> std::io::Result<Option<Excerpt>> {
    let len = outputs.len(run.id).await?;
    if len == 0 {
        return Ok(None);
    }
    let from = len.saturating_sub(crate::metrics::record::READ_BYTES);
    let (bytes, _) = outputs.read_range(run.id, from, crate::metrics::record::READ_BYTES).await?;
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<&str> = text.split('\n').collect();
    if lines.last() == Some(&"") {
        lines.pop();
    }
    // A read that starts mid-output starts mid-line: that partial line is not shown.
    let skip = usize::from(from > 0);
    let total = lines.len() as u64;
    let values: Vec<f64> = run.measurements.iter().map(|m| m.value).filter(|v| v.is_finite()).collect();
    let mut keep: Vec<usize> = Vec::new();
    for (i, line) in lines.iter().enumerate().skip(skip) {
        if keep.len() >= EVIDENCE_LINES {
            break;
        }
        let evidence = values.iter().any(|v| shows_value(line, *v)) || !crate::snippets::refs::find(line).is_empty();
        if evidence {
            keep.push(i);
        }
    }
    keep.extend(lines.len().saturating_sub(TAIL_LINES).max(skip)..lines.len());
    keep.sort_unstable();
    keep.dedup();
    let lines = keep
        .into_iter()
        .map(|i| {
            let text: String = lines[i].chars().take(2000).collect();
            (i as u64 + 1, strip_ansi(&text))
        })
        .collect();
    Ok(Some(Excerpt { run: run.id, lines, total_lines: total, unread_bytes: from, server_log: false }))
}

/// The server logs of `runs` (those that kept one), each as the lines the
/// investigation points at: warnings and errors, source references, and lines
/// its notes, comments or hypotheses quote, with [`AROUND_LINES`] on each
/// side, and the log's end.
async fn server_logs(
    investigation: &Investigation,
    store: &crate::db::Store,
    outputs: &Outputs,
    runs: &[i64],
) -> std::collections::HashMap<i64, Excerpt> {
    let mut found = std::collections::HashMap::new();
    let logs = match store.logs_of_runs(runs).await {
        Ok(logs) => logs,
        Err(e) => {
            tracing::warn!("cannot list runs' server logs for an export: {e}");
            return found;
        }
    };
    let quoted = quoted_texts(investigation);
    for log in logs.iter().filter(|l| l.kind == crate::db::LogKind::Server) {
        let read = async {
            let len = outputs.len(OutputKey::Log(log.id)).await?;
            let from = len.saturating_sub(SERVER_LOG_BYTES);
            Ok::<_, std::io::Error>((from, outputs.read_range(OutputKey::Log(log.id), from, SERVER_LOG_BYTES).await?.0))
        };
        match read.await {
            Ok((_, bytes)) if bytes.is_empty() => {}
            Ok((from, bytes)) => {
                let text = String::from_utf8_lossy(&bytes);
                let mut lines: Vec<String> = text.split('\n').map(strip_ansi).collect();
                if lines.last().is_some_and(String::is_empty) {
                    lines.pop();
                }
                let skip = usize::from(from > 0);
                let keep = pointed_at(&lines[skip..], &quoted).into_iter().map(|i| i + skip);
                let kept = keep.map(|i| (i as u64 + 1, lines[i].chars().take(2000).collect())).collect();
                let total_lines = lines.len() as u64;
                let excerpt =
                    Excerpt { run: log.run_id, lines: kept, total_lines, unread_bytes: from, server_log: true };
                found.insert(log.run_id, excerpt);
            }
            Err(e) => tracing::warn!(run = log.run_id, "cannot read a server log for an export: {e}"),
        }
    }
    found
}

/// What the investigation's people wrote: a line of a log they quote is one it points at.
fn quoted_texts(investigation: &Investigation) -> Vec<String> {
    let notes = investigation.steps.iter().filter_map(|s| match &s.body {
        domain::steps::StepBody::Note(n) => Some(n.body.clone()),
        _ => None,
    });
    let comments = investigation.comments.iter().map(|c| c.body.clone());
    let rationales = investigation.hypotheses.iter().map(|h| h.rationale.clone());
    notes.chain(comments).chain(rationales).filter(|t| !t.trim().is_empty()).collect()
}

/// A quoted line must say this much (trimmed) to count: "INFO" or "done" is quoted by chance.
const QUOTED_CHARS: usize = 24;

/// Which of a server log's lines an excerpt keeps (0-based, in order): each
/// line that warns, errs, names a source line or is quoted in `quoted`, with
/// [`AROUND_LINES`] around it (at most [`EVIDENCE_LINES`] such lines), and
/// the last [`TAIL_LINES`].
pub fn pointed_at(lines: &[String], quoted: &[String]) -> Vec<usize> {
    static ALARM: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"\b(WARN(ING)?|ERROR|CRITICAL|FATAL|Traceback|[A-Za-z]*Error:|[Dd]isabled|OOM|out of memory)\b",
        )
        .expect("valid regex")
    });
    let said = |line: &str| {
        let line = line.trim();
        line.chars().count() >= QUOTED_CHARS && quoted.iter().any(|q| q.contains(line))
    };
    let mut keep: Vec<usize> = Vec::new();
    let mut evidence = 0;
    for (i, line) in lines.iter().enumerate() {
        if evidence >= EVIDENCE_LINES {
            break;
        }
        if ALARM.is_match(line) || !crate::snippets::refs::find(line).is_empty() || said(line) {
            evidence += 1;
            keep.extend(i.saturating_sub(AROUND_LINES)..(i + AROUND_LINES + 1).min(lines.len()));
        }
    }
    keep.extend(lines.len().saturating_sub(TAIL_LINES)..lines.len());
    keep.sort_unstable();
    keep.dedup();
    keep
}

/// Output without terminal colour codes (a report shows plain text).
fn strip_ansi(text: &str) -> String {
    static ANSI: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\x1b\[[0-9;?]*[ -/]*[@-~]").expect("valid regex"));
    ANSI.replace_all(text, "").chars().filter(|c| *c == '\t' || !c.is_control()).collect()
}

/// A code fence's language for a source path (GitHub's names).
pub fn language(path: &str) -> &'static str {
    let ext = path.rsplit('.').next().unwrap_or("");
    match ext {
        "py" | "pyi" | "pyx" => "python",
        "rs" => "rust",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hh" | "hpp" => "cpp",
        "cu" | "cuh" => "cuda",
        "go" => "go",
        "js" | "mjs" => "javascript",
        "ts" => "typescript",
        "sh" => "sh",
        "toml" => "toml",
        "yaml" | "yml" => "yaml",
        "json" => "json",
        _ => "text",
    }
}

/// What a step is, in a few words, for headings.
pub fn headline(step: &domain::model::Step) -> String {
    use domain::steps::StepBody;
    match &step.body {
        StepBody::Note(_) => "Note".into(),
        StepBody::Command(c) => format!("Command on {}", c.host),
        StepBody::Snippet(s) => {
            let path = s.path.clone().or_else(|| s.module.clone()).unwrap_or_default();
            format!("Source: {path}")
        }
        StepBody::Grep(g) => format!("Search for {:?} in {}", g.pattern, g.path),
        StepBody::Calculator(domain::steps::calculator::CalculatorBody::Bandwidth(_)) => "Bandwidth roofline".into(),
        StepBody::Calculator(domain::steps::calculator::CalculatorBody::Collective(_)) => "Collective budget".into(),
        StepBody::Patch(p) => {
            let (added, removed) = p.counts();
            format!("Patch on {}: {} file(s), +{added} −{removed}", p.host, p.files.len())
        }
    }
}

/// A calculator's inputs, `name = value, …` (where a value came from a measurement, it says so).
pub fn calculator_inputs(body: &domain::steps::calculator::CalculatorBody) -> String {
    let mut parts = Vec::new();
    if let Ok(serde_json::Value::Object(map)) = serde_json::to_value(body) {
        for (name, value) in map {
            match value {
                serde_json::Value::Null => {}
                serde_json::Value::String(s) => parts.push(format!("{name} = {s}")),
                serde_json::Value::Number(n) => parts.push(format!("{name} = {n}")),
                other if name.ends_with("_from") => {
                    let metric = other["metric"].as_str().unwrap_or("a measurement");
                    let run = other["run"].as_i64().map_or(String::new(), |r| format!(" of run {r}"));
                    parts.push(format!("{name} = {metric}{run}"));
                }
                _ => {}
            }
        }
    }
    parts.join(", ")
}

/// A calculator step's results as `(name, value)` rows, in the order the API gives them.
pub fn result_rows(step: &domain::model::Step) -> Vec<(String, String)> {
    let results = match (&step.results, &step.body) {
        (Some(r), _) => Some(r.clone()),
        (None, domain::steps::StepBody::Calculator(c)) => c.results(),
        _ => None,
    };
    let mut rows = Vec::new();
    if let Some(results) = results
        && let Ok(serde_json::Value::Object(map)) = serde_json::to_value(&results)
    {
        for (name, value) in map {
            let shown = match &value {
                serde_json::Value::Number(n) => n.as_f64().map_or_else(|| n.to_string(), format_value),
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Null => continue,
                other => other.to_string(),
            };
            rows.push((name, shown));
        }
    }
    rows
}

pub fn format_value(value: f64) -> String {
    if value.abs() >= 100.0 || value.fract() == 0.0 { format!("{value:.1}") } else { format!("{value:.3}") }
}

pub fn duration(ms: Option<u64>) -> String {
    match ms {
        Some(ms) if ms >= 60_000 => format!("{}m {:02}s", ms / 60_000, (ms % 60_000) / 1000),
        Some(ms) => format!("{:.1} s", ms as f64 / 1000.0),
        None => "—".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_found_as_numbers_not_inside_longer_ones() {
        assert!(shows_value("Output token throughput (tok/s):   57.5", 57.5));
        assert!(shows_value("decode mean 375.71 tok/s", 375.71));
        assert!(shows_value("took 12 ms", 12.0));
        assert!(!shows_value("took 125 ms", 12.0));
        assert!(!shows_value("version 1.57.5", 57.5));
        assert!(shows_value("rate 2916.7.", 2916.7));
    }

    #[test]
    fn file_names_are_plain() {
        assert_eq!(file_stem("vLLM on 8× PCIe: <b>57.5</b> tok/s?", "abc"), "vllm-on-8-pcie-b-57-5-b-tok-s-abc");
        assert_eq!(file_stem("«»", "abc"), "sleuth-abc");
    }

    #[test]
    fn a_server_log_keeps_what_is_pointed_at_with_its_surroundings_and_its_end() {
        let mut lines: Vec<String> = (1..=200).map(|i| format!("INFO 12-04 loading shard {i}")).collect();
        lines[49] = "WARNING custom_all_reduce.py:137] Custom allreduce is disabled because it's not supported".into();
        lines[99] = "INFO init engine (profile, create kv cache, warmup model) took 31.2 seconds".into();
        lines[149] = "INFO done".into();
        let quoted =
            vec!["The log says `INFO init engine (profile, create kv cache, warmup model) took 31.2 seconds`".into()];
        let keep = pointed_at(&lines, &quoted);
        let around = |i: usize| (i - AROUND_LINES..=i + AROUND_LINES).all(|j| keep.contains(&j));
        assert!(around(49), "a warning with its surroundings: {keep:?}");
        assert!(around(99), "a quoted line too");
        assert!(!keep.contains(&149), "a short line is not quoted by chance");
        assert!(keep.contains(&199) && keep.contains(&(200 - TAIL_LINES)), "the end");
        assert!(!keep.contains(&10), "the rest is left out");
        let loud: Vec<String> = (0..500).map(|i| format!("ERROR {i}")).collect();
        assert!(pointed_at(&loud, &[]).len() <= EVIDENCE_LINES * (2 * AROUND_LINES + 1) + TAIL_LINES);
    }

    #[test]
    fn colour_codes_go() {
        assert_eq!(strip_ansi("\x1b[1;32mINFO\x1b[0m ok\x07"), "INFO ok");
    }
}
