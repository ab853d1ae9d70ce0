//! Hypotheses: checking what people write, and computing each one's experiment
//! from the measurements of its runs.

mod apart;

/// What differs between two captures of a host's facts ("driver 570.1 → 580.2").
use crate::db::{HypothesisRow, MeasurementRow, RunRow, Store};
use crate::error::{Context, Result, stored};
use crate::markdown::to_safe_html;
use crate::metrics::stats;
use crate::policy::{Edit, Permit, Read};
use crate::time::timestamp;
use domain::distributions::PercentileComparison;
use domain::error::ApiError;
use domain::hypotheses::{
    Hypothesis, HypothesisInput, HypothesisStatus, RunGroup, VerdictChange, VerdictSeen, hypothesis_anchor,
};
use domain::metrics::Outcome;
use std::collections::{HashMap, HashSet};

const STATEMENT_CHARS: usize = 500;
const RATIONALE_CHARS: usize = 20_000;

fn not_found(id: i64) -> ApiError {
    ApiError::not_found(format!("There is no hypothesis {id}."))
}

/// A save that started from an older version: who changed it since, when, and
/// what it says now.
#[derive(Clone)]
pub struct Hypotheses {
    store: Store,
    /// Bootstrap comparisons and their CDF charts by the sample rows they were
    /// computed from: a page load redraws every hypothesis, and a bootstrap
    /// of a thousand runs' samples costs tens of ms (reading them, ~20 more).
    /// Rows are replaced (new ids) when a run is read again, so an entry
    /// never goes stale; the map is emptied when it grows past `CACHED`.
    bootstraps: std::sync::Arc<std::sync::Mutex<HashMap<String, Option<Sampled>>>>,
    /// Each hypothesis as a page last drew it, by what it was drawn from: its
    /// row's version and the investigation's run and measurement counters
    /// (`Store::data_versions`, read before the rows). Emptied past `CACHED`.
    views: std::sync::Arc<std::sync::Mutex<HashMap<i64, (ViewKey, Hypothesis)>>>,
}

/// A hypothesis row's version and update time, and the run and measurement
/// counters of its investigation.
type ViewKey = (i64, i64, (i64, i64));

/// A percentile comparison, its CDF chart (SVG) and the samples' unit.
type Sampled = (PercentileComparison, String, String);

const CACHED: usize = 128;
/// Most runs per side drawn as their own thin CDF line.
const THIN_LINES: usize = 12;

/// One side's sample rows: per run, the row of its first sampled key (the
/// unkeyed one when it has one).
fn per_run(rows: &[(i64, i64, Option<String>)], runs: &[i64]) -> Vec<(i64, i64)> {
    runs.iter()
        .filter_map(|run| {
            let mine = rows.iter().filter(|(_, r, _)| r == run);
            let row = mine.clone().find(|(_, _, key)| key.is_none()).or_else(|| mine.clone().next())?;
            Some((*run, row.0))
        })
        .collect()
}

/// Both sides' pooled samples as CDFs, with each run's own curve, thin, when
/// a side has a few: the run-to-run spread at a glance (a hundred would be a
/// grey smear, and page weight).
fn cdf_chart(metric: &str, unit: &str, b: &[Vec<f64>], t: &[Vec<f64>], p: f64) -> Result<String> {
    let pooled = |side: &[Vec<f64>]| {
        let mut all: Vec<f64> = side.iter().flatten().copied().collect();
        all.sort_by(f64::total_cmp);
        all
    };
    let (pb, pt) = (pooled(b), pooled(t));
    let mut lines = vec![
        crate::charts::CdfLine { label: "baseline", sorted: &pb, tone: 0, thin: false },
        crate::charts::CdfLine { label: "treatment", sorted: &pt, tone: 1, thin: false },
    ];
    for (side, tone) in [(b, 0), (t, 1)] {
        if (2..=THIN_LINES).contains(&side.len()) {
            lines.extend(side.iter().map(|s| crate::charts::CdfLine { label: "", sorted: s, tone, thin: true }));
        }
    }
    let axis = crate::charts::axis_for(&lines);
    Ok(crate::charts::cdf_on(metric, unit, &lines, Some(p), axis)?)
}

/// What a caller already read of an investigation: its runs, their
/// measurements, and the store's version of both.
type Known<'a> = (&'a [RunRow], &'a [MeasurementRow], (i64, i64));

fn stale(current: &HypothesisRow) -> ApiError {
    let then = format!(
        "It now reads: {:?} (status {}). Reload and apply your change again.",
        current.statement,
        current.status.as_str()
    );
    crate::error::stale_save(
        "hypothesis",
        current.updated_by.as_deref(),
        &timestamp(current.updated_at),
        current.version,
        &then,
    )
}

