//! The report as GitHub-flavoured Markdown: headings with anchors, tables for
//! hypotheses and runs, code fences with their language. Text Sleuth writes is
//! escaped for Markdown (and HTML, which renderers may pass through); notes and
//! annotations are Markdown already and keep their formatting, with any raw
//! HTML in them turned into text.

use super::report::{Excerpt, Report, format_value, language};
use super::walk::{Chart, HypothesisLine, RunLine, Writer, excerpt_caption, excerpt_lines, walk};
use domain::comments::Comment;
use domain::metrics::Overview;
use domain::model::Step;
use domain::steps::snippet::Snapshot;
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

/// The zip's list of runs' files and server logs: each is in the zip beside
/// the report, or (over the budget) named with where Sleuth serves it.
pub fn attachments(attachments: &[super::report::Attachment]) -> String {
    if attachments.is_empty() {
        return String::new();
    }
    let mut md = String::from(
        "## Files from the runs\n\n| Run | File | Size | sha256 | In this zip |\n|---|---|---:|---|---|\n",
    );
    for a in attachments {
        let place = match &a.bytes {
            Some(_) => format!("[{}]({})", inline(&a.path), a.path.replace(' ', "%20")),
            None => format!(
                "no (over the export's {}): `{}`",
                domain::runs::human_bytes(super::report::ZIP_FILES_BUDGET),
                inline(&a.url)
            ),
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {place} |",
            a.run,
            inline(&a.what),
            domain::runs::human_bytes(a.size),
            a.sha256.as_deref().map(|s| format!("`{}`", &s[..s.len().min(16)])).unwrap_or_else(|| "—".into())
        );
    }
    md.push('\n');
    md
}

/// `charts`: where to put the charts as files (a zip); `None` leaves them out
/// with a note (a single Markdown file cannot hold images).
pub fn render(report: &Report, charts: Option<&mut Vec<(String, String)>>) -> String {
    let mut markdown = Markdown { md: String::new(), charts };
    walk(report, &mut markdown);
    markdown.md
}

struct Markdown<'a> {
    md: String,
    charts: Option<&'a mut Vec<(String, String)>>,
}

