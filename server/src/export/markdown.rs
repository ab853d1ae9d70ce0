//! The report as GitHub-flavoured Markdown: headings with anchors, tables for
//! hypotheses and runs, code fences with their language. Text Sleuth writes is
//! escaped for Markdown (and HTML, which renderers may pass through); notes and
//! annotations are Markdown already and keep their formatting, with any raw
//! HTML in them turned into text.

use super::{Excerpt, Report, duration, format_value, headline, language};
use app::model::Step;
use app::steps::StepBody;
use std::fmt::Write as _;

/// Inline text: Markdown's punctuation and HTML's `<` escaped, one line.
pub fn inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '#' | '|' | '~' | '!' | '>' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '&' => out.push_str("&amp;"),
            '\n' | '\r' => out.push(' '),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// A fence longer than any run of backticks in `text`.
fn fence(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat((longest + 1).max(3))
}

fn code_block(md: &mut String, lang: &str, text: &str) {
    let f = fence(text);
    let _ = write!(md, "{f}{lang}\n{text}");
    if !text.ends_with('\n') {
        md.push('\n');
    }
    let _ = writeln!(md, "{f}\n");
}

/// `charts`: where to put the charts as files (a zip); `None` leaves them out
/// with a note (a single Markdown file cannot hold images).
pub fn render(report: &Report, mut charts: Option<&mut Vec<(String, String)>>) -> String {
    let inv = &report.investigation;
    let mut md = String::new();
    let _ = writeln!(md, "# {}\n", inline(&inv.title));
    if !inv.question.trim().is_empty() {
        let _ = writeln!(md, "> {}\n", inline(&inv.question));
    }
    let _ = writeln!(
        md,
        "_{} · {} steps · {} · exported {}_\n",
        inline(&report.provenance),
        inv.steps.len(),
        inv.status.as_str(),
        inline(&report.exported_at)
    );
    if !inv.hypotheses.is_empty() {
        md.push_str("## Hypotheses\n\n| Hypothesis | Metric | Baseline | Treatment | Δ | 95 % CI | Verdict |\n");
        md.push_str("|---|---|---|---|---|---|---|\n");
        for h in &inv.hypotheses {
            let c = h.comparison.as_ref();
            let group = |g: Option<&app::metrics::GroupSummary>| {
                g.map_or("—".into(), |g| format!("{} (n={})", format_value(g.mean), g.n))
            };
            let mut statement = inline(&h.statement);
            if let Some(p) = &h.provenance {
                let _ = write!(statement, "<br>{}", inline(&p.summary));
            }
            let _ = writeln!(
                md,
                "| <a id=\"{}\"></a>{statement} | {} | {} | {} | {} | {} | **{}** |",
                app::hypotheses::hypothesis_anchor(h.id),
                inline(h.metric.as_deref().unwrap_or("—")),
                group(c.map(|c| &c.baseline)),
                group(c.map(|c| &c.treatment)),
                c.map_or("—".into(), |c| format!("{:+.1} %", c.delta_pct)),
                c.and_then(|c| c.ci_pct).map_or("—".into(), |(lo, hi)| format!("{lo:+.1} … {hi:+.1} %")),
                inline(&c.map_or_else(|| h.status.clone(), |c| format!("{} — {}", h.status, c.verdict)))
            );
        }
        md.push('\n');
        for h in &inv.hypotheses {
            if let (Some(c), Some(metric), Some(charts)) = (&h.comparison, &h.metric, charts.as_deref_mut())
                && let Ok(svg) = crate::charts::experiment(metric, h.unit.as_deref().unwrap_or(""), c)
            {
                let file = format!("charts/hypothesis-{}.svg", h.id);
                let _ = writeln!(md, "![{}]({file})\n", inline(&h.statement));
                charts.push((file, svg));
            }
        }
    }
    if let Some(overview) = &inv.overview {
        let _ = writeln!(md, "## {} by configuration\n", inline(&overview.metric));
        match charts {
            Some(charts) => {
                let _ = writeln!(md, "![{} by configuration](charts/overview.svg)\n", inline(&overview.metric));
                charts.push(("charts/overview.svg".into(), overview.svg.clone()));
            }
            None => md.push_str("_The chart is in the .zip export (charts/overview.svg)._\n\n"),
        }
        md.push_str("| Configuration | n | Mean | Stddev |\n|---|---|---|---|\n");
        for g in &overview.groups {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} |",
                inline(&g.label),
                g.summary.n,
                format_value(g.summary.mean),
                g.summary.stddev.map_or("—".into(), format_value)
            );
        }
        md.push('\n');
    }
    md.push_str("## Timeline\n\n");
    for step in &inv.steps {
        step_md(&mut md, report, step);
    }
    md
}