/// Applies `input` to `row` (a new one starts empty), checking every field.
fn apply(row: &mut HypothesisRow, input: HypothesisInput) -> Result<()> {
    if let Some(statement) = input.statement {
        let statement = statement.trim();
        if statement.is_empty() || statement.chars().count() > STATEMENT_CHARS {
            return Err(ApiError::invalid(format!("State the hypothesis in 1–{STATEMENT_CHARS} characters.")).into());
        }
        row.statement = statement.to_string();
    }
    if let Some(rationale) = input.rationale {
        if rationale.chars().count() > RATIONALE_CHARS {
            return Err(ApiError::invalid(format!("The rationale is over {RATIONALE_CHARS} characters.")).into());
        }
        row.rationale = rationale.trim().to_string();
    }
    if let Some(metric) = input.metric {
        row.metric = Some(domain::hypotheses::check_metric(&metric).map_err(ApiError::from)?);
    }
    if let Some(direction) = input.direction {
        row.direction = crate::db::Maybe(direction);
    }
    match input.expected_pct {
        None => {}
        Some(None) => row.expected_pct = None,
        Some(Some(pct)) if !pct.is_finite() || pct < 0.0 => {
            return Err(
                ApiError::invalid("The expected size is a percentage from 0 (its sign is the direction).").into()
            );
        }
        Some(pct) => row.expected_pct = pct,
    }
    if let Some(setting) = input.status {
        match setting.status() {
            Some(status) => (row.status, row.status_auto) = (status, 0),
            None => row.status_auto = 1,
        }
    }
    if let Some(group) = input.baseline {
        check_group("baseline", &group)?;
        row.baseline = serde_json::to_string(&group).context("a run group as JSON")?;
    }
    if let Some(group) = input.treatment {
        check_group("treatment", &group)?;
        row.treatment = serde_json::to_string(&group).context("a run group as JSON")?;
    }
    if let Some(evidence) = input.evidence {
        row.evidence = serde_json::to_string(&evidence).context("evidence as JSON")?;
    }
    Ok(())
}

/// An arm's window is two RFC 3339 times, the first before the second.
fn check_group(side: &str, group: &RunGroup) -> Result<()> {
    let Some(window) = &group.window else { return Ok(()) };
    let end = |name: &str, text: &Option<String>| -> Result<Option<i64>> {
        match text {
            None => Ok(None),
            Some(text) => crate::time::parse_timestamp(text).map(Some).ok_or_else(|| {
                ApiError::invalid(format!(
                    "The {side}'s window.{name} is not a time: {text:?} (RFC 3339, e.g. 2026-12-06T15:00:00Z)."
                ))
                .into()
            }),
        }
    };
    if let (Some(from), Some(to)) = (end("from", &window.from)?, end("to", &window.to)?)
        && from > to
    {
        return Err(ApiError::invalid(format!("The {side}'s window ends before it begins.")).into());
    }
    Ok(())
}

/// A status as the audit log says it: `supported` (set by a person), or
/// `open (auto)` (following the verdict).
fn status_said(row: &HypothesisRow) -> String {
    if row.status_auto == 1 { format!("{} (auto)", row.status.as_str()) } else { row.status.as_str().to_string() }
}

/// What an edit changed, for the audit log: `metric: — → output_throughput`.
fn changes(before: &HypothesisRow, after: &HypothesisRow) -> Vec<String> {
    let shown = |v: Option<&str>| v.filter(|v| !v.is_empty()).map_or_else(|| "—".to_string(), str::to_string);
    let pct = |p: Option<f64>| p.map(|p| format!("{p} %"));
    let fields: [(&str, Option<String>, Option<String>); 9] = [
        ("statement", Some(before.statement.clone()), Some(after.statement.clone())),
        ("rationale", Some(before.rationale.clone()), Some(after.rationale.clone())),
        ("metric", before.metric.clone(), after.metric.clone()),
        (
            "direction",
            before.direction.0.map(|d| d.as_str().to_string()),
            after.direction.0.map(|d| d.as_str().to_string()),
        ),
        ("expected", pct(before.expected_pct), pct(after.expected_pct)),
        ("status", Some(status_said(before)), Some(status_said(after))),
        ("baseline", Some(before.baseline.clone()), Some(after.baseline.clone())),
        ("treatment", Some(before.treatment.clone()), Some(after.treatment.clone())),
        ("evidence", Some(before.evidence.clone()), Some(after.evidence.clone())),
    ];
    fields
        .into_iter()
        .filter(|(_, old, new)| old != new)
        .map(|(name, old, new)| match name {
            // Long text: that it changed, not both versions.
            "statement" | "rationale" => format!("{name} changed"),
            _ => format!("{name}: {} → {}", shown(old.as_deref()), shown(new.as_deref())),
        })
        .collect()
}

