//! One walk through a report, for every format: what comes in which order, and
//! every value already worked out as plain text (numbers formatted, commands
//! with their env, runs' cells). A [`Writer`] only turns each part into its
//! format and escapes what it is given; `html.rs` and `markdown.rs` are the two.

use super::report::{Excerpt, Report, calculator_inputs, duration, format_value, headline, result_rows};
use domain::comments::Comment;
use domain::metrics::Overview;
use domain::model::Step;
use domain::steps::StepBody;
use domain::steps::snippet::Snapshot;

/// A row of the hypotheses table, as plain text.
pub struct HypothesisLine<'a> {
    pub id: i64,
    pub statement: &'a str,
    /// Why it was thought: Markdown as written, and as the server rendered it (sanitized).
    pub rationale: &'a str,
    pub rationale_html: &'a str,
    /// What differed between the two sides, and warnings about it.
    pub provenance: Option<(&'a str, &'a [String])>,
    pub metric: &'a str,
    pub baseline: String,
    pub treatment: String,
    pub delta: String,
    pub ci: String,
    pub verdict: String,
    /// The patches its arms ran with — "patch 12 (treatment): /opt/…/gate.py,
    /// +1 −1" — each with the anchor of its step, where the whole diff is.
    pub patches: Vec<(String, String)>,
    /// Runs of its arms it did not count, and why.
    pub left_out: Vec<String>,
    /// What its guards found over the runs it used (`None`: none warns).
    pub hazards: Option<String>,
}

/// A hypothesis's chart.
pub struct Chart<'a> {
    pub id: i64,
    pub caption: &'a str,
    pub svg: String,
}

/// A row of a step's runs table, as plain text.
pub struct RunLine {
    pub id: i64,
    pub warmup: bool,
    pub status: &'static str,
    pub exit: String,
    pub duration: String,
    pub config: String,
    /// `metric = value unit (source)`: one per metric and key, those the
    /// hypotheses and the SLO are about first, at most [`MEASURED_SHOWN`]
    /// and then how many more.
    pub measured: Vec<String>,
}

/// Measurements a runs table shows per run; the rest are counted (the JSON
/// and the page have them all).
pub const MEASURED_SHOWN: usize = 8;

