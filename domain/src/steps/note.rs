//! Note steps: Markdown written by a person. The server renders and sanitizes it
//! (pulldown-cmark + ammonia), so neither crate ships to the browser.

use serde::{Deserialize, Serialize};

/// Largest note the server accepts, in bytes of Markdown.
pub const MAX_BYTES: usize = 100_000;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NoteBody {
    /// Markdown (CommonMark + GFM tables, task lists, strikethrough).
    pub body: String,
}