/// The non-warm-up runs a group names, in this investigation, oldest first.
/// Which kernels changed between the groups, when both have profiles.
fn profile_diff(
    rows: &[MeasurementRow],
    wanted: &HashSet<i64>,
    baseline: &[i64],
    treatment: &[i64],
) -> Option<domain::profiles::ProfileDiff> {
    let (mut b, mut t) = (Vec::new(), Vec::new());
    for m in rows {
        let Some(run) = m.run_id.filter(|r| wanted.contains(r)) else { continue };
        let measured = domain::profiles::Measured { run, metric: &m.metric, key: m.key.as_deref(), value: m.value };
        if baseline.contains(&run) {
            b.push(measured);
        }
        if treatment.contains(&run) {
            t.push(measured);
        }
    }
    domain::profiles::diff(&b, &t)
}

/// The runs an arm uses, oldest first: those it names (one by one, by step,
/// by configuration, by launch), narrowed by its window and launch (runs named
/// one by one are always in), less warm-ups, runs left out, and a watch's runs
/// unless it asks for them.
fn resolve(group: &RunGroup, runs: &[RunRow]) -> Result<Vec<i64>> {
    let mut configs: HashMap<i64, domain::sweeps::Config> = HashMap::new();
    if !group.configs.is_empty() {
        for r in runs {
            let what = || format!("run {}'s configuration", r.id);
            if let Some(config) = crate::error::stored_opt(r.config.as_deref(), what)? {
                configs.insert(r.id, config);
            }
        }
    }
    let picked = |r: &RunRow| {
        group.configs.iter().any(|pick| {
            pick.step == r.step_id
                && configs.get(&r.id).is_some_and(|config| domain::sweeps::matches(config, &pick.config))
        })
    };
    let by_launch_alone = group.steps.is_empty() && group.configs.is_empty();
    let named = |r: &RunRow| {
        group.steps.contains(&r.step_id)
            || picked(r)
            || (by_launch_alone && group.launch.is_some_and(|l| r.launch == Some(l)))
    };
    let window = group.window.as_ref().map(|w| {
        let end = |t: &Option<String>| t.as_deref().and_then(crate::time::parse_timestamp);
        (end(&w.from), end(&w.to))
    });
    let within = |r: &RunRow| match window {
        None => true,
        Some((from, to)) => r.started_at.is_some_and(|at| from.is_none_or(|f| at >= f) && to.is_none_or(|t| at <= t)),
    };
    let of_launch = |r: &RunRow| group.launch.is_none_or(|l| r.launch == Some(l));
    let origin_ok = |r: &RunRow| group.include_watch_runs || r.origin != domain::runs::OriginKind::Watch;
    Ok(runs
        .iter()
        .filter(|r| r.warmup == 0 && !group.exclude.contains(&r.id))
        .filter(|r| group.runs.contains(&r.id) || (named(r) && within(r) && of_launch(r) && origin_ok(r)))
        .map(|r| r.id)
        .collect())
}

/// The guards over the runs the arms used, each arm split by configuration
/// (step and matrix values); none until both arms have runs.
fn guards(
    rows: &[MeasurementRow],
    wanted: &HashSet<i64>,
    runs: &[RunRow],
    (b_runs, t_runs): (&[i64], &[i64]),
    value_of: &HashMap<i64, f64>,
    bounds: &domain::guards::Bounds,
    (collective, hosts): (&HashSet<i64>, &HashMap<i64, domain::guards::Links>),
) -> Result<Vec<domain::guards::Guard>> {
    if b_runs.is_empty() || t_runs.is_empty() {
        return Ok(Vec::new());
    }
    let mut measured: HashMap<i64, Vec<domain::metrics::Measurement>> = HashMap::new();
    for m in rows {
        if let Some(run) = m.run_id.filter(|r| wanted.contains(r)) {
            measured.entry(run).or_default().push(crate::metrics::value_of(m));
        }
    }
    let by_id: HashMap<i64, &RunRow> = runs.iter().map(|r| (r.id, r)).collect();
    let mut servers: HashMap<i64, Option<i64>> = HashMap::new();
    for id in b_runs.iter().chain(t_runs) {
        let server = match by_id.get(id).and_then(|r| r.server.as_deref()) {
            Some(text) => {
                let state: domain::runs::ServerState = stored(text, || format!("run {id}'s server"))?;
                Some(state.started_by(*id))
            }
            None => None,
        };
        servers.insert(*id, server);
    }
    let empty = Vec::new();
    let arm = |ids: &[i64]| {
        let mut configs: std::collections::BTreeMap<(i64, Option<&str>), Vec<domain::guards::RunFacts<'_>>> =
            Default::default();
        for id in ids {
            let Some(row) = by_id.get(id) else { continue };
            configs.entry((row.step_id, row.config.as_deref())).or_default().push(domain::guards::RunFacts {
                id: *id,
                measurements: measured.get(id).unwrap_or(&empty),
                value: value_of.get(id).copied(),
                server: servers.get(id).copied().flatten(),
                warmup: row.warmup != 0,
                collective: collective.contains(id),
                host: row.facts_id.and_then(|f| hosts.get(&f)),
            });
        }
        configs.into_values().collect::<Vec<_>>()
    };
    Ok(domain::guards::of_arms(&arm(b_runs), &arm(t_runs), bounds))
}

