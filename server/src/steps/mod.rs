//! The server side of step kinds: checking what users send, storing it, and
//! rendering it. One module per kind, mirroring `domain::steps`.

mod command;
mod edit_lines;
mod grep;
mod note;
pub(crate) mod patch;
mod service;
mod snippet;

pub use edit_lines::patch_of as patch_of_lines;
pub use service::Steps;

use crate::db::StepRow;
use crate::error::Result;
use crate::time::timestamp;
use domain::error::ApiError;
use domain::model::{Step, step_url};
use domain::steps::StepBody;

/// Checks and normalizes a body a user sent.
pub fn validate(body: StepBody) -> Result<StepBody, ApiError> {
    match body {
        StepBody::Note(note) => note::validate(note).map(StepBody::Note),
        StepBody::Command(command) => command::validate(command).map(StepBody::Command),
        StepBody::Snippet(snippet) => snippet::validate(snippet).map(StepBody::Snippet),
        StepBody::Grep(grep) => grep::validate(grep).map(StepBody::Grep),
        StepBody::Calculator(calculator) => calculator.check().map(|()| StepBody::Calculator(calculator)),
        StepBody::Patch(patch) => patch::validate(patch).map(StepBody::Patch),
    }
}

/// The sanitized HTML shown for the step, for kinds that have one.
pub fn render(body: &StepBody) -> Option<String> {
    match body {
        StepBody::Note(note) => Some(note::render(note)),
        StepBody::Command(command) => Some(command::render(command)),
        // Rendered from its snapshots (see `snippets`).
        StepBody::Snippet(_) | StepBody::Grep(_) => None,
        // Its numbers are computed where it is shown (`domain::steps::calculator`).
        StepBody::Calculator(_) => None,
        // Its diff is drawn line by line, escaped, where it is shown.
        StepBody::Patch(_) => None,
    }
}

/// `(kind, fields as a JSON object)`, the stored form of a body.
pub fn to_stored(body: &StepBody) -> Result<(&'static str, String), serde_json::Error> {
    // The kind as the store's column holds it.
    let mut value = serde_json::to_value(body)?;
    if let Some(fields) = value.as_object_mut() {
        fields.remove("kind");
    }
    Ok((body.kind().as_str(), serde_json::to_string(&value)?))
}

/// The inverse of [`to_stored`].
pub fn from_stored(kind: domain::steps::StepKind, fields: &str) -> Result<StepBody, serde_json::Error> {
    let mut value: serde_json::Value = serde_json::from_str(fields)?;
    if let Some(fields) = value.as_object_mut() {
        fields.insert("kind".into(), kind.as_str().into());
    }
    serde_json::from_value(value)
}

/// A step as stored, without its HTML, runs, snapshots or searches: what a
/// folded step of a long timeline needs, and what the rest is added to.
pub fn unrendered(row: StepRow) -> Result<Step> {
    let body = from_stored(row.kind, &row.body)
        .map_err(|e| crate::error::Error::unreadable(format!("step {}'s body", row.id), e))?;
    Ok(Step {
        url: step_url(&row.investigation_id, row.id),
        runs: Vec::new(),
        snapshots: Vec::new(),
        annotations: Vec::new(),
        search: None,
        results: None,
        html: None,
        body,
        id: row.id,
        position: u32::try_from(row.position).unwrap_or(0),
        created_at: timestamp(row.created_at),
        updated_at: timestamp(row.updated_at),
        version: row.version,
        updated_by: row.updated_by,
        investigation_id: row.investigation_id,
    })
}

/// [`unrendered`], with its HTML and a calculator's results.
pub fn rendered(row: StepRow) -> Result<Step> {
    let mut step = unrendered(row)?;
    step.html = render(&step.body);
    if let StepBody::Calculator(calculator) = &step.body {
        step.results = calculator.results();
    }
    Ok(step)
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::steps::note::NoteBody;

    #[test]
    fn stored_form_round_trips() {
        let body = StepBody::Note(NoteBody { body: "**hi**".into() });
        let (kind, fields) = to_stored(&body).unwrap();
        assert_eq!(kind, "note");
        assert_eq!(fields, r#"{"body":"**hi**"}"#);
        assert_eq!(from_stored(kind.parse().unwrap(), &fields).unwrap(), body);
        assert!("teleport".parse::<domain::steps::StepKind>().is_err());
        assert!(from_stored(domain::steps::StepKind::Command, &fields).is_err(), "a note's fields are not a command's");
    }
}
