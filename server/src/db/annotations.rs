//! Annotations of snippet steps.

use super::{Store, StoreResult};
use crate::time::now_ms;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AnnotationRow {
    pub id: i64,
    pub step_id: i64,
    pub snapshot_id: Option<i64>,
    pub start_line: i64,
    pub end_line: i64,
    pub body: String,
    pub author: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    /// The investigation of the step (joined), for links.
    pub investigation_id: String,
}

const SELECT: &str = "SELECT a.id, a.step_id, a.snapshot_id, a.start_line, a.end_line, a.body, a.author,
                             a.created_at, a.updated_at, s.investigation_id
                      FROM annotations a JOIN steps s ON s.id = a.step_id";

impl Store {
    /// The annotation and the users it mentions, together.
    pub async fn insert_annotation(
        &self,
        step_id: i64,
        snapshot_id: Option<i64>,
        (start, end): (i64, i64),
        body: &str,
        author: Option<&str>,
        mentions: &[String],
    ) -> StoreResult<i64> {
        let now = now_ms();
        let mut tx = self.begin_write().await?;
        let (id,): (i64,) = sqlx::query_as(
            "INSERT INTO annotations (step_id, snapshot_id, start_line, end_line, body, author, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             RETURNING id",
        )
        .bind(step_id)
        .bind(snapshot_id)
        .bind(start)
        .bind(end)
        .bind(body)
        .bind(author)
        .bind(now)
        .bind(now)
        .fetch_all(&mut *tx)
        .await?
        .into_iter()
        .next()
        .ok_or(sqlx::Error::RowNotFound)?;
        mention(&mut tx, id, mentions).await?;
        tx.commit().await?;
        Ok(id)
    }

    pub async fn annotation(&self, id: i64) -> StoreResult<Option<AnnotationRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!("{SELECT} WHERE a.id = $1")))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// Returns whether the annotation exists. Users the new body names are
    /// told (those told before stay told).
    pub async fn update_annotation(
        &self,
        id: i64,
        (start, end): (i64, i64),
        body: &str,
        mentions: &[String],
    ) -> StoreResult<bool> {
        let mut tx = self.begin_write().await?;
        let done = sqlx::query(
            "UPDATE annotations SET start_line = $1, end_line = $2, body = $3, updated_at = $4 WHERE id = $5",
        )
        .bind(start)
        .bind(end)
        .bind(body)
        .bind(now_ms())
        .bind(id)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() != 1 {
            return Ok(false);
        }
        mention(&mut tx, id, mentions).await?;
        tx.commit().await?;
        Ok(true)
    }

    pub async fn delete_annotation(&self, id: i64) -> StoreResult<bool> {
        let done = sqlx::query("DELETE FROM annotations WHERE id = $1").bind(id).execute(&self.pool).await?;
        Ok(done.rows_affected() == 1)
    }

    pub async fn annotations_of_investigation(&self, investigation: &str) -> StoreResult<Vec<AnnotationRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{SELECT} WHERE s.investigation_id = $1 ORDER BY a.step_id, a.start_line, a.id"
        )))
        .bind(investigation)
        .fetch_all(&self.pool)
        .await?)
    }

    pub async fn annotations_of_step(&self, step_id: i64) -> StoreResult<Vec<AnnotationRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!("{SELECT} WHERE a.step_id = $1 ORDER BY a.start_line, a.id")))
            .bind(step_id)
            .fetch_all(&self.pool)
            .await?)
    }
}

async fn mention(tx: &mut sqlx::Transaction<'_, sqlx::Any>, annotation: i64, users: &[String]) -> StoreResult<()> {
    for user in users {
        sqlx::query(
            "INSERT INTO annotation_mentions (annotation_id, user_name) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        )
        .bind(annotation)
        .bind(user)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}