/// The verdict's own word, as reports and the page print it.
fn verdict_word(outcome: Option<Outcome>, as_expected: Option<bool>) -> Option<String> {
    let word = match (outcome?, as_expected) {
        (_, Some(true)) => "as expected",
        (_, Some(false)) => "opposite of expected",
        (Outcome::Increase, None) => "an increase",
        (Outcome::Decrease, None) => "a decrease",
        (Outcome::WithinNoise, _) => "within noise",
        (Outcome::NoiseUnknown, _) => "noise unknown",
    };
    Some(word.to_string())
}

/// The verdict as shown now, for keeping.
fn seen(h: &Hypothesis, at: i64) -> VerdictSeen {
    let (outcome, verdict) = domain::replays::outcome(h);
    let delta_pct = h.distribution.as_ref().map(|d| d.delta_pct).or(h.comparison.as_ref().map(|c| c.delta_pct));
    VerdictSeen {
        delta_pct,
        outcome,
        verdict,
        baseline_runs: h.baseline_values.iter().map(|(r, _)| *r).collect(),
        treatment_runs: h.treatment_values.iter().map(|(r, _)| *r).collect(),
        at: timestamp(at),
    }
}

fn seen_of_row(row: &crate::db::VerdictRow) -> Result<VerdictSeen> {
    let runs = |text: &str| -> Result<Vec<i64>> { crate::error::stored(text, || format!("verdict {}'s runs", row.id)) };
    Ok(VerdictSeen {
        delta_pct: row.delta_pct,
        outcome: row.outcome.as_deref().map(str::parse).transpose().context("a kept verdict's outcome")?,
        verdict: row.verdict.clone(),
        baseline_runs: runs(&row.baseline_runs)?,
        treatment_runs: runs(&row.treatment_runs)?,
        at: timestamp(row.at),
    })
}

impl Hypotheses {
    pub fn new(store: Store) -> Self {
        Self { store, bootstraps: Default::default(), views: Default::default() }
    }

    /// A percentile of a sampled metric compared between the sides, and its
    /// CDF chart; none when either side has no samples of it.
    async fn distribution(
        &self,
        base: &str,
        p: f64,
        b_runs: &[i64],
        t_runs: &[i64],
    ) -> Result<Option<(PercentileComparison, String, String)>> {
        let ids: Vec<i64> = b_runs.iter().chain(t_runs).copied().collect();
        let heads = self.store.sample_rows_of_runs(&ids, base).await?;
        let (b, t) = (per_run(&heads, b_runs), per_run(&heads, t_runs));
        if b.is_empty() || t.is_empty() {
            return Ok(None);
        }
        let row_ids = |side: &[(i64, i64)]| side.iter().map(|(_, id)| id.to_string()).collect::<Vec<_>>().join(",");
        let key = format!("{base}|{p}|{}|{}", row_ids(&b), row_ids(&t));
        if let Some(cached) = self.bootstraps.lock().ok().and_then(|cache| cache.get(&key).cloned()) {
            return Ok(cached);
        }
        let rows = self.store.samples_of_runs(&ids, base).await?;
        let values = |side: &[(i64, i64)]| -> Vec<Vec<f64>> {
            side.iter().filter_map(|(_, id)| rows.iter().find(|r| r.id == *id)).map(|r| r.values()).collect()
        };
        let (bv, tv) = (values(&b), values(&t));
        let unit = rows.first().map(|r| r.unit.clone()).unwrap_or_default();
        let (bv, tv, comparison) = tokio::task::spawn_blocking(move || {
            let c = domain::distributions::compare_percentile(&bv, &tv, p);
            (bv, tv, c)
        })
        .await
        .context("bootstrapping a percentile")?;
        let sampled = match comparison {
            Some(comparison) => Some((comparison, cdf_chart(base, &unit, &bv, &tv, p)?, unit)),
            None => None,
        };
        if let Ok(mut cache) = self.bootstraps.lock() {
            if cache.len() >= CACHED {
                cache.clear();
            }
            cache.insert(key, sampled.clone());
        }
        Ok(sampled)
    }

