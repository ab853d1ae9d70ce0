//! The search index (migration 0022 / postgres 0005): rows of findable things,
//! their words in SQLite's FTS5 or PostgreSQL's tsvector, and the one query that
//! finds them — permissions and filters inside it, so counts and pages are right.

use super::{Backend, Queue, Store, StoreResult};
use sqlx::{Any, Transaction};

/// A findable thing, as the indexer makes it (see `crate::search::docs`).
#[derive(Clone, Debug, Default)]
pub struct NewDoc {
    pub kind: domain::search::DocKind,
    pub step_id: Option<i64>,
    pub run_id: Option<i64>,
    pub ref_id: Option<i64>,
    pub start_byte: Option<i64>,
    pub len: Option<i64>,
    pub first_line: Option<i64>,
    pub host: Option<String>,
    pub env: Option<String>,
    pub author: Option<String>,
    pub created_at: i64,
    /// Kept for excerpts; `None` for output (read back from the run).
    pub body: Option<String>,
    /// What is indexed: [`crate::search::query::words`] joined by spaces.
    pub words: String,
}

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct DocRow {
    pub id: i64,
    pub investigation_id: String,
    pub title: String,
    #[sqlx(try_from = "String")]
    pub kind: domain::search::DocKind,
    pub step_id: Option<i64>,
    pub run_id: Option<i64>,
    pub ref_id: Option<i64>,
    pub start_byte: Option<i64>,
    pub len: Option<i64>,
    pub first_line: Option<i64>,
    pub author: Option<String>,
    pub created_at: i64,
    pub body: Option<String>,
}

/// One search, as the store runs it (built from `crate::search::query::Query`).
#[derive(Clone, Debug, Default)]
pub struct DocQuery {
    /// FTS5 MATCH (SQLite) or to_tsquery text (PostgreSQL); `None`: filters only.
    pub text: Option<String>,
    /// `None`: every investigation (admins); otherwise the reader's name.
    pub reader: Option<String>,
    pub host: Option<String>,
    pub metric: Option<String>,
    /// `"\nNAME=value\n"` or `"\nNAME="` fragments the row's env must hold.
    pub env: Vec<String>,
    pub status: Option<String>,
    pub author: Option<String>,
    pub kind: Option<domain::search::DocKind>,
    pub after_ms: Option<i64>,
    pub before_ms: Option<i64>,
    pub newest_first: bool,
    pub limit: i64,
    pub offset: i64,
}

/// Matches ranked by relevance at most; more are shown newest first.
pub const RANK_AT_MOST: i64 = 10_000;

/// A page of what a search found.
pub struct Found {
    pub rows: Vec<DocRow>,
    pub total: i64,
    /// Ordered by relevance (`false`: newest first, asked or because there were too many).
    pub ranked: bool,
}

/// `LIKE` pattern matching `text` literally anywhere (`\` escapes).
fn contains_pattern(text: &str) -> String {
    let mut p = String::from("%");
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            p.push('\\');
        }
        p.push(c);
    }
    p.push('%');
    p
}

