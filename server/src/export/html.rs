//! The report as one HTML file: everything inline, nothing that runs or loads.
//! Every text from a user or a host is escaped here ([`esc`]); the only HTML
//! taken as is was made safe on the server before (notes and annotations
//! through ammonia without images, highlighted source lines, our own SVG).

use super::{Excerpt, Report, duration, format_value, headline};
use app::components::escape_text as esc;
use app::model::Step;
use app::steps::StepBody;
use std::fmt::Write as _;

const STYLE: &str = r#"
:root { color-scheme: light; --ink: #1d2330; --muted: #5f6b7a; --line: #d9dee5; --soft: #f5f7fa; --accent: #2456c4; }
* { box-sizing: border-box; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); margin: 0 auto; max-width: 980px; padding: 24px; }
h1 { font-size: 26px; margin: 0 0 4px; } h2 { font-size: 20px; margin: 32px 0 8px; border-bottom: 1px solid var(--line); }
h3 { font-size: 16px; margin: 0 0 6px; } .muted, .meta { color: var(--muted); } .meta { font-size: 13px; }
.question { font-size: 17px; margin: 4px 0 8px; }
table { border-collapse: collapse; width: 100%; margin: 8px 0; font-size: 14px; }
th, td { border: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: var(--soft); }
article.step { border: 1px solid var(--line); border-radius: 6px; padding: 12px 16px; margin: 14px 0; }
article.step:target, tr:target, .annotation:target, .comment:target { outline: 2px solid var(--accent); }
pre, code { font: 13px/1.45 ui-monospace, SFMono-Regular, Menlo, monospace; }
pre { background: var(--soft); padding: 8px 10px; overflow-x: auto; border-radius: 4px; }
pre.output { max-height: none; white-space: pre-wrap; word-break: break-all; }
.gap { color: var(--muted); font-style: italic; }
table.source { border: none; } table.source td { border: none; padding: 0 8px; white-space: pre; }
table.source td.ln { color: var(--muted); text-align: right; user-select: none; width: 1%; }
table.source td.ln a { color: inherit; text-decoration: none; }
tr.note td { white-space: normal; background: #fff8db; border-left: 3px solid #e0b100; font: 14px/1.45 system-ui, sans-serif; }
.verdict { font-weight: 600; }
figure { margin: 12px 0; } figure svg { max-width: 100%; height: auto; }
.comment { border-left: 3px solid var(--line); padding: 2px 10px; margin: 6px 0; }
.badge { display: inline-block; padding: 0 6px; border-radius: 8px; background: var(--soft); font-size: 12px; }
"#;

pub fn render(report: &Report) -> String {
    let inv = &report.investigation;
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"generator\" content=\"Sleuth\"><title>{} — Sleuth report</title><style>{STYLE}{}</style></head><body>\n",
        esc(&inv.title),
        crate::snippets::highlight::stylesheet()
    );
    let _ = write!(h, "<header><h1>{}</h1>", esc(&inv.title));
    if !inv.question.trim().is_empty() {
        let _ = write!(h, "<p class=\"question\">{}</p>", esc(&inv.question));
    }
    let _ = writeln!(
        h,
        "<p class=\"meta\">{} · {} steps · {} · exported {}</p></header>",
        esc(&report.provenance),
        inv.steps.len(),
        esc(inv.status.as_str()),
        esc(&report.exported_at)
    );
    hypotheses(&mut h, report);
    if let Some(overview) = &inv.overview {
        let _ = writeln!(
            h,
            "<section id=\"overview\"><h2>{} by configuration</h2><figure>{}</figure></section>",
            esc(&overview.metric),
            overview.svg
        );
    }
    h.push_str("<section id=\"timeline\"><h2>Timeline</h2>\n");
    for step in &inv.steps {
        step_html(&mut h, report, step);
    }
    h.push_str("</section>\n<footer class=\"meta\"><p>Written by Sleuth from the investigation ");
    let _ = write!(h, "<code>{}</code>. Links inside this file point at its own sections.</p></footer>", esc(&inv.id));
    h.push_str("</body></html>\n");
    h
}

