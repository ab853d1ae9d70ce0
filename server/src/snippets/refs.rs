//! Source references in run output — `[custom_all_reduce.py:137]` in a vLLM log,
//! `File "/p/x.py", line 137` in a Python traceback, `src/main.rs:42:7` from a
//! compiler — found in the text and turned into links to the source page of the run.

use regex::Regex;
use std::ops::Range;
use std::sync::LazyLock;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceRef {
    /// As written: absolute, relative, or a bare file name.
    pub file: String,
    pub line: u64,
}

// Extensions of files people read as source; a list rather than "anything with a
// dot" so `10.0.0.1:8000` or `example.com:443` are never links.
const EXTENSIONS: &str = "py|pyx|pxd|pyi|rs|c|cc|cpp|cxx|h|hh|hpp|cu|cuh|go|js|mjs|ts|java|kt|scala|rb|pl|lua|sh|zig|swift|cmake|toml|yaml|yml|json|jinja|txt|md";

static TRACEBACK: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"File "(?P<file>[^"\n]+)", line (?P<line>\d{1,9})"#).expect("valid regex"));

static FILE_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(r"(?P<file>(?:[\w.+@~-]*/)*[\w.+@-]+\.(?:{EXTENSIONS})):(?P<line>\d{{1,9}})(?::\d+)?\b"))
        .expect("valid regex")
});

/// The references in one piece of plain text, with their byte ranges, in order.
pub fn find(text: &str) -> Vec<(Range<usize>, SourceRef)> {
    let mut found: Vec<(Range<usize>, SourceRef)> = Vec::new();
    for caps in TRACEBACK.captures_iter(text) {
        if let (Some(whole), Some(file), Some(Ok(line))) =
            (caps.get(0), caps.name("file"), caps.name("line").map(|l| l.as_str().parse()))
        {
            found.push((whole.range(), SourceRef { file: file.as_str().to_string(), line }));
        }
    }
    for caps in FILE_LINE.captures_iter(text) {
        let (Some(whole), Some(file), Some(Ok(line))) =
            (caps.get(0), caps.name("file"), caps.name("line").map(|l| l.as_str().parse::<u64>()))
        else {
            continue;
        };
        // Part of a longer word or of a URL (`https://…/x.py:3`): not a reference.
        let before = text[..whole.start()].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || matches!(c, ':' | '/' | '.' | '_' | '-')) || line == 0 {
            continue;
        }
        if found.iter().any(|(r, _)| r.start < whole.end() && whole.start() < r.end) {
            continue;
        }
        found.push((whole.range(), SourceRef { file: file.as_str().to_string(), line }));
    }
    found.sort_by_key(|(r, _)| r.start);
    found
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&#39;", "'").replace("&amp;", "&")
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&#39;")
}

