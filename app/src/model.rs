//! Domain types shared by the server and the browser. Everything here is plain data:
//! serializable, free of I/O, and cheap to clone.

use crate::steps::StepBody;
use serde::{Deserialize, Serialize};

/// Limits enforced by the server and announced by the UI (`maxlength`).
pub mod limits {
    pub const TITLE_CHARS: usize = 200;
    pub const QUESTION_CHARS: usize = 4_000;
    /// Request bodies larger than this are refused with 413 before parsing.
    pub const REQUEST_BYTES: usize = 1024 * 1024;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InvestigationStatus {
    Open,
    Closed,
}

impl InvestigationStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Closed => "closed",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "open" => Some(Self::Open),
            "closed" => Some(Self::Closed),
            _ => None,
        }
    }
}

/// One row of the investigations list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InvestigationSummary {
    pub id: String,
    pub url: String,
    pub title: String,
    pub question: String,
    pub status: InvestigationStatus,
    pub step_count: u32,
    /// RFC 3339, UTC.
    pub created_at: String,
    pub updated_at: String,
}

/// An investigation with its timeline, steps in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Investigation {
    pub id: String,
    pub url: String,
    pub title: String,
    pub question: String,
    pub status: InvestigationStatus,
    pub created_at: String,
    pub updated_at: String,
    pub steps: Vec<Step>,
    /// With their experiments computed; the page's summary table.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hypotheses: Vec<crate::hypotheses::Hypothesis>,
    /// The investigation's own extractors (regexes over run output).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extractors: Vec<crate::metrics::ExtractorDef>,
    /// Every measurement: from runs (also on each run) and entered by hand.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub measurements: Vec<crate::metrics::StoredMeasurement>,
    /// The chart of the investigation's main metric, when something was measured twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overview: Option<crate::metrics::Overview>,
    /// Who may read, edit, run and share it (the header's Members… list).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<crate::accounts::Member>,
    /// Every comment, oldest first; the page threads them under their steps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comments: Vec<crate::comments::Comment>,
    /// Its view-only links; only owners get them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub share_links: Vec<crate::shares::ShareLink>,
    /// What the reader may do here (from their role): the page offers only these
    /// forms. The server checks every change regardless.
    #[serde(default)]
    pub abilities: Abilities,
}

/// What one reader may do in an investigation. A share link's reader: nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Abilities {
    /// Notes, steps, hypotheses, annotations, measurements, comments.
    pub edit: bool,
    /// Run commands, fetch snippets, grep on hosts.
    pub run: bool,
    /// Members, share links, delete.
    pub own: bool,
}

impl Abilities {
    pub const ALL: Self = Self { edit: true, run: true, own: true };
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NewInvestigation {
    pub title: String,
    #[serde(default)]
    pub question: Option<String>,
}

/// A partial update: absent fields are left as they are.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InvestigationPatch {
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub question: Option<String>,
    #[serde(default)]
    pub status: Option<InvestigationStatus>,
}

/// One entry of an investigation's timeline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub id: i64,
    pub investigation_id: String,
    /// 1-based place in the timeline.
    pub position: u32,
    /// `kind` plus the kind's own fields, e.g. `"kind":"note","body":"…"`.
    #[serde(flatten)]
    pub body: StepBody,
    /// Server-rendered, sanitized HTML for kinds that have a rich presentation.
    pub html: Option<String>,
    /// Stable link to the step: `/i/{id}#step-{step_id}`.
    pub url: String,
    /// Runs of a command step, oldest first; empty for other kinds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<crate::runs::Run>,
    /// Snapshots of a snippet step, oldest first; empty for other kinds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub snapshots: Vec<crate::steps::snippet::Snapshot>,
    /// Annotations of a snippet step, by first line.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub annotations: Vec<crate::steps::snippet::Annotation>,
    /// The newest result of a grep step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<crate::steps::grep::SearchResult>,
    pub created_at: String,
    pub updated_at: String,
    /// Bumped by every save; a save that names an older one is refused (409).
    #[serde(default)]
    pub version: i64,
    /// Who saved it last (`None`: never edited, or before accounts).
    #[serde(default)]
    pub updated_by: Option<String>,
}

impl Step {
    pub fn anchor(&self) -> String {
        step_anchor(self.id)
    }
}

pub fn investigation_url(id: &str) -> String {
    format!("/i/{id}")
}

pub fn step_anchor(step_id: i64) -> String {
    format!("step-{step_id}")
}

pub fn step_url(investigation_id: &str, step_id: i64) -> String {
    format!("/i/{investigation_id}#{}", step_anchor(step_id))
}

/// "2026-11-30T07:21:33.123Z" → "2026-11-30 07:21 UTC". Pure string work, so the
/// server and the browser render the same text and hydration matches.
pub fn short_time(rfc3339: &str) -> String {
    match (rfc3339.get(0..10), rfc3339.get(11..16)) {
        (Some(date), Some(hm)) => format!("{date} {hm} UTC"),
        _ => rfc3339.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_time_formats_and_tolerates_garbage() {
        assert_eq!(short_time("2026-11-30T07:21:33.123Z"), "2026-11-30 07:21 UTC");
        assert_eq!(short_time("yesterday"), "yesterday");
    }

    #[test]
    fn note_step_serializes_flat() {
        let step = Step {
            id: 7,
            investigation_id: "abc".into(),
            position: 1,
            body: StepBody::Note(crate::steps::note::NoteBody { body: "# hi".into() }),
            html: None,
            url: step_url("abc", 7),
            runs: vec![],
            snapshots: vec![],
            annotations: vec![],
            search: None,
            created_at: "t".into(),
            updated_at: "t".into(),
            version: 3,
            updated_by: Some("ada".into()),
        };
        let json = serde_json::to_value(&step).unwrap();
        assert_eq!(json["version"], 3);
        assert_eq!(json["kind"], "note");
        assert_eq!(json["body"], "# hi");
        assert_eq!(json["url"], "/i/abc#step-7");
        let back: Step = serde_json::from_value(json).unwrap();
        assert_eq!(back, step);
    }
}