fn hypotheses(h: &mut String, report: &Report) {
    let list = &report.investigation.hypotheses;
    if list.is_empty() {
        return;
    }
    h.push_str(
        "<section id=\"hypotheses\"><h2>Hypotheses</h2><table><thead><tr><th>Hypothesis</th><th>Metric</th>\
         <th>Baseline</th><th>Treatment</th><th>Δ</th><th>95 % CI</th><th>Verdict</th></tr></thead><tbody>\n",
    );
    for hyp in list {
        let c = hyp.comparison.as_ref();
        let group = |g: Option<&app::metrics::GroupSummary>| match g {
            Some(g) => format!("{} (n={})", format_value(g.mean), g.n),
            None => "—".into(),
        };
        let _ = write!(h, "<tr id=\"{}\"><td>{}", app::hypotheses::hypothesis_anchor(hyp.id), esc(&hyp.statement));
        if let Some(p) = &hyp.provenance {
            let _ = write!(h, "<br><span class=\"meta\">{}</span>", esc(&p.summary));
            for w in &p.warnings {
                let _ = write!(h, "<br><span class=\"meta\">⚠ {}</span>", esc(w));
            }
        }
        let _ = writeln!(
            h,
            "</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"verdict\">{}</td></tr>",
            esc(hyp.metric.as_deref().unwrap_or("—")),
            group(c.map(|c| &c.baseline)),
            group(c.map(|c| &c.treatment)),
            c.map_or("—".into(), |c| format!("{:+.1} %", c.delta_pct)),
            c.and_then(|c| c.ci_pct).map_or("—".into(), |(lo, hi)| format!("{lo:+.1} … {hi:+.1} %")),
            esc(&c.map_or_else(|| hyp.status.clone(), |c| format!("{} — {}", hyp.status, c.verdict)))
        );
    }
    h.push_str("</tbody></table>\n");
    for hyp in list {
        if let (Some(c), Some(metric)) = (&hyp.comparison, &hyp.metric)
            && let Ok(svg) = crate::charts::experiment(metric, hyp.unit.as_deref().unwrap_or(""), c)
        {
            let _ = writeln!(h, "<figure><figcaption>{}</figcaption>{svg}</figure>", esc(&hyp.statement));
        }
    }
    h.push_str("</section>\n");
}

fn step_html(h: &mut String, report: &Report, step: &Step) {
    let _ = writeln!(
        h,
        "<article class=\"step\" id=\"{}\"><h3><a href=\"#{}\">#{}</a> {}</h3>",
        step.anchor(),
        step.anchor(),
        step.position,
        esc(&headline(step))
    );
    match &step.body {
        StepBody::Note(n) => h.push_str(&crate::markdown::to_offline_html(&n.body)),
        StepBody::Command(c) => {
            let mut shown = String::new();
            for (k, v) in &c.env {
                let _ = write!(shown, "{k}={} ", crate::ssh::quote::quote_if_needed(v));
            }
            shown.push_str(&c.command);
            let _ = write!(h, "<pre><code>{}</code></pre>", esc(&shown));
            if let Some(cwd) = &c.cwd {
                let _ = write!(h, "<p class=\"meta\">in <code>{}</code></p>", esc(cwd));
            }
            let sweep = app::sweeps::matrix_text(&c.matrix);
            if !sweep.trim().is_empty() {
                let _ = write!(h, "<p class=\"meta\">Sweep:</p><pre>{}</pre>", esc(&sweep));
            }
            runs(h, report, step);
        }
        StepBody::Snippet(_) => snippet(h, step),
        StepBody::Grep(g) => {
            let _ = write!(h, "<p>Searched <code>{}</code> for <code>{}</code>.</p>", esc(&g.path), esc(&g.pattern));
            if let Some(html) = &step.html {
                h.push_str(html);
            }
        }
        StepBody::Calculator(c) => {
            let _ = write!(h, "<p class=\"meta\">{}</p>", esc(&super::calculator_inputs(c)));
            let rows = super::result_rows(step);
            if !rows.is_empty() {
                h.push_str("<table class=\"results\"><tbody>");
                for (name, value) in rows {
                    let _ = write!(h, "<tr><th>{}</th><td>{}</td></tr>", esc(&name), esc(&value));
                }
                h.push_str("</tbody></table>");
            }
        }
    }
    if report.comments {
        comments(h, report, step.id);
    }
    h.push_str("</article>\n");
}

