//! Rows as the store returns them.

/// A nullable column that holds one of a closed set (`#[sqlx(try_from =
/// "Option<String>")]`): none, or one of its values; anything else is an
/// error reading the row, never a silent default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Maybe<T>(pub Option<T>);

impl<T: TryFrom<String>> TryFrom<Option<String>> for Maybe<T> {
    type Error = T::Error;

    fn try_from(text: Option<String>) -> Result<Self, T::Error> {
        text.map(T::try_from).transpose().map(Maybe)
    }
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct InvestigationRow {
    pub id: String,
    pub title: String,
    pub question: String,
    #[sqlx(try_from = "String")]
    pub status: domain::model::InvestigationStatus,
    pub created_at: i64,
    pub updated_at: i64,
    pub step_count: i64,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StepRow {
    pub id: i64,
    pub investigation_id: String,
    pub position: i64,
    #[sqlx(try_from = "String")]
    pub kind: domain::steps::StepKind,
    /// The kind's fields as a JSON object (without `kind`).
    pub body: String,
    pub created_at: i64,
    pub updated_at: i64,
    /// Bumped by every save of the body (see migration 0015).
    pub version: i64,
    pub updated_by: Option<String>,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct HostRow {
    pub name: String,
    pub hostname: String,
    pub port: i64,
    pub user: String,
    pub identity_file: Option<String>,
    pub proxy_jump: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    /// What an hour of it costs (migration 0030).
    pub price_per_hour: Option<f64>,
    /// Run directories: days kept, MB cap, last sweep (JSON) (migration 0031).
    pub run_dirs_keep_days: Option<i64>,
    pub run_dirs_max_mb: Option<i64>,
    pub run_dirs_swept: Option<String>,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RunRow {
    pub id: i64,
    pub step_id: i64,
    pub host: String,
    pub command: String,
    /// JSON array of [name, value].
    pub env: String,
    pub cwd: Option<String>,
    pub timeout_s: Option<i64>,
    #[sqlx(try_from = "String")]
    pub status: domain::runs::RunStatus,
    pub exit_code: Option<i64>,
    pub exit_signal: Option<String>,
    pub error: Option<String>,
    pub batch_index: i64,
    pub batch_size: i64,
    pub warmup: i64,
    pub stdout_bytes: i64,
    pub stderr_bytes: i64,
    pub lines: i64,
    pub queued_at: i64,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
    pub who: Option<String>,
    /// The host facts current when it started (see migration 0011).
    pub facts_id: Option<i64>,
    /// A sweep's run: the matrix values it ran with (JSON), its sweep, its place (0021).
    pub config: Option<String>,
    pub sweep_id: Option<i64>,
    pub sweep_index: Option<i64>,
    /// Whether GPU telemetry is sampled (1) or not (0).
    pub telemetry: i64,
    /// Its directory on the host, the server beside it (JSON), what became of
    /// its artifacts (JSON notes) (0024).
    pub plan: Option<String>,
    pub run_dir: Option<String>,
    pub server: Option<String>,
    pub artifact_notes: Option<String>,
    /// Seconds its host has not answered while it runs (0028).
    pub host_quiet_s: Option<i64>,
    /// Whether its telemetry chart was drawn (1), the last thing stored after
    /// a run with telemetry ends; the chart itself is read on its own.
    pub telemetry_drawn: i64,
    /// Who made it (0033): a person, or the watch or replay `origin_id` names.
    #[sqlx(try_from = "String")]
    pub origin: domain::runs::OriginKind,
    pub origin_id: Option<i64>,
    /// The first run of its Run press or sweep (0033).
    pub launch: Option<i64>,
    /// What it waits for while queued (0035).
    pub waiting: Option<String>,
}

/// What a new run records; the rest starts at zero.
#[derive(Debug, Clone)]
pub struct NewRun {
    pub step_id: i64,
    pub host: String,
    pub command: String,
    pub env: String,
    pub cwd: Option<String>,
    pub timeout_s: Option<i64>,
    pub batch_index: i64,
    pub batch_size: i64,
    pub warmup: bool,
    pub who: Option<String>,
    /// A sweep's run: its configuration (JSON), sweep and place in it.
    pub config: Option<String>,
    pub sweep_id: Option<i64>,
    pub sweep_index: Option<i64>,
    pub telemetry: bool,
    /// Its server and artifacts (JSON, `runs::Plan`), if its step has either.
    pub plan: Option<String>,
    /// A person's, or a watch's or replay's.
    pub origin: domain::runs::RunOrigin,
}

/// Where a run ended.
#[derive(Debug, Clone)]
pub struct RunEnd<'a> {
    pub status: domain::runs::RunStatus,
    pub exit_code: Option<i64>,
    pub exit_signal: Option<&'a str>,
    pub error: Option<&'a str>,
}

impl MeasurementRow {
    /// The measurement as extractors find it.
    pub fn measurement(&self) -> domain::metrics::Measurement {
        domain::metrics::Measurement {
            metric: self.metric.clone(),
            value: self.value,
            unit: self.unit.clone(),
            extractor: self.extractor.clone(),
            stddev: self.stddev,
            key: self.key.clone(),
        }
    }
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct MeasurementRow {
    pub id: i64,
    pub investigation_id: String,
    pub run_id: Option<i64>,
    pub metric: String,
    pub value: f64,
    pub unit: String,
    pub extractor: String,
    pub stddev: Option<f64>,
    pub key: Option<String>,
    pub note: Option<String>,
    pub label: Option<String>,
    pub created_at: i64,
}
