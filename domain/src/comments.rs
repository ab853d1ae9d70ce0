//! Threaded comments on steps and annotations, and the @mentions in them.

use serde::{Deserialize, Serialize};

pub const BODY_CHARS: usize = 10_000;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Comment {
    pub id: i64,
    pub step_id: i64,
    /// Set when the thread is about an annotation of the step.
    pub annotation_id: Option<i64>,
    /// The thread's first comment; `None` for that first comment itself.
    pub parent_id: Option<i64>,
    pub author: String,
    /// Markdown as written.
    pub body: String,
    /// The same, rendered and sanitized on the server.
    pub html: String,
    pub created_at: String,
    /// On a thread's first comment: when and by whom the thread was resolved.
    pub resolved_at: Option<String>,
    pub resolved_by: Option<String>,
    /// `/i/{investigation}#comment-{id}`.
    pub url: String,
    /// The `@name`s in it that reach no one: no such user, or someone who is
    /// not a member of the investigation (an owner may add them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_told: Vec<NotTold>,
}

/// A name a comment mentions that is told nothing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct NotTold {
    pub name: String,
    /// Whether there is a user of that name (who is then not a member); told
    /// to owners only, who add members by name anyway: to others, which names
    /// are users is not theirs to learn.
    pub user: Option<bool>,
}

impl NotTold {
    /// "@bob was not told: bob is not a member of this investigation."
    pub fn sentence(&self) -> String {
        match self.user {
            Some(true) => format!("@{0} was not told: {0} is not a member of this investigation.", self.name),
            Some(false) => format!("@{0} was not told: there is no user {0}.", self.name),
            None => format!("@{0} was not told: {0} is not a member of this investigation (or not a user).", self.name),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct NewComment {
    /// On a step (or the step of `annotation_id`, or of `parent_id`'s thread).
    #[serde(default)]
    pub step_id: Option<i64>,
    #[serde(default)]
    pub annotation_id: Option<i64>,
    /// A reply: the thread's first comment (or any comment of it).
    #[serde(default)]
    pub parent_id: Option<i64>,
    pub body: String,
}

/// A comment or an annotation that mentions the reader, for their list of mentions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Mention {
    /// The comment that names the reader (`None`: an annotation does).
    pub comment_id: Option<i64>,
    /// The annotation that names the reader (`None`: a comment does).
    #[serde(default)]
    pub annotation_id: Option<i64>,
    pub investigation_id: String,
    pub investigation_title: String,
    pub author: String,
    /// The comment's first 200 characters, as text.
    pub excerpt: String,
    pub created_at: String,
    pub read: bool,
    pub url: String,
}

impl Mention {
    /// What names the reader, to mark it read.
    pub fn of(&self) -> Option<MentionIn> {
        MentionIn::of(self.comment_id, self.annotation_id)
    }
}

/// Where a mention is written: one mention is marked read by this.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MentionIn {
    Comment(i64),
    Annotation(i64),
}

impl MentionIn {
    /// A comment's or an annotation's (as a row or a request names them);
    /// `None` when neither is given.
    pub fn of(comment: Option<i64>, annotation: Option<i64>) -> Option<MentionIn> {
        comment.map(MentionIn::Comment).or(annotation.map(MentionIn::Annotation))
    }

    /// The element on the investigation's page: `comment-12`, `annotation-3`.
    pub fn anchor(self) -> String {
        match self {
            MentionIn::Comment(id) => comment_anchor(id),
            MentionIn::Annotation(id) => crate::steps::snippet::annotation_anchor(id),
        }
    }

    /// The inverse of [`MentionIn::anchor`].
    pub fn from_anchor(anchor: &str) -> Option<MentionIn> {
        if let Some(id) = anchor.strip_prefix("comment-") {
            return id.parse().ok().map(MentionIn::Comment);
        }
        anchor.strip_prefix("annotation-")?.parse().ok().map(MentionIn::Annotation)
    }
}

pub fn comment_anchor(id: i64) -> String {
    format!("comment-{id}")
}

/// The `@name`s in a comment, in order, once each: a name is letters, digits
/// and `_ - .` (as user names are), after the start or a character that is not
/// part of a word, so `ada@example.com` mentions nobody. A trailing `.` ends
/// the sentence, not the name.
pub fn mentioned_names(body: &str) -> Vec<String> {
    let is_name = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    let mut names: Vec<String> = Vec::new();
    let mut previous = ' ';
    for (i, c) in body.char_indices() {
        if c == '@' && !is_name(previous) && previous != '@' {
            let rest = &body[i + 1..];
            let end = rest.find(|c: char| !is_name(c)).unwrap_or(rest.len());
            let name = rest[..end].trim_end_matches('.');
            if !name.is_empty() && !names.iter().any(|n| n.eq_ignore_ascii_case(name)) {
                names.push(name.to_string());
            }
        }
        previous = c;
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mention_is_found_again_from_its_anchor() {
        for of in [MentionIn::Comment(12), MentionIn::Annotation(3)] {
            assert_eq!(MentionIn::from_anchor(&of.anchor()), Some(of));
        }
        assert_eq!(MentionIn::Annotation(3).anchor(), "annotation-3");
        assert_eq!(MentionIn::from_anchor("step-4"), None);
        assert_eq!(MentionIn::from_anchor("comment-x"), None);
    }

    #[test]
    fn mentions_are_names_after_an_at_sign() {
        assert_eq!(mentioned_names("@ada can you rerun? cc @bob.k."), ["ada", "bob.k"]);
        assert_eq!(mentioned_names("mail ada@example.com, not a mention"), Vec::<String>::new());
        assert_eq!(mentioned_names("(@ada) and @Ada again, @ alone"), ["ada"]);
        assert_eq!(mentioned_names("`@carol_2`: NCCL_PROTO=LL"), ["carol_2"]);
    }
}
