//! Replays of investigations (`crate::replays`).

use super::{HypothesisRow, Store, StoreResult};
use std::collections::HashMap;

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
    /// What went wrong after the copy (a snippet not read on the new host), JSON strings (0033).
    pub notes: Option<String>,
}

const COLUMNS: &str =
    "id, investigation_id, original_id, host, env, steps, hypotheses, manifest, created_by, created_at, notes";

/// The copied hypotheses, `(original id, row)`, given the original → copy step map.
pub type CopyHypotheses<'a> = dyn Fn(&HashMap<i64, i64>) -> Vec<(i64, HypothesisRow)> + Sync + 'a;

/// A replay's copy of an investigation, all of it written in one transaction
/// ([`Store::insert_replay_copy`]): a refused or failed copy leaves nothing.
pub struct ReplayCopy<'a> {
    /// The new investigation's id (taken: nothing is written), title and question.
    pub id: &'a str,
    pub title: &'a str,
    pub question: &'a str,
    /// Who made it: its owner.
    pub owner: &'a str,
    /// `(name, pattern, unit)`.
    pub extractors: Vec<(String, String, String)>,
    /// `(name, unit, formula, constants JSON)`.
    pub derived: Vec<(String, String, String, String)>,
    pub slo: Option<String>,
    /// `(original step, kind, body JSON)`, in timeline order.
    pub steps: Vec<(i64, &'a str, String)>,
    /// A step's body JSON with the steps it names (a command's patch) as
    /// their copies, given the original → copy map so far.
    pub renamed: fn(&str, &HashMap<i64, i64>) -> String,
    /// The copied hypotheses, `(original id, row)`, given the original → copy step map.
    pub hypotheses: &'a CopyHypotheses<'a>,
    /// The replay's own row (its steps and hypotheses pairs are filled in).
    pub replay: ReplayRow,
}

/// What a copy made: the replay's id and each original step and hypothesis against its copy.
pub struct Copied {
    pub replay: i64,
    pub steps: Vec<(i64, i64)>,
    pub hypotheses: Vec<(i64, i64)>,
}

impl Store {
    /// The whole copy in one transaction; `None` (nothing written) when the
    /// investigation id is taken.
    pub async fn insert_replay_copy(&self, copy: &ReplayCopy<'_>) -> StoreResult<Option<Copied>> {
        let now = crate::time::now_ms();
        let mut tx = self.begin_serialised(super::Queue::Steps).await?;
        if !super::insert_investigation_in(&mut tx, copy.id, copy.title, copy.question, now).await? {
            return Ok(None);
        }
        super::access::set_member_in(&mut tx, copy.id, copy.owner, domain::accounts::Role::Owner).await?;
        for (name, pattern, unit) in &copy.extractors {
            super::measurements::insert_extractor_in(&mut tx, copy.id, name, pattern, unit).await?;
        }
        for (name, unit, formula, constants) in &copy.derived {
            super::measurements::insert_derived_in(&mut tx, copy.id, name, unit, formula, constants).await?;
        }
        if let Some(text) = &copy.slo {
            super::reports::set_slo_in(&mut tx, copy.id, text, copy.owner).await?;
        }
        let mut steps = Vec::with_capacity(copy.steps.len());
        let mut mapped: HashMap<i64, i64> = HashMap::new();
        for (original, kind, body) in &copy.steps {
            let body = (copy.renamed)(body, &mapped);
            let row = super::append_step_in(&mut tx, copy.id, kind, &body, now).await?;
            steps.push((*original, row.id));
            mapped.insert(*original, row.id);
        }
        let mut hypotheses = Vec::new();
        for (original, row) in (copy.hypotheses)(&mapped) {
            let row = HypothesisRow { investigation_id: copy.id.to_string(), ..row };
            hypotheses.push((original, super::hypotheses::insert_hypothesis_in(&mut tx, &row, now).await?));
        }
        let row = ReplayRow {
            investigation_id: copy.id.to_string(),
            steps: serde_json::json!(steps).to_string(),
            hypotheses: serde_json::json!(hypotheses).to_string(),
            ..copy.replay.clone()
        };
        let (replay,): (i64,) = sqlx::query_as(
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
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Some(Copied { replay, steps, hypotheses }))
    }

    /// Notes what went wrong after the copy (appended to the replay's notes).
    pub async fn note_replay(&self, id: i64, notes: &[String]) -> StoreResult<()> {
        sqlx::query("UPDATE replays SET notes = $1 WHERE id = $2")
            .bind(serde_json::json!(notes).to_string())
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    pub async fn replay(&self, id: i64) -> StoreResult<Option<ReplayRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM replays WHERE id = $1")))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// The replay whose copy `investigation` is.
    pub async fn replay_into(&self, investigation: &str) -> StoreResult<Option<ReplayRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM replays WHERE investigation_id = $1")))
            .bind(investigation)
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