impl Writer for Markdown<'_> {
    fn header(&mut self, report: &Report) {
        let (md, inv) = (&mut self.md, &report.investigation);
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
    }

    fn hypotheses(&mut self, lines: &[HypothesisLine<'_>], charts: Vec<Chart<'_>>) {
        let md = &mut self.md;
        md.push_str("## Hypotheses\n\n| Hypothesis | Metric | Baseline | Treatment | Δ | 95 % CI | Verdict |\n");
        md.push_str("|---|---|---|---|---|---|---|\n");
        for line in lines {
            let mut statement = inline(line.statement);
            if !line.rationale.trim().is_empty() {
                let _ = write!(statement, "<br>_Why:_ {}", inline(line.rationale));
            }
            if let Some((summary, warnings)) = line.provenance {
                let _ = write!(statement, "<br>{}", inline(summary));
                for w in warnings {
                    let _ = write!(statement, "<br>⚠ {}", inline(w));
                }
            }
            for (text, anchor) in &line.patches {
                let _ = write!(statement, "<br>[{}](#{anchor})", inline(text));
            }
            for text in &line.left_out {
                let _ = write!(statement, "<br>⚠ {}", inline(text));
            }
            if let Some(hazards) = &line.hazards {
                let _ = write!(statement, "<br>⚠ Hazards: {}", inline(hazards));
            }
            let _ = writeln!(
                md,
                "| <a id=\"{}\"></a>{statement} | {} | {} | {} | {} | {} | **{}** |",
                domain::hypotheses::hypothesis_anchor(line.id),
                inline(line.metric),
                inline(&line.baseline),
                inline(&line.treatment),
                inline(&line.delta),
                inline(&line.ci),
                inline(&line.verdict)
            );
        }
        md.push('\n');
        if let Some(files) = self.charts.as_deref_mut() {
            for chart in charts {
                let file = format!("charts/hypothesis-{}.svg", chart.id);
                let _ = writeln!(md, "![{}]({file})\n", inline(chart.caption));
                files.push((file, chart.svg));
            }
        }
    }

    fn rates(&mut self, chart: &domain::distributions::RateChart) {
        let md = &mut self.md;
        let _ = writeln!(md, "## {} against load\n", inline(&chart.metric));
        match self.charts.as_deref_mut() {
            Some(files) => {
                let _ = writeln!(md, "![{} against load](charts/rates.svg)\n", inline(&chart.metric));
                files.push(("charts/rates.svg".into(), chart.svg.clone()));
            }
            None => md.push_str("_The chart is in the .zip export (charts/rates.svg)._\n\n"),
        }
        md.push_str("| Configuration | Rates | Knee (SLO met up to) |\n|---|---|---|\n");
        for line in &chart.lines {
            let knee = line.knee.map_or("—".into(), |k| format!("{} req/s", super::report::format_value(k)));
            let _ = writeln!(md, "| {} | {} | {} |", inline(&line.label), line.points, knee);
        }
        md.push('\n');
    }

    fn overview(&mut self, overview: &Overview) {
        let md = &mut self.md;
        let _ = writeln!(md, "## {} by configuration\n", inline(&overview.metric));
        match self.charts.as_deref_mut() {
            Some(files) => {
                let _ = writeln!(md, "![{} by configuration](charts/overview.svg)\n", inline(&overview.metric));
                files.push(("charts/overview.svg".into(), overview.svg.clone()));
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

    fn timeline(&mut self) {
        self.md.push_str("## Timeline\n\n");
    }

    fn step_start(&mut self, step: &Step, headline: &str) {
        let _ = writeln!(self.md, "### <a id=\"{}\"></a>{}. {}\n", step.anchor(), step.position, inline(headline));
    }

    fn note(&mut self, markdown: &str) {
        let _ = writeln!(self.md, "{}\n", crate::markdown::with_html_as_text(markdown.trim_end()));
    }

    fn slo(&mut self, description: &str) {
        let _ = writeln!(self.md, "**SLO:** {}\n", inline(description));
    }

    fn server(&mut self, command: &str, how: &str) {
        let _ = writeln!(self.md, "Server beside each run, {}:\n", inline(how));
        code_block(&mut self.md, "sh", command);
    }

    fn kept_files(&mut self, globs: &[String]) {
        let globs: Vec<String> = globs.iter().map(|g| format!("`{}`", g.replace('`', "'"))).collect();
        let _ = writeln!(self.md, "Files kept from each run's directory: {}\n", globs.join(" "));
    }

    fn command(&mut self, shown: &str, cwd: Option<&str>, sweep: &str) {
        code_block(&mut self.md, "sh", shown);
        if let Some(cwd) = cwd {
            let _ = writeln!(self.md, "in `{}`\n", cwd.replace('`', "'"));
        }
        if !sweep.trim().is_empty() {
            self.md.push_str("Sweep:\n\n");
            code_block(&mut self.md, "text", sweep);
        }
    }

    fn runs(&mut self, lines: &[RunLine]) {
        let md = &mut self.md;
        md.push_str("| Run | Status | Exit | Duration | Configuration | Measurements |\n|---|---|---|---|---|---|\n");
        for run in lines {
            let measured: Vec<String> = run.measured.iter().map(|m| inline(m)).collect();
            let _ = writeln!(
                md,
                "| {}{} | {} | {} | {} | {} | {} |",
                run.id,
                if run.warmup { " (warm-up)" } else { "" },
                run.status,
                inline(&run.exit),
                inline(&run.duration),
                inline(&run.config),
                measured.join("<br>")
            );
        }
        md.push('\n');
    }

    fn not_run(&mut self) {
        self.md.push_str("_Not run._\n\n");
    }

    fn output(&mut self, e: &Excerpt) {
        let _ = writeln!(self.md, "{}:\n", inline(&excerpt_caption(e)));
        let mut text = String::new();
        for (n, line) in excerpt_lines(e) {
            if n == 0 {
                let _ = writeln!(text, "{line}");
            } else {
                let _ = writeln!(text, "{n:>6}  {line}");
            }
        }
        code_block(&mut self.md, "text", &text);
    }

    fn snippet(&mut self, step: &Step, snapshot: Option<&Snapshot>) {
        let md = &mut self.md;
        let Some(snap) = snapshot else {
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
            let n = snap.start + i as u64;
            // Lines an annotation covers are marked in the margin, as on the page.
            let mark = if step.annotations.iter().any(|a| a.start <= n && n <= a.end) { '▌' } else { ' ' };
            let _ = writeln!(text, "{n:>5}{mark} {line}");
        }
        code_block(md, language(&snap.path), &text);
        for a in &step.annotations {
            let _ = writeln!(
                md,
                "> <a id=\"{}\"></a>**Lines {}–{}**{}: {}\n",
                domain::steps::snippet::annotation_anchor(a.id),
                a.start,
                a.end,
                a.author.as_ref().map_or(String::new(), |w| format!(" ({})", inline(w))),
                crate::markdown::with_html_as_text(a.body.trim()).replace('\n', "\n> ")
            );
        }
    }

    fn grep(&mut self, step: &Step, path: &str, pattern: &str) {
        let _ = writeln!(self.md, "Searched `{}` for `{}`.\n", path.replace('`', "'"), pattern.replace('`', "'"));
        if let Some(result) = &step.search {
            code_block(&mut self.md, "text", &serde_json::to_string_pretty(result).unwrap_or_default());
        }
    }

    fn calculator(&mut self, inputs: &str, results: &[(String, String)]) {
        let md = &mut self.md;
        let _ = writeln!(md, "{}\n", inline(inputs));
        if !results.is_empty() {
            md.push_str("| Result | Value |\n|---|---|\n");
            for (name, value) in results {
                let _ = writeln!(md, "| {} | {} |", inline(name), inline(value));
            }
            md.push('\n');
        }
    }

    fn patch(&mut self, patch: &domain::steps::patch::PatchBody) {
        for f in &patch.files {
            let base = f.base.as_deref().unwrap_or("?");
            let _ = writeln!(
                self.md,
                "- `{}` +{} −{} (base sha256 `{base}`)",
                f.path.replace('`', "'"),
                f.added,
                f.removed
            );
        }
        self.md.push('\n');
        code_block(&mut self.md, "diff", &patch.diff);
    }

    fn comments(&mut self, comments: &[&Comment]) {
        for c in comments {
            let _ = writeln!(
                self.md,
                "> <a id=\"{}\"></a>**{}** · {}\n>\n> {}\n",
                domain::comments::comment_anchor(c.id),
                inline(&c.author),
                inline(&c.created_at),
                crate::markdown::with_html_as_text(c.body.trim()).replace('\n', "\n> ")
            );
        }
    }

    fn step_end(&mut self) {}

    fn end(&mut self, _: &Report) {}
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
