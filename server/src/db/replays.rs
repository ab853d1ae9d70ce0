//! Replays of investigations (`crate::replays`).

use super::{Store, StoreResult};

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct ReplayRow {
    pub id: i64,
    pub investigation_id: String,
    pub original_id: Option<String>,
    pub host: Option<String>,
    /// JSON object of the env set over each step's.
    pub env: String,
    /// JSON `[[original step, copy], …]`, likewise `hypotheses`.
    pub steps: String,
    pub hypotheses: String,
    /// The original's `domain::replays::Manifest` (JSON).
    pub manifest: String,
    pub created_by: Option<String>,
    pub created_at: i64,
}

const COLUMNS: &str =
    "id, investigation_id, original_id, host, env, steps, hypotheses, manifest, created_by, created_at";

impl Store {
    pub async fn insert_replay(&self, row: &ReplayRow) -> StoreResult<i64> {
        let ids: Vec<(i64,)> = sqlx::query_as(
            "INSERT INTO replays (investigation_id, original_id, host, env, steps, hypotheses, manifest, created_by, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
        )
        .bind(&row.investigation_id)
        .bind(&row.original_id)
        .bind(&row.host)
        .bind(&row.env)
        .bind(&row.steps)
        .bind(&row.hypotheses)
        .bind(&row.manifest)
        .bind(&row.created_by)
        .bind(row.created_at)
        .fetch_all(&self.pool)
        .await?;
        Ok(ids.first().map_or(0, |(id,)| *id))
    }

    pub async fn replay(&self, id: i64) -> StoreResult<Option<ReplayRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM replays WHERE id = $1")))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// The replays of an investigation, newest first.
    pub async fn replays_of(&self, original: &str) -> StoreResult<Vec<ReplayRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM replays WHERE original_id = $1 ORDER BY id DESC"
        )))
        .bind(original)
        .fetch_all(&self.pool)
        .await?)
    }
}