/// What a format does with each part of a report, in the order [`walk`] gives them.
pub trait Writer {
    fn header(&mut self, report: &Report);
    fn hypotheses(&mut self, lines: &[HypothesisLine<'_>], charts: Vec<Chart<'_>>);
    fn overview(&mut self, overview: &Overview);
    fn rates(&mut self, chart: &domain::distributions::RateChart);
    fn timeline(&mut self);
    fn step_start(&mut self, step: &Step, headline: &str);
    fn note(&mut self, markdown: &str);
    /// The investigation's SLO, in words.
    fn slo(&mut self, description: &str);
    /// `shown`: the command with its env in front.
    fn command(&mut self, shown: &str, cwd: Option<&str>, sweep: &str);
    /// The server started beside each run, and how it was judged ready.
    fn server(&mut self, command: &str, how: &str);
    /// The files each run kept from its directory (globs).
    fn kept_files(&mut self, globs: &[String]);
    fn runs(&mut self, lines: &[RunLine]);
    fn not_run(&mut self);
    fn output(&mut self, excerpt: &Excerpt);
    fn snippet(&mut self, step: &Step, snapshot: Option<&Snapshot>);
    fn grep(&mut self, step: &Step, path: &str, pattern: &str);
    fn calculator(&mut self, inputs: &str, results: &[(String, String)]);
    /// Its files with their bases, and the diff whole.
    fn patch(&mut self, patch: &domain::steps::patch::PatchBody);
    fn comments(&mut self, comments: &[&Comment]);
    fn step_end(&mut self);
    fn end(&mut self, report: &Report);
}

/// Gives `writer` the report, part by part.
pub fn walk(report: &Report, writer: &mut impl Writer) {
    let inv = &report.investigation;
    writer.header(report);
    if let Some(slo) = &inv.slo {
        writer.slo(&slo.description);
    }
    if !inv.hypotheses.is_empty() {
        let lines: Vec<HypothesisLine<'_>> = inv.hypotheses.iter().map(hypothesis_line).collect();
        let charts = inv
            .hypotheses
            .iter()
            .filter_map(|h| {
                // A sampled percentile's chart is its CDFs, drawn with the hypothesis.
                if h.distribution.is_some() {
                    return Some(Chart { id: h.id, caption: &h.statement, svg: h.chart_svg.clone()? });
                }
                let (c, metric) = (h.comparison.as_ref()?, h.metric.as_ref()?);
                // No runs named: a report's dots are not links (its reader has no run pages).
                let (svg, _) =
                    crate::charts::experiment(metric, h.unit.as_deref().unwrap_or(""), c, Default::default())
                        .inspect_err(|e| tracing::warn!(hypothesis = h.id, "an export's chart: {e}"))
                        .ok()?;
                Some(Chart { id: h.id, caption: &h.statement, svg })
            })
            .collect();
        writer.hypotheses(&lines, charts);
    }
    if let Some(overview) = &inv.overview {
        writer.overview(overview);
    }
    if let Some(rates) = &inv.rates {
        writer.rates(rates);
    }
    writer.timeline();
    let asked = asked_about(inv);
    for step in &inv.steps {
        walk_step(report, step, &asked, writer);
    }
    writer.end(report);
}

fn hypothesis_line(h: &domain::hypotheses::Hypothesis) -> HypothesisLine<'_> {
    if let Some(d) = &h.distribution {
        let unit = h.unit.as_deref().unwrap_or("");
        // Pooled over requests: not the mean of the runs' own values, which the runs table shows; both are said.
        let per_run = |g: Option<&domain::metrics::GroupSummary>| {
            g.map_or(String::new(), |g| format!("; the runs' own average {} {unit}", format_value(g.mean)))
        };
        let c = h.comparison.as_ref();
        let side = |v: f64, runs: usize, requests: usize, g| {
            format!("{} {unit} ({runs} runs, {requests} req pooled{})", format_value(v), per_run(g))
        };
        return HypothesisLine {
            id: h.id,
            statement: &h.statement,
            rationale: &h.rationale,
            rationale_html: &h.rationale_html,
            provenance: h.provenance.as_ref().map(|p| (p.summary.as_str(), p.warnings.as_slice())),
            metric: h.metric.as_deref().unwrap_or("—"),
            baseline: side(d.baseline, d.runs.0, d.requests.0, c.map(|c| &c.baseline)),
            treatment: side(d.treatment, d.runs.1, d.requests.1, c.map(|c| &c.treatment)),
            delta: format!("{:+.1} %", d.delta_pct),
            ci: format!("{:+.1} … {:+.1} %", d.ci_pct.0, d.ci_pct.1),
            verdict: said(h, Some(&d.verdict)),
            patches: patches(h),
            left_out: left_out(h),
            hazards: h.hazards.clone(),
        };
    }
    let c = h.comparison.as_ref();
    let group = |g: Option<&domain::metrics::GroupSummary>| {
        g.map_or("—".into(), |g| format!("{} (n={})", format_value(g.mean), g.n))
    };
    HypothesisLine {
        id: h.id,
        statement: &h.statement,
        rationale: &h.rationale,
        rationale_html: &h.rationale_html,
        provenance: h.provenance.as_ref().map(|p| (p.summary.as_str(), p.warnings.as_slice())),
        metric: h.metric.as_deref().unwrap_or("—"),
        baseline: group(c.map(|c| &c.baseline)),
        treatment: group(c.map(|c| &c.treatment)),
        delta: c.map_or("—".into(), |c| format!("{:+.1} %", c.delta_pct)),
        ci: c.and_then(|c| c.ci_pct).map_or("—".into(), |(lo, hi)| format!("{lo:+.1} … {hi:+.1} %")),
        verdict: said(h, c.map(|c| c.verdict.as_str())),
        patches: patches(h),
        left_out: left_out(h),
        hazards: h.hazards.clone(),
    }
}

fn patches(h: &domain::hypotheses::Hypothesis) -> Vec<(String, String)> {
    let each = |p: &domain::hypotheses::PatchSummary| {
        let text = format!("patch {} ({}): {}, +{} −{}", p.step, p.arms, p.files.join(", "), p.added, p.removed);
        (text, domain::model::step_anchor(p.step))
    };
    h.patches.iter().map(each).collect()
}

fn left_out(h: &domain::hypotheses::Hypothesis) -> Vec<String> {
    h.left_out.iter().map(|l| format!("run {} not counted: {}", l.run, l.why)).collect()
}

/// The verdict as a report prints it: its own word ("as expected", "within
/// noise"), the numbers, the status where a person set one, and how it moved
/// when runs joined; the status alone before there is a verdict.
fn said(h: &domain::hypotheses::Hypothesis, verdict: Option<&str>) -> String {
    let Some(verdict) = verdict else { return h.status.as_str().to_string() };
    let word = h.verdict_word.as_deref().unwrap_or(h.status.as_str());
    let mut out = format!("{word} — {verdict}");
    if h.status_set {
        out.push_str(&format!(" (status: {}, set by a person)", h.status.as_str()));
    }
    if let Some(change) = &h.verdict_change {
        out.push_str(&format!("; {}", change.text));
    }
    out
}

/// The metrics the hypotheses and the SLO are about, in that order (an SLO's
/// bound names a per-request metric: `ttft_ms` stands for `ttft_ms_p99` too).
fn asked_about(inv: &domain::model::Investigation) -> Vec<String> {
    let mut asked: Vec<String> = Vec::new();
    let hypotheses = inv.hypotheses.iter().filter_map(|h| h.metric.clone());
    let slo = inv.slo.iter().flat_map(|s| s.slo.bounds.iter().map(|b| b.metric.clone()));
    for metric in hypotheses.chain(slo) {
        if !asked.contains(&metric) {
            asked.push(metric);
        }
    }
    asked
}

