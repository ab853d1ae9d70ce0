//! Comments and the mentions in them.

use super::{Store, StoreResult};
use crate::time::now_ms;
use domain::comments::MentionIn;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct CommentRow {
    pub id: i64,
    pub investigation_id: String,
    pub step_id: i64,
    pub annotation_id: Option<i64>,
    pub parent_id: Option<i64>,
    pub author: String,
    pub body: String,
    pub created_at: i64,
    pub resolved_at: Option<i64>,
    pub resolved_by: Option<String>,
}

/// A mention with what the inbox shows of its comment or annotation.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct MentionRow {
    pub comment_id: Option<i64>,
    pub annotation_id: Option<i64>,
    pub investigation_id: String,
    pub title: String,
    pub step_id: i64,
    pub author: String,
    pub body: String,
    pub created_at: i64,
    pub read_at: Option<i64>,
}

const COLUMNS: &str =
    "id, investigation_id, step_id, annotation_id, parent_id, author, body, created_at, resolved_at, resolved_by";

pub struct NewCommentRow<'a> {
    pub investigation: &'a str,
    pub step_id: i64,
    pub annotation_id: Option<i64>,
    pub parent_id: Option<i64>,
    pub author: &'a str,
    pub body: &'a str,
    pub mentions: &'a [String],
}

impl Store {
    /// The comment and its mentions, together.
    pub async fn insert_comment(&self, new: NewCommentRow<'_>) -> StoreResult<CommentRow> {
        let mut tx = self.begin_write().await?;
        let row: CommentRow = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "INSERT INTO comments (investigation_id, step_id, annotation_id, parent_id, author, body, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING {COLUMNS}"
        )))
        .bind(new.investigation)
        .bind(new.step_id)
        .bind(new.annotation_id)
        .bind(new.parent_id)
        .bind(new.author)
        .bind(new.body)
        .bind(now_ms())
        .fetch_one(&mut *tx)
        .await?;
        for user in new.mentions {
            sqlx::query("INSERT INTO mentions (comment_id, user_name) VALUES ($1, $2) ON CONFLICT DO NOTHING")
                .bind(row.id)
                .bind(user)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(row)
    }

    pub async fn comment(&self, id: i64) -> StoreResult<Option<CommentRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM comments WHERE id = $1")))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?)
    }

    pub async fn comments_of_investigation(&self, investigation: &str) -> StoreResult<Vec<CommentRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM comments WHERE investigation_id = $1 ORDER BY id"
        )))
        .bind(investigation)
        .fetch_all(&self.pool)
        .await?)
    }

    /// `by` resolves the thread; `None` reopens it.
    pub async fn resolve_comment(&self, id: i64, by: Option<&str>) -> StoreResult<()> {
        sqlx::query("UPDATE comments SET resolved_at = $1, resolved_by = $2 WHERE id = $3")
            .bind(by.map(|_| now_ms()))
            .bind(by)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// In comments and in annotations, newest first; unread only unless `all`.
    pub async fn mentions_of(&self, user: &str, all: bool) -> StoreResult<Vec<MentionRow>> {
        Ok(sqlx::query_as(
            "SELECT m.comment_id, CAST(NULL AS BIGINT) AS annotation_id, c.investigation_id, i.title, c.step_id,
                    c.author, c.body, c.created_at AS created_at, m.read_at
             FROM mentions m JOIN comments c ON c.id = m.comment_id JOIN investigations i ON i.id = c.investigation_id
             WHERE m.user_name = $1 AND ($2 OR m.read_at IS NULL)
             UNION ALL
             SELECT CAST(NULL AS BIGINT), a.id, s.investigation_id, i.title, a.step_id,
                    COALESCE(a.author, ''), a.body, a.created_at, m.read_at
             FROM annotation_mentions m JOIN annotations a ON a.id = m.annotation_id
                  JOIN steps s ON s.id = a.step_id JOIN investigations i ON i.id = s.investigation_id
             WHERE m.user_name = $3 AND ($4 OR m.read_at IS NULL)
             ORDER BY created_at DESC LIMIT 200",
        )
        .bind(user)
        .bind(all)
        .bind(user)
        .bind(all)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Marks `user`'s mentions read: one comment's or annotation's, or all (`None`).
    pub async fn read_mentions(&self, user: &str, which: Option<MentionIn>) -> StoreResult<()> {
        // (table, its id column, the one id or every row)
        let tables = match which {
            None => vec![("mentions", "comment_id", None), ("annotation_mentions", "annotation_id", None)],
            Some(MentionIn::Comment(id)) => vec![("mentions", "comment_id", Some(id))],
            Some(MentionIn::Annotation(id)) => vec![("annotation_mentions", "annotation_id", Some(id))],
        };
        let mut tx = self.begin_write().await?;
        for (table, column, id) in tables {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "UPDATE {table} SET read_at = $1
                 WHERE user_name = $2 AND read_at IS NULL AND ($3 IS NULL OR {column} = $4)"
            )))
            .bind(now_ms())
            .bind(user)
            .bind(id)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// The users a text's `@name`s name (spelled as stored), but `author`:
    /// who a comment or an annotation mentions.
    pub async fn users_named_in(&self, body: &str, author: &str) -> StoreResult<Vec<String>> {
        let named = self.existing_users(&domain::comments::mentioned_names(body)).await?;
        Ok(named.into_iter().filter(|m| !m.eq_ignore_ascii_case(author)).collect())
    }

    /// Which of `names` are users, spelled as stored.
    pub async fn existing_users(&self, names: &[String]) -> StoreResult<Vec<String>> {
        let mut found = Vec::new();
        for name in names {
            if let Some(row) = self.user_by_name(name).await?
                && !found.contains(&row.name)
            {
                found.push(row.name);
            }
        }
        Ok(found)
    }
}