/// The references in `html` (as [`linkify`] left them) as plain marked text:
/// for readers of a share link, who cannot open a run's source page. Output
/// text is escaped, so every `<a` and `</a>` in it is one `linkify` wrote.
pub fn unlink(html: &str) -> String {
    if !html.contains("<a class=\"src-ref\"") {
        return html.to_string();
    }
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(at) = rest.find('<') {
        out.push_str(&rest[..at]);
        let end = rest[at..].find('>').map_or(rest.len(), |i| at + i + 1);
        let tag = &rest[at..end];
        if tag.starts_with("<a class=\"src-ref\"") {
            out.push_str("<span class=\"src-ref\">");
        } else if tag == "</a>" {
            out.push_str("</span>");
        } else {
            out.push_str(tag);
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// Wraps the references in `html` (as ansi-to-html writes it: `<span …>` tags and
/// text escaped with `&amp; &lt; &gt; &quot; &#39;`) in links. Tags are left as
/// they are; only text between them is looked at, so a reference split by a colour
/// change is not found.
pub fn linkify(html: &str, run: i64) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while !rest.is_empty() {
        if rest.starts_with('<') {
            let end = rest.find('>').map_or(rest.len(), |i| i + 1);
            out.push_str(&rest[..end]);
            rest = &rest[end..];
            continue;
        }
        let end = rest.find('<').unwrap_or(rest.len());
        let (segment, tail) = rest.split_at(end);
        rest = tail;
        // Fast path: most output has no `:` followed by a digit and no traceback.
        if !segment.contains(':') && !segment.contains("line ") {
            out.push_str(segment);
            continue;
        }
        let text = unescape(segment);
        let refs = find(&text);
        if refs.is_empty() {
            out.push_str(segment);
            continue;
        }
        let mut at = 0;
        for (range, reference) in refs {
            out.push_str(&escape(&text[at..range.start]));
            let file = escape(&reference.file);
            out.push_str(&format!(
                "<a class=\"src-ref\" href=\"{}\" data-file=\"{file}\" data-line=\"{line}\" \
                 title=\"Open {file}:{line} as a snippet\">{}</a>",
                escape(&domain::steps::snippet::source_url(run, &reference.file, reference.line)),
                escape(&text[range.clone()]),
                line = reference.line,
            ));
            at = range.end;
        }
        out.push_str(&escape(&text[at..]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(text: &str) -> Vec<(String, u64)> {
        find(text).into_iter().map(|(_, r)| (r.file, r.line)).collect()
    }

    #[test]
    fn the_forms_the_issue_names() {
        assert_eq!(
            refs("WARNING 03-22 18:40:47 [custom_all_reduce.py:137] Custom allreduce is disabled"),
            [("custom_all_reduce.py".into(), 137)]
        );
        assert_eq!(refs("see custom_all_reduce.py:137 for why"), [("custom_all_reduce.py".into(), 137)]);
        assert_eq!(
            refs(r#"  File "/usr/lib/python3/dist-packages/vllm/worker.py", line 88, in <module>"#),
            [("/usr/lib/python3/dist-packages/vllm/worker.py".into(), 88)]
        );
        assert_eq!(refs("error[E0308]: --> src/runs/output.rs:42:7"), [("src/runs/output.rs".into(), 42)]);
    }

    #[test]
    fn addresses_urls_and_times_are_not_references() {
        assert!(refs("listening on 10.0.0.1:8000 and example.com:443").is_empty());
        assert!(refs("https://github.com/vllm-project/vllm/blob/main/setup.py:12").is_empty());
        assert!(refs("INFO 03-22 18:40:47 took 1.5:30").is_empty());
        assert!(refs("version.py:0").is_empty());
    }

    #[test]
    fn the_real_vllm_log_lines_link_every_reference() {
        let log = crate::fixtures::read("bench-outputs/vllm_startup_custom_allreduce_issue15340.txt");
        let found: Vec<_> = log.lines().flat_map(refs).collect();
        assert_eq!(found.iter().filter(|(f, l)| f == "custom_all_reduce.py" && *l == 137).count(), 3, "{found:?}");
        assert!(found.contains(&("shm_broadcast.py".into(), 258)), "{found:?}");
    }

    #[test]
    fn unlinked_references_stay_marked_text() {
        let linked = linkify("<span style=\"color:red\">[custom_all_reduce.py:137]</span> a &lt;b&gt;", 9);
        assert!(linked.contains("href="), "{linked}");
        let plain = unlink(&linked);
        assert_eq!(
            plain,
            "<span style=\"color:red\">[<span class=\"src-ref\">custom_all_reduce.py:137</span>]</span> a &lt;b&gt;"
        );
        assert_eq!(unlink("no refs &lt;a&gt;"), "no refs &lt;a&gt;");
    }

    #[test]
    fn linkify_keeps_tags_and_escaping() {
        let html =
            "<span style=\"color:#a00\">WARN</span> [custom_all_reduce.py:137] a &lt;b&gt; &amp; &quot;c&quot;\n";
        let out = linkify(html, 9);
        assert!(out.starts_with("<span style=\"color:#a00\">WARN</span> ["), "{out}");
        assert!(
            out.contains("<a class=\"src-ref\" href=\"/runs/9/source?file=custom_all_reduce.py&amp;line=137\""),
            "{out}"
        );
        assert!(out.ends_with(">custom_all_reduce.py:137</a>] a &lt;b&gt; &amp; &quot;c&quot;\n"), "{out}");
        let hostile = linkify("File &quot;/x/&lt;img src=x onerror=1&gt;.py&quot;, line 3", 1);
        assert!(!hostile.contains("<img"), "{hostile}");
    }
}
