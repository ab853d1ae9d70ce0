//! Search rows of grep steps.

use super::{Store, StoreResult};
use crate::time::now_ms;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SearchRow {
    pub id: i64,
    pub step_id: i64,
    /// JSON array of hits.
    pub hits: String,
    pub total: i64,
    pub error: Option<String>,
    pub searched_at: i64,
}

impl Store {
    pub async fn insert_search(&self, step_id: i64, hits: &str, total: i64, error: Option<&str>) -> StoreResult<()> {
        sqlx::query("INSERT INTO searches (step_id, hits, total, error, searched_at) VALUES ($1, $2, $3, $4, $5)")
            .bind(step_id)
            .bind(hits)
            .bind(total)
            .bind(error)
            .bind(now_ms())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The newest search of each grep step of an investigation.
    pub async fn searches_of_investigation(&self, investigation: &str) -> StoreResult<Vec<SearchRow>> {
        Ok(sqlx::query_as(
            "SELECT id, step_id, hits, total, error, searched_at FROM searches
             WHERE id IN (SELECT MAX(id) FROM searches WHERE step_id IN
                          (SELECT id FROM steps WHERE investigation_id = $1) GROUP BY step_id)",
        )
        .bind(investigation)
        .fetch_all(&self.pool)
        .await?)
    }

    pub async fn search_of_step(&self, step_id: i64) -> StoreResult<Option<SearchRow>> {
        Ok(sqlx::query_as(
            "SELECT id, step_id, hits, total, error, searched_at FROM searches WHERE step_id = $1 ORDER BY id DESC LIMIT 1",
        )
        .bind(step_id)
        .fetch_optional(&self.pool)
        .await?)
    }
}
