//! The notebook's measurement operations: manual numbers, an investigation's own
//! extractors (adding one re-reads the runs it already has).

use super::custom::Extractor;
use crate::db::MeasurementRow;
use crate::notebook::{Service, timestamp};
use app::error::ApiError;
use app::metrics::{ExtractorDef, Measurement, NewMeasurement, StoredMeasurement};
use app::steps::StepBody;
use app::steps::calculator::{CalculatorBody, MeasuredFrom};

pub(crate) fn measurement_of(row: MeasurementRow) -> StoredMeasurement {
    StoredMeasurement {
        id: row.id,
        run_id: row.run_id,
        measurement: Measurement {
            metric: row.metric,
            value: row.value,
            unit: row.unit,
            extractor: row.extractor,
            stddev: row.stddev,
            key: row.key,
        },
        note: row.note,
        label: row.label,
        created_at: timestamp(row.created_at),
    }
}

fn check_text(what: &str, text: Option<&str>, max: usize) -> Result<Option<String>, ApiError> {
    let Some(text) = text.map(str::trim).filter(|t| !t.is_empty()) else { return Ok(None) };
    if text.chars().count() > max {
        return Err(ApiError::invalid(format!("The {what} is over {max} characters.")));
    }
    Ok(Some(text.to_string()))
}

/// What a calculator input needs from a linked measurement.
#[derive(Clone, Copy)]
enum Wanted {
    TokensPerSecond,
    Microseconds,
    Percent,
}

impl Wanted {
    /// The factor from `unit` to the input's unit, if they measure the same thing.
    fn factor(self, unit: &str) -> Option<f64> {
        match (self, unit.to_ascii_lowercase().as_str()) {
            (Self::TokensPerSecond, "tok/s" | "tokens/s" | "t/s") => Some(1.0),
            (Self::Microseconds, "us" | "µs") => Some(1.0),
            (Self::Microseconds, "ms") => Some(1e3),
            (Self::Microseconds, "s") => Some(1e6),
            (Self::Percent, "%") => Some(1.0),
            _ => None,
        }
    }

    fn needs(self) -> &'static str {
        match self {
            Self::TokensPerSecond => "a speed in tok/s",
            Self::Microseconds => "a latency in µs, ms or s",
            Self::Percent => "a percentage (%), such as mem_util_mean of a run's telemetry",
        }
    }
}

impl Service {
    /// Fills calculator inputs linked to measurements (`tok_s_from`, `latency_from`)
    /// with their values, checking each is of this investigation and of a fitting unit.
    pub(crate) async fn link_measurements(&self, investigation: &str, body: StepBody) -> Result<StepBody, ApiError> {
        let StepBody::Calculator(mut calculator) = body else { return Ok(body) };
        match &mut calculator {
            CalculatorBody::Bandwidth(b) => {
                if let Some(from) = &mut b.tok_s_from {
                    b.tok_s = self.linked_value(investigation, from, Wanted::TokensPerSecond).await?;
                }
                if let Some(from) = &mut b.mem_util_from {
                    b.mem_util_pct = Some(self.linked_value(investigation, from, Wanted::Percent).await?);
                }
            }
            CalculatorBody::Collective(c) => {
                if let Some(from) = &mut c.latency_from {
                    c.latency_us = self.linked_value(investigation, from, Wanted::Microseconds).await?;
                }
                if let Some(from) = &mut c.tok_s_from {
                    c.tok_s = Some(self.linked_value(investigation, from, Wanted::TokensPerSecond).await?);
                }
            }
        }
        Ok(StepBody::Calculator(calculator))
    }

    async fn linked_value(
        &self,
        investigation: &str,
        from: &mut MeasuredFrom,
        wanted: Wanted,
    ) -> Result<f64, ApiError> {
        let id = from.measurement;
        let row = self
            .store
            .measurement(id)
            .await?
            .filter(|m| m.investigation_id == investigation)
            .ok_or_else(|| ApiError::invalid(format!("This investigation has no measurement {id}.")))?;
        let factor = wanted.factor(&row.unit).ok_or_else(|| {
            ApiError::invalid(format!(
                "Measurement {id} is {} in {}; this input needs {}.",
                row.metric,
                if row.unit.is_empty() { "no unit" } else { &row.unit },
                wanted.needs()
            ))
        })?;
        let step = match row.run_id {
            Some(run) => self.store.run(run).await?.map(|r| r.step_id),
            None => None,
        };
        *from = MeasuredFrom {
            measurement: id,
            metric: row.metric,
            key: row.key,
            run: row.run_id,
            step,
            value: row.value,
            unit: row.unit,
        };
        Ok(row.value * factor)
    }

    pub(crate) async fn measurements(&self, investigation: &str) -> Result<Vec<StoredMeasurement>, ApiError> {
        self.existing_investigation(investigation).await?;
        let rows = self.store.measurements_of_investigation(investigation).await?;
        Ok(rows.into_iter().map(measurement_of).collect())
    }

