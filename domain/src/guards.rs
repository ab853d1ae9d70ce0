//! Guards: named checks of a run, and of the runs a hypothesis compares,
//! against the hazards that make a serving benchmark wrong the same way every
//! time — which a confidence interval over repeats does not catch (a warm
//! prefix cache, spec-decode acceptance that drifted, a queue that grew, the
//! first run after a start, regimes across restarts).
//!
//! Each guard reads only what Sleuth stored of the runs (their measurements,
//! which servers they ran on) and says `ok`, `warn`, `fail` or `unknown` with
//! its evidence and a sentence. A guard whose signal is missing is `unknown`
//! with the reason, never `ok`.

use crate::metrics::Measurement;
use crate::telemetry::ClockReasons;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum GuardName {
    PrefixCacheWarm,
    SpecAcceptanceDrift,
    Oversaturated,
    ClientSaturated,
    GpuContended,
    FirstAfterStart,
    RestartRegimes,
    Topology,
}

impl GuardName {
    pub const ALL: [GuardName; 8] = [
        Self::PrefixCacheWarm,
        Self::SpecAcceptanceDrift,
        Self::Oversaturated,
        Self::ClientSaturated,
        Self::GpuContended,
        Self::FirstAfterStart,
        Self::RestartRegimes,
        Self::Topology,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::PrefixCacheWarm => "prefix_cache_warm",
            Self::SpecAcceptanceDrift => "spec_acceptance_drift",
            Self::Oversaturated => "oversaturated",
            Self::ClientSaturated => "client_saturated",
            Self::GpuContended => "gpu_contended",
            Self::FirstAfterStart => "first_after_start",
            Self::RestartRegimes => "restart_regimes",
            Self::Topology => "topology",
        }
    }
}

/// Ordered from least to most to worry about: a list's worst is its max.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Level {
    Ok,
    Unknown,
    Warn,
    Fail,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Unknown => "unknown",
            Self::Warn => "warn",
            Self::Fail => "fail",
        }
    }
}

/// A number a guard judged by.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Evidence {
    /// What it is: `prefix_cache_hit_pct`, `treatment mean`, `run 12`.
    pub label: String,
    pub value: f64,
    pub unit: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Guard {
    pub name: GuardName,
    pub level: Level,
    /// What it found, as a person reads it.
    pub text: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<Evidence>,
    /// The runs it is about (those flagged, or compared).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<i64>,
}

impl Guard {
    fn new(name: GuardName, level: Level, text: impl Into<String>) -> Self {
        Self { name, level, text: text.into(), evidence: Vec::new(), runs: Vec::new() }
    }

    fn with(mut self, label: impl Into<String>, value: f64, unit: &str) -> Self {
        self.evidence.push(Evidence { label: label.into(), value, unit: unit.into() });
        self
    }
}

/// Where a guard starts to worry. The defaults and why are in docs/api.md
/// ("Guards").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Bounds {
    /// Prefix-cache hits (% of prompt tokens) in a run that warn: a "random"
    /// dataset should hit next to nothing (vLLM #52884).
    pub prefix_hit_warn_pct: f64,
    /// … and that fail: the run measured the cache.
    pub prefix_hit_fail_pct: f64,
    /// Points by which two compared arms' mean hit shares may differ.
    pub prefix_arms_pct: f64,
    /// Points by which spec-decode acceptance may differ between compared
    /// arms, or a run from its configuration (vLLM #53436: 19.65 % of throughput).
    pub spec_drift_pct: f64,
    /// Requests by which the queue's mean over the run's last third may
    /// exceed its first third's: a queue that grows measures itself.
    pub waiting_growth: f64,
    /// How much longer than its schedule a run at an asked rate may take
    /// (its requests at the rate, plus one request's latency to drain).
    pub duration_stretch: f64,
    /// The share below the rate asked a client's sends may fall (at least;
    /// more for few requests, whose Poisson spacing spreads by 1/√n).
    pub send_shortfall: f64,
    /// How far (in its configuration's standard deviations, and at least
    /// `min_shift_pct` % of its mean) a first run after a start may sit.
    pub first_run_sigmas: f64,
    pub min_shift_pct: f64,
    /// How wide a gap between two clusters of a configuration's runs, in
    /// their pooled standard deviations, makes them regimes.
    pub regime_gap_sigmas: f64,
    /// The share (%) of a run's GPU readings whose clocks were held below
    /// their highest by heat, a hardware slowdown or a setting that warns —
    /// and by which two compared arms' shares (the power cap's too) may differ.
    #[serde(default = "default_clock_held_pct")]
    pub clock_held_pct: f64,
    /// The share (%) of a run's CPU readings in which a process of its
    /// client used 90 % of a core or more that warns: a generator pinned at a
    /// core for half the run sets its pace.
    #[serde(default = "default_client_busy_pct")]
    pub client_busy_pct: f64,
}

fn default_clock_held_pct() -> f64 {
    10.0
}

fn default_client_busy_pct() -> f64 {
    50.0
}

/// The bounds an investigation sets over the defaults
/// (`PUT /api/v1/investigations/{id}/guards`): each one given, or left to
/// its default. `{}` goes back to the defaults.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct BoundsInput {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_hit_warn_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_hit_fail_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_arms_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_drift_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_growth: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_stretch: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_shortfall: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_run_sigmas: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_shift_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regime_gap_sigmas: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_held_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_busy_pct: Option<f64>,
}

impl BoundsInput {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// An investigation's guard bounds: those in effect, and those it sets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct GuardBounds {
    pub bounds: Bounds,
    pub set: BoundsInput,
}

impl Bounds {
    /// The defaults with what `input` sets; `Err` says which bound is not a
    /// number it can be (each is positive; a share is at most 100 %, or 1 as a fraction).
    pub fn with(input: &BoundsInput) -> Result<Bounds, String> {
        let mut b = Bounds::default();
        let fields: [(&str, Option<f64>, &mut f64, f64); 12] = [
            ("prefix_hit_warn_pct", input.prefix_hit_warn_pct, &mut b.prefix_hit_warn_pct, 100.0),
            ("prefix_hit_fail_pct", input.prefix_hit_fail_pct, &mut b.prefix_hit_fail_pct, 100.0),
            ("prefix_arms_pct", input.prefix_arms_pct, &mut b.prefix_arms_pct, 100.0),
            ("spec_drift_pct", input.spec_drift_pct, &mut b.spec_drift_pct, 100.0),
            ("waiting_growth", input.waiting_growth, &mut b.waiting_growth, f64::MAX),
            ("duration_stretch", input.duration_stretch, &mut b.duration_stretch, f64::MAX),
            ("send_shortfall", input.send_shortfall, &mut b.send_shortfall, 1.0),
            ("first_run_sigmas", input.first_run_sigmas, &mut b.first_run_sigmas, f64::MAX),
            ("min_shift_pct", input.min_shift_pct, &mut b.min_shift_pct, 100.0),
            ("regime_gap_sigmas", input.regime_gap_sigmas, &mut b.regime_gap_sigmas, f64::MAX),
            ("clock_held_pct", input.clock_held_pct, &mut b.clock_held_pct, 100.0),
            ("client_busy_pct", input.client_busy_pct, &mut b.client_busy_pct, 100.0),
        ];
        for (name, given, field, most) in fields {
            if let Some(value) = given {
                if !value.is_finite() || value <= 0.0 || value > most {
                    return Err(format!("The bound {name} must be a number above 0 and at most {most}, not {value}."));
                }
                *field = value;
            }
        }
        if b.prefix_hit_fail_pct < b.prefix_hit_warn_pct {
            return Err(format!(
                "prefix_hit_fail_pct ({}) must be at least prefix_hit_warn_pct ({}).",
                b.prefix_hit_fail_pct, b.prefix_hit_warn_pct
            ));
        }
        if b.duration_stretch <= 1.0 {
            return Err("duration_stretch is a ratio above 1 (a run that took its schedule is 1).".into());
        }
        Ok(b)
    }
}

