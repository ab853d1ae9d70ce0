//! What a user types into the search box, understood: words, `"phrases"`,
//! `prefix*`, `-excluded` words, and filters (`host:`, `metric:`, `env:K=V`,
//! `status:`, `author:`, `kind:`, `after:`/`before:` a date). Anything else is
//! text to find, so no query is ever a syntax error.
//!
//! The index holds [`words`]: the text cut into runs of letters and digits,
//! lowercased. A query is cut the same way, and the full-text expression is
//! built from those words alone (each quoted), so nothing the user types reaches
//! the engine's own syntax.

use std::fmt::Write as _;

/// The words of `text` as the index keeps them (letters and digits, lowercased).
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase)
}

/// A word longer than this is not a word a person searches for (hashes, base64).
pub const MAX_WORD: usize = 64;

/// One thing to find: a word (`words.len() == 1`) or a phrase, possibly a prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Term {
    pub words: Vec<String>,
    /// The last word may be the start of a longer one (`allred*`).
    pub prefix: bool,
    /// `-word`: results must not contain it.
    pub excluded: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filters {
    pub host: Option<String>,
    pub metric: Option<String>,
    /// `(NAME, Some(value))` for `env:NAME=value`, `(NAME, None)` for `env:NAME`.
    pub env: Vec<(String, Option<String>)>,
    pub status: Option<String>,
    pub author: Option<String>,
    pub kind: Option<domain::search::DocKind>,
    /// Unix milliseconds, inclusive / exclusive.
    pub after_ms: Option<i64>,
    pub before_ms: Option<i64>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Query {
    pub terms: Vec<Term>,
    pub filters: Filters,
}

/// Why a query cannot run (a 422 with this sentence).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    #[error("Type a word to search for, or a filter such as host:NAME or status:failed.")]
    Empty,
    #[error("{0:?} is not a date: write it as YYYY-MM-DD.")]
    BadDate(String),
    #[error("A search needs at least one word that is not excluded (-word only narrows one).")]
    OnlyExcluded,
    #[error("A search is at most 500 characters.")]
    TooLong,
}

impl Query {
    pub fn parse(text: &str) -> Result<Self, QueryError> {
        if text.chars().count() > 500 {
            return Err(QueryError::TooLong);
        }
        let mut query = Query::default();
        for token in tokens(text) {
            let (excluded, body) = match token.text.strip_prefix('-') {
                Some(rest) if !token.quoted && !rest.is_empty() => (true, rest.to_string()),
                _ => (false, token.text.clone()),
            };
            if !token.quoted && !excluded && query.filter(&body)? {
                continue;
            }
            let prefix = body.ends_with('*');
            let words: Vec<String> = words(&body).filter(|w| w.chars().count() <= MAX_WORD).collect();
            if !words.is_empty() {
                query.terms.push(Term { words, prefix, excluded });
            }
        }
        if query.terms.is_empty() && query.filters == Filters::default() {
            return Err(QueryError::Empty);
        }
        if !query.terms.is_empty() && query.terms.iter().all(|t| t.excluded) {
            return Err(QueryError::OnlyExcluded);
        }
        Ok(query)
    }