    pub(crate) async fn add_measurement(
        &self,
        investigation: &str,
        new: NewMeasurement,
    ) -> Result<StoredMeasurement, ApiError> {
        self.existing_investigation(investigation).await?;
        let metric = super::slug(&new.metric);
        if metric.is_empty() || metric.len() > 80 {
            return Err(ApiError::invalid("Name the metric (letters, digits, `_`), e.g. output_throughput."));
        }
        if !new.value.is_finite() || new.stddev.is_some_and(|s| !s.is_finite() || s < 0.0) {
            return Err(ApiError::invalid("The value (and stddev) must be finite numbers, the stddev not negative."));
        }
        let unit = check_text("unit", Some(&new.unit), 20)?.unwrap_or_default();
        let note = check_text("note", new.note.as_deref(), 2_000)?;
        let label = check_text("label", new.label.as_deref(), 200)?;
        let m =
            Measurement { metric, value: new.value, unit, extractor: "manual".into(), stddev: new.stddev, key: None };
        let id = self.store.insert_manual_measurement(investigation, &m, note.as_deref(), label.as_deref()).await?;
        let rows = self.store.measurements_of_investigation(investigation).await?;
        rows.into_iter().find(|r| r.id == id).map(measurement_of).ok_or_else(ApiError::internal)
    }

    pub(crate) async fn delete_measurement(&self, id: i64) -> Result<(), ApiError> {
        if !self.store.delete_measurement(id).await? {
            return Err(ApiError::not_found(format!(
                "There is no manual measurement {id} (measurements from runs go with their run)."
            )));
        }
        Ok(())
    }

    pub(crate) async fn extractors(&self, investigation: &str) -> Result<Vec<ExtractorDef>, ApiError> {
        self.existing_investigation(investigation).await?;
        let rows = self.store.extractors(investigation).await?;
        Ok(rows.into_iter().map(|r| ExtractorDef { name: r.name, pattern: r.pattern, unit: r.unit }).collect())
    }

    /// Adds the extractor and reads every finished run of the investigation again.
    pub(crate) async fn add_extractor(&self, investigation: &str, def: ExtractorDef) -> Result<ExtractorDef, ApiError> {
        self.existing_investigation(investigation).await?;
        Extractor::new(&def.name, &def.pattern, &def.unit)?;
        let def = ExtractorDef { name: def.name.trim().into(), pattern: def.pattern, unit: def.unit.trim().into() };
        let added = self.store.insert_extractor(investigation, &def.name, &def.pattern, &def.unit).await?;
        if added.is_none() {
            return Err(ApiError::new(
                app::error::ErrorCode::Conflict,
                format!("This investigation already has an extractor {:?}.", def.name),
            ));
        }
        self.reextract(investigation).await;
        Ok(def)
    }

    pub(crate) async fn remove_extractor(&self, investigation: &str, name: &str) -> Result<(), ApiError> {
        if !self.store.delete_extractor(investigation, name).await? {
            return Err(ApiError::not_found(format!("There is no extractor {name:?} here.")));
        }
        self.reextract(investigation).await;
        Ok(())
    }

    pub(crate) async fn derived_metrics(&self, investigation: &str) -> Result<Vec<app::metrics::DerivedDef>, ApiError> {
        self.existing_investigation(investigation).await?;
        Ok(super::record::derived_defs(&self.store, investigation).await?)
    }

    /// Adds the derived metric and computes it for every finished run.
    pub(crate) async fn add_derived(
        &self,
        investigation: &str,
        def: app::metrics::DerivedDef,
    ) -> Result<app::metrics::DerivedDef, ApiError> {
        self.existing_investigation(investigation).await?;
        let def = app::metrics::DerivedDef { name: def.name.trim().into(), unit: def.unit.trim().into(), ..def };
        super::derived::check(&def)?;
        let constants = serde_json::to_string(&def.constants).map_err(|e| crate::notebook::internal("constants", e))?;
        if !self.store.insert_derived(investigation, &def.name, &def.unit, &def.formula, &constants).await? {
            return Err(ApiError::new(
                app::error::ErrorCode::Conflict,
                format!("This investigation already has a derived metric {:?}.", def.name),
            ));
        }
        self.reextract(investigation).await;
        Ok(def)
    }

    pub(crate) async fn remove_derived(&self, investigation: &str, name: &str) -> Result<(), ApiError> {
        if !self.store.delete_derived(investigation, name).await? {
            return Err(ApiError::not_found(format!("There is no derived metric {name:?} here.")));
        }
        self.reextract(investigation).await;
        Ok(())
    }

    async fn reextract(&self, investigation: &str) {
        let runs = self.store.runs_of_investigation(investigation).await.unwrap_or_default();
        for run in runs.iter().filter(|r| r.finished_at.is_some()) {
            if let Err(e) = super::record::for_run(&self.store, self.runner.outputs(), investigation, run.id).await {
                tracing::error!(run = run.id, "cannot extract measurements: {e}");
            }
        }
    }
}