impl Default for Bounds {
    fn default() -> Self {
        Self {
            prefix_hit_warn_pct: 5.0,
            prefix_hit_fail_pct: 25.0,
            prefix_arms_pct: 10.0,
            spec_drift_pct: 5.0,
            waiting_growth: 2.0,
            duration_stretch: 1.25,
            send_shortfall: 0.1,
            first_run_sigmas: 3.0,
            min_shift_pct: 5.0,
            regime_gap_sigmas: 4.0,
            clock_held_pct: default_clock_held_pct(),
            client_busy_pct: default_client_busy_pct(),
        }
    }
}

/// What the guards read of one run.
#[derive(Clone, Debug, Default)]
pub struct RunFacts<'a> {
    pub id: i64,
    pub measurements: &'a [Measurement],
    /// The metric judged for first-after-start and regimes (a hypothesis's,
    /// or the step's headline) in this run.
    pub value: Option<f64>,
    /// The run whose server it ran on (itself when it started one); `None`
    /// without a server Sleuth started.
    pub server: Option<i64>,
    pub warmup: bool,
    /// Its command or environment moves data between GPUs ([`collective`]).
    pub collective: bool,
    /// Its host's links when it ran (P2P, ACS), from its facts.
    pub host: Option<&'a Links>,
}

impl RunFacts<'_> {
    fn get(&self, metric: &str) -> Option<f64> {
        self.measurements.iter().find(|m| m.metric == metric && m.key.is_none()).map(|m| m.value)
    }

    /// A keyed metric's values, with their keys.
    fn keyed<'m>(&'m self, metric: &'m str) -> impl Iterator<Item = (&'m str, f64)> + 'm {
        self.measurements.iter().filter(move |m| m.metric == metric).filter_map(|m| Some((m.key.as_deref()?, m.value)))
    }
}

const PREFIX: &str = "prefix_cache_hit_pct";
const ACCEPTANCE: &str = "spec_decode_acceptance_pct";
const WAITING_GROWTH: &str = "requests_waiting_growth";
const WAITING_MAX: &str = "requests_waiting_max";

/// The guards of `run`, one of each name, judged with `siblings` (the other
/// runs of its configuration, warm-ups included; it may be among them).
pub fn of_run(run: &RunFacts<'_>, siblings: &[RunFacts<'_>], bounds: &Bounds) -> Vec<Guard> {
    let one = std::slice::from_ref(run);
    let measured: Vec<RunFacts<'_>> = siblings.iter().filter(|s| !s.warmup).cloned().collect();
    GuardName::ALL
        .iter()
        .map(|name| match name {
            GuardName::PrefixCacheWarm => prefix_cache_warm(one, &[], bounds),
            GuardName::SpecAcceptanceDrift => spec_drift_in_config(run, &measured, bounds),
            GuardName::Oversaturated => oversaturated(one, bounds),
            GuardName::ClientSaturated => client_saturated(one, bounds),
            GuardName::GpuContended => gpu_contended(one, bounds),
            GuardName::FirstAfterStart => {
                let mut g = first_after_start(&measured, bounds);
                if !g.runs.contains(&run.id) && g.level > Level::Unknown {
                    g = Guard::new(
                        *name,
                        Level::Ok,
                        format!("Run {} is not one its configuration's first-after-start check flags.", run.id),
                    );
                }
                g
            }
            GuardName::RestartRegimes => restart_regimes(&measured, bounds),
            GuardName::Topology => topology(one),
        })
        .collect()
}

/// The guards over the runs a hypothesis compares (warm-ups are never among
/// them): each arm's runs checked, and the arms against each other.
/// `by_config` splits an arm into its configurations (first-after-start and
/// regimes are judged within one).
pub fn of_arms<'a>(baseline: &[Vec<RunFacts<'a>>], treatment: &[Vec<RunFacts<'a>>], bounds: &Bounds) -> Vec<Guard> {
    fn flat<'a>(arm: &[Vec<RunFacts<'a>>]) -> Vec<RunFacts<'a>> {
        arm.iter().flatten().cloned().collect()
    }
    let (b, t) = (flat(baseline), flat(treatment));
    let all: Vec<RunFacts<'_>> = b.iter().chain(&t).cloned().collect();
    let within = |check: &dyn Fn(&[RunFacts<'_>]) -> Guard, name: GuardName| {
        let judged: Vec<(&str, Guard)> = [("baseline", baseline), ("treatment", treatment)]
            .into_iter()
            .flat_map(|(arm, configs)| configs.iter().map(move |c| (arm, c)))
            .map(|(arm, runs)| (arm, check(runs)))
            .collect();
        worst_of(name, judged)
    };
    vec![
        prefix_cache_warm(&b, &t, bounds),
        spec_drift_between(&b, &t, bounds),
        oversaturated_arms(&b, &t, bounds),
        worst_of(
            GuardName::ClientSaturated,
            vec![("baseline", client_saturated(&b, bounds)), ("treatment", client_saturated(&t, bounds))],
        ),
        gpu_contended_arms(&b, &t, bounds),
        within(&|runs| first_after_start(runs, bounds), GuardName::FirstAfterStart),
        within(&|runs| restart_regimes(runs, bounds), GuardName::RestartRegimes),
        topology(&all),
    ]
    .into_iter()
    .map(|mut g| {
        if g.runs.is_empty() && g.level > Level::Unknown {
            g.runs = all.iter().map(|r| r.id).collect();
        }
        g
    })
    .collect()
}

