//! Syntax highlighting on the server (syntect), so snippets read well without
//! JavaScript and the browser bundle carries no grammar.

use std::sync::LazyLock;
use syntect::easy::HighlightLines;
use syntect::highlighting::ThemeSet;
use syntect::html::{IncludeBackground, styled_line_to_highlighted_html};
use syntect::parsing::SyntaxSet;

static SYNTAXES: LazyLock<SyntaxSet> = LazyLock::new(SyntaxSet::load_defaults_newlines);
static THEMES: LazyLock<ThemeSet> = LazyLock::new(ThemeSet::load_defaults);

/// Each line as highlighted HTML (escaped), language from the extension or,
/// failing that, the first line (shebang, modeline).
pub fn highlight(path: &str, first_line: Option<&str>, lines: &[String]) -> Vec<String> {
    let extension = path.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    let syntax = SYNTAXES
        .find_syntax_by_extension(extension)
        .or_else(|| first_line.and_then(|l| SYNTAXES.find_syntax_by_first_line(l)))
        .unwrap_or_else(|| SYNTAXES.find_syntax_plain_text());
    let Some(theme) = THEMES.themes.get("InspiredGitHub") else {
        return lines.iter().map(|l| ammonia::clean_text(l)).collect();
    };
    let mut highlighter = HighlightLines::new(syntax, theme);
    lines
        .iter()
        .map(|line| {
            let with_newline = format!("{line}\n");
            highlighter
                .highlight_line(&with_newline, &SYNTAXES)
                .ok()
                .and_then(|ranges| styled_line_to_highlighted_html(&ranges, IncludeBackground::No).ok())
                .map(|html| html.trim_end_matches('\n').to_string())
                .unwrap_or_else(|| ammonia::clean_text(line))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_is_highlighted_and_escaped() {
        let lines = vec!["def f(x): return x < 2  # <script>".to_string()];
        let html = highlight("/x/custom_all_reduce.py", None, &lines);
        assert!(html[0].contains("<span"), "{}", html[0]);
        assert!(html[0].contains("&lt;script&gt;") && !html[0].contains("<script>"), "{}", html[0]);
    }
}
