//! Investigations themselves: their list, titles and questions, status, and
//! who owns a new one. What an investigation page shows is put together by
//! `crate::notebook` from every domain.

use crate::db::{InvestigationRow, Store};
use crate::error::{Error, Result};
use crate::ids;
use crate::policy::{Anyone, Edit, Own, Permit, Read, Readers, Role};
use crate::time::timestamp;
use domain::error::ApiError;
use domain::model::{
    InvestigationPatch, InvestigationStatus, InvestigationSummary, NewInvestigation, investigation_url, limits,
};

#[derive(Clone)]
pub struct Investigations {
    store: Store,
}

pub(crate) fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("There is no investigation {id:?}."))
}

fn check_title(title: &str) -> Result<String> {
    let title = title.trim();
    if title.is_empty() {
        return Err(ApiError::invalid("The title cannot be empty.").into());
    }
    let chars = title.chars().count();
    if chars > limits::TITLE_CHARS {
        return Err(ApiError::invalid(format!(
            "The title is {chars} characters; the limit is {}.",
            limits::TITLE_CHARS
        ))
        .into());
    }
    Ok(title.to_string())
}

fn check_question(question: &str) -> Result<String> {
    let question = question.trim();
    let chars = question.chars().count();
    if chars > limits::QUESTION_CHARS {
        return Err(ApiError::invalid(format!(
            "The question is {chars} characters; the limit is {}.",
            limits::QUESTION_CHARS
        ))
        .into());
    }
    Ok(question.to_string())
}

pub(crate) fn summary(row: InvestigationRow) -> InvestigationSummary {
    InvestigationSummary {
        url: investigation_url(&row.id),
        status: row.status,
        step_count: u32::try_from(row.step_count).unwrap_or(u32::MAX),
        created_at: timestamp(row.created_at),
        updated_at: timestamp(row.updated_at),
        id: row.id,
        title: row.title,
        question: row.question,
        alerts: Vec::new(),
    }
}

impl Investigations {
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    /// Those the caller may read, newest first.
    pub async fn list(&self, readers: &Readers) -> Result<Vec<InvestigationSummary>> {
        let rows = self.store.list_investigations().await?;
        let mut listed: Vec<InvestigationSummary> =
            rows.into_iter().filter(|r| readers.may_read(&r.id)).map(summary).collect();
        // One query for every watch: the list says which investigations changed.
        let mut alerts: std::collections::HashMap<String, Vec<String>> = std::collections::HashMap::new();
        for w in self.store.watches().await?.iter().map(crate::watches::rows::view) {
            let w = w?;
            if let Some(text) = crate::watches::rows::alert(&w) {
                alerts.entry(w.investigation_id.clone()).or_default().push(text);
            }
        }
        for inv in &mut listed {
            inv.alerts = alerts.remove(&inv.id).unwrap_or_default();
        }
        Ok(listed)
    }

    /// A new investigation, owned by whoever made it; its id.
    pub async fn create(&self, permit: &Anyone, new: NewInvestigation) -> Result<String> {
        let title = check_title(&new.title)?;
        let question = check_question(new.question.as_deref().unwrap_or_default())?;
        // 50 random bits: a collision is all but impossible, but never fatal.
        for _ in 0..4 {
            let id = ids::new_investigation_id();
            if self.store.insert_investigation(&id, &title, &question).await? {
                self.store.set_member(&id, &permit.actor().name, Role::Owner).await?;
                tracing::info!(investigation = %id, by = %permit.actor().name, "created investigation");
                return Ok(id);
            }
        }
        Err(Error::bug("no free investigation id after 4 tries"))
    }

    /// Its summary (title, question, status, times).
    pub async fn summary(&self, permit: &Permit<Read>) -> Result<InvestigationSummary> {
        let id = permit.investigation();
        let row = self.store.investigation(id).await?.ok_or_else(|| not_found(id))?;
        Ok(summary(row))
    }

    pub async fn update(&self, permit: &Permit<Edit>, patch: InvestigationPatch) -> Result<()> {
        let title = patch.title.as_deref().map(check_title).transpose()?;
        let question = patch.question.as_deref().map(check_question).transpose()?;
        let id = permit.investigation();
        let found = self
            .store
            .update_investigation(
                id,
                title.as_deref(),
                question.as_deref(),
                patch.status.map(InvestigationStatus::as_str),
            )
            .await?;
        if found { Ok(()) } else { Err(not_found(id).into()) }
    }

    /// Deletes it with everything in it (its runs' output is the caller's to remove first).
    pub async fn delete(&self, permit: &Permit<Own>) -> Result<()> {
        let id = permit.investigation();
        if !self.store.delete_investigation(id).await? {
            return Err(not_found(id).into());
        }
        tracing::info!(investigation = %id, by = %permit.actor().name, "deleted investigation");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_are_trimmed_and_bounded() {
        assert_eq!(check_title("  x  ").unwrap(), "x");
        assert!(check_title("   ").is_err());
        assert!(check_title(&"é".repeat(limits::TITLE_CHARS)).is_ok());
        let err = check_title(&"é".repeat(limits::TITLE_CHARS + 1)).unwrap_err();
        assert_eq!(err.user().map(|e| e.code), Some(domain::error::ErrorCode::Invalid));
    }
}
