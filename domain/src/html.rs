//! HTML text made by hand (exports, excerpts, titles): escaped once, here.

/// `text` as HTML text content: `&`, `<`, `>` (and quotes, for attribute
/// values) as entities.
pub fn escape_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
