//! Step kinds: what each holds. A kind is one module here (its body type and
//! the arithmetic or anchors that go with it), its view in `app::steps`, its
//! checks and rendering in the server's `steps/`, and one variant below.

pub mod calculator;
pub mod command;
pub mod grep;
pub mod note;
pub mod patch;
pub mod snippet;

use serde::{Deserialize, Serialize};

/// What a step holds, tagged by `kind` on the wire and in the store.
// A calculator's inputs (with where each came from) make it the largest
// variant; steps are few per page, so boxing it would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StepBody {
    Note(note::NoteBody),
    Command(command::CommandBody),
    Snippet(snippet::SnippetBody),
    Grep(grep::GrepBody),
    Calculator(calculator::CalculatorBody),
    Patch(patch::PatchBody),
}

/// A step's kind: [`StepBody`]'s tag, as lists and the store name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    Note,
    Command,
    Snippet,
    Grep,
    Calculator,
    Patch,
}

impl StepKind {
    pub const ALL: [StepKind; 6] =
        [Self::Note, Self::Command, Self::Snippet, Self::Grep, Self::Calculator, Self::Patch];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Note => "note",
            Self::Command => "command",
            Self::Snippet => "snippet",
            Self::Grep => "grep",
            Self::Calculator => "calculator",
            Self::Patch => "patch",
        }
    }
}

closed_set_words!(StepKind, UnknownStepKind);

/// A stored step kind that is none of [`StepKind`].
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not a step kind (note, command, snippet, grep, calculator, patch)")]
pub struct UnknownStepKind(pub String);

impl StepBody {
    pub fn kind(&self) -> StepKind {
        match self {
            Self::Note(_) => StepKind::Note,
            Self::Command(_) => StepKind::Command,
            Self::Snippet(_) => StepKind::Snippet,
            Self::Grep(_) => StepKind::Grep,
            Self::Calculator(_) => StepKind::Calculator,
            Self::Patch(_) => StepKind::Patch,
        }
    }

    /// One short line naming the step in lists (evidence, pickers).
    pub fn headline(&self) -> String {
        let text = match self {
            Self::Note(n) => n
                .body
                .lines()
                .map(|l| l.trim_start_matches('#').trim())
                .find(|l| !l.is_empty())
                .unwrap_or("")
                .to_string(),
            Self::Command(c) => c.command.clone(),
            Self::Snippet(s) => {
                let file = s.path.clone().or_else(|| s.module.clone()).unwrap_or_default();
                match (s.start, s.end) {
                    (Some(a), Some(b)) => format!("{file}:{a}–{b}"),
                    _ => file,
                }
            }
            Self::Grep(g) => g.pattern.clone(),
            Self::Calculator(calculator::CalculatorBody::Bandwidth(_)) => "bandwidth roofline".into(),
            Self::Calculator(calculator::CalculatorBody::Collective(_)) => "collective budget".into(),
            Self::Patch(p) => {
                let (added, removed) = p.counts();
                let names: Vec<&str> = p.files.iter().map(|f| f.path.rsplit('/').next().unwrap_or(&f.path)).collect();
                format!("patch {} +{added} −{removed}", names.join(", "))
            }
        };
        let mut short: String = text.chars().take(70).collect();
        if short.len() < text.len() {
            short.push('…');
        }
        short
    }
}
