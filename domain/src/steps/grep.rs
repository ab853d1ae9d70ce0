//! Grep steps: a pattern searched in a file or directory on a host; each hit
//! opens as a snippet step centered on its line.

use serde::{Deserialize, Serialize};

/// Hits kept by default, and at most.
pub const DEFAULT_MAX_HITS: u32 = 200;
pub const MAX_HITS: u32 = 2_000;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct GrepBody {
    pub host: String,
    pub pattern: String,
    /// A file or a directory (searched recursively).
    pub path: String,
    /// A regular expression (POSIX extended) instead of a fixed string.
    #[serde(default)]
    pub regex: bool,
    /// Only files whose name matches, e.g. `*.py`.
    #[serde(default)]
    pub glob: Option<String>,
    #[serde(default)]
    pub max_hits: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Hit {
    pub file: String,
    pub line: u64,
    pub text: String,
    /// `text` escaped, with the matches in `<mark>`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub html: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct SearchResult {
    pub hits: Vec<Hit>,
    /// All matching lines, including those beyond the cap.
    pub total: u64,
    pub error: Option<String>,
    pub searched_at: String,
}
