//! HTML text made by hand (exports, excerpts, titles): escaped once, here.

/// A sentence's parts, `(is code, text)`: the API marks names and values with
/// backticks (`` `wait` is at most 60 seconds``), which pages show as code. A
/// backtick without its pair stays text.
pub fn code_spans(text: &str) -> Vec<(bool, String)> {
    let mut parts: Vec<(bool, String)> =
        text.split('`').enumerate().map(|(i, part)| (i % 2 == 1, part.to_string())).collect();
    if parts.len().is_multiple_of(2)
        && let Some((_, last)) = parts.pop()
        && let Some((_, before)) = parts.last_mut()
    {
        before.push('`');
        before.push_str(&last);
    }
    parts.retain(|(code, part)| *code || !part.is_empty());
    parts
}

/// `text` for a query string (RFC 3986 unreserved characters kept, a space as `+`).
pub fn query_encode(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            b' ' => out.push('+'),
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backticks_mark_code_spans() {
        let spans = |t: &str| code_spans(t);
        assert_eq!(
            spans("`wait` is at most 60 seconds, not 90."),
            [(true, "wait".to_string()), (false, " is at most 60 seconds, not 90.".to_string())]
        );
        assert_eq!(spans("no code"), [(false, "no code".to_string())]);
        assert_eq!(spans("a ` alone"), [(false, "a ` alone".to_string())], "an unpaired backtick is text");
        assert_eq!(spans("`a` and `b`").iter().filter(|(c, _)| *c).count(), 2);
    }
}
