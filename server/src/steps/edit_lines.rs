//! "Edit these lines": a snippet's shown lines, edited, saved as a patch step
//! right after it, against the snapshot the snippet pinned (its sha256 is the
//! file's base, so saving reads nothing from the host).

use super::Steps;
use crate::error::Result;
use crate::policy::ForBody;
use domain::error::ApiError;
use domain::model::Step;
use domain::steps::StepBody;
use domain::steps::patch::{PatchBody, PatchFile};

/// The patch `text` (the shown lines, edited) makes of `snippet`'s newest snapshot.
pub fn patch_of(snippet: &Step, text: &str) -> Result<StepBody, ApiError> {
    let StepBody::Snippet(body) = &snippet.body else {
        return Err(ApiError::invalid(format!(
            "Step {} is no snippet; only a snippet's lines are edited.",
            snippet.id
        )));
    };
    let Some(shot) = snippet.snapshots.last() else {
        return Err(ApiError::invalid("The snippet has no lines yet; refresh it first."));
    };
    let Some(base) = shot.sha256.clone() else {
        return Err(ApiError::invalid("The snippet's file has no sha256 to make a patch against; refresh it first."));
    };
    let mut old = shot.lines.join("\n");
    old.push('\n');
    let mut new = text.replace("\r\n", "\n");
    if !new.ends_with('\n') {
        new.push('\n');
    }
    if new == old {
        return Err(ApiError::invalid("The lines are as they were: nothing to patch."));
    }
    let start = usize::try_from(shot.start).unwrap_or(1);
    let diff = crate::patches::diff::between_lines(&shot.path, &old, &new, start);
    Ok(StepBody::Patch(PatchBody {
        host: body.host.clone(),
        diff,
        files: vec![PatchFile { path: shot.path.clone(), base: Some(base), added: 0, removed: 0 }],
        caches: Vec::new(),
        expect: Vec::new(),
    }))
}

impl Steps {
    /// Saves `patch` (from [`patch_of`]) right after `snippet`.
    pub async fn add_after(&self, permit: &ForBody, snippet: &Step, patch: StepBody) -> Result<Step> {
        let made = self.add(permit, patch).await?;
        self.move_to(&permit.edit(), made.id, snippet.position + 1).await?;
        self.get(&permit.edit().read(), made.id).await
    }
}