fn step_md(md: &mut String, report: &Report, step: &Step) {
    let _ = writeln!(md, "### <a id=\"{}\"></a>{}. {}\n", step.anchor(), step.position, inline(&headline(step)));
    match &step.body {
        StepBody::Note(n) => {
            let _ = writeln!(md, "{}\n", crate::markdown::with_html_as_text(n.body.trim_end()));
        }
        StepBody::Command(c) => {
            let mut shown = String::new();
            for (k, v) in &c.env {
                let _ = write!(shown, "{k}={} ", crate::ssh::quote::quote_if_needed(v));
            }
            shown.push_str(&c.command);
            code_block(md, "sh", &shown);
            let sweep = app::sweeps::matrix_text(&c.matrix);
            if !sweep.trim().is_empty() {
                md.push_str("Sweep:\n\n");
                code_block(md, "text", &sweep);
            }
            runs(md, report, step);
        }
        StepBody::Snippet(_) => snippet(md, step),
        StepBody::Grep(g) => {
            let _ = writeln!(md, "Searched `{}` for `{}`.\n", g.path.replace('`', "'"), g.pattern.replace('`', "'"));
            if let Some(result) = &step.search {
                code_block(md, "text", &serde_json::to_string_pretty(result).unwrap_or_default());
            }
        }
        StepBody::Calculator(c) => {
            let _ = writeln!(md, "{}\n", inline(&super::calculator_inputs(c)));
            let rows = super::result_rows(step);
            if !rows.is_empty() {
                md.push_str("| Result | Value |\n|---|---|\n");
                for (name, value) in rows {
                    let _ = writeln!(md, "| {} | {} |", inline(&name), inline(&value));
                }
                md.push('\n');
            }
        }
    }
    if report.comments {
        for c in report.investigation.comments.iter().filter(|c| c.step_id == step.id) {
            let _ = writeln!(
                md,
                "> <a id=\"{}\"></a>**{}** · {}\n>\n> {}\n",
                app::comments::comment_anchor(c.id),
                inline(&c.author),
                inline(&c.created_at),
                crate::markdown::with_html_as_text(c.body.trim()).replace('\n', "\n> ")
            );
        }
    }
}

fn runs(md: &mut String, report: &Report, step: &Step) {
    if step.runs.is_empty() {
        md.push_str("_Not run._\n\n");
        return;
    }
    md.push_str("| Run | Status | Exit | Duration | Configuration | Measurements |\n|---|---|---|---|---|---|\n");
    for run in &step.runs {
        let measured: Vec<String> = run
            .measurements
            .iter()
            .filter(|m| m.key.is_none())
            .map(|m| format!("{} = {} {}", inline(&m.metric), format_value(m.value), inline(&m.unit)))
            .collect();
        let _ = writeln!(
            md,
            "| {}{} | {} | {} | {} | {} | {} |",
            run.id,
            if run.warmup { " (warm-up)" } else { "" },
            run.status.as_str(),
            run.exit_code.map_or_else(|| inline(run.exit_signal.as_deref().unwrap_or("—")), |c| c.to_string()),
            duration(run.duration_ms),
            run.config.as_ref().map_or(String::new(), |c| inline(&app::sweeps::config_label(c))),
            measured.join("<br>")
        );
    }
    md.push('\n');
    for run in step.runs.iter().rev() {
        if let Some(e) = report.excerpts.get(&run.id) {
            output(md, e);
        }
    }
}

fn output(md: &mut String, e: &Excerpt) {
    let _ = writeln!(
        md,
        "Output of run {}: {} of {} lines (its end, and the lines its measurements and source references are on){}:\n",
        e.run,
        e.lines.len(),
        e.total_lines,
        if e.unread_bytes > 0 { format!("; the first {} bytes were not read", e.unread_bytes) } else { String::new() }
    );
    let mut text = String::new();
    let mut last = 0u64;
    for (n, line) in &e.lines {
        if *n > last + 1 {
            let _ = writeln!(text, "… {} lines left out …", n - last - 1);
        }
        let _ = writeln!(text, "{n:>6}  {line}");
        last = *n;
    }
    if e.total_lines > last {
        let _ = writeln!(text, "… {} lines left out …", e.total_lines - last);
    }
    code_block(md, "text", &text);
}

fn snippet(md: &mut String, step: &Step) {
    let Some(snap) = step.snapshots.last() else {
        md.push_str("_Not fetched._\n\n");
        return;
    };
    let _ = writeln!(
        md,
        "`{}`, lines {}–{}, fetched {}:\n",
        snap.path.replace('`', "'"),
        snap.start,
        snap.end,
        snap.fetched_at
    );
    let mut text = String::new();
    for (i, line) in snap.lines.iter().enumerate() {
        let _ = writeln!(text, "{:>5}  {line}", snap.start + i as u64);
    }
    code_block(md, language(&snap.path), &text);
    for a in &step.annotations {
        let _ = writeln!(
            md,
            "> <a id=\"{}\"></a>**Lines {}–{}**{}: {}\n",
            app::steps::snippet::annotation_anchor(a.id),
            a.start,
            a.end,
            a.author.as_ref().map_or(String::new(), |w| format!(" ({})", inline(w))),
            crate::markdown::with_html_as_text(a.body.trim()).replace('\n', "\n> ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_cannot_become_markup() {
        assert_eq!(inline("<script>a|b</script> *x* [l](u)"), "&lt;script\\>a\\|b&lt;/script\\> \\*x\\* \\[l\\](u)");
        assert_eq!(fence("a ``` b ```` c"), "`````");
        assert_eq!(fence("plain"), "```");
    }
}
