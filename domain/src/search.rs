//! Finding what the team has seen: the shapes of `GET /api/v1/search` and of the
//! search page. The query language and the index are the server's
//! (`server/src/search/`); a result carries everything a page needs to show it.

use serde::{Deserialize, Serialize};

/// `GET /api/v1/search?q=…&sort=relevance|newest&limit=&offset=`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct SearchRequest {
    #[serde(default)]
    pub q: String,
    /// `relevance` (the default; newest first past 10 000 matches, or with
    /// filters alone) or `newest`.
    #[serde(default)]
    pub sort: Option<String>,
    #[serde(default)]
    pub limit: Option<u32>,
    #[serde(default)]
    pub offset: Option<u32>,
}

/// At most this many results in one answer.
pub const MAX_LIMIT: u32 = 100;
pub const DEFAULT_LIMIT: u32 = 20;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct SearchResults {
    /// How many results the reader may see in all (not only this page).
    pub total: u64,
    pub results: Vec<SearchHit>,
    /// The query as understood: words and phrases, then filters (`host:gpu`).
    pub understood: String,
    pub sort: String,
    pub offset: u32,
    pub limit: u32,
    /// Runs whose output is still being indexed: their words are not found yet.
    #[serde(default)]
    pub indexing: u64,
    /// Why the order is not the one asked for (too many matches to rank).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct SearchHit {
    pub kind: DocKind,
    pub investigation_id: String,
    /// The investigation's title.
    pub title: String,
    pub step_id: Option<i64>,
    pub run_id: Option<i64>,
    /// A permalink: the investigation, a step, a hypothesis, an annotation, a
    /// comment, or a snippet's lines (`#step-12-L130-L130`).
    pub url: String,
    /// The excerpt: escaped text with the matched words in `<mark>`.
    pub html: String,
    /// For output and snippets: the line the excerpt is from (1-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// For output: that line in the run's raw output (a byte range).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_url: Option<String>,
    /// When what matched was written or run (RFC 3339).
    pub at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
}

/// `GET /api/v1/investigations/{id}/export?format=html|md|zip&comments=true`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    Html,
    Md,
    Zip,
}

impl ExportFormat {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "html" => Some(Self::Html),
            "md" | "markdown" => Some(Self::Md),
            "zip" => Some(Self::Zip),
            _ => None,
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            Self::Html => "html",
            Self::Md => "md",
            Self::Zip => "zip",
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Self::Html => "text/html; charset=utf-8",
            Self::Md => "text/markdown; charset=utf-8",
            Self::Zip => "application/zip",
        }
    }
}

/// A finished export: a file to download.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Export {
    pub filename: String,
    pub format: ExportFormat,
    pub bytes: Vec<u8>,
}

/// What a search hit is: a kind of step, a run's output or its server's log,
/// or what is said about them (`kind:` in a query names one).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum DocKind {
    #[default]
    Investigation,
    Note,
    Command,
    Output,
    ServerLog,
    Snippet,
    Grep,
    Calculator,
    Patch,
    Hypothesis,
    Annotation,
    Comment,
    Measurement,
}

impl DocKind {
    pub const ALL: [DocKind; 13] = [
        Self::Investigation,
        Self::Note,
        Self::Command,
        Self::Output,
        Self::ServerLog,
        Self::Snippet,
        Self::Grep,
        Self::Calculator,
        Self::Patch,
        Self::Hypothesis,
        Self::Annotation,
        Self::Comment,
        Self::Measurement,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Investigation => "investigation",
            Self::Note => "note",
            Self::Command => "command",
            Self::Output => "output",
            Self::ServerLog => "server_log",
            Self::Snippet => "snippet",
            Self::Grep => "grep",
            Self::Calculator => "calculator",
            Self::Patch => "patch",
            Self::Hypothesis => "hypothesis",
            Self::Annotation => "annotation",
            Self::Comment => "comment",
            Self::Measurement => "measurement",
        }
    }

    /// The kind of a step's document.
    pub fn of_step(kind: crate::steps::StepKind) -> Self {
        use crate::steps::StepKind;
        match kind {
            StepKind::Note => Self::Note,
            StepKind::Command => Self::Command,
            StepKind::Snippet => Self::Snippet,
            StepKind::Grep => Self::Grep,
            StepKind::Calculator => Self::Calculator,
            StepKind::Patch => Self::Patch,
        }
    }
}

closed_set_words!(DocKind, UnknownDocKind);

/// A stored or asked-for kind that is none of [`DocKind`].
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not a kind of search hit")]
pub struct UnknownDocKind(pub String);
