//! A run's engine metrics (`crate::engine`): chunks of its series, and notes.

use super::{Store, StoreResult};

impl Store {
    /// Chunk `seq` of the run's series (the scraper numbers them from 1).
    pub async fn insert_engine_chunk(&self, run: i64, seq: i64, body: &str) -> StoreResult<()> {
        sqlx::query("INSERT INTO run_engine (run_id, seq, body) VALUES ($1, $2, $3)")
            .bind(run)
            .bind(seq)
            .bind(body)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The run's chunks in the order they were written.
    pub async fn engine_chunks(&self, run: i64) -> StoreResult<Vec<String>> {
        let rows: Vec<(String,)> = sqlx::query_as("SELECT body FROM run_engine WHERE run_id = $1 ORDER BY seq")
            .bind(run)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.into_iter().map(|(body,)| body).collect())
    }

    /// What the scraping said (a JSON array of sentences).
    pub async fn set_engine_notes(&self, run: i64, notes: &str) -> StoreResult<()> {
        sqlx::query("UPDATE runs SET engine_notes = $1 WHERE id = $2")
            .bind(notes)
            .bind(run)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The run's requests by start (JSON `[[s, ms], …]`), from its report file.
    pub async fn set_request_timeline(&self, run: i64, timeline: Option<&str>) -> StoreResult<()> {
        sqlx::query("UPDATE runs SET request_timeline = $1 WHERE id = $2")
            .bind(timeline)
            .bind(run)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    pub async fn request_timeline(&self, run: i64) -> StoreResult<Option<String>> {
        let row: Option<(Option<String>,)> = sqlx::query_as("SELECT request_timeline FROM runs WHERE id = $1")
            .bind(run)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.and_then(|(timeline,)| timeline))
    }

    pub async fn engine_notes(&self, run: i64) -> StoreResult<Option<String>> {
        let row: Option<(Option<String>,)> =
            sqlx::query_as("SELECT engine_notes FROM runs WHERE id = $1").bind(run).fetch_optional(&self.pool).await?;
        Ok(row.and_then(|(notes,)| notes))
    }
}
