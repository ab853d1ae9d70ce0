//! An investigation's guard bounds (`domain::guards::Bounds`), as the JSON
//! object of those it sets over the defaults.

use super::{Store, StoreResult};
use crate::time::now_ms;

impl Store {
    /// The bounds `investigation` sets (JSON), if any.
    pub async fn guard_bounds(&self, investigation: &str) -> StoreResult<Option<String>> {
        let row: Option<(String,)> = sqlx::query_as("SELECT bounds FROM guard_bounds WHERE investigation_id = $1")
            .bind(investigation)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|(bounds,)| bounds))
    }

    /// Sets the bounds `investigation` sets (JSON), or with `None` goes back to the defaults.
    pub async fn set_guard_bounds(&self, investigation: &str, bounds: Option<&str>, by: &str) -> StoreResult<()> {
        match bounds {
            Some(bounds) => {
                sqlx::query(
                    "INSERT INTO guard_bounds (investigation_id, bounds, updated_at, updated_by) VALUES ($1, $2, $3, $4)
                     ON CONFLICT (investigation_id) DO UPDATE
                     SET bounds = excluded.bounds, updated_at = excluded.updated_at, updated_by = excluded.updated_by",
                )
                .bind(investigation)
                .bind(bounds)
                .bind(now_ms())
                .bind(by)
                .execute(&self.pool)
                .await?;
            }
            None => {
                sqlx::query("DELETE FROM guard_bounds WHERE investigation_id = $1")
                    .bind(investigation)
                    .execute(&self.pool)
                    .await?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn bounds_are_set_replaced_and_removed_and_go_with_their_investigation() {
        for (_dir, _database, store) in crate::db::test_stores().await {
            store.insert_investigation("inv", "t", "").await.unwrap();
            assert_eq!(store.guard_bounds("inv").await.unwrap(), None);
            store.set_guard_bounds("inv", Some(r#"{"prefix_hit_warn_pct":2}"#), "ada").await.unwrap();
            store.set_guard_bounds("inv", Some(r#"{"prefix_hit_warn_pct":3}"#), "ada").await.unwrap();
            assert_eq!(store.guard_bounds("inv").await.unwrap().as_deref(), Some(r#"{"prefix_hit_warn_pct":3}"#));
            store.set_guard_bounds("inv", None, "ada").await.unwrap();
            assert_eq!(store.guard_bounds("inv").await.unwrap(), None);
            store.set_guard_bounds("inv", Some("{}"), "ada").await.unwrap();
            store.delete_investigation("inv").await.unwrap();
            assert_eq!(store.guard_bounds("inv").await.unwrap(), None, "gone with its investigation");
        }
    }
}
