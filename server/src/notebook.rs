//! Sleuth's notebook operations: input checks, the store, and conversion to the
//! API types. Both the JSON API handlers and the UI's server functions come here
//! (through [`app::backend::Notebook`]), so each rule is written once.

use crate::db::{InvestigationRow, StepRow, Store};
use crate::{ids, steps};
use app::backend::Notebook;
use app::error::ApiError;
use app::model::{
    Investigation, InvestigationPatch, InvestigationStatus, InvestigationSummary, NewInvestigation, Step,
    investigation_url, limits, step_url,
};
use app::steps::StepBody;

pub struct Service {
    store: Store,
}

impl Service {
    pub fn new(store: Store) -> Self {
        Self { store }
    }
}

/// Logs the cause and gives the user the generic message.
fn internal(context: &str, cause: impl std::fmt::Display) -> ApiError {
    tracing::error!("{context}: {cause}");
    ApiError::internal()
}

fn store_error(cause: sqlx::Error) -> ApiError {
    internal("store", cause)
}

fn investigation_not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("There is no investigation {id:?}."))
}

fn step_not_found(id: i64) -> ApiError {
    ApiError::not_found(format!("There is no step {id}."))
}

fn check_title(title: &str) -> Result<String, ApiError> {
    let title = title.trim();
    if title.is_empty() {
        return Err(ApiError::invalid("The title cannot be empty."));
    }
    let chars = title.chars().count();
    if chars > limits::TITLE_CHARS {
        return Err(ApiError::invalid(format!(
            "The title is {chars} characters; the limit is {}.",
            limits::TITLE_CHARS
        )));
    }
    Ok(title.to_string())
}

fn check_question(question: &str) -> Result<String, ApiError> {
    let question = question.trim();
    let chars = question.chars().count();
    if chars > limits::QUESTION_CHARS {
        return Err(ApiError::invalid(format!(
            "The question is {chars} characters; the limit is {}.",
            limits::QUESTION_CHARS
        )));
    }
    Ok(question.to_string())
}

/// Unix milliseconds → RFC 3339 with milliseconds, UTC.
fn timestamp(ms: i64) -> String {
    let format =
        time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&format).ok())
        .unwrap_or_default()
}

fn status(row: &InvestigationRow) -> InvestigationStatus {
    // The schema's CHECK constraint allows nothing else.
    InvestigationStatus::parse(&row.status).unwrap_or(InvestigationStatus::Open)
}

fn summary(row: InvestigationRow) -> InvestigationSummary {
    InvestigationSummary {
        url: investigation_url(&row.id),
        status: status(&row),
        step_count: u32::try_from(row.step_count).unwrap_or(u32::MAX),
        created_at: timestamp(row.created_at),
        updated_at: timestamp(row.updated_at),
        id: row.id,
        title: row.title,
        question: row.question,
    }
}

fn step(row: StepRow) -> Result<Step, ApiError> {
    let body = steps::from_stored(&row.kind, &row.body)
        .map_err(|e| internal(&format!("step {} has an unreadable body", row.id), e))?;
    Ok(Step {
        url: step_url(&row.investigation_id, row.id),
        html: steps::render(&body),
        body,
        id: row.id,
        position: u32::try_from(row.position).unwrap_or(0),
        created_at: timestamp(row.created_at),
        updated_at: timestamp(row.updated_at),
        investigation_id: row.investigation_id,
    })
}

#[async_trait::async_trait]
impl Notebook for Service {
    async fn list_investigations(&self) -> Result<Vec<InvestigationSummary>, ApiError> {
        let rows = self.store.list_investigations().await.map_err(store_error)?;
        Ok(rows.into_iter().map(summary).collect())
    }

    async fn create_investigation(&self, new: NewInvestigation) -> Result<Investigation, ApiError> {
        let title = check_title(&new.title)?;
        let question = check_question(new.question.as_deref().unwrap_or_default())?;
        // 50 random bits: a collision is all but impossible, but never fatal.
        for _ in 0..4 {
            let id = ids::new_investigation_id();
            if self.store.insert_investigation(&id, &title, &question).await.map_err(store_error)? {
                tracing::info!(investigation = %id, "created investigation");
                return self.investigation(&id).await;
            }
        }
        Err(internal("create_investigation", "no free id after 4 tries"))
    }

