//! The measurement operations: manual numbers, an investigation's own
//! extractors and derived metrics (adding one re-reads the runs it already has),
//! and calculator inputs linked to measurements.

use super::custom::Extractor;
use crate::db::{MeasurementRow, Store};
use crate::error::{Context, Error, Result};
use crate::output::Outputs;
use crate::policy::{Edit, Permit, Read};
use crate::time::timestamp;
use domain::distributions::{Slo, SloInput, SloView};
use domain::error::ApiError;
use domain::metrics::{DerivedDef, ExtractorDef, Measurement, NewMeasurement, StoredMeasurement};
use domain::steps::StepBody;
use domain::steps::calculator::{CalculatorBody, MeasuredFrom};

#[derive(Clone)]
pub struct Metrics {
    store: Store,
    outputs: Outputs,
}

pub fn measurement_of(row: &MeasurementRow) -> StoredMeasurement {
    stored(row, timestamp(row.created_at))
}

fn stored(row: &MeasurementRow, created_at: String) -> StoredMeasurement {
    StoredMeasurement {
        id: row.id,
        run_id: row.run_id,
        measurement: value_of(row),
        note: row.note.clone(),
        label: row.label.clone(),
        created_at,
    }
}

/// Many rows at once: a run's rows share their time, written once per run.
pub fn measurements_of(rows: &[MeasurementRow]) -> Vec<StoredMeasurement> {
    let mut last: Option<(i64, String)> = None;
    rows.iter()
        .map(|row| {
            let at = match &last {
                Some((ms, text)) if *ms == row.created_at => text.clone(),
                _ => last.insert((row.created_at, timestamp(row.created_at))).1.clone(),
            };
            stored(row, at)
        })
        .collect()
}

/// The number alone, as a run carries it.
pub fn value_of(row: &MeasurementRow) -> Measurement {
    row.measurement()
}

fn slo_view(text: String) -> std::result::Result<SloView, domain::distributions::SloError> {
    let slo = Slo::parse(&text)?;
    Ok(SloView { description: slo.describe(), slo, text })
}

