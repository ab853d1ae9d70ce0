//! Markdown → HTML that is safe to put in a page.
//!
//! pulldown-cmark renders CommonMark plus the GFM extensions people paste from
//! GitHub (tables, task lists, strikethrough); ammonia then removes everything
//! that could run or load something: scripts, event handlers, `javascript:` URLs,
//! styles, iframes. User HTML is kept only where it is harmless.

use pulldown_cmark::{Options, Parser, html};
use std::sync::LazyLock;

static SANITIZER: LazyLock<ammonia::Builder<'static>> = LazyLock::new(|| {
    let mut builder = ammonia::Builder::default();
    // Task-list checkboxes, shown but not clickable.
    builder
        .add_tags(["input"])
        .add_tag_attributes("input", ["checked"])
        .set_tag_attribute_value("input", "type", "checkbox")
        .set_tag_attribute_value("input", "disabled", "");
    builder
});

pub fn to_safe_html(markdown: &str) -> String {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_FOOTNOTES;
    let mut unsafe_html = String::with_capacity(markdown.len() * 3 / 2);
    html::push_html(&mut unsafe_html, Parser::new_ext(markdown, options));
    SANITIZER.clean(&unsafe_html).to_string()
}

#[cfg(test)]
mod tests {
    use super::to_safe_html;

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