    async fn investigation(&self, id: &str) -> Result<Investigation, ApiError> {
        if !ids::is_investigation_id(id) {
            return Err(investigation_not_found(id));
        }
        let row =
            self.store.investigation(id).await.map_err(store_error)?.ok_or_else(|| investigation_not_found(id))?;
        let steps =
            self.store.steps(id).await.map_err(store_error)?.into_iter().map(step).collect::<Result<Vec<_>, _>>()?;
        let summary = summary(row);
        Ok(Investigation {
            id: summary.id,
            url: summary.url,
            title: summary.title,
            question: summary.question,
            status: summary.status,
            created_at: summary.created_at,
            updated_at: summary.updated_at,
            steps,
        })
    }

    async fn update_investigation(&self, id: &str, patch: InvestigationPatch) -> Result<Investigation, ApiError> {
        let title = patch.title.as_deref().map(check_title).transpose()?;
        let question = patch.question.as_deref().map(check_question).transpose()?;
        let found = ids::is_investigation_id(id)
            && self
                .store
                .update_investigation(
                    id,
                    title.as_deref(),
                    question.as_deref(),
                    patch.status.map(InvestigationStatus::as_str),
                )
                .await
                .map_err(store_error)?;
        if !found {
            return Err(investigation_not_found(id));
        }
        self.investigation(id).await
    }

    async fn delete_investigation(&self, id: &str) -> Result<(), ApiError> {
        let found = ids::is_investigation_id(id) && self.store.delete_investigation(id).await.map_err(store_error)?;
        if !found {
            return Err(investigation_not_found(id));
        }
        tracing::info!(investigation = %id, "deleted investigation");
        Ok(())
    }

    async fn add_step(&self, investigation: &str, body: StepBody) -> Result<Step, ApiError> {
        if !ids::is_investigation_id(investigation) {
            return Err(investigation_not_found(investigation));
        }
        let body = steps::validate(body)?;
        let (kind, fields) = steps::to_stored(&body).map_err(|e| internal("to_stored", e))?;
        let row = self
            .store
            .insert_step(investigation, kind, &fields)
            .await
            .map_err(store_error)?
            .ok_or_else(|| investigation_not_found(investigation))?;
        step(row)
    }

    async fn step(&self, id: i64) -> Result<Step, ApiError> {
        let row = self.store.step(id).await.map_err(store_error)?.ok_or_else(|| step_not_found(id))?;
        step(row)
    }

    async fn update_step(&self, id: i64, body: StepBody) -> Result<Step, ApiError> {
        let current = self.step(id).await?;
        if current.body.kind() != body.kind() {
            return Err(ApiError::invalid(format!(
                "Step {id} is a {} step; its kind cannot change to {}.",
                current.body.kind(),
                body.kind()
            )));
        }
        let body = steps::validate(body)?;
        let (_, fields) = steps::to_stored(&body).map_err(|e| internal("to_stored", e))?;
        let row =
            self.store.update_step_body(id, &fields).await.map_err(store_error)?.ok_or_else(|| step_not_found(id))?;
        step(row)
    }

    async fn move_step(&self, id: i64, position: u32) -> Result<Step, ApiError> {
        let row = self
            .store
            .move_step(id, i64::from(position))
            .await
            .map_err(store_error)?
            .ok_or_else(|| step_not_found(id))?;
        step(row)
    }

    async fn delete_step(&self, id: i64) -> Result<(), ApiError> {
        if !self.store.delete_step(id).await.map_err(store_error)? {
            return Err(step_not_found(id));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_utc_with_millis() {
        assert_eq!(timestamp(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(timestamp(1_796_023_293_123), "2026-11-30T07:21:33.123Z");
    }

    #[test]
    fn titles_are_trimmed_and_bounded() {
        assert_eq!(check_title("  x  ").unwrap(), "x");
        assert!(check_title("   ").is_err());
        assert!(check_title(&"é".repeat(limits::TITLE_CHARS)).is_ok());
        let err = check_title(&"é".repeat(limits::TITLE_CHARS + 1)).unwrap_err();
        assert_eq!(err.code, app::error::ErrorCode::Invalid);
    }
}