fn runs(h: &mut String, report: &Report, step: &Step) {
    if step.runs.is_empty() {
        h.push_str("<p class=\"meta\">Not run.</p>");
        return;
    }
    h.push_str(
        "<table><thead><tr><th>Run</th><th>Status</th><th>Exit</th><th>Duration</th><th>Configuration</th>\
         <th>Measurements</th></tr></thead><tbody>",
    );
    for run in &step.runs {
        let measured: Vec<String> = run
            .measurements
            .iter()
            .filter(|m| m.key.is_none())
            .map(|m| format!("{} = {} {}", esc(&m.metric), format_value(m.value), esc(&m.unit)))
            .collect();
        let _ = write!(
            h,
            "<tr id=\"run-{}\"><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            run.id,
            run.id,
            if run.warmup { " <span class=\"badge\">warm-up</span>" } else { "" },
            esc(run.status.as_str()),
            run.exit_code.map_or_else(|| esc(run.exit_signal.as_deref().unwrap_or("—")), |c| c.to_string()),
            duration(run.duration_ms),
            run.config.as_ref().map_or(String::new(), |c| esc(&app::sweeps::config_label(c))),
            measured.join("<br>")
        );
    }
    h.push_str("</tbody></table>");
    for run in step.runs.iter().rev() {
        if let Some(e) = report.excerpts.get(&run.id) {
            output(h, e);
        }
    }
}

fn output(h: &mut String, e: &Excerpt) {
    let shown = e.lines.len() as u64;
    let _ = write!(
        h,
        "<p class=\"meta\">Output of run {}: {} of {} lines shown (its end, and the lines its measurements and source references are on){}.</p><pre class=\"output\">",
        e.run,
        shown,
        e.total_lines,
        if e.unread_bytes > 0 { format!("; the first {} bytes were not read", e.unread_bytes) } else { String::new() }
    );
    let mut last = 0u64;
    for (n, text) in &e.lines {
        if *n > last + 1 {
            let _ = writeln!(h, "<span class=\"gap\">… {} lines left out …</span>", n - last - 1);
        }
        let _ = writeln!(h, "<span class=\"muted\">{n:>6}</span>  {}", esc(text));
        last = *n;
    }
    if e.total_lines > last {
        let _ = writeln!(h, "<span class=\"gap\">… {} lines left out …</span>", e.total_lines - last);
    }
    h.push_str("</pre>");
}

fn snippet(h: &mut String, step: &Step) {
    let Some(snap) = step.snapshots.last() else {
        h.push_str("<p class=\"meta\">Not fetched.</p>");
        return;
    };
    let _ = write!(
        h,
        "<p class=\"meta\"><code>{}</code>, lines {}–{}{}, fetched {}</p><table class=\"source\">",
        esc(&snap.path),
        snap.start,
        snap.end,
        snap.sha256.as_ref().map_or(String::new(), |s| format!(", sha256 {}", esc(&s[..s.len().min(12)]))),
        esc(&snap.fetched_at)
    );
    for (i, plain) in snap.lines.iter().enumerate() {
        let n = snap.start + i as u64;
        let anchor = app::steps::snippet::line_anchor(step.id, n);
        // Highlighted lines are the server's own spans around escaped text.
        let code = snap.html_lines.get(i).cloned().unwrap_or_else(|| esc(plain));
        let _ =
            write!(h, "<tr id=\"{anchor}\"><td class=\"ln\"><a href=\"#{anchor}\">{n}</a></td><td>{code}</td></tr>");
        for a in step.annotations.iter().filter(|a| a.end == n) {
            let range = app::steps::snippet::range_anchor(step.id, a.start, a.end);
            let _ = write!(
                h,
                "<tr class=\"note\"><td class=\"ln\"></td><td><a id=\"{range}\"></a><div class=\"annotation\" id=\"{}\">\
                 <strong><a href=\"#{range}\">Lines {}–{}</a></strong>{} {}</div></td></tr>",
                app::steps::snippet::annotation_anchor(a.id),
                a.start,
                a.end,
                a.author.as_ref().map_or(String::new(), |w| format!(" <span class=\"meta\">{}</span>", esc(w))),
                crate::markdown::to_offline_html(&a.body)
            );
        }
    }
    h.push_str("</table>");
}

fn comments(h: &mut String, report: &Report, step: i64) {
    let threads: Vec<&app::comments::Comment> =
        report.investigation.comments.iter().filter(|c| c.step_id == step).collect();
    if threads.is_empty() {
        return;
    }
    h.push_str("<div class=\"comments\"><p class=\"meta\">Comments</p>");
    for c in threads {
        let _ = write!(
            h,
            "<div class=\"comment\" id=\"{}\"><p class=\"meta\">{} · {}{}</p>{}</div>",
            app::comments::comment_anchor(c.id),
            esc(&c.author),
            esc(&c.created_at),
            if c.parent_id.is_some() { " · reply" } else { "" },
            crate::markdown::to_offline_html(&c.body)
        );
    }
    h.push_str("</div>");
}