/// The guards over one configuration's measured runs (a frontier's point):
/// each run checked, and the runs against each other.
pub fn of_group(runs: &[RunFacts<'_>], bounds: &Bounds) -> Vec<Guard> {
    let measured: Vec<RunFacts<'_>> = runs.iter().filter(|r| !r.warmup).cloned().collect();
    let drift = measured.iter().map(|r| spec_drift_in_config(r, &measured, bounds)).max_by_key(|g| g.level);
    let drift = drift.unwrap_or_else(|| Guard::new(GuardName::SpecAcceptanceDrift, Level::Unknown, "No runs."));
    vec![
        prefix_cache_warm(&measured, &[], bounds),
        drift,
        oversaturated(&measured, bounds),
        client_saturated(&measured, bounds),
        gpu_contended(&measured, bounds),
        first_after_start(&measured, bounds),
        restart_regimes(&measured, bounds),
        topology(&measured),
    ]
}

/// Whether a verdict over runs with these guards is trusted: `Some(false)`
/// when one warns or fails, `Some(true)` when none does and at least one
/// could see the runs, `None` when none could (or there are none).
pub fn trusted(guards: &[Guard]) -> Option<bool> {
    if guards.iter().any(|g| g.level >= Level::Warn) {
        Some(false)
    } else {
        // Topology judges the host and the command, not what the runs
        // measured: alone it does not make their numbers trusted.
        guards.iter().any(|g| g.level == Level::Ok && g.name != GuardName::Topology).then_some(true)
    }
}

/// Whether a verdict over runs with these guards may be believed as it is:
/// `None` when nothing warns; else the sentence listing the hazards ("2 of 6
/// treatment runs: prefix-cache hits 40 %").
pub fn hazards(guards: &[Guard]) -> Option<String> {
    let found: Vec<&str> = guards.iter().filter(|g| g.level >= Level::Warn).map(|g| g.text.as_str()).collect();
    (!found.is_empty()).then(|| found.join(" "))
}

/// The worst of `judged` (arm, guard) as one guard of `name`: its level,
/// the flagged ones' sentences, runs and evidence.
fn worst_of(name: GuardName, judged: Vec<(&str, Guard)>) -> Guard {
    let level = judged.iter().map(|(_, g)| g.level).max().unwrap_or(Level::Unknown);
    let flagged: Vec<&(&str, Guard)> = judged.iter().filter(|(_, g)| g.level == level).collect();
    let text = match level {
        Level::Ok => flagged.first().map(|(_, g)| g.text.clone()).unwrap_or_default(),
        _ => flagged.iter().map(|(arm, g)| format!("{arm}: {}", g.text)).collect::<Vec<_>>().join(" "),
    };
    let mut out = Guard::new(name, level, text);
    for (_, g) in flagged {
        out.runs.extend(&g.runs);
        out.evidence.extend(g.evidence.iter().cloned());
    }
    out
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn sd(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return 0.0;
    }
    let m = mean(v);
    (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64).sqrt()
}

/// Runs whose prefix-cache hits pass the bounds, and arms whose hit shares differ.
fn prefix_cache_warm(baseline: &[RunFacts<'_>], treatment: &[RunFacts<'_>], bounds: &Bounds) -> Guard {
    let name = GuardName::PrefixCacheWarm;
    let arms = [("baseline", baseline), ("treatment", treatment)];
    let all: Vec<(&str, &RunFacts<'_>)> = arms.iter().flat_map(|(a, runs)| runs.iter().map(move |r| (*a, r))).collect();
    let read: Vec<(&str, i64, f64)> = all.iter().filter_map(|(a, r)| Some((*a, r.id, r.get(PREFIX)?))).collect();
    if read.is_empty() {
        return Guard::new(
            name,
            Level::Unknown,
            "No prefix-cache counters: the step scrapes no engine /metrics, or the engine exposes no prefix-cache hits.",
        );
    }
    let mut level = Level::Ok;
    let mut texts = Vec::new();
    let mut g = Guard::new(name, Level::Ok, "");
    let compared = !treatment.is_empty();
    for (arm, runs) in arms {
        let hits: Vec<(i64, f64)> = read.iter().filter(|(a, ..)| *a == arm).map(|(_, id, v)| (*id, *v)).collect();
        let hot: Vec<&(i64, f64)> = hits.iter().filter(|(_, v)| *v >= bounds.prefix_hit_warn_pct).collect();
        if hot.is_empty() {
            continue;
        }
        let worst = hot.iter().map(|(_, v)| *v).fold(0.0, f64::max);
        level = level.max(if worst >= bounds.prefix_hit_fail_pct { Level::Fail } else { Level::Warn });
        let whose =
            if compared { format!("{} of {} {arm} runs", hot.len(), runs.len()) } else { format!("run {}", hot[0].0) };
        texts.push(format!(
            "{whose}: prefix-cache hits up to {worst:.0} % of prompt tokens (a warm cache, not the engine)."
        ));
        for (id, v) in hot {
            g.runs.push(*id);
            g = g.with(format!("run {id} {PREFIX}"), *v, "%");
        }
    }
    if compared {
        let side = |arm: &str| read.iter().filter(|(a, ..)| *a == arm).map(|(.., v)| *v).collect::<Vec<_>>();
        let (b, t) = (side("baseline"), side("treatment"));
        if !b.is_empty() && !t.is_empty() {
            let (mb, mt) = (mean(&b), mean(&t));
            g = g.with("baseline mean", mb, "%").with("treatment mean", mt, "%");
            if (mt - mb).abs() > bounds.prefix_arms_pct {
                level = level.max(Level::Warn);
                texts.push(format!(
                    "The arms' prefix-cache hits differ: {mb:.0} % against {mt:.0} % (more than {:.0} points).",
                    bounds.prefix_arms_pct
                ));
            }
        }
    }
    if !compared && g.evidence.is_empty() {
        for (_, id, v) in &read {
            g = g.with(format!("run {id} {PREFIX}"), *v, "%");
        }
    }
    g.level = level;
    g.text = if texts.is_empty() {
        let top = read.iter().map(|(.., v)| *v).fold(0.0, f64::max);
        format!("Prefix-cache hits at most {top:.1} % of prompt tokens.")
    } else {
        texts.join(" ")
    };
    g
}

/// A run's acceptance against its configuration's others.
fn spec_drift_in_config(run: &RunFacts<'_>, measured: &[RunFacts<'_>], bounds: &Bounds) -> Guard {
    let name = GuardName::SpecAcceptanceDrift;
    let Some(own) = run.get(ACCEPTANCE) else {
        return Guard::new(
            name,
            Level::Unknown,
            "No spec-decode acceptance: no draft tokens counted (no speculative decoding, or no engine /metrics).",
        );
    };
    let others: Vec<f64> = measured.iter().filter(|r| r.id != run.id).filter_map(|r| r.get(ACCEPTANCE)).collect();
    if others.is_empty() {
        return Guard::new(
            name,
            Level::Ok,
            format!("Acceptance {own:.1} %; no other run of its configuration to compare with."),
        )
        .with(ACCEPTANCE, own, "%");
    }
    let m = mean(&others);
    let g = Guard::new(name, Level::Ok, "").with(ACCEPTANCE, own, "%").with("its configuration's other runs", m, "%");
    if (own - m).abs() > bounds.spec_drift_pct {
        Guard {
            level: Level::Warn,
            text: format!(
                "Acceptance {own:.1} %, its configuration's other runs {m:.1} %: drifted by more than {:.0} points.",
                bounds.spec_drift_pct
            ),
            runs: vec![run.id],
            ..g
        }
    } else {
        Guard { text: format!("Acceptance {own:.1} %, as its configuration's other runs ({m:.1} %)."), ..g }
    }
}

fn spec_drift_between(baseline: &[RunFacts<'_>], treatment: &[RunFacts<'_>], bounds: &Bounds) -> Guard {
    let name = GuardName::SpecAcceptanceDrift;
    let side = |runs: &[RunFacts<'_>]| runs.iter().filter_map(|r| r.get(ACCEPTANCE)).collect::<Vec<_>>();
    let (b, t) = (side(baseline), side(treatment));
    if b.is_empty() || t.is_empty() {
        return Guard::new(
            name,
            Level::Unknown,
            "Spec-decode acceptance is not counted in both arms (no speculative decoding, or no engine /metrics).",
        );
    }
    let (mb, mt) = (mean(&b), mean(&t));
    let g = Guard::new(name, Level::Ok, "").with("baseline mean", mb, "%").with("treatment mean", mt, "%");
    if (mt - mb).abs() > bounds.spec_drift_pct {
        Guard {
            level: Level::Warn,
            text: format!(
                "Spec-decode acceptance differs between the arms: {mb:.1} % against {mt:.1} % (more than {:.0} points): the speed-up may be acceptance, not the change.",
                bounds.spec_drift_pct
            ),
            ..g
        }
    } else {
        Guard { text: format!("Spec-decode acceptance alike in both arms ({mb:.1} %, {mt:.1} %)."), ..g }
    }
}

/// How much longer than its schedule a run at an asked rate took: its
/// duration against N requests sent at the rate plus one request's mean
/// latency (the last one's drain). `None` without the numbers.
fn stretch(run: &RunFacts<'_>) -> Option<f64> {
    let (rate, n, duration) = (run.get("request_rate_asked")?, run.get("successful_requests")?, run.get("duration_s")?);
    let latency_ms = run.get("e2el_ms_mean").or_else(|| {
        let per_request = run.get("total_output_tokens")? / n;
        Some(run.get("ttft_ms_mean")? + run.get("tpot_ms_mean").unwrap_or(0.0) * (per_request - 1.0).max(0.0))
    })?;
    let planned = n / rate + latency_ms / 1000.0;
    (planned > 0.0 && n >= 1.0).then(|| duration / planned)
}

/// Runs whose queue grew through them (the engine's gauge), or that took
/// well over their schedule at the rate asked (the client's report).
fn oversaturated(runs: &[RunFacts<'_>], bounds: &Bounds) -> Guard {
    let name = GuardName::Oversaturated;
    let stretched: Vec<(i64, f64)> = runs.iter().filter_map(|r| Some((r.id, stretch(r)?))).collect();
    let late: Vec<&(i64, f64)> = stretched.iter().filter(|(_, s)| *s > bounds.duration_stretch).collect();
    let read: Vec<(i64, f64, f64)> =
        runs.iter().filter_map(|r| Some((r.id, r.get(WAITING_GROWTH)?, r.get(WAITING_MAX).unwrap_or(0.0)))).collect();
    if !late.is_empty() {
        let worst = late.iter().map(|(_, s)| *s).fold(0.0, f64::max);
        let whose = if runs.len() == 1 {
            "The run took".to_string()
        } else {
            format!("{} of {} runs took up to", late.len(), runs.len())
        };
        let text = format!(
            "{whose} {worst:.2}× their schedule at the rate asked (its requests at that rate, plus one request's latency): requests queued, the server was over-saturated."
        );
        let mut g = Guard::new(name, Level::Warn, text);
        for (id, s) in &late {
            g.runs.push(*id);
            g = g.with(format!("run {id} duration / schedule"), *s, "×");
        }
        return g;
    }
    if read.is_empty() {
        if let Some((id, s)) = stretched.iter().copied().reduce(|a, b| if b.1 > a.1 { b } else { a }) {
            let text = format!("The runs kept to their schedule at the rate asked (at most {s:.2}× it, run {id}).");
            return Guard::new(name, Level::Ok, text).with(format!("run {id} duration / schedule"), s, "×");
        }
        return Guard::new(
            name,
            Level::Unknown,
            "No queue over the run and no rate asked: the step scrapes no engine /metrics (or it exposes no requests waiting), and the client reported no finite request rate.",
        );
    }
    let grew: Vec<&(i64, f64, f64)> = read.iter().filter(|(_, g, _)| *g > bounds.waiting_growth).collect();
    let mut g = Guard::new(name, Level::Ok, "");
    for (id, growth, max) in &read {
        g = g.with(format!("run {id} {WAITING_GROWTH}"), *growth, "requests").with(
            format!("run {id} {WAITING_MAX}"),
            *max,
            "requests",
        );
    }
    if grew.is_empty() {
        let top = read.iter().map(|(_, g, _)| *g).fold(f64::NEG_INFINITY, f64::max);
        g.text = format!(
            "The queue did not grow through the run (its last third at most {top:+.1} requests against its first)."
        );
        return g;
    }
    g.level = Level::Warn;
    g.runs = grew.iter().map(|(id, ..)| *id).collect();
    let worst = grew.iter().map(|(_, g, _)| *g).fold(0.0, f64::max);
    g.text = if runs.len() == 1 {
        format!(
            "Requests waiting grew through the run by {worst:.1} (last third against first): the server was over-saturated and the run measured its queue."
        )
    } else {
        format!(
            "{} of {} runs: requests waiting grew through the run, by up to {worst:.1}: over-saturated, measuring the queue.",
            grew.len(),
            runs.len()
        )
    };
    g
}

fn oversaturated_arms(baseline: &[RunFacts<'_>], treatment: &[RunFacts<'_>], bounds: &Bounds) -> Guard {
    let judged = vec![("baseline", oversaturated(baseline, bounds)), ("treatment", oversaturated(treatment, bounds))];
    worst_of(GuardName::Oversaturated, judged)
}

/// Runs whose client sent more slowly than the rate it was asked for: the
/// load generator fell behind its schedule (its sends came late), so the
/// server saw less load than the run says.
fn client_saturated(runs: &[RunFacts<'_>], bounds: &Bounds) -> Guard {
    let name = GuardName::ClientSaturated;
    let read: Vec<(i64, f64, f64, f64)> = runs
        .iter()
        .filter_map(|r| {
            Some((r.id, r.get("send_rate")?, r.get("request_rate_asked")?, r.get("successful_requests").unwrap_or(0.0)))
        })
        .collect();
    let cpu: Vec<(i64, f64, f64)> =
        runs.iter().filter_map(|r| Some((r.id, r.get(CLIENT_BUSY)?, r.get(CLIENT_MAX).unwrap_or(0.0)))).collect();
    if read.is_empty() && cpu.is_empty() {
        let sent = runs.iter().any(|r| r.get("send_rate").is_some());
        return Guard::new(
            name,
            Level::Unknown,
            if sent {
                "No rate was asked (as fast as allowed, or a concurrency), and the client's CPU was not read (no GPU \
                 telemetry, or runs too short for two of its readings)."
            } else {
                "No per-request send times (vLLM: --save-result --save-detailed), and the client's CPU was not read \
                 (no GPU telemetry, or runs too short for two of its readings)."
            },
        );
    }
    let mut g = Guard::new(name, Level::Ok, "");
    let mut late = Vec::new();
    for (id, sent, asked, n) in &read {
        // Poisson sends spread by 1/sqrt(n): three of those, at least the bound.
        let slack = bounds.send_shortfall.max(3.0 / n.max(1.0).sqrt());
        g = g.with(format!("run {id} send_rate"), *sent, "req/s").with(
            format!("run {id} request_rate_asked"),
            *asked,
            "req/s",
        );
        if *sent < asked * (1.0 - slack) {
            late.push((*id, sent / asked));
        }
    }
    let mut busy = Vec::new();
    for (id, busy_pct, max_pct) in &cpu {
        g = g.with(format!("run {id} {CLIENT_BUSY}"), *busy_pct, "%").with(
            format!("run {id} {CLIENT_MAX}"),
            *max_pct,
            "%",
        );
        if *busy_pct >= bounds.client_busy_pct {
            busy.push((*id, *busy_pct));
        }
    }
    let mut said = Vec::new();
    if !late.is_empty() {
        let worst = late.iter().map(|(_, f)| *f).fold(f64::INFINITY, f64::min);
        said.push(format!(
            "{} of {} runs: the client sent at as little as {:.0} % of the rate asked: it could not keep its schedule, \
             so the server saw less load than asked.",
            late.len(),
            read.len(),
            worst * 100.0
        ));
    }
    if !busy.is_empty() {
        let most = busy.iter().map(|(_, p)| *p).fold(0.0, f64::max);
        said.push(format!(
            "{} of {} runs: a process of the client used a whole core (90 % or more) for up to {most:.0} % of the \
             run: the load generator, not the server, may set the pace.",
            busy.len(),
            cpu.len()
        ));
    }
    if said.is_empty() {
        g.text = match (read.is_empty(), cpu.is_empty()) {
            (false, false) => "The client sent at the rate asked, and no process of it used a whole core.",
            (false, true) => "The client sent at the rate asked.",
            _ => "No process of the client used a whole core for long.",
        }
        .into();
        return g;
    }
    g.level = Level::Warn;
    g.runs = late.iter().chain(&busy).map(|(id, _)| *id).collect();
    g.runs.sort_unstable();
    g.runs.dedup();
    g.text = said.join(" ");
    g
}

const CLIENT_BUSY: &str = "client_cpu_busy_pct";
const CLIENT_MAX: &str = "client_cpu_max_pct";

const OTHERS: &str = "gpu_other_processes";
const OTHER_MIB: &str = "gpu_other_process_mib";
const LISTINGS: &str = "gpu_process_listings";
const HELD: &str = "sm_clock_held_pct";
const HELD_REASONS: &str = "sm_clock_held_reasons";

/// Runs that shared their GPUs with another process (the sampler's process
/// listings), or whose clocks were held down by heat, a hardware slowdown or
/// a setting (its readings' clock event reasons). The power cap alone is the
/// GPU at full load, judged between arms ([`gpu_contended_arms`]).
fn gpu_contended(runs: &[RunFacts<'_>], bounds: &Bounds) -> Guard {
    let name = GuardName::GpuContended;
    let judged = runs.iter().filter(|r| r.get(OTHERS).is_some() || r.get(HELD).is_some()).count();
    if judged == 0 {
        let listed = runs.iter().any(|r| r.get(LISTINGS).is_some());
        return Guard::new(
            name,
            Level::Unknown,
            if listed {
                "nvidia-smi listed no processes Sleuth could place while the GPUs were in use (another PID \
                 namespace, as in a container?), and no clock event reasons were read."
            } else {
                "No GPU telemetry with process listings or clock event reasons for these runs (telemetry off, no \
                 nvidia-smi, or runs from before Sleuth read them)."
            },
        );
    }
    let mut g = Guard::new(name, Level::Ok, "");
    let mut said = Vec::new();
    let shared: Vec<&RunFacts<'_>> = runs.iter().filter(|r| r.get(OTHERS).is_some_and(|n| n > 0.0)).collect();
    if let Some(first) = shared.first() {
        for r in &shared {
            for (key, mib) in r.keyed(OTHER_MIB) {
                g = g.with(format!("run {} {key}", r.id), mib, "MiB");
            }
        }
        let (key, mib) = first.keyed(OTHER_MIB).next().unwrap_or(("a GPU", 0.0));
        said.push(format!("{} of {judged} runs: another process on {key} ({mib:.0} MiB) while it ran.", shared.len()));
        g.runs.extend(shared.iter().map(|r| r.id));
    }
    let held: Vec<(&RunFacts<'_>, f64, u64)> = runs
        .iter()
        .filter_map(|r| Some((r, r.get(HELD)?, r.get(HELD_REASONS).unwrap_or(0.0) as u64)))
        .filter(|(_, pct, reasons)| *pct >= bounds.clock_held_pct && !ClockReasons(*reasons).power_cap_only())
        .collect();
    if !held.is_empty() {
        let most = held.iter().map(|(_, pct, _)| *pct).fold(0.0, f64::max);
        let reasons = ClockReasons(held.iter().fold(0, |bits, (_, _, r)| bits | r));
        for (r, pct, _) in &held {
            g = g.with(format!("run {} {HELD}", r.id), *pct, "%");
        }
        said.push(format!(
            "{} of {judged} runs: GPU clocks held below their highest ({}) in up to {most:.0} % of readings.",
            held.len(),
            reasons.describe()
        ));
        g.runs.extend(held.iter().map(|(r, _, _)| r.id));
        g.runs.sort_unstable();
        g.runs.dedup();
    }
    if said.is_empty() {
        g.text =
            "No other process on the runs' GPUs, and their clocks were not held down by heat or a slowdown.".into();
        return g;
    }
    g.level = Level::Warn;
    g.text = said.join(" ");
    g
}

/// Each arm's runs checked, and the arms' held clocks against each other:
/// one arm on slower clocks (the power cap too) measured its GPUs, not the
/// change.
fn gpu_contended_arms(baseline: &[RunFacts<'_>], treatment: &[RunFacts<'_>], bounds: &Bounds) -> Guard {
    let judged = vec![("baseline", gpu_contended(baseline, bounds)), ("treatment", gpu_contended(treatment, bounds))];
    let mut g = worst_of(GuardName::GpuContended, judged);
    let held = |runs: &[RunFacts<'_>]| {
        let pcts: Vec<f64> = runs.iter().filter_map(|r| r.get(HELD)).collect();
        (!pcts.is_empty()).then(|| mean(&pcts))
    };
    if let (Some(b), Some(t)) = (held(baseline), held(treatment)) {
        g = g.with("baseline sm_clock_held_pct", b, "%").with("treatment sm_clock_held_pct", t, "%");
        if (b - t).abs() > bounds.clock_held_pct && g.level <= Level::Warn {
            let reasons = ClockReasons(
                baseline.iter().chain(treatment).fold(0, |bits, r| bits | r.get(HELD_REASONS).unwrap_or(0.0) as u64),
            );
            let differ = format!(
                "The arms ran on different clocks: held ({}) in {t:.0} % of the treatment's readings, {b:.0} % of \
                 the baseline's.",
                reasons.describe()
            );
            g.text = if g.level == Level::Warn { format!("{} {differ}", g.text) } else { differ };
            g.level = Level::Warn;
        }
    }
    g
}

/// Whether a run with this command and environment moves data between
/// GPUs: tensor or pipeline parallelism over more than one GPU, several
/// processes per node (torchrun), an NCCL setting, or an all-reduce.
pub fn collective(command: &str, env: &[(String, String)]) -> bool {
    if env.iter().any(|(k, _)| k.starts_with("NCCL_")) {
        return true;
    }
    let lower = command.to_ascii_lowercase();
    if ["all_reduce", "allreduce", "all-reduce", "all_gather", "allgather", "nccl"].iter().any(|w| lower.contains(w)) {
        return true;
    }
    const SPREAD: [&str; 9] = [
        "--tensor-parallel-size",
        "--tensor_parallel_size",
        "-tp",
        "--tp",
        "--tp-size",
        "--pipeline-parallel-size",
        "-pp",
        "--nproc_per_node",
        "--nproc-per-node",
    ];
    let words: Vec<&str> = lower.split_whitespace().collect();
    words.iter().enumerate().any(|(i, word)| {
        let (flag, inline) = match word.split_once('=') {
            Some((flag, value)) => (flag, Some(value)),
            None => (*word, None),
        };
        let value = inline.or_else(|| words.get(i + 1).copied());
        SPREAD.contains(&flag)
            && value.and_then(|v| v.trim_matches(['"', '\'']).parse::<u32>().ok()).is_some_and(|n| n > 1)
    })
}

/// What the topology guard reads of a run's host, from its facts
/// (`domain::hosts::HostFacts::links`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Links {
    pub gpus: usize,
    /// GPU pairs that cannot reach each other's memory, as `("GPU0", "GPU1",
    /// "GNS")`; `None` where P2P was not read.
    pub without_p2p: Option<Vec<(String, String, String)>>,
    /// PCI bridges whose ACS redirects peer requests; `None`: not read.
    pub acs_redirecting: Option<u32>,
    /// Every pair of GPUs linked by NVLink (ACS does not matter then).
    pub nvlinked: bool,
}

/// Collective-bound runs on a host whose GPUs cannot reach each other's
/// memory directly, or whose PCI bridges send peer traffic up to the root
/// complex (ACS): NCCL falls back to copies through the host (NCCL #2079,
/// vLLM #5458), and the run measures that.
fn topology(runs: &[RunFacts<'_>]) -> Guard {
    let name = GuardName::Topology;
    if runs.is_empty() {
        return Guard::new(name, Level::Unknown, "No runs.");
    }
    let bound: Vec<&RunFacts<'_>> = runs.iter().filter(|r| r.collective).collect();
    if bound.is_empty() {
        return Guard::new(
            name,
            Level::Ok,
            "Not collective-bound: no tensor or pipeline parallelism, NCCL setting or all-reduce in the runs' \
             commands and environments.",
        );
    }
    let mut hosts: Vec<&Links> = Vec::new();
    for host in bound.iter().filter_map(|r| r.host) {
        if !hosts.contains(&host) {
            hosts.push(host);
        }
    }
    if hosts.is_empty() {
        return Guard::new(
            name,
            Level::Unknown,
            "Collective-bound runs, but no host facts were captured for them: capture the host's facts to judge P2P \
             and ACS.",
        );
    }
    let mut g = Guard::new(name, Level::Ok, "");
    let (mut said, mut fine, mut unread) = (Vec::new(), Vec::new(), Vec::new());
    for host in hosts {
        match host.gpus {
            0 => {
                unread.push("The host's facts list no GPU (nvidia-smi gave none when they were captured).");
                continue;
            }
            1 => {
                fine.push("One GPU on the host: no peer traffic.".to_string());
                continue;
            }
            _ => {}
        }
        let Some(without) = &host.without_p2p else {
            unread.push(
                "the host's facts do not say whether its GPUs reach each other (captured before Sleuth read \
                 `nvidia-smi topo -p2p r`, or it failed): capture them again.",
            );
            continue;
        };
        let missing: Vec<String> = without.iter().map(|(a, b, why)| format!("{a} and {b} ({why})")).collect();
        let pairs = host.gpus * host.gpus.saturating_sub(1) / 2;
        g = g.with("GPU pairs without P2P", missing.len() as f64, "pairs");
        if !missing.is_empty() {
            let shown: Vec<&str> = missing.iter().take(3).map(String::as_str).collect();
            said.push(format!(
                "No P2P between {} of {pairs} GPU pairs ({}{}): NCCL copies through host memory, and collective-bound \
                 runs measure that.",
                missing.len(),
                shown.join(", "),
                if missing.len() > 3 { ", …" } else { "" }
            ));
        }
        match host.acs_redirecting {
            Some(n) if n > 0 && !host.nvlinked => {
                g = g.with("PCI bridges redirecting peer traffic (ACS)", f64::from(n), "bridges");
                said.push(format!(
                    "ACS redirects peer-to-peer requests on {n} PCI bridges: GPU-to-GPU traffic goes up through the \
                     root complex (NCCL #2079)."
                ));
            }
            Some(_) => fine.push(format!("P2P between all {} GPUs; no ACS redirection.", host.gpus)),
            None if missing.is_empty() => {
                fine.push(format!("P2P between all {} GPUs (ACS not read: lspci shows it to root only).", host.gpus))
            }
            None => {}
        }
    }
    if !said.is_empty() {
        g.level = Level::Warn;
        g.text = said.join(" ");
        g.runs = bound.iter().map(|r| r.id).collect();
    } else if fine.is_empty() {
        g.level = Level::Unknown;
        g.text = unread.join(" ");
    } else {
        g.text = fine.join(" ");
    }
    g
}

/// The first measured run on each server against the configuration's other
/// runs: beyond their noise, the warm-ups were too few.
fn first_after_start(measured: &[RunFacts<'_>], bounds: &Bounds) -> Guard {
    let name = GuardName::FirstAfterStart;
    let mut servers: Vec<i64> = measured.iter().filter_map(|r| r.server).collect();
    servers.sort_unstable();
    servers.dedup();
    // The first run on each server that ran more than one.
    let firsts: Vec<&RunFacts<'_>> = servers
        .iter()
        .filter(|s| measured.iter().filter(|r| r.server == Some(**s)).count() > 1)
        .filter_map(|s| measured.iter().filter(|r| r.server == Some(*s)).min_by_key(|r| r.id))
        .collect();
    let rest: Vec<f64> =
        measured.iter().filter(|r| !firsts.iter().any(|f| f.id == r.id)).filter_map(|r| r.value).collect();
    if firsts.is_empty() || rest.len() < 2 {
        return Guard::new(
            name,
            Level::Unknown,
            "Not judged: no server ran several measured runs of this configuration (it needs a kept server and at least 2 runs after the first).",
        );
    }
    let (m, s) = (mean(&rest), sd(&rest));
    let allowed = (bounds.first_run_sigmas * s).max(m.abs() * bounds.min_shift_pct / 100.0);
    let mut g =
        Guard::new(name, Level::Ok, "").with("the later runs' mean", m, "").with("their standard deviation", s, "");
    let off: Vec<(i64, f64)> =
        firsts.iter().filter_map(|f| Some((f.id, f.value?))).filter(|(_, v)| (v - m).abs() > allowed).collect();
    for (id, v) in firsts.iter().filter_map(|f| Some((f.id, f.value?))) {
        g = g.with(format!("run {id} (first after its start)"), v, "");
    }
    if off.is_empty() {
        g.text = format!("The first run after each start is within the others' noise ({m:.4} ± {allowed:.4}).");
        return g;
    }
    g.level = Level::Warn;
    g.runs = off.iter().map(|(id, _)| *id).collect();
    let said: Vec<String> = off.iter().map(|(id, v)| format!("run {id} {:+.1} %", (v - m) / m * 100.0)).collect();
    g.text = format!(
        "The first run after a server start differs from the later ones beyond their noise ({}): too few warm-ups.",
        said.join(", ")
    );
    g
}

/// A configuration's runs in two clusters far apart for their spread — each
/// restart landing in one regime or another.
fn restart_regimes(measured: &[RunFacts<'_>], bounds: &Bounds) -> Guard {
    let name = GuardName::RestartRegimes;
    let mut values: Vec<(f64, i64, Option<i64>)> =
        measured.iter().filter_map(|r| Some((r.value?, r.id, r.server))).collect();
    let servers = {
        let mut s: Vec<i64> = values.iter().filter_map(|v| v.2).collect();
        s.sort_unstable();
        s.dedup();
        s.len()
    };
    if values.len() < 4 || servers < 2 {
        return Guard::new(
            name,
            Level::Unknown,
            "Not judged: it needs at least 4 measured runs of the configuration on at least 2 server starts.",
        );
    }
    values.sort_by(|a, b| a.0.total_cmp(&b.0));
    // The widest gap leaving at least 2 runs each side.
    let (cut, gap) = (2..=values.len() - 2)
        .map(|i| (i, values[i].0 - values[i - 1].0))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or((0, 0.0));
    let (low, high): (Vec<f64>, Vec<f64>) =
        (values[..cut].iter().map(|v| v.0).collect(), values[cut..].iter().map(|v| v.0).collect());
    let pooled = ((sd(&low).powi(2) + sd(&high).powi(2)) / 2.0).sqrt();
    let m = mean(&values.iter().map(|v| v.0).collect::<Vec<_>>());
    // Runs as alike as the numbers print are one regime whatever the ratio.
    let floor = m.abs() * bounds.min_shift_pct / 100.0;
    let g = Guard::new(name, Level::Ok, "")
        .with("low cluster mean", mean(&low), "")
        .with("high cluster mean", mean(&high), "")
        .with("gap", gap, "");
    // A regime is a start's: each server's runs on one side. Runs of one
    // server on both sides (its first, slow ones) are warm-up, not regimes.
    let one_side = |server: i64| {
        let mut sides = values.iter().enumerate().filter(|(_, v)| v.2 == Some(server)).map(|(i, _)| i < cut);
        let first = sides.next();
        sides.all(|s| Some(s) == first)
    };
    let split = gap > bounds.regime_gap_sigmas * pooled && gap > floor;
    if !split {
        return Guard { text: format!("One regime across {servers} server starts."), ..g };
    }
    if !values.iter().filter_map(|v| v.2).all(one_side) {
        return Guard {
            text: format!(
                "The runs split ({:.4} and {:.4}) within server starts, not between them: not regimes (a first run \
                 after each start is first_after_start's).",
                mean(&low),
                mean(&high)
            ),
            ..g
        };
    }
    let low_ids: Vec<String> = values[..cut].iter().map(|v| v.1.to_string()).collect();
    Guard {
        level: Level::Warn,
        text: format!(
            "The configuration's runs fall in two regimes ({:.4} and {:.4}; runs {} low): restarts land in one or the other, so its mean hides which it measured.",
            mean(&low),
            mean(&high),
            low_ids.join(", ")
        ),
        runs: values.iter().map(|v| v.1).collect(),
        ..g
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(metric: &str, value: f64) -> Measurement {
        Measurement {
            metric: metric.into(),
            value,
            unit: String::new(),
            extractor: "engine".into(),
            stddev: None,
            key: None,
        }
    }

    fn run<'a>(id: i64, ms: &'a [Measurement], value: f64, server: Option<i64>) -> RunFacts<'a> {
        RunFacts { id, measurements: ms, value: Some(value), server, ..RunFacts::default() }
    }

    fn level(guards: &[Guard], name: GuardName) -> Level {
        guards.iter().find(|g| g.name == name).map(|g| g.level).unwrap()
    }

    #[test]
    fn a_run_alone_has_every_guard_and_a_missing_signal_is_unknown_never_ok() {
        let none: [Measurement; 0] = [];
        let bare = run(1, &none, 50.0, None);
        let guards = of_run(&bare, std::slice::from_ref(&bare), &Bounds::default());
        assert_eq!(guards.iter().map(|g| g.name).collect::<Vec<_>>(), GuardName::ALL);
        let seen: Vec<&Guard> = guards.iter().filter(|g| g.level != Level::Unknown).collect();
        assert!(seen.len() == 1 && seen[0].name == GuardName::Topology, "only its command was seen: {guards:?}");
        assert!(guards.iter().all(|g| !g.text.is_empty()));
        assert_eq!(trusted(&guards), None, "none could see it: not called trusted");
    }

    #[test]
    fn a_warm_prefix_cache_and_arms_that_differ_are_flagged_a_cold_one_is_not() {
        let cold = [m(PREFIX, 0.4)];
        let warm = [m(PREFIX, 42.0)];
        let b: Vec<RunFacts<'_>> = (1..=3).map(|i| run(i, &cold, 50.0, Some(i))).collect();
        let t: Vec<RunFacts<'_>> = (4..=6).map(|i| run(i, if i == 5 { &warm } else { &cold }, 70.0, Some(i))).collect();
        let g = &of_arms(std::slice::from_ref(&b), std::slice::from_ref(&t), &Bounds::default())[0];
        assert_eq!((g.name, g.level), (GuardName::PrefixCacheWarm, Level::Fail), "{g:?}");
        assert!(g.text.contains("1 of 3 treatment runs") && g.text.contains("42 %"), "{}", g.text);
        assert_eq!(g.runs, [5]);
        assert_eq!(
            trusted(&of_arms(std::slice::from_ref(&b), std::slice::from_ref(&t), &Bounds::default())),
            Some(false)
        );
        let clean: Vec<RunFacts<'_>> = (4..=6).map(|i| run(i, &cold, 70.0, Some(i))).collect();
        let g = &of_arms(std::slice::from_ref(&b), &[clone_all(&clean)], &Bounds::default())[0];
        assert_eq!(g.level, Level::Ok, "{g:?}");
        let clean_guards = of_arms(std::slice::from_ref(&b), &[clean], &Bounds::default());
        assert!(hazards(&clean_guards).is_none());
        assert_eq!(trusted(&clean_guards), Some(true));
    }

    fn clone_all<'a>(runs: &[RunFacts<'a>]) -> Vec<RunFacts<'a>> {
        runs.to_vec()
    }

    #[test]
    fn acceptance_that_drifted_between_arms_or_within_a_configuration_warns() {
        let (a70, a50) = ([m(ACCEPTANCE, 70.0)], [m(ACCEPTANCE, 50.0)]);
        let b: Vec<RunFacts<'_>> = (1..=3).map(|i| run(i, &a70, 50.0, None)).collect();
        let t: Vec<RunFacts<'_>> = (4..=6).map(|i| run(i, &a50, 60.0, None)).collect();
        let g = &of_arms(std::slice::from_ref(&b), &[t], &Bounds::default())[1];
        assert_eq!((g.name, g.level), (GuardName::SpecAcceptanceDrift, Level::Warn), "{g:?}");
        let same = &of_arms(std::slice::from_ref(&b), std::slice::from_ref(&b), &Bounds::default())[1];
        assert_eq!(same.level, Level::Ok);
        let mut config = b.clone();
        config.push(run(7, &a50, 50.0, None));
        let odd = of_run(&config[3], &config, &Bounds::default());
        assert_eq!(level(&odd, GuardName::SpecAcceptanceDrift), Level::Warn);
        assert_eq!(level(&of_run(&config[0], &b, &Bounds::default()), GuardName::SpecAcceptanceDrift), Level::Ok);
    }

    #[test]
    fn bounds_set_over_the_defaults_are_checked() {
        let set = BoundsInput { prefix_hit_warn_pct: Some(1.0), ..Default::default() };
        let b = Bounds::with(&set).unwrap();
        assert_eq!((b.prefix_hit_warn_pct, b.prefix_hit_fail_pct), (1.0, Bounds::default().prefix_hit_fail_pct));
        for bad in [
            BoundsInput { spec_drift_pct: Some(-1.0), ..Default::default() },
            BoundsInput { send_shortfall: Some(1.5), ..Default::default() },
            BoundsInput { prefix_hit_warn_pct: Some(50.0), prefix_hit_fail_pct: Some(20.0), ..Default::default() },
            BoundsInput { duration_stretch: Some(0.9), ..Default::default() },
        ] {
            assert!(Bounds::with(&bad).is_err(), "{bad:?}");
        }
        assert!(
            serde_json::from_str::<BoundsInput>(r#"{"prefix_hit_warn":1}"#).is_err(),
            "a misspelt bound is refused"
        );
        // A tighter bound flags what the default let pass.
        let some = [m(PREFIX, 3.0)];
        let r = run(1, &some, 1.0, None);
        assert_eq!(
            level(&of_run(&r, std::slice::from_ref(&r), &Bounds::default()), GuardName::PrefixCacheWarm),
            Level::Ok
        );
        assert_eq!(level(&of_run(&r, std::slice::from_ref(&r), &b), GuardName::PrefixCacheWarm), Level::Warn);
    }

    #[test]
    fn a_queue_that_grows_warns_one_that_holds_does_not() {
        let grows = [m(WAITING_GROWTH, 11.5), m(WAITING_MAX, 24.0)];
        let holds = [m(WAITING_GROWTH, 0.3), m(WAITING_MAX, 7.0)];
        let g = oversaturated(&[run(1, &grows, 1.0, None)], &Bounds::default());
        assert_eq!(g.level, Level::Warn, "{g:?}");
        assert!(g.text.contains("11.5"), "{}", g.text);
        assert_eq!(oversaturated(&[run(1, &holds, 1.0, None)], &Bounds::default()).level, Level::Ok);
    }

    #[test]
    fn a_slow_first_run_after_a_start_warns_and_one_within_noise_does_not() {
        let none: [Measurement; 0] = [];
        // A kept server (started by run 1) for runs 1–5; the first is 20 % slow.
        let values = [40.0, 50.1, 49.8, 50.3, 49.9];
        let runs: Vec<RunFacts<'_>> =
            values.iter().enumerate().map(|(i, v)| run(i as i64 + 1, &none, *v, Some(1))).collect();
        let g = first_after_start(&runs, &Bounds::default());
        assert_eq!((g.level, g.runs.clone()), (Level::Warn, vec![1]), "{g:?}");
        assert!(g.text.contains("run 1 -20."), "{}", g.text);
        let steady: Vec<RunFacts<'_>> = [50.0, 50.1, 49.8, 50.3, 49.9]
            .iter()
            .enumerate()
            .map(|(i, v)| run(i as i64 + 1, &none, *v, Some(1)))
            .collect();
        assert_eq!(first_after_start(&steady, &Bounds::default()).level, Level::Ok);
        // Per run: only the first is flagged.
        assert_eq!(level(&of_run(&runs[0], &runs, &Bounds::default()), GuardName::FirstAfterStart), Level::Warn);
        assert_eq!(level(&of_run(&runs[2], &runs, &Bounds::default()), GuardName::FirstAfterStart), Level::Ok);
    }

    #[test]
    fn two_regimes_across_restarts_warn_one_noisy_regime_does_not() {
        let none: [Measurement; 0] = [];
        let two = [57.5, 57.6, 74.9, 57.4, 75.2, 75.0];
        let runs: Vec<RunFacts<'_>> =
            two.iter().enumerate().map(|(i, v)| run(i as i64 + 1, &none, *v, Some(i as i64 + 1))).collect();
        let g = restart_regimes(&runs, &Bounds::default());
        assert_eq!(g.level, Level::Warn, "{g:?}");
        assert!(g.text.contains("runs 4, 1, 2 low") || g.text.contains("low"), "{}", g.text);
        let one = [57.5, 58.9, 56.2, 57.9, 59.1, 56.8];
        let runs: Vec<RunFacts<'_>> =
            one.iter().enumerate().map(|(i, v)| run(i as i64 + 1, &none, *v, Some(i as i64 + 1))).collect();
        assert_eq!(restart_regimes(&runs, &Bounds::default()).level, Level::Ok);
        // Each start's first run slow, the rest fast: warm-up, not two regimes.
        let cold = [30.0, 50.0, 50.2, 30.1, 49.9, 50.1];
        let runs: Vec<RunFacts<'_>> =
            cold.iter().enumerate().map(|(i, v)| run(i as i64 + 1, &none, *v, Some(i as i64 / 3))).collect();
        let g = restart_regimes(&runs, &Bounds::default());
        assert!(g.level == Level::Ok && g.text.contains("within server starts"), "{g:?}");
    }

    #[test]
    fn another_process_or_clocks_held_by_heat_warn_the_power_cap_only_between_arms() {
        let keyed = |metric: &str, key: &str, value: f64| Measurement { key: Some(key.into()), ..m(metric, value) };
        let shared = [
            m(OTHERS, 1.0),
            keyed(OTHER_MIB, "gpu 3 · pid 4242 · <b>miner</b>", 2048.0),
            m(LISTINGS, 5.0),
            m(HELD, 0.0),
        ];
        let hot = [m(OTHERS, 0.0), m(HELD, 60.0), m(HELD_REASONS, 64.0)];
        let clean = [m(OTHERS, 0.0), m(LISTINGS, 5.0), m(HELD, 0.0), m(HELD_REASONS, 0.0)];
        let capped = [m(OTHERS, 0.0), m(HELD, 80.0), m(HELD_REASONS, 4.0)];
        let bounds = Bounds::default();
        let g = gpu_contended(&[run(1, &shared, 1.0, None), run(2, &clean, 1.0, None)], &bounds);
        assert_eq!(g.level, Level::Warn);
        assert!(g.text.contains("1 of 2 runs: another process on gpu 3 · pid 4242 · <b>miner</b>"), "{}", g.text);
        assert_eq!(g.runs, [1]);
        let g = gpu_contended(&[run(1, &hot, 1.0, None)], &bounds);
        assert_eq!(g.level, Level::Warn);
        assert!(g.text.contains("HW thermal slowdown") && g.text.contains("60 %"), "{}", g.text);
        assert_eq!(gpu_contended(&[run(1, &clean, 1.0, None)], &bounds).level, Level::Ok);
        // The power cap at full load: not a hazard in one run, but one arm
        // capped and the other not ran on other clocks.
        assert_eq!(gpu_contended(&[run(1, &capped, 1.0, None)], &bounds).level, Level::Ok);
        let b: Vec<RunFacts<'_>> = (1..=3).map(|i| run(i, &clean, 1.0, None)).collect();
        let t: Vec<RunFacts<'_>> = (4..=6).map(|i| run(i, &capped, 1.0, None)).collect();
        let g = gpu_contended_arms(&b, &t, &bounds);
        assert_eq!(g.level, Level::Warn, "{g:?}");
        assert!(g.text.contains("SW power cap") && g.text.contains("80 %"), "{}", g.text);
        assert_eq!(gpu_contended_arms(&t, &t, &bounds).level, Level::Ok);
        // Listings that could not place any process: unknown, with why.
        let hidden = [m(LISTINGS, 5.0)];
        let g = gpu_contended(&[run(1, &hidden, 1.0, None)], &bounds);
        assert!(g.level == Level::Unknown && g.text.contains("PID namespace"), "{g:?}");
    }

    #[test]
    fn what_moves_data_between_gpus_is_collective_bound() {
        let env = |k: &str| vec![(k.to_string(), "LL".to_string())];
        assert!(collective("vllm serve m --tensor-parallel-size 8", &[]));
        assert!(collective("vllm serve m -tp=2", &[]));
        assert!(collective("python bench.py", &env("NCCL_PROTO")));
        assert!(collective("torchrun --nproc_per_node 8 allreduce.py", &[]));
        assert!(!collective("vllm serve m --tensor-parallel-size 1", &[]));
        assert!(!collective("llama-bench -m m.gguf -p 512", &env("CUDA_VISIBLE_DEVICES")));
    }

    #[test]
    fn a_collective_run_on_gpus_without_p2p_or_behind_acs_warns() {
        let pair = |why: &str| Some(vec![("GPU0".to_string(), "GPU1".to_string(), why.to_string())]);
        let host = |without_p2p: Option<Vec<(String, String, String)>>, acs: Option<u32>| Links {
            gpus: 2,
            without_p2p,
            acs_redirecting: acs,
            nvlinked: false,
        };
        fn on<'a>(host: &'a Links, collective: bool) -> RunFacts<'a> {
            RunFacts { id: 1, collective, host: Some(host), ..RunFacts::default() }
        }
        let blocked = host(pair("GNS"), None);
        let g = topology(&[on(&blocked, true)]);
        assert_eq!(g.level, Level::Warn);
        assert!(g.text.contains("GPU0 and GPU1 (GNS)"), "{}", g.text);
        assert_eq!(topology(&[on(&blocked, false)]).level, Level::Ok, "not collective-bound");
        let behind_acs = host(Some(Vec::new()), Some(4));
        let g = topology(&[on(&behind_acs, true)]);
        assert!(g.level == Level::Warn && g.text.contains("4 PCI bridges"), "{g:?}");
        let fine = host(Some(Vec::new()), None);
        let g = topology(&[on(&fine, true)]);
        assert!(g.level == Level::Ok && g.text.contains("ACS not read"), "{g:?}");
        let old = host(None, None);
        assert_eq!(topology(&[on(&old, true)]).level, Level::Unknown, "facts from before P2P was read");
        let g = topology(&[RunFacts { collective: true, ..RunFacts::default() }]);
        assert!(g.level == Level::Unknown && g.text.contains("no host facts"), "{g:?}");
    }

    #[test]
    fn a_client_at_a_whole_core_warns_without_a_rate_asked() {
        let pinned = [m(CLIENT_BUSY, 80.0), m(CLIENT_MAX, 100.0)];
        let idle = [m(CLIENT_BUSY, 0.0), m(CLIENT_MAX, 12.0)];
        let g = client_saturated(&[run(1, &pinned, 1.0, None), run(2, &idle, 1.0, None)], &Bounds::default());
        assert_eq!((g.level, g.runs.clone()), (Level::Warn, vec![1]), "{g:?}");
        assert!(g.text.contains("1 of 2 runs: a process of the client used a whole core"), "{}", g.text);
        assert_eq!(client_saturated(&[run(2, &idle, 1.0, None)], &Bounds::default()).level, Level::Ok);
    }
}