fn walk_step(report: &Report, step: &Step, asked: &[String], writer: &mut impl Writer) {
    writer.step_start(step, &headline(step));
    match &step.body {
        StepBody::Note(n) => writer.note(&n.body),
        StepBody::Command(c) => {
            let mut shown = String::new();
            for (k, v) in &c.env {
                shown.push_str(&format!("{k}={} ", crate::ssh::quote::quote_if_needed(v)));
            }
            shown.push_str(&c.command);
            writer.command(&shown, c.cwd.as_deref(), &domain::sweeps::matrix_text(&c.matrix));
            if let Some(server) = &c.server {
                writer.server(&server.command, &server.how());
            }
            if !c.artifacts.is_empty() {
                writer.kept_files(&c.artifacts);
            }
            if step.runs.is_empty() {
                writer.not_run();
            } else {
                writer.runs(&step.runs.iter().map(|run| run_line(run, asked)).collect::<Vec<_>>());
                for run in step.runs.iter().rev() {
                    if let Some(e) = report.server_logs.get(&run.id) {
                        writer.output(e);
                    }
                    if let Some(e) = report.excerpts.get(&run.id) {
                        writer.output(e);
                    }
                }
            }
        }
        StepBody::Snippet(_) => writer.snippet(step, step.snapshots.last()),
        StepBody::Grep(g) => writer.grep(step, &g.path, &g.pattern),
        StepBody::Calculator(c) => writer.calculator(&calculator_inputs(c), &result_rows(step)),
        StepBody::Patch(p) => writer.patch(p),
    }
    if report.comments {
        let on_step: Vec<&Comment> = report.investigation.comments.iter().filter(|c| c.step_id == step.id).collect();
        if !on_step.is_empty() {
            writer.comments(&on_step);
        }
    }
    writer.step_end();
}

fn run_line(run: &domain::runs::Run, asked: &[String]) -> RunLine {
    let mut found = domain::metrics::one_each(&run.measurements);
    // Stable: within each rank, the order the extractors found them in.
    found.sort_by_key(|m| asked.iter().position(|a| m.metric.starts_with(a.as_str())).unwrap_or(asked.len()));
    let more = found.len().saturating_sub(MEASURED_SHOWN);
    let mut measured: Vec<String> = found
        .iter()
        .take(MEASURED_SHOWN)
        .map(|m| {
            let key = m.key.as_ref().map(|k| format!(" [{k}]")).unwrap_or_default();
            format!("{}{key} = {} {} ({})", m.metric, format_value(m.value), m.unit, m.extractor)
        })
        .collect();
    if more > 0 {
        measured.push(format!("… {more} more (the JSON export and the run's page have them all)"));
    }
    RunLine {
        id: run.id,
        warmup: run.warmup,
        status: run.status.as_str(),
        exit: run.exit_code.map_or_else(|| run.exit_signal.clone().unwrap_or_else(|| "—".into()), |c| c.to_string()),
        duration: duration(run.duration_ms),
        // Who made it, where not a person: "(watch 3)".
        config: match (run.config.as_ref().map_or(String::new(), domain::sweeps::config_label), run.origin.label()) {
            (config, None) => config,
            (config, Some(by)) if config.is_empty() => format!("({by})"),
            (config, Some(by)) => format!("{config} ({by})"),
        },
        measured,
    }
}

/// An excerpt's lines with the gaps between them said: `(number, text)`, or
/// `(0, "… n lines left out …")`.
pub fn excerpt_lines(e: &Excerpt) -> Vec<(u64, String)> {
    let mut out = Vec::with_capacity(e.lines.len() + 2);
    let mut last = 0u64;
    for (n, text) in &e.lines {
        if *n > last + 1 {
            out.push((0, format!("… {} lines left out …", n - last - 1)));
        }
        out.push((*n, text.clone()));
        last = *n;
    }
    if e.total_lines > last {
        out.push((0, format!("… {} lines left out …", e.total_lines - last)));
    }
    out
}

/// The sentence before an excerpt.
pub fn excerpt_caption(e: &Excerpt) -> String {
    if e.server_log {
        return format!(
            "Server log of run {}: {} of {} lines shown (warnings, errors, source references and lines the notes quote, \
             {} lines around each, and its end){}",
            e.run,
            e.lines.len(),
            e.total_lines,
            super::report::AROUND_LINES,
            if e.unread_bytes > 0 {
                format!("; the first {} bytes were not read", e.unread_bytes)
            } else {
                String::new()
            }
        );
    }
    format!(
        "Output of run {}: {} of {} lines shown (its end, and the lines its measurements and source references are on){}",
        e.run,
        e.lines.len(),
        e.total_lines,
        if e.unread_bytes > 0 { format!("; the first {} bytes were not read", e.unread_bytes) } else { String::new() }
    )
}
