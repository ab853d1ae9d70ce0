//! Regular expressions that users write (extractors, grep patterns): one way
//! to compile them, with bounds, so a pattern cannot make the server spend
//! unbounded memory or time compiling it. Matching is linear in the text with
//! the `regex` crate whatever the pattern.

use regex::{Regex, RegexBuilder};

/// The longest pattern taken (bytes).
pub const MAX_PATTERN: usize = 1_000;
/// Memory the compiled program and its lazy DFA may take.
const COMPILED_BYTES: usize = 256 * 1024;
const DFA_BYTES: usize = 2 * 1024 * 1024;

/// Compiles `pattern` (`multi_line`: `^`/`$` at line ends) within the bounds
/// above; the error says what is wrong in words.
/// Why a pattern was not taken, in words for whoever wrote it.
#[derive(Debug, thiserror::Error)]
pub enum PatternError {
    #[error("the pattern is over {MAX_PATTERN} bytes")]
    TooLong,
    #[error("the pattern compiles too large (a repetition like `{{1000}}` of a group?); simplify it")]
    TooBig,
    #[error("{0}")]
    Invalid(regex::Error),
}

pub fn compile(pattern: &str, multi_line: bool) -> Result<Regex, PatternError> {
    if pattern.len() > MAX_PATTERN {
        return Err(PatternError::TooLong);
    }
    RegexBuilder::new(pattern)
        .multi_line(multi_line)
        .size_limit(COMPILED_BYTES)
        .dfa_size_limit(DFA_BYTES)
        .build()
        .map_err(|e| match e {
            regex::Error::CompiledTooBig(_) => PatternError::TooBig,
            e => PatternError::Invalid(e),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_are_bounded() {
        assert!(compile(r"decode: ([\d.]+) tok/s", true).is_ok());
        let huge = compile(r"(\w{100}){100}", false).unwrap_err();
        assert!(huge.to_string().contains("too large"), "{huge}");
        assert!(compile(&"a".repeat(MAX_PATTERN + 1), false).unwrap_err().to_string().contains("over"));
        assert!(compile("(", false).is_err());
    }
}
