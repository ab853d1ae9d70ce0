//! Markdown → HTML that is safe to put in a page.
//!
//! pulldown-cmark renders CommonMark plus the GFM extensions people paste from
//! GitHub (tables, task lists, strikethrough); ammonia then removes everything
//! that could run or load something: scripts, event handlers, `javascript:` URLs,
//! styles, iframes. User HTML is kept only where it is harmless.

use pulldown_cmark::{Options, Parser, html};
use std::sync::LazyLock;

static SANITIZER: LazyLock<ammonia::Builder<'static>> = LazyLock::new(sanitizer);

fn sanitizer() -> ammonia::Builder<'static> {
    let mut builder = ammonia::Builder::default();
    // Task-list checkboxes, shown but not clickable.
    builder
        .add_tags(["input"])
        .add_tag_attributes("input", ["checked"])
        .set_tag_attribute_value("input", "type", "checkbox")
        .set_tag_attribute_value("input", "disabled", "")
        // A table column's alignment (`---:`); see `aligned`.
        .add_tag_attributes("th", ["align"])
        .add_tag_attributes("td", ["align"]);
    builder
}

/// pulldown-cmark writes a column's alignment as a `style`, which the
/// sanitizer removes with every other style; as `align` it is kept (and the
/// stylesheets honour it).
fn aligned(html: String) -> String {
    if !html.contains(" style=\"text-align: ") {
        return html;
    }
    let mut out = html;
    for side in ["left", "center", "right"] {
        for tag in ["th", "td"] {
            out = out.replace(&format!("<{tag} style=\"text-align: {side}\">"), &format!("<{tag} align=\"{side}\">"));
        }
    }
    out
}

/// The same without images: a report opened offline loads nothing.
static OFFLINE: LazyLock<ammonia::Builder<'static>> = LazyLock::new(|| {
    let mut builder = sanitizer();
    builder.rm_tags(["img"]);
    builder
});

const OPTIONS: Options = Options::ENABLE_TABLES
    .union(Options::ENABLE_TASKLISTS)
    .union(Options::ENABLE_STRIKETHROUGH)
    .union(Options::ENABLE_FOOTNOTES);

fn unsafe_html(markdown: &str) -> String {
    let mut unsafe_html = String::with_capacity(markdown.len() * 3 / 2);
    html::push_html(&mut unsafe_html, Parser::new_ext(markdown, OPTIONS));
    aligned(unsafe_html)
}

pub fn to_safe_html(markdown: &str) -> String {
    SANITIZER.clean(&unsafe_html(markdown)).to_string()
}

/// For exports: safe, and without anything that would load from the network.
pub fn to_offline_html(markdown: &str) -> String {
    OFFLINE.clean(&unsafe_html(markdown)).to_string()
}

/// Markdown as written, with its raw HTML made text (`<` → `&lt;` inside HTML
/// blocks and inline HTML only), so a renderer that passes HTML through shows
/// the tags instead of running them; everything else is left as it was.
pub fn with_html_as_text(markdown: &str) -> String {
    use pulldown_cmark::Event;
    let mut ranges: Vec<std::ops::Range<usize>> = Parser::new_ext(markdown, OPTIONS)
        .into_offset_iter()
        .filter(|(event, _)| matches!(event, Event::Html(_) | Event::InlineHtml(_)))
        .map(|(_, range)| range)
        .collect();
    ranges.sort_by_key(|r| r.start);
    let mut out = String::with_capacity(markdown.len());
    let mut at = 0;
    for range in ranges {
        if range.start < at {
            continue;
        }
        out.push_str(&markdown[at..range.start]);
        out.push_str(&markdown[range.clone()].replace('<', "&lt;"));
        at = range.end;
    }
    out.push_str(&markdown[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::to_safe_html;

    #[test]
    fn table_columns_keep_their_alignment_and_nothing_else_of_style() {
        let html = to_safe_html("| setting | tok/s | note |\n|:---|---:|:-:|\n| LL | 57.5 | same |");
        assert!(html.contains("<th align=\"left\">setting</th>"), "{html}");
        assert!(html.contains("<td align=\"right\">57.5</td>"), "{html}");
        assert!(html.contains("<td align=\"center\">same</td>"), "{html}");
        let hostile =
            to_safe_html("<td style=\"text-align: right\" onclick=\"x()\">a</td> <p style=\"color:red\">b</p>");
        assert!(!hostile.contains("style") && !hostile.contains("onclick"), "{hostile}");
    }

    #[test]
    fn renders_gfm_tables_and_task_lists() {
        let html = to_safe_html("| a | b |\n|---|---|\n| 1 | 2 |\n\n- [x] done\n- [ ] todo\n");
        assert!(html.contains("<table>"), "{html}");
        assert!(html.contains("<td>2</td>"), "{html}");
        assert!(html.contains(r#"type="checkbox""#), "{html}");
        assert!(html.contains("checked"), "{html}");
        assert!(html.contains("disabled"), "{html}");
    }

    #[test]
    fn offline_html_loads_nothing_and_markdown_keeps_html_as_text() {
        let html = super::to_offline_html(
            "![x](https://example.com/a.png) <img src=https://example.com/b.png> [ok](https://example.com)",
        );
        assert!(!html.contains("<img"), "{html}");
        assert!(html.contains("href=\"https://example.com\""), "links are kept: {html}");
        let md = super::with_html_as_text("Hi <script>alert(1)</script> `a<b`\n\n<div onclick=x>\n\n```\n<b>\n```\n");
        assert_eq!(md, "Hi &lt;script>alert(1)&lt;/script> `a<b`\n\n&lt;div onclick=x>\n\n```\n<b>\n```\n");
    }

    #[test]
    fn strips_everything_that_runs() {
        let html = to_safe_html(
            "<script>alert(1)</script>\n\n<img src=x onerror=alert(2)>\n\n[x](javascript:alert(3))\n\n\
             <a href=\"#\" onclick=\"alert(4)\">y</a> <iframe src=\"https://example.com\"></iframe>\
             <input type=\"text\" onfocus=\"alert(5)\" autofocus>",
        );
        for needle in
            ["<script", "onerror", "javascript:", "onclick", "<iframe", "onfocus", "autofocus", "type=\"text\""]
        {
            assert!(!html.contains(needle), "{needle} survived in {html}");
        }
        assert!(html.contains("<img src=\"x\">"), "{html}");
    }
}