    /// `name:value` as a filter; `false` when `token` is not one (it is text).
    fn filter(&mut self, token: &str) -> Result<bool, QueryError> {
        let Some((name, value)) = token.split_once(':') else { return Ok(false) };
        if value.is_empty() {
            return Ok(false);
        }
        let f = &mut self.filters;
        match name.to_ascii_lowercase().as_str() {
            "host" => f.host = Some(value.to_string()),
            "metric" => f.metric = Some(value.to_string()),
            "status" => f.status = Some(value.to_ascii_lowercase()),
            "author" | "by" => f.author = Some(value.to_string()),
            "kind" | "in" => match value.to_ascii_lowercase().parse() {
                Ok(kind) => f.kind = Some(kind),
                Err(_) => return Ok(false), // `in:` a word that is no kind is text
            },
            "env" => f.env.push(match value.split_once('=') {
                Some((k, v)) => (k.to_string(), Some(v.to_string())),
                None => (value.to_string(), None),
            }),
            "after" | "since" => f.after_ms = Some(day_ms(value)?),
            "before" | "until" => f.before_ms = Some(day_ms(value)?),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// What a result's text is marked at (`excerpt::Marks`): each term that is not excluded.
    pub fn marks(&self) -> Vec<(Vec<String>, bool)> {
        self.terms.iter().filter(|t| !t.excluded).map(|t| (t.words.clone(), t.prefix)).collect()
    }

    /// An FTS5 MATCH expression, or `None` when only filters were given.
    pub fn fts5(&self) -> Option<String> {
        let mut out = String::new();
        for term in self.terms.iter().filter(|t| !t.excluded) {
            if !out.is_empty() {
                out.push_str(" AND ");
            }
            out.push_str(&fts5_term(term));
        }
        if out.is_empty() {
            return None;
        }
        for term in self.terms.iter().filter(|t| t.excluded) {
            let _ = write!(out, " NOT {}", fts5_term(term));
        }
        Some(out)
    }

    /// A PostgreSQL `to_tsquery('simple', …)` text, or `None` when only filters were given.
    pub fn tsquery(&self) -> Option<String> {
        let included: Vec<String> = self.terms.iter().filter(|t| !t.excluded).map(ts_term).collect();
        if included.is_empty() {
            return None;
        }
        let mut out = included.join(" & ");
        for term in self.terms.iter().filter(|t| t.excluded) {
            let _ = write!(out, " & !({})", ts_term(term));
        }
        Some(out)
    }

    /// The query as understood, for the page to say back.
    pub fn understood(&self) -> String {
        let mut parts: Vec<String> = self
            .terms
            .iter()
            .map(|t| {
                let mut s = if t.words.len() > 1 { format!("\"{}\"", t.words.join(" ")) } else { t.words[0].clone() };
                if t.prefix {
                    s.push('*');
                }
                if t.excluded {
                    s.insert(0, '-');
                }
                s
            })
            .collect();
        let f = &self.filters;
        let mut add = |name: &str, value: &Option<String>| {
            if let Some(v) = value {
                parts.push(format!("{name}:{v}"));
            }
        };
        add("host", &f.host);
        add("metric", &f.metric);
        add("status", &f.status);
        add("author", &f.author);
        add("kind", &f.kind.map(|k| k.as_str().to_string()));
        for (k, v) in &f.env {
            parts.push(match v {
                Some(v) => format!("env:{k}={v}"),
                None => format!("env:{k}"),
            });
        }
        if let Some(ms) = f.after_ms {
            parts.push(format!("after:{}", crate::time::day(ms)));
        }
        if let Some(ms) = f.before_ms {
            parts.push(format!("before:{}", crate::time::day(ms)));
        }
        parts.join(" ")
    }
}

/// Words are letters and digits only, so a quoted FTS5 string needs no escaping.
fn fts5_term(term: &Term) -> String {
    let mut s = format!("\"{}\"", term.words.join(" "));
    if term.prefix {
        s.push('*');
    }
    s
}

/// `'word'` lexemes joined by `<->` (followed by); `:*` for a prefix.
fn ts_term(term: &Term) -> String {
    let mut parts: Vec<String> = term.words.iter().map(|w| format!("'{w}'")).collect();
    if term.prefix
        && let Some(last) = parts.last_mut()
    {
        last.push_str(":*");
    }
    if parts.len() == 1 { parts.remove(0) } else { format!("({})", parts.join(" <-> ")) }
}

struct Token {
    text: String,
    quoted: bool,
}

/// Whitespace-separated tokens; `"…"` keeps a phrase together (an unclosed quote
/// runs to the end), and quotes inside a token (`author:"Ana B"`) only keep its
/// spaces.
fn tokens(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut current = String::new();
    // The token began with a quote: a phrase, never a filter.
    let mut quoted = false;
    let mut in_quote = false;
    for c in text.chars() {
        if c == '"' {
            if in_quote {
                in_quote = false;
                if quoted {
                    out.push(Token { text: std::mem::take(&mut current), quoted });
                    quoted = false;
                }
            } else {
                in_quote = true;
                quoted = current.is_empty();
            }
        } else if c.is_whitespace() && !in_quote {
            if !current.is_empty() {
                out.push(Token { text: std::mem::take(&mut current), quoted });
            }
            quoted = false;
        } else {
            current.push(c);
        }
    }
    if !current.is_empty() {
        out.push(Token { text: current, quoted });
    }
    out
}

/// `YYYY-MM-DD` as Unix milliseconds at 00:00 UTC.
fn day_ms(text: &str) -> Result<i64, QueryError> {
    let format = time::macros::format_description!("[year]-[month]-[day]");
    let day = time::Date::parse(text, format).map_err(|_| QueryError::BadDate(text.to_string()))?;
    Ok(day.midnight().assume_utc().unix_timestamp() * 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn term(words: &[&str]) -> Term {
        Term { words: words.iter().map(|w| w.to_string()).collect(), prefix: false, excluded: false }
    }

    #[test]
    fn words_phrases_prefixes_and_exclusions() {
        let q = Query::parse(r#"NCCL_PROTO=LL "Custom allreduce is disabled" allred* -tree"#).unwrap();
        assert_eq!(q.terms[0], term(&["nccl", "proto", "ll"]), "one token, cut as the index cuts it");
        assert_eq!(q.terms[1], term(&["custom", "allreduce", "is", "disabled"]));
        assert_eq!(q.terms[2], Term { prefix: true, ..term(&["allred"]) });
        assert_eq!(q.terms[3], Term { excluded: true, ..term(&["tree"]) });
        assert_eq!(q.fts5().unwrap(), r#""nccl proto ll" AND "custom allreduce is disabled" AND "allred"* NOT "tree""#);
        assert_eq!(
            q.tsquery().unwrap(),
            "('nccl' <-> 'proto' <-> 'll') & ('custom' <-> 'allreduce' <-> 'is' <-> 'disabled') & 'allred':* & !('tree')"
        );
    }

    #[test]
    fn filters_are_taken_out_and_said_back() {
        let q = Query::parse(r#"tok host:pcie-box metric:tok_s env:NCCL_PROTO=LL env:NCCL_ALGO status:FAILED author:ana kind:output after:2026-11-01 before:2026-12-01"#).unwrap();
        assert_eq!(q.terms, vec![term(&["tok"])]);
        let f = &q.filters;
        assert_eq!(f.host.as_deref(), Some("pcie-box"));
        assert_eq!(f.metric.as_deref(), Some("tok_s"));
        assert_eq!(f.env, vec![("NCCL_PROTO".into(), Some("LL".into())), ("NCCL_ALGO".into(), None)]);
        assert_eq!(f.status.as_deref(), Some("failed"));
        assert_eq!((f.author.as_deref(), f.kind), (Some("ana"), Some(domain::search::DocKind::Output)));
        assert_eq!(f.after_ms, Some(1_793_491_200_000), "2026-11-01T00:00Z");
        assert_eq!(
            q.understood(),
            "tok host:pcie-box metric:tok_s status:failed author:ana kind:output env:NCCL_PROTO=LL env:NCCL_ALGO after:2026-11-01 before:2026-12-01"
        );
        // Filters alone are a search (newest first on the page).
        assert!(Query::parse("status:failed").unwrap().fts5().is_none());
    }

    #[test]
    fn nothing_a_user_types_is_a_syntax_error() {
        for hostile in [
            r#"""#,
            r#"" OR 1=1 --"#,
            "NEAR(a b)",
            "a AND",
            "col:word",
            "*",
            "^x",
            "(((",
            "'; DROP TABLE runs; --",
            "<script>alert(1)</script>",
            "x:",
            ":y",
            "-",
            "--",
            "-\"a b\"",
            "\u{0}",
            "a\u{0}b",
            "ünïcödé ß 漢字",
            "word*word",
            "a:b:c",
        ] {
            match Query::parse(hostile) {
                Ok(q) => {
                    // Outside the quoted words (letters, digits, spaces) only our operators.
                    if let Some(expr) = q.fts5() {
                        let rest = outside_quotes(&expr, '"');
                        assert!(
                            rest.split_whitespace().all(|w| ["AND", "NOT", "*"].contains(&w)),
                            "{hostile:?} → {expr}"
                        );
                    }
                    if let Some(expr) = q.tsquery() {
                        let rest = outside_quotes(&expr, '\'');
                        assert!(rest.chars().all(|c| " &!()<->:*".contains(c)), "{hostile:?} → {expr}");
                    }
                }
                Err(e) => assert!(matches!(e, QueryError::Empty | QueryError::OnlyExcluded), "{hostile:?}: {e}"),
            }
        }
        assert_eq!(Query::parse("   "), Err(QueryError::Empty));
        assert_eq!(Query::parse("-tree"), Err(QueryError::OnlyExcluded));
        assert_eq!(Query::parse("after:2026-13-01"), Err(QueryError::BadDate("2026-13-01".into())));
        assert_eq!(Query::parse("after:yesterday"), Err(QueryError::BadDate("yesterday".into())));
        assert_eq!(Query::parse(&"a".repeat(501)), Err(QueryError::TooLong));
        // An unknown filter name is text; so is a known one without a value.
        assert_eq!(Query::parse("col:word").unwrap().terms, vec![term(&["col", "word"])]);
        assert_eq!(Query::parse("host:").unwrap().terms, vec![term(&["host"])]);
    }

    /// `expr` without its quoted parts, which must hold only letters, digits and spaces.
    fn outside_quotes(expr: &str, quote: char) -> String {
        let mut rest = String::new();
        for (i, part) in expr.split(quote).enumerate() {
            if i % 2 == 1 {
                assert!(part.chars().all(|c| c.is_alphanumeric() || c == ' '), "quoted {part:?} in {expr}");
            } else {
                rest.push_str(part);
                rest.push(' ');
            }
        }
        rest
    }

    #[test]
    fn dates_round_trip() {
        for day in ["1970-01-01", "2000-02-29", "2026-12-01", "2099-12-31"] {
            assert_eq!(crate::time::day(day_ms(day).unwrap()), day);
        }
    }
}
