//! A result's excerpt: the part of its text around the first match, escaped,
//! then the matched words wrapped in `<mark>` (escaping first, so text a user or
//! a host wrote can never become markup).

/// About this many characters either side of the first match.
const CONTEXT: usize = 90;

/// What is marked: each term's words in order (a phrase), the last one a prefix when `true`.
pub type Marks = [(Vec<String>, bool)];

/// Where the terms occur in `text`, as char ranges (a phrase from its first
/// word to its last), in order, overlaps merged.
fn matches(text: &str, marks: &Marks) -> Vec<(usize, usize)> {
    let chars: Vec<char> = text.chars().collect();
    let mut words: Vec<(usize, usize, String)> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_alphanumeric() {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && chars[i].is_alphanumeric() {
            i += 1;
        }
        words.push((start, i, chars[start..i].iter().collect::<String>().to_lowercase()));
    }
    let mut found = Vec::new();
    for at in 0..words.len() {
        for (term, prefix) in marks {
            let n = term.len();
            if n == 0 || at + n > words.len() {
                continue;
            }
            let all = term.iter().enumerate().all(|(j, w)| {
                let word = &words[at + j].2;
                if *prefix && j + 1 == n { word.starts_with(w.as_str()) } else { word == w }
            });
            if all {
                found.push((words[at].0, words[at + n - 1].1));
            }
        }
    }
    found.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(found.len());
    for (s, e) in found {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    merged
}

/// Which line of `text` (0-based) holds the first match, and its char offset.
pub fn first_match(text: &str, marks: &Marks) -> Option<(usize, usize)> {
    let (start, _) = *matches(text, marks).first()?;
    let line = text.chars().take(start).filter(|&c| c == '\n').count();
    Some((line, start))
}

/// The excerpt of `text` around its first match (or its start), as HTML.
pub fn excerpt(text: &str, marks: &Marks) -> String {
    let chars: Vec<char> = text.chars().collect();
    let found = matches(text, marks);
    let center = found.first().map_or(0, |(s, _)| *s);
    let from = center.saturating_sub(CONTEXT);
    let to = (center + CONTEXT * 2).min(chars.len());
    let mut html = String::new();
    if from > 0 {
        html.push('…');
    }
    let mut at = from;
    for &(s, e) in found.iter().filter(|(s, e)| *s >= from && *e <= to) {
        html.push_str(&escape(&chars[at..s]));
        html.push_str("<mark>");
        html.push_str(&escape(&chars[s..e]));
        html.push_str("</mark>");
        at = e;
    }
    html.push_str(&escape(&chars[at..to]));
    if to < chars.len() {
        html.push('…');
    }
    html
}

/// One line of a result list: line ends and tabs as spaces, other control
/// characters dropped, then escaped as any text is.
fn escape(chars: &[char]) -> String {
    let text: String = chars
        .iter()
        .filter_map(|&c| match c {
            '\n' | '\r' | '\t' => Some(' '),
            c if c.is_control() => None,
            c => Some(c),
        })
        .collect();
    domain::html::escape_text(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marks(words: &[(&str, bool)]) -> Vec<(Vec<String>, bool)> {
        words.iter().map(|(w, p)| (w.split(' ').map(str::to_string).collect(), *p)).collect()
    }

    #[test]
    fn escaped_first_then_marked() {
        let html = excerpt(
            "<script>alert('x')</script> Custom allreduce is disabled & more",
            &marks(&[("allreduce", false), ("script", false)]),
        );
        assert_eq!(
            html,
            "&lt;<mark>script</mark>&gt;alert(&#39;x&#39;)&lt;/<mark>script</mark>&gt; Custom <mark>allreduce</mark> is disabled &amp; more"
        );
    }

    #[test]
    fn prefixes_whole_words_and_case() {
        let html = excerpt("Allreduce allreduced reduce", &marks(&[("allred", true)]));
        assert_eq!(html, "<mark>Allreduce</mark> <mark>allreduced</mark> reduce");
        assert_eq!(excerpt("reduced", &marks(&[("reduce", false)])), "reduced", "a word, not part of one");
    }

    #[test]
    fn a_phrase_is_marked_where_it_occurs_whole() {
        let html = excerpt("it is on; it's on more than two", &marks(&[("it s on more", false)]));
        assert_eq!(html, "it is on; <mark>it&#39;s on more</mark> than two");
    }

    #[test]
    fn long_text_is_cut_around_the_first_match_and_lines_are_counted() {
        let text = format!("{}\nNCCL INFO Using network Socket\n{}", "x ".repeat(400), "y ".repeat(400));
        let html = excerpt(&text, &marks(&[("socket", false)]));
        assert!(html.starts_with('…') && html.ends_with('…') && html.contains("<mark>Socket</mark>"), "{html}");
        assert!(html.chars().count() < 300, "{}", html.chars().count());
        assert_eq!(first_match(&text, &marks(&[("socket", false)])).map(|(l, _)| l), Some(1));
    }
}