impl Store {
    /// Replaces the investigation's rows other than run output with `docs`.
    pub async fn replace_investigation_docs(&self, investigation: &str, docs: &[NewDoc]) -> StoreResult<()> {
        let mut tx = self.begin_serialised(Queue::Search).await?;
        sqlx::query("DELETE FROM search_docs WHERE investigation_id = $1 AND kind NOT IN ('output', 'server_log')")
            .bind(investigation)
            .execute(&mut *tx)
            .await?;
        for doc in docs {
            self.insert_doc(&mut tx, investigation, doc).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Takes a run not indexed yet for indexing (`runs.indexed` 0 → 2), with
    /// any output rows a cut-short attempt left; `false` when another took it.
    pub async fn claim_run_for_index(&self, run: i64) -> StoreResult<bool> {
        let mut tx = self.begin_serialised(Queue::Search).await?;
        let claimed = sqlx::query("UPDATE runs SET indexed = 2, index_claimed_by = $2 WHERE id = $1 AND indexed = 0")
            .bind(run)
            .bind(self.replica())
            .execute(&mut *tx)
            .await?
            .rows_affected()
            == 1;
        if claimed {
            sqlx::query("DELETE FROM search_docs WHERE run_id = $1 AND kind IN ('output', 'server_log')")
                .bind(run)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(claimed)
    }

    /// Claims left by a process that stopped while indexing (SQLite: the only one).
    pub async fn release_index_claims(&self) -> StoreResult<()> {
        sqlx::query("UPDATE runs SET indexed = 0, index_claimed_by = NULL WHERE indexed = 2")
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// A claim whose indexing failed: the run waits to be indexed again.
    pub async fn release_index_claim(&self, run: i64) -> StoreResult<()> {
        sqlx::query("UPDATE runs SET indexed = 0, index_claimed_by = NULL WHERE id = $1 AND indexed = 2")
            .bind(run)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// After a migration: every run's output is indexed again by the new server.
    pub async fn forget_index(&self) -> StoreResult<()> {
        sqlx::query("UPDATE runs SET indexed = 0, index_claimed_by = NULL").execute(&self.pool).await?;
        Ok(())
    }

    /// Adds pieces of a run's output; `done`: the last ones (the run is indexed).
    pub async fn add_run_docs(&self, investigation: &str, run: i64, docs: &[NewDoc], done: bool) -> StoreResult<()> {
        let mut tx = self.begin_serialised(Queue::Search).await?;
        for doc in docs {
            self.insert_doc(&mut tx, investigation, doc).await?;
        }
        if done {
            sqlx::query("UPDATE runs SET indexed = 1 WHERE id = $1").bind(run).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn insert_doc(
        &self,
        tx: &mut Transaction<'static, Any>,
        investigation: &str,
        doc: &NewDoc,
    ) -> StoreResult<()> {
        let columns = "investigation_id, kind, step_id, run_id, ref_id, start_byte, len, first_line, host, env, author, \
                       created_at, body";
        let insert = match self.backend {
            Backend::Sqlite => format!(
                "INSERT INTO search_docs ({columns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) \
                 RETURNING id"
            ),
            Backend::Postgres => format!(
                "INSERT INTO search_docs ({columns}, words) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, to_tsvector('simple', $14)) RETURNING id"
            ),
        };
        let mut query = sqlx::query_as::<_, (i64,)>(sqlx::AssertSqlSafe(insert))
            .bind(investigation)
            .bind(doc.kind.as_str())
            .bind(doc.step_id)
            .bind(doc.run_id)
            .bind(doc.ref_id)
            .bind(doc.start_byte)
            .bind(doc.len)
            .bind(doc.first_line)
            .bind(doc.host.as_deref())
            .bind(doc.env.as_deref())
            .bind(doc.author.as_deref())
            .bind(doc.created_at)
            .bind(doc.body.as_deref());
        if self.backend == Backend::Postgres {
            query = query.bind(doc.words.as_str());
        }
        let (id,) = query.fetch_one(&mut **tx).await?;
        if self.backend == Backend::Sqlite {
            sqlx::query("INSERT INTO search_words (rowid, words) VALUES ($1, $2)")
                .bind(id)
                .bind(doc.words.as_str())
                .execute(&mut **tx)
                .await?;
        }
        Ok(())
    }

    /// Finished runs whose output is not in the index yet, oldest first.
    pub async fn unindexed_runs(&self) -> StoreResult<Vec<i64>> {
        let rows: Vec<(i64,)> =
            sqlx::query_as("SELECT id FROM runs WHERE indexed = 0 AND status NOT IN ('queued', 'running') ORDER BY id")
                .fetch_all(&self.pool)
                .await?;
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }

    /// How many finished runs wait for their output to be indexed (or are being indexed).
    pub async fn runs_waiting_for_index(&self) -> StoreResult<i64> {
        let (n,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM runs WHERE indexed <> 1 AND status NOT IN ('queued', 'running')")
                .fetch_one(&self.pool)
                .await?;
        Ok(n)
    }

    /// Investigations with nothing in the index (new to it: an older database, a migration).
    pub async fn unindexed_investigations(&self) -> StoreResult<Vec<String>> {
        let rows: Vec<(String,)> = sqlx::query_as(
            "SELECT i.id FROM investigations i WHERE NOT EXISTS
               (SELECT 1 FROM search_docs d WHERE d.investigation_id = i.id AND d.kind = 'investigation')",
        )
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }

    /// The rows `query` finds (a page of them) and how many there are in all.
    pub async fn search_docs(&self, query: &DocQuery) -> StoreResult<Found> {
        let mut binds: Vec<String> = Vec::new();
        let slot = |value: String, binds: &mut Vec<String>| {
            binds.push(value);
            format!("${}", binds.len())
        };
        let mut from = String::from("search_docs d JOIN investigations i ON i.id = d.investigation_id");
        if query.text.is_some() && self.backend == Backend::Sqlite {
            // The FTS table first: the MATCH picks the rows, the join follows them.
            from = "search_words JOIN search_docs d ON d.id = search_words.rowid \
                    JOIN investigations i ON i.id = d.investigation_id"
                .into();
        }
        let mut conditions: Vec<String> = Vec::new();
        let mut rank = String::from("0");
        if let Some(text) = &query.text {
            let s = slot(text.clone(), &mut binds);
            match self.backend {
                Backend::Sqlite => {
                    conditions.push(format!("search_words MATCH {s}"));
                    // bm25 (FTS5's rank column: smaller is better).
                    rank = "search_words.rank".into();
                }
                Backend::Postgres => {
                    conditions.push(format!("d.words @@ to_tsquery('simple', {s})"));
                    rank = format!("-ts_rank(d.words, to_tsquery('simple', {s}))");
                }
            }
        }
        if let Some(reader) = &query.reader {
            let s = slot(reader.clone(), &mut binds);
            conditions.push(format!(
                "d.investigation_id IN (SELECT investigation_id FROM investigation_members WHERE user_name = {s})"
            ));
        }
        if let Some(host) = &query.host {
            let s = slot(host.clone(), &mut binds);
            conditions.push(format!("d.host = {s}"));
        }
        if let Some(metric) = &query.metric {
            let s = slot(metric.clone(), &mut binds);
            conditions.push(format!("d.run_id IN (SELECT m.run_id FROM measurements m WHERE m.metric = {s})"));
        }
        for fragment in &query.env {
            let s = slot(contains_pattern(fragment), &mut binds);
            conditions.push(format!("d.env LIKE {s} ESCAPE '\\'"));
        }
        if let Some(status) = &query.status {
            let s = slot(status.clone(), &mut binds);
            conditions.push(format!("d.run_id IN (SELECT r.id FROM runs r WHERE r.status = {s})"));
        }
        if let Some(author) = &query.author {
            let s = slot(author.to_lowercase(), &mut binds);
            conditions.push(format!("LOWER(d.author) = {s}"));
        }
        if let Some(kind) = query.kind {
            let s = slot(kind.as_str().to_string(), &mut binds);
            conditions.push(format!("d.kind = {s}"));
        }
        let mut numbers: Vec<(String, i64)> = Vec::new();
        if let Some(ms) = query.after_ms {
            numbers.push(("d.created_at >=".into(), ms));
        }
        if let Some(ms) = query.before_ms {
            numbers.push(("d.created_at <".into(), ms));
        }
        let first_number = binds.len();
        for (i, (cond, _)) in numbers.iter().enumerate() {
            conditions.push(format!("{cond} ${}", first_number + i + 1));
        }
        let filter = if conditions.is_empty() { String::new() } else { format!("WHERE {}", conditions.join(" AND ")) };
        let count = format!("SELECT COUNT(*) FROM {from} {filter}");
        let mut total = sqlx::query_as::<_, (i64,)>(sqlx::AssertSqlSafe(count));
        for value in &binds {
            total = total.bind(value.clone());
        }
        for (_, ms) in &numbers {
            total = total.bind(*ms);
        }
        let (total,) = total.fetch_one(&self.pool).await?;
        // Ranking reads every match (PostgreSQL: every match's tsvector): past
        // RANK_AT_MOST, the newest come first instead.
        let ranked = !query.newest_first && total <= RANK_AT_MOST;
        let order = if ranked {
            format!("{rank}, d.created_at DESC, d.id DESC")
        } else {
            "d.created_at DESC, d.id DESC".to_string()
        };
        let n = binds.len() + numbers.len();
        let select = format!(
            "SELECT d.id, d.investigation_id, i.title, d.kind, d.step_id, d.run_id, d.ref_id, d.start_byte, d.len,
                    d.first_line, d.author, d.created_at, d.body
             FROM {from} {filter} ORDER BY {order} LIMIT ${} OFFSET ${}",
            n + 1,
            n + 2
        );
        let mut rows = sqlx::query_as::<_, DocRow>(sqlx::AssertSqlSafe(select));
        for value in &binds {
            rows = rows.bind(value.clone());
        }
        for (_, ms) in &numbers {
            rows = rows.bind(*ms);
        }
        let rows = rows.bind(query.limit).bind(query.offset).fetch_all(&self.pool).await?;
        Ok(Found { rows, total, ranked })
    }

    /// Bytes the index takes (SQLite: the FTS5 shadow tables and the rows'
    /// table; PostgreSQL: the table with its indexes), for the benchmark.
    pub async fn search_index_bytes(&self) -> StoreResult<i64> {
        let sql = match self.backend {
            Backend::Sqlite => "SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name LIKE 'search_%'",
            Backend::Postgres => "SELECT pg_total_relation_size('search_docs')",
        };
        let (n,): (i64,) = sqlx::query_as(sql).fetch_one(&self.pool).await?;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn like_patterns_match_literally() {
        assert_eq!(super::contains_pattern("\nA_B=50%\n"), "%\nA\\_B=50\\%\n%");
    }
}
