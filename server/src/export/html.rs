//! The report as one HTML file: everything inline, nothing that runs or loads.
//! Every text from a user or a host is escaped here ([`esc`]); the only HTML
//! taken as is was made safe on the server before (notes and annotations
//! through ammonia without images, highlighted source lines, our own SVG).

use super::report::{Excerpt, Report};
use super::walk::{Chart, HypothesisLine, RunLine, Writer, excerpt_caption, excerpt_lines, walk};
use domain::comments::Comment;
use domain::html::escape_text as esc;
use domain::metrics::Overview;
use domain::model::Step;
use domain::steps::snippet::Snapshot;
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
th[align="right"], td[align="right"] { text-align: right; } th[align="center"], td[align="center"] { text-align: center; }
article.step { border: 1px solid var(--line); border-radius: 6px; padding: 12px 16px; margin: 14px 0; }
article.step:target, tr:target, .annotation:target, .comment:target { outline: 2px solid var(--accent); }
pre, code { font: 13px/1.45 ui-monospace, SFMono-Regular, Menlo, monospace; }
pre { background: var(--soft); padding: 8px 10px; overflow-x: auto; border-radius: 4px; }
pre.output { max-height: none; white-space: pre-wrap; word-break: break-all; }
.gap { color: var(--muted); font-style: italic; }
table.source { border: none; } table.source td { border: none; padding: 0 8px; white-space: pre; font: 13px/1.45 ui-monospace, SFMono-Regular, Menlo, monospace; }
table.source tr.annotated td:last-child { background: #fff8db; box-shadow: inset 3px 0 #e0b100; }
table.source td.ln { color: var(--muted); text-align: right; user-select: none; width: 1%; }
table.source td.ln a { color: inherit; text-decoration: none; }
tr.note td { white-space: normal; background: #fff8db; border-left: 3px solid #e0b100; font: 14px/1.45 system-ui, sans-serif; }
.verdict { font-weight: 600; }
figure { margin: 12px 0; } figure svg { max-width: 100%; height: auto; }
.comment { border-left: 3px solid var(--line); padding: 2px 10px; margin: 6px 0; }
.badge { display: inline-block; padding: 0 6px; border-radius: 8px; background: var(--soft); font-size: 12px; }
"#;

pub fn render(report: &Report) -> String {
    let mut html = Html(String::new());
    walk(report, &mut html);
    html.0
}

struct Html(String);

impl Writer for Html {
    fn header(&mut self, report: &Report) {
        let (h, inv) = (&mut self.0, &report.investigation);
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
    }

    fn hypotheses(&mut self, lines: &[HypothesisLine<'_>], charts: Vec<Chart<'_>>) {
        let h = &mut self.0;
        h.push_str(
            "<section id=\"hypotheses\"><h2>Hypotheses</h2><table><thead><tr><th>Hypothesis</th><th>Metric</th>\
             <th>Baseline</th><th>Treatment</th><th>Δ</th><th>95 % CI</th><th>Verdict</th></tr></thead><tbody>\n",
        );
        for line in lines {
            let _ =
                write!(h, "<tr id=\"{}\"><td>{}", domain::hypotheses::hypothesis_anchor(line.id), esc(line.statement));
            if !line.rationale.trim().is_empty() {
                // Rendered and sanitized by the server (`hypotheses`), as on the page.
                let _ = write!(h, "<div class=\"rationale\">{}</div>", line.rationale_html);
            }
            if let Some((summary, warnings)) = line.provenance {
                let _ = write!(h, "<br><span class=\"meta\">{}</span>", esc(summary));
                for w in warnings {
                    let _ = write!(h, "<br><span class=\"meta\">⚠ {}</span>", esc(w));
                }
            }
            for (text, anchor) in &line.patches {
                let _ = write!(h, "<br><span class=\"meta\"><a href=\"#{anchor}\">{}</a></span>", esc(text));
            }
            for text in &line.left_out {
                let _ = write!(h, "<br><span class=\"meta\">⚠ {}</span>", esc(text));
            }
            if let Some(hazards) = &line.hazards {
                let _ = write!(h, "<br><span class=\"meta\">⚠ Hazards: {}</span>", esc(hazards));
            }
            let _ = writeln!(
                h,
                "</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"verdict\">{}</td></tr>",
                esc(line.metric),
                esc(&line.baseline),
                esc(&line.treatment),
                esc(&line.delta),
                esc(&line.ci),
                esc(&line.verdict)
            );
        }
        h.push_str("</tbody></table>\n");
        for chart in charts {
            let _ = writeln!(h, "<figure><figcaption>{}</figcaption>{}</figure>", esc(chart.caption), chart.svg);
        }
        h.push_str("</section>\n");
    }

    fn overview(&mut self, overview: &Overview) {
        let _ = writeln!(
            self.0,
            "<section id=\"overview\"><h2>{} by configuration</h2><figure>{}</figure></section>",
            esc(&overview.metric),
            overview.svg
        );
    }

    fn rates(&mut self, chart: &domain::distributions::RateChart) {
        let _ = write!(
            self.0,
            "<section id=\"rates\"><h2>{} against load</h2><figure>{}</figure><table><thead><tr><th>Configuration</th>\
             <th>Rates</th><th>Knee (SLO met up to)</th></tr></thead><tbody>",
            esc(&chart.metric),
            chart.svg
        );
        for line in &chart.lines {
            let knee = line.knee.map_or("—".into(), |k| format!("{} req/s", super::report::format_value(k)));
            let _ =
                write!(self.0, "<tr><td>{}</td><td>{}</td><td>{}</td></tr>", esc(&line.label), line.points, esc(&knee));
        }
        self.0.push_str("</tbody></table></section>\n");
    }

    fn timeline(&mut self) {
        self.0.push_str("<section id=\"timeline\"><h2>Timeline</h2>\n");
    }

    fn step_start(&mut self, step: &Step, headline: &str) {
        let _ = writeln!(
            self.0,
            "<article class=\"step\" id=\"{}\"><h3><a href=\"#{}\">#{}</a> {}</h3>",
            step.anchor(),
            step.anchor(),
            step.position,
            esc(headline)
        );
    }

    fn note(&mut self, markdown: &str) {
        self.0.push_str(&crate::markdown::to_offline_html(markdown));
    }

    fn slo(&mut self, description: &str) {
        let _ = writeln!(self.0, "<p class=\"slo\"><strong>SLO:</strong> {}</p>", esc(description));
    }

    fn server(&mut self, command: &str, how: &str) {
        let _ = write!(
            self.0,
            "<p class=\"meta\">Server beside each run, {}:</p><pre class=\"server-command\"><code>{}</code></pre>",
            esc(how),
            esc(command)
        );
    }

    fn kept_files(&mut self, globs: &[String]) {
        let globs: Vec<String> = globs.iter().map(|g| format!("<code>{}</code>", esc(g))).collect();
        let _ = write!(self.0, "<p class=\"meta\">Files kept from each run's directory: {}</p>", globs.join(" "));
    }

    fn command(&mut self, shown: &str, cwd: Option<&str>, sweep: &str) {
        let h = &mut self.0;
        let _ = write!(h, "<pre><code>{}</code></pre>", esc(shown));
        if let Some(cwd) = cwd {
            let _ = write!(h, "<p class=\"meta\">in <code>{}</code></p>", esc(cwd));
        }
        if !sweep.trim().is_empty() {
            let _ = write!(h, "<p class=\"meta\">Sweep:</p><pre>{}</pre>", esc(sweep));
        }
    }

    fn runs(&mut self, lines: &[RunLine]) {
        let h = &mut self.0;
        h.push_str(
            "<table><thead><tr><th>Run</th><th>Status</th><th>Exit</th><th>Duration</th><th>Configuration</th>\
             <th>Measurements</th></tr></thead><tbody>",
        );
        for run in lines {
            let measured: Vec<String> = run.measured.iter().map(|m| esc(m)).collect();
            let _ = write!(
                h,
                "<tr id=\"run-{}\"><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                run.id,
                run.id,
                if run.warmup { " <span class=\"badge\">warm-up</span>" } else { "" },
                esc(run.status),
                esc(&run.exit),
                esc(&run.duration),
                esc(&run.config),
                measured.join("<br>")
            );
        }
        h.push_str("</tbody></table>");
    }

    fn not_run(&mut self) {
        self.0.push_str("<p class=\"meta\">Not run.</p>");
    }

    fn output(&mut self, e: &Excerpt) {
        let h = &mut self.0;
        let _ = write!(h, "<p class=\"meta\">{}.</p><pre class=\"output\">", esc(&excerpt_caption(e)));
        for (n, text) in excerpt_lines(e) {
            if n == 0 {
                let _ = writeln!(h, "<span class=\"gap\">{}</span>", esc(&text));
            } else {
                let _ = writeln!(h, "<span class=\"muted\">{n:>6}</span>  {}", esc(&text));
            }
        }
        h.push_str("</pre>");
    }

    fn snippet(&mut self, step: &Step, snapshot: Option<&Snapshot>) {
        let h = &mut self.0;
        let Some(snap) = snapshot else {
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
            let anchor = domain::steps::snippet::line_anchor(step.id, n);
            // Highlighted lines are the server's own spans around escaped text.
            let code = snap.html_lines.get(i).cloned().unwrap_or_else(|| esc(plain));
            // Lines an annotation covers are marked, as on the page.
            let annotated = step.annotations.iter().any(|a| a.start <= n && n <= a.end);
            let class = if annotated { " class=\"annotated\"" } else { "" };
            let _ = write!(
                h,
                "<tr id=\"{anchor}\"{class}><td class=\"ln\"><a href=\"#{anchor}\">{n}</a></td><td>{code}</td></tr>"
            );
            for a in step.annotations.iter().filter(|a| a.end == n) {
                let range = domain::steps::snippet::range_anchor(step.id, a.start, a.end);
                let _ = write!(
                    h,
                    "<tr class=\"note\"><td class=\"ln\"></td><td><a id=\"{range}\"></a><div class=\"annotation\" id=\"{}\">\
                     <strong><a href=\"#{range}\">Lines {}–{}</a></strong>{} {}</div></td></tr>",
                    domain::steps::snippet::annotation_anchor(a.id),
                    a.start,
                    a.end,
                    a.author.as_ref().map_or(String::new(), |w| format!(" <span class=\"meta\">{}</span>", esc(w))),
                    crate::markdown::to_offline_html(&a.body)
                );
            }
        }
        h.push_str("</table>");
    }

    fn grep(&mut self, step: &Step, path: &str, pattern: &str) {
        let _ = write!(self.0, "<p>Searched <code>{}</code> for <code>{}</code>.</p>", esc(path), esc(pattern));
        if let Some(html) = &step.html {
            self.0.push_str(html);
        }
    }

    fn calculator(&mut self, inputs: &str, results: &[(String, String)]) {
        let h = &mut self.0;
        let _ = write!(h, "<p class=\"meta\">{}</p>", esc(inputs));
        if !results.is_empty() {
            h.push_str("<table class=\"results\"><tbody>");
            for (name, value) in results {
                let _ = write!(h, "<tr><th>{}</th><td>{}</td></tr>", esc(name), esc(value));
            }
            h.push_str("</tbody></table>");
        }
    }

    fn patch(&mut self, patch: &domain::steps::patch::PatchBody) {
        let h = &mut self.0;
        h.push_str("<ul class=\"meta\">");
        for f in &patch.files {
            let base = f.base.as_deref().unwrap_or("?");
            let _ = write!(
                h,
                "<li><code>{}</code> +{} −{} · base <code>{}</code></li>",
                esc(&f.path),
                f.added,
                f.removed,
                esc(base)
            );
        }
        let _ = write!(h, "</ul><pre class=\"diff\"><code>{}</code></pre>", esc(&patch.diff));
    }

    fn comments(&mut self, comments: &[&Comment]) {
        let h = &mut self.0;
        h.push_str("<div class=\"comments\"><p class=\"meta\">Comments</p>");
        for c in comments {
            let _ = write!(
                h,
                "<div class=\"comment\" id=\"{}\"><p class=\"meta\">{} · {}{}</p>{}</div>",
                domain::comments::comment_anchor(c.id),
                esc(&c.author),
                esc(&c.created_at),
                if c.parent_id.is_some() { " · reply" } else { "" },
                crate::markdown::to_offline_html(&c.body)
            );
        }
        h.push_str("</div>");
    }

    fn step_end(&mut self) {
        self.0.push_str("</article>\n");
    }

    fn end(&mut self, report: &Report) {
        let h = &mut self.0;
        h.push_str("</section>\n<footer class=\"meta\"><p>Written by Sleuth from the investigation ");
        let _ = write!(
            h,
            "<code>{}</code>. Links inside this file point at its own sections.</p></footer>",
            esc(&report.investigation.id)
        );
        h.push_str("</body></html>\n");
    }
}
