//! Rows as the store returns them.

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct InvestigationRow {
    pub id: String,
    pub title: String,
    pub question: String,
    pub status: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub step_count: i64,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StepRow {
    pub id: i64,
    pub investigation_id: String,
    pub position: i64,
    pub kind: String,
    /// The kind's fields as a JSON object (without `kind`).
    pub body: String,
    pub created_at: i64,
    pub updated_at: i64,
}