    /// How the measured runs of each side ran (host, facts, command, env).
    async fn provenance<'a>(
        &self,
        baseline: &[(i64, f64)],
        treatment: &[(i64, f64)],
        runs: &'a [RunRow],
    ) -> Result<Option<domain::hypotheses::Provenance>> {
        let by_id: HashMap<i64, &'a RunRow> = runs.iter().map(|r| (r.id, r)).collect();
        let rows = |values: &[(i64, f64)]| -> Vec<&'a RunRow> {
            values.iter().filter_map(|(id, _)| by_id.get(id).copied()).collect()
        };
        let (b, t) = (rows(baseline), rows(treatment));
        let mut facts: HashMap<i64, domain::hosts::HostFacts> = HashMap::new();
        for id in b.iter().chain(&t).filter_map(|r| r.facts_id) {
            if let std::collections::hash_map::Entry::Vacant(slot) = facts.entry(id)
                && let Some(row) = self.store.facts(id).await?
            {
                slot.insert(crate::facts::of_row(row)?);
            }
        }
        let facts = &facts;
        let context = |rows: Vec<&'a RunRow>| -> Result<Vec<apart::RunContext<'_>>> {
            rows.into_iter()
                .map(|r| {
                    Ok(apart::RunContext {
                        host: &r.host,
                        command: &r.command,
                        env: crate::error::stored(&r.env, || format!("run {}'s environment", r.id))?,
                        facts: r.facts_id.and_then(|id| facts.get(&id)),
                    })
                })
                .collect()
        };
        Ok(apart::between_arms(&context(b)?, &context(t)?))
    }

    /// `runs`: the investigation's runs (loaded once for all its hypotheses).
    /// `known`: the investigation's measurements, when the caller has them.
    async fn view(&self, row: HypothesisRow, runs: &[RunRow], known: Option<&[MeasurementRow]>) -> Result<Hypothesis> {
        let baseline: RunGroup = stored(&row.baseline, || format!("hypothesis {}'s baseline arm", row.id))?;
        let treatment: RunGroup = stored(&row.treatment, || format!("hypothesis {}'s treatment arm", row.id))?;
        let (mut b_runs, mut t_runs) = (resolve(&baseline, runs)?, resolve(&treatment, runs)?);
        let (left_out, patches) = self.patched(&row.investigation_id, &mut b_runs, &mut t_runs).await?;
        let mut value_of: HashMap<i64, f64> = HashMap::new();
        let mut unit = None;
        // The metrics the groups' runs have, for a "did you mean" when none has this one.
        let mut measured: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
        let ids: Vec<i64> = b_runs.iter().chain(&t_runs).copied().collect();
        let fetched;
        let rows: &[MeasurementRow] = match known {
            Some(rows) => rows,
            None => {
                fetched = self.store.measurements_of_runs(&ids).await?;
                &fetched
            }
        };
        let wanted: HashSet<i64> = ids.iter().copied().collect();
        if let Some(metric) = &row.metric {
            for m in rows.iter().filter(|m| &m.metric == metric) {
                // One value per run: the first the output gave (tools print a summary once).
                if let Some(run) = m.run_id.filter(|r| wanted.contains(r)) {
                    value_of.entry(run).or_insert(m.value);
                    unit.get_or_insert_with(|| m.unit.clone());
                }
            }
            // Read only when it is needed: no run had the metric.
            if value_of.is_empty() {
                measured = rows
                    .iter()
                    .filter(|m| m.run_id.is_some_and(|r| wanted.contains(&r)))
                    .map(|m| m.metric.as_str())
                    .collect();
            }
        }
        let values = |ids: &[i64]| ids.iter().filter_map(|id| value_of.get(id).map(|v| (*id, *v))).collect::<Vec<_>>();
        let (baseline_values, treatment_values) = (values(&b_runs), values(&t_runs));
        let only = |v: &[(i64, f64)]| v.iter().map(|(_, x)| *x).collect::<Vec<_>>();
        let comparison = stats::compare(&only(&baseline_values), &only(&treatment_values));
        let sampled = match row.metric.as_deref().and_then(domain::distributions::percentile_metric) {
            Some((base, p)) => self.distribution(base, p, &b_runs, &t_runs).await?,
            None => None,
        };
        let (distribution, cdf_svg) = match sampled {
            Some((c, svg, sample_unit)) => {
                unit.get_or_insert(sample_unit);
                (Some(c), Some(svg))
            }
            None => (None, None),
        };
        let ids = |values: &[(i64, f64)]| values.iter().map(|(run, _)| Some(*run)).collect::<Vec<_>>();
        let (chart_svg, chart_points) = match (&row.metric, &comparison, cdf_svg) {
            (_, _, Some(svg)) => (Some(svg), Vec::new()),
            (Some(metric), Some(c), None) => {
                let runs = [ids(&baseline_values), ids(&treatment_values)];
                crate::charts::experiment(metric, unit.as_deref().unwrap_or(""), c, runs)
                    .inspect_err(|e| tracing::error!(hypothesis = row.id, "chart: {e}"))
                    .map_or((None, Vec::new()), |(svg, points)| (Some(svg), points))
            }
            _ => (None, Vec::new()),
        };
        let metric_note = match (&row.metric, &distribution) {
            (Some(metric), None) if value_of.is_empty() && !measured.is_empty() => {
                let known: Vec<&str> = measured.iter().copied().collect();
                Some(match domain::hypotheses::did_you_mean(metric, &known) {
                    Some(near) => format!("No run of these groups measured {metric}; did you mean {near}?"),
                    None => format!("No run of these groups measured {metric}."),
                })
            }
            _ => None,
        };
        let provenance = self.provenance(&baseline_values, &treatment_values, runs).await?;
        let profile_diff = profile_diff(rows, &wanted, &b_runs, &t_runs);
        let outcome = distribution.as_ref().map(|d| d.outcome).or(comparison.as_ref().map(|c| c.outcome));
        let direction = row.direction.0;
        let as_expected = match (direction, outcome) {
            (Some(d), Some(o @ (Outcome::Increase | Outcome::Decrease))) => Some(d.went(o)),
            _ => None,
        };
        let (bounds, _) = crate::metrics::guard_bounds_of(&self.store, &row.investigation_id).await?;
        // The used runs that are collective-bound, and their host facts (the
        // only ones the topology guard reads).
        let mut collective = HashSet::new();
        let mut facts = Vec::new();
        for r in runs.iter().filter(|r| wanted.contains(&r.id)) {
            let env: Vec<(String, String)> = stored(&r.env, || format!("run {}'s environment", r.id))?;
            if domain::guards::collective(&r.command, &env) {
                collective.insert(r.id);
                facts.extend(r.facts_id);
            }
        }
        let hosts = crate::facts::links_by_ids(&self.store, facts).await?;
        let guards = guards(rows, &wanted, runs, (&b_runs, &t_runs), &value_of, &bounds, (&collective, &hosts))?;
        let trusted = domain::guards::trusted(&guards);
        let hazards = domain::guards::hazards(&guards);
        let verdict_word = verdict_word(outcome, as_expected);
        let status_set = row.status_auto == 0;
        let status = if status_set { row.status } else { HypothesisStatus::of_verdict(direction, outcome) };
        Ok(Hypothesis {
            url: format!("{}#{}", domain::model::investigation_url(&row.investigation_id), hypothesis_anchor(row.id)),
            rationale_html: to_safe_html(&row.rationale),
            evidence: stored(&row.evidence, || format!("hypothesis {}'s evidence", row.id))?,
            id: row.id,
            investigation_id: row.investigation_id,
            statement: row.statement,
            rationale: row.rationale,
            metric: row.metric,
            direction,
            expected_pct: row.expected_pct,
            status,
            status_set,
            baseline,
            treatment,
            baseline_values,
            treatment_values,
            comparison,
            distribution,
            as_expected,
            verdict_word,
            verdict_change: None,
            unit,
            chart_svg,
            chart_points,
            metric_note,
            provenance,
            profile_diff,
            left_out,
            patches,
            guards,
            trusted,
            hazards,
            created_at: timestamp(row.created_at),
            updated_at: timestamp(row.updated_at),
            version: row.version,
            updated_by: row.updated_by,
        })
    }

    /// The patches the arms' runs ran with, and the runs left out because
    /// their patch was not applied or an expectation of it failed (taken out
    /// of `b_runs` and `t_runs` here).
    async fn patched(
        &self,
        investigation: &str,
        b_runs: &mut Vec<i64>,
        t_runs: &mut Vec<i64>,
    ) -> Result<(Vec<domain::hypotheses::LeftOut>, Vec<domain::hypotheses::PatchSummary>)> {
        let ids: Vec<i64> = b_runs.iter().chain(t_runs.iter()).copied().collect();
        let rows = self.store.run_patches_of(&ids).await?;
        if rows.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let mut left_out = Vec::new();
        let mut arms: std::collections::BTreeMap<i64, std::collections::BTreeSet<&str>> = Default::default();
        for row in &rows {
            let patch = crate::patches::arm::shown(row)?;
            if let Some(why) = patch.unfit() {
                left_out.push(domain::hypotheses::LeftOut { run: row.run_id, why });
                continue;
            }
            let arm = if b_runs.contains(&row.run_id) { "baseline" } else { "treatment" };
            arms.entry(row.patch_step).or_default().insert(arm);
        }
        b_runs.retain(|r| !left_out.iter().any(|l| l.run == *r));
        t_runs.retain(|r| !left_out.iter().any(|l| l.run == *r));
        let mut patches = Vec::new();
        for (step, arms) in arms {
            let Some(row) = self.store.step(step).await? else { continue };
            let body = crate::steps::from_stored(row.kind, &row.body)
                .map_err(|e| crate::error::Error::unreadable(format!("step {step}'s body"), e))?;
            let domain::steps::StepBody::Patch(patch) = body else { continue };
            let (added, removed) = patch.counts();
            patches.push(domain::hypotheses::PatchSummary {
                step,
                arms: arms.into_iter().collect::<Vec<_>>().join(", "),
                files: patch.files.iter().map(|f| f.path.clone()).collect(),
                added,
                removed,
                url: domain::model::step_url(investigation, step),
            });
        }
        Ok((left_out, patches))
    }

    /// Evidence names steps of the hypothesis's own investigation, each once.
    async fn check_evidence(&self, row: &mut HypothesisRow) -> Result<()> {
        let mut evidence: Vec<i64> =
            crate::error::stored(&row.evidence, || format!("hypothesis {}'s evidence", row.id))?;
        let steps = self.store.steps(&row.investigation_id).await?;
        if let Some(stranger) = evidence.iter().find(|id| !steps.iter().any(|s| s.id == **id)) {
            return Err(ApiError::invalid(format!("Step {stranger} is not a step of this investigation.")).into());
        }
        let mut seen = std::collections::HashSet::new();
        evidence.retain(|id| seen.insert(*id));
        row.evidence = serde_json::to_string(&evidence).context("evidence as JSON")?;
        Ok(())
    }

    /// The investigation's hypotheses, each with its experiment computed.
    /// `known`: the investigation's runs and measurements, when the caller
    /// has read them (a thousand runs' rows take tens of ms to read again),
    /// and the counters it read before them (`Store::data_versions`): each
    /// view is kept under those and its row's version.
    pub async fn list(&self, permit: &Permit<Read>, known: Option<Known<'_>>) -> Result<Vec<Hypothesis>> {
        let investigation = permit.investigation();
        if self.store.investigation(investigation).await?.is_none() {
            return Err(crate::investigations::not_found(investigation).into());
        }
        let rows = self.store.hypotheses(investigation).await?;
        let read;
        let runs = match known {
            Some((runs, ..)) => runs,
            None => {
                read = self.store.runs_of_investigation(investigation).await?;
                &read
            }
        };
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let key = known.map(|k| (row.version, row.updated_at, k.2));
            let id = row.id;
            let kept = key.and_then(|key| {
                let views = self.views.lock().ok()?;
                views.get(&id).filter(|(k, _)| *k == key).map(|(_, view)| view.clone())
            });
            if let Some(view) = kept {
                out.push(view);
                continue;
            }
            let view = self.view(row, runs, known.map(|k| k.1)).await?;
            if let (Some(key), Ok(mut views)) = (key, self.views.lock()) {
                if views.len() >= CACHED {
                    views.clear();
                }
                views.insert(id, (key, view.clone()));
            }
            out.push(view);
        }
        self.keep_verdicts(investigation, &mut out).await;
        Ok(out)
    }

    /// Each verdict against the one kept before it: when the runs under it
    /// changed, the new one is kept and the change shown (`verdict_change`);
    /// a status that follows the verdict is kept current in the row (search,
    /// lists). Best effort: reading a page never fails for want of a write.
    async fn keep_verdicts(&self, investigation: &str, views: &mut [Hypothesis]) {
        let kept = match self.store.recent_verdicts(investigation).await {
            Ok(kept) => kept,
            Err(e) => {
                tracing::warn!(investigation, "cannot read kept verdicts: {e}");
                return;
            }
        };
        let now = crate::time::now_ms();
        for h in views.iter_mut() {
            let mine: Vec<&crate::db::VerdictRow> = kept.iter().filter(|v| v.hypothesis_id == h.id).collect();
            let seen_now = seen(h, now);
            let latest = match mine.first().map(|row| seen_of_row(row)).transpose() {
                Ok(latest) => latest,
                Err(e) => {
                    tracing::error!(hypothesis = h.id, "a kept verdict is unreadable: {e}");
                    continue;
                }
            };
            let unchanged = latest.as_ref().is_some_and(|l| {
                l.baseline_runs == seen_now.baseline_runs && l.treatment_runs == seen_now.treatment_runs
            });
            if unchanged {
                let earlier = mine.get(1).and_then(|row| seen_of_row(row).ok());
                h.verdict_change = earlier.zip(latest).and_then(|(was, now)| VerdictChange::between(was, now));
            } else if seen_now.runs() > 0 || latest.is_some() {
                let row = crate::db::VerdictRow {
                    id: 0,
                    hypothesis_id: h.id,
                    at: now,
                    baseline_runs: serde_json::json!(seen_now.baseline_runs).to_string(),
                    treatment_runs: serde_json::json!(seen_now.treatment_runs).to_string(),
                    delta_pct: seen_now.delta_pct,
                    outcome: seen_now.outcome.map(|o| o.as_str().to_string()),
                    verdict: seen_now.verdict.clone(),
                };
                if let Err(e) = self.store.insert_verdict(&row).await {
                    tracing::warn!(hypothesis = h.id, "cannot keep a verdict: {e}");
                }
                h.verdict_change = latest.and_then(|was| VerdictChange::between(was, seen_now));
            }
            if !h.status_set
                && let Err(e) = self.store.follow_verdict(h.id, h.status).await
            {
                tracing::warn!(hypothesis = h.id, "cannot keep its status: {e}");
            }
        }
    }

    /// The hypothesis, if it is of the permit's investigation.
    async fn row(&self, permit: &Permit<impl crate::policy::Right>, id: i64) -> Result<HypothesisRow> {
        let row = self.store.hypothesis(id).await?.filter(|r| r.investigation_id == permit.investigation());
        Ok(row.ok_or_else(|| not_found(id))?)
    }

    pub async fn get(&self, permit: &Permit<Read>, id: i64) -> Result<Hypothesis> {
        let row = self.row(permit, id).await?;
        let runs = self.store.runs_of_investigation(&row.investigation_id).await?;
        let mut view = [self.view(row, &runs, None).await?];
        self.keep_verdicts(permit.investigation(), &mut view).await;
        let [view] = view;
        Ok(view)
    }

    pub async fn add(&self, permit: &Permit<Edit>, input: HypothesisInput) -> Result<Hypothesis> {
        let investigation = permit.investigation();
        if self.store.investigation(investigation).await?.is_none() {
            return Err(crate::investigations::not_found(investigation).into());
        }
        if input.statement.as_deref().is_none_or(|s| s.trim().is_empty()) {
            return Err(ApiError::invalid("State the hypothesis (`statement`).").into());
        }
        let mut row = HypothesisRow {
            id: 0,
            investigation_id: investigation.to_string(),
            statement: String::new(),
            rationale: String::new(),
            metric: None,
            direction: crate::db::Maybe(None),
            expected_pct: None,
            status: HypothesisStatus::Open,
            status_auto: 1,
            baseline: r#"{"runs":[],"steps":[]}"#.into(),
            treatment: r#"{"runs":[],"steps":[]}"#.into(),
            evidence: "[]".into(),
            created_at: 0,
            updated_at: 0,
            version: 1,
            updated_by: None,
        };
        apply(&mut row, input)?;
        self.check_evidence(&mut row).await?;
        let id = self.store.insert_hypothesis(&row).await?;
        self.get(&permit.read(), id).await
    }

    /// Changes the fields `input` has; with `version`, only if it is still that one.
    pub async fn update(&self, permit: &Permit<Edit>, id: i64, input: HypothesisInput) -> Result<Hypothesis> {
        let mut row = self.row(permit, id).await?;
        let expected = input.version;
        if expected.is_some_and(|v| v != row.version) {
            return Err(stale(&row).into());
        }
        let before = row.clone();
        apply(&mut row, input)?;
        self.check_evidence(&mut row).await?;
        // Compare-and-swap: a save between the read above and this write is caught too.
        if !self.store.update_hypothesis(&row, &permit.actor().name, expected).await? {
            let current = self.store.hypothesis(id).await?.ok_or_else(|| not_found(id))?;
            return Err(stale(&current).into());
        }
        let changes = changes(&before, &row);
        if !changes.is_empty() {
            // Its history: who changed what, in the audit log.
            let entry = crate::db::NewAudit {
                who: permit.actor().name.clone(),
                action: "hypothesis.edit",
                host: None,
                target: format!("hypothesis {id} of {}", row.investigation_id),
                env: None,
                outcome: Some(changes.join("; ")),
                run_id: None,
            };
            crate::audit::record(&self.store, entry).await;
        }
        self.get(&permit.read(), id).await
    }

    pub async fn delete(&self, permit: &Permit<Edit>, id: i64) -> Result<()> {
        self.row(permit, id).await?;
        if !self.store.delete_hypothesis(id).await? {
            return Err(not_found(id).into());
        }
        Ok(())
    }
}
