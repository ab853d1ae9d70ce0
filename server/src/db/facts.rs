//! Captured host facts.

use super::{Store, StoreResult};
use crate::time::now_ms;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct FactsRow {
    pub id: i64,
    pub host_name: String,
    /// JSON of `domain::hosts::HostFacts` (without `captured_at`, which is the column).
    pub facts: String,
    pub captured_at: i64,
}

impl Store {
    pub async fn insert_facts(&self, host: &str, facts: &str) -> StoreResult<FactsRow> {
        Ok(sqlx::query_as(
            "INSERT INTO host_facts (host_name, facts, captured_at) VALUES ($1, $2, $3)
             RETURNING id, host_name, facts, captured_at",
        )
        .bind(host)
        .bind(facts)
        .bind(now_ms())
        .fetch_all(&self.pool)
        .await?
        .into_iter()
        .next()
        .ok_or(sqlx::Error::RowNotFound)?)
    }

    pub async fn facts(&self, id: i64) -> StoreResult<Option<FactsRow>> {
        Ok(sqlx::query_as("SELECT id, host_name, facts, captured_at FROM host_facts WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?)
    }

    pub async fn latest_facts(&self, host: &str) -> StoreResult<Option<FactsRow>> {
        Ok(sqlx::query_as(
            "SELECT id, host_name, facts, captured_at FROM host_facts WHERE host_name = $1 ORDER BY id DESC LIMIT 1",
        )
        .bind(host)
        .fetch_optional(&self.pool)
        .await?)
    }
}