fn check_text(what: &str, text: Option<&str>, max: usize) -> Result<Option<String>> {
    let Some(text) = text.map(str::trim).filter(|t| !t.is_empty()) else { return Ok(None) };
    if text.chars().count() > max {
        return Err(ApiError::invalid(format!("The {what} is over {max} characters.")).into());
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

impl Metrics {
    pub fn new(store: Store, outputs: Outputs) -> Self {
        Self { store, outputs }
    }

    async fn existing(&self, investigation: &str) -> Result<()> {
        if crate::ids::is_investigation_id(investigation) && self.store.investigation(investigation).await?.is_some() {
            Ok(())
        } else {
            Err(crate::investigations::not_found(investigation).into())
        }
    }

    /// Fills calculator inputs linked to measurements (`tok_s_from`, `latency_from`)
    /// with their values, checking each is of this investigation and of a fitting unit.
    pub async fn link(&self, permit: &Permit<Edit>, body: StepBody) -> Result<StepBody> {
        let investigation = permit.investigation();
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

    async fn linked_value(&self, investigation: &str, from: &mut MeasuredFrom, wanted: Wanted) -> Result<f64> {
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

    /// Every measurement of the investigation (from its runs, and manual ones).
    pub async fn measurements(&self, permit: &Permit<Read>) -> Result<Vec<StoredMeasurement>> {
        let investigation = permit.investigation();
        self.existing(investigation).await?;
        let rows = self.store.measurements_of_investigation(investigation).await?;
        Ok(measurements_of(&rows))
    }

    pub async fn add(&self, permit: &Permit<Edit>, new: NewMeasurement) -> Result<StoredMeasurement> {
        let investigation = permit.investigation();
        self.existing(investigation).await?;
        let metric = super::found::slug(&new.metric);
        if metric.is_empty() || metric.len() > 80 {
            return Err(ApiError::invalid("Name the metric (letters, digits, `_`), e.g. output_throughput.").into());
        }
        if !new.value.is_finite() || new.stddev.is_some_and(|s| !s.is_finite() || s < 0.0) {
            let why = "The value (and stddev) must be finite numbers, the stddev not negative.";
            return Err(ApiError::invalid(why).into());
        }
        let unit = check_text("unit", Some(&new.unit), 20)?.unwrap_or_default();
        let note = check_text("note", new.note.as_deref(), 2_000)?;
        let label = check_text("label", new.label.as_deref(), 200)?;
        let m =
            Measurement { metric, value: new.value, unit, extractor: "manual".into(), stddev: new.stddev, key: None };
        let id = self.store.insert_manual_measurement(investigation, &m, note.as_deref(), label.as_deref()).await?;
        let rows = self.store.measurements_of_investigation(investigation).await?;
        rows.iter()
            .find(|r| r.id == id)
            .map(measurement_of)
            .ok_or_else(|| Error::bug(format!("manual measurement {id} is gone right after it was stored")))
    }

    pub async fn delete(&self, _: &Permit<Edit>, id: i64) -> Result<()> {
        if !self.store.delete_measurement(id).await? {
            return Err(ApiError::not_found(format!(
                "There is no manual measurement {id} (measurements from runs go with their run)."
            ))
            .into());
        }
        Ok(())
    }

    pub async fn extractors(&self, permit: &Permit<Read>) -> Result<Vec<ExtractorDef>> {
        let investigation = permit.investigation();
        self.existing(investigation).await?;
        let rows = self.store.extractors(investigation).await?;
        Ok(rows.into_iter().map(|r| ExtractorDef { name: r.name, pattern: r.pattern, unit: r.unit }).collect())
    }

    /// Adds the extractor and reads every finished run of the investigation again.
    pub async fn add_extractor(&self, permit: &Permit<Edit>, def: ExtractorDef) -> Result<ExtractorDef> {
        let investigation = permit.investigation();
        self.existing(investigation).await?;
        Extractor::new(&def.name, &def.pattern, &def.unit)?;
        let def = ExtractorDef { name: def.name.trim().into(), pattern: def.pattern, unit: def.unit.trim().into() };
        let added = self.store.insert_extractor(investigation, &def.name, &def.pattern, &def.unit).await?;
        if added.is_none() {
            return Err(ApiError::new(
                domain::error::ErrorCode::Conflict,
                format!("This investigation already has an extractor {:?}.", def.name),
            )
            .into());
        }
        self.reextract(investigation).await;
        Ok(def)
    }

    pub async fn remove_extractor(&self, permit: &Permit<Edit>, name: &str) -> Result<()> {
        let investigation = permit.investigation();
        if !self.store.delete_extractor(investigation, name).await? {
            return Err(ApiError::not_found(format!("There is no extractor {name:?} here.")).into());
        }
        self.reextract(investigation).await;
        Ok(())
    }

    pub async fn slo(&self, permit: &Permit<Read>) -> Result<Option<SloView>> {
        let investigation = permit.investigation();
        self.existing(investigation).await?;
        Ok(self.store.slo(investigation).await?.and_then(|text| slo_view(text).ok()))
    }

    /// Sets the SLO (checked first; an empty text removes it) and reads every
    /// finished run again for goodput and knee.
    pub async fn set_slo(&self, permit: &Permit<Edit>, input: SloInput) -> Result<Option<SloView>> {
        let investigation = permit.investigation();
        self.existing(investigation).await?;
        let text = input.text.trim();
        if text.chars().count() > 300 {
            return Err(ApiError::invalid("The SLO is over 300 characters.").into());
        }
        let view = if text.is_empty() { None } else { Some(slo_view(text.to_string()).map_err(ApiError::from)?) };
        self.store.set_slo(investigation, view.as_ref().map(|v| v.text.as_str()), &permit.actor().name).await?;
        self.reextract(investigation).await;
        Ok(view)
    }

    /// The guard bounds in effect for the investigation, and those it sets.
    pub async fn guard_bounds(&self, permit: &Permit<Read>) -> Result<domain::guards::GuardBounds> {
        let investigation = permit.investigation();
        self.existing(investigation).await?;
        let (bounds, set) = guard_bounds_of(&self.store, investigation).await?;
        Ok(domain::guards::GuardBounds { bounds, set })
    }

    /// Sets the bounds the investigation sets over the defaults (`{}`: none).
    pub async fn set_guard_bounds(
        &self,
        permit: &Permit<Edit>,
        set: domain::guards::BoundsInput,
    ) -> Result<domain::guards::GuardBounds> {
        let investigation = permit.investigation();
        self.existing(investigation).await?;
        let bounds = domain::guards::Bounds::with(&set).map_err(ApiError::invalid)?;
        let text =
            if set.is_empty() { None } else { Some(serde_json::to_string(&set).context("guard bounds as JSON")?) };
        self.store.set_guard_bounds(investigation, text.as_deref(), &permit.actor().name).await?;
        Ok(domain::guards::GuardBounds { bounds, set })
    }

    pub async fn derived(&self, permit: &Permit<Read>) -> Result<Vec<DerivedDef>> {
        let investigation = permit.investigation();
        self.existing(investigation).await?;
        super::record::derived_defs(&self.store, investigation).await
    }

    /// Adds the derived metric and computes it for every finished run.
    pub async fn add_derived(&self, permit: &Permit<Edit>, def: DerivedDef) -> Result<DerivedDef> {
        let investigation = permit.investigation();
        self.existing(investigation).await?;
        let def = DerivedDef { name: def.name.trim().into(), unit: def.unit.trim().into(), ..def };
        super::derived::check(&def)?;
        let constants = serde_json::to_string(&def.constants).context("a derived metric's constants as JSON")?;
        if !self.store.insert_derived(investigation, &def.name, &def.unit, &def.formula, &constants).await? {
            return Err(ApiError::new(
                domain::error::ErrorCode::Conflict,
                format!("This investigation already has a derived metric {:?}.", def.name),
            )
            .into());
        }
        self.reextract(investigation).await;
        Ok(def)
    }

    pub async fn remove_derived(&self, permit: &Permit<Edit>, name: &str) -> Result<()> {
        let investigation = permit.investigation();
        if !self.store.delete_derived(investigation, name).await? {
            return Err(ApiError::not_found(format!("There is no derived metric {name:?} here.")).into());
        }
        self.reextract(investigation).await;
        Ok(())
    }

    /// Every finished run's measurements again (after its definitions changed).
    async fn reextract(&self, investigation: &str) {
        let runs = self.store.runs_of_investigation(investigation).await.unwrap_or_default();
        for run in runs.iter().filter(|r| r.finished_at.is_some()) {
            if let Err(e) = super::record::for_run(&self.store, &self.outputs, investigation, run.id).await {
                tracing::error!(run = run.id, "cannot extract measurements: {e}");
            }
        }
    }
}

/// The guard bounds in effect for `investigation` (the defaults with what it
/// sets), and what it sets.
pub async fn guard_bounds_of(
    store: &Store,
    investigation: &str,
) -> Result<(domain::guards::Bounds, domain::guards::BoundsInput)> {
    let set: domain::guards::BoundsInput =
        crate::error::stored_opt(store.guard_bounds(investigation).await?.as_deref(), || {
            format!("investigation {investigation}'s guard bounds")
        })?
        .unwrap_or_default();
    let bounds = domain::guards::Bounds::with(&set)
        .map_err(|why| Error::bug(format!("investigation {investigation}'s stored guard bounds: {why}")))?;
    Ok((bounds, set))
}
