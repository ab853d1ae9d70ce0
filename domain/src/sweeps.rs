//! Parameter sweeps: a command step with a matrix of settings — environment
//! variables (`NCCL_PROTO`) and command-line placeholders (`{batch}`), each with
//! a list of values — runs every configuration of the grid, with warm-ups and
//! repeats per configuration, in an order that fights drift. The arithmetic
//! (the grid, the order, the labels) is here, shared by the server and the page.

use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;

/// One value of a setting: text as typed (numbers are kept as their text), or
/// `None`: an environment variable left unset (NCCL's own default).
pub type Level = Option<String>;
/// Setting → its values. Keys are variable names (`NCCL_PROTO`) or placeholders
/// in braces (`{batch}`), replaced in the command by the value, shell-quoted.
pub type Matrix = BTreeMap<String, Vec<Level>>;
/// The values one run ran with: setting → value.
pub type Config = BTreeMap<String, Level>;

pub const MAX_SETTINGS: usize = 8;
pub const MAX_LEVELS: usize = 32;
pub const MAX_CONFIGS: usize = 256;
/// Warm-ups and repeats of every configuration together.
pub const MAX_SWEEP_RUNS: usize = 1000;

/// `{batch}` → `batch`; `None` for an environment variable.
pub fn placeholder(key: &str) -> Option<&str> {
    key.strip_prefix('{')?.strip_suffix('}')
}

/// The setting whose values are patch steps (`null`: none), swept like an
/// environment variable: `"matrix": {"@patch": [null, 12]}`.
pub const PATCH_KEY: &str = "@patch";

/// Whether a setting is an environment variable (not a `{placeholder}`, not `@patch`).
pub fn is_env(key: &str) -> bool {
    placeholder(key).is_none() && !key.starts_with('@')
}

/// The patch step a configuration runs with: `None` where it sweeps no
/// patch, `Some(None)` for its arm without one.
pub fn patch_of(config: &Config) -> Option<Option<i64>> {
    config.get(PATCH_KEY).map(|level| level.as_deref().and_then(|v| v.parse().ok()))
}

/// Reads a matrix whose values are strings, numbers, booleans or null.
pub fn deserialize_matrix<'de, D: Deserializer<'de>>(d: D) -> Result<Matrix, D::Error> {
    use serde::de::Error;
    let raw: BTreeMap<String, Vec<serde_json::Value>> = BTreeMap::deserialize(d)?;
    raw.into_iter()
        .map(|(key, values)| {
            let levels = values
                .into_iter()
                .map(|v| match v {
                    serde_json::Value::Null => Ok(None),
                    serde_json::Value::String(s) => Ok(Some(s)),
                    serde_json::Value::Number(n) => Ok(Some(n.to_string())),
                    serde_json::Value::Bool(b) => Ok(Some(b.to_string())),
                    other => Err(D::Error::custom(format!(
                        "the values of {key} are text, numbers or null (unset), not {other}"
                    ))),
                })
                .collect::<Result<Vec<Level>, D::Error>>()?;
            Ok((key, levels))
        })
        .collect()
}

/// What is wrong with a sweep as written in the form.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum MatrixError {
    #[error("Line {line} of the sweep is not NAME = value, value…: {text:?}")]
    NotASetting { line: usize, text: String },
    #[error("{0} is in the sweep twice.")]
    Twice(String),
    #[error("Line {line} of the sweep has an empty name or value: {text:?} (write `unset` for a variable left unset).")]
    Empty { line: usize, text: String },
}

impl From<MatrixError> for crate::error::ApiError {
    fn from(error: MatrixError) -> Self {
        Self::invalid(error.to_string())
    }
}

/// The form's text: one setting a line, `NAME = a, b, unset` or
/// `{placeholder} = 1, 8, 32`; `unset` (alone) leaves a variable unset.
pub fn parse_matrix(text: &str) -> Result<Matrix, MatrixError> {
    let mut matrix = Matrix::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, values)) = line.split_once('=') else {
            return Err(MatrixError::NotASetting { line: n + 1, text: line.to_string() });
        };
        let levels: Vec<Level> = values
            .split(',')
            .map(str::trim)
            .map(|v| {
                // `none` is how the form writes the arm without a patch.
                let none =
                    v.eq_ignore_ascii_case("unset") || (key.trim() == PATCH_KEY && v.eq_ignore_ascii_case("none"));
                if none { None } else { Some(v.to_string()) }
            })
            .collect();
        if key.trim().is_empty() || levels.iter().any(|l| l.as_deref() == Some("")) {
            return Err(MatrixError::Empty { line: n + 1, text: line.to_string() });
        }
        if matrix.insert(key.trim().to_string(), levels).is_some() {
            return Err(MatrixError::Twice(key.trim().to_string()));
        }
    }
    Ok(matrix)
}

/// The matrix as the form shows it.
pub fn matrix_text(matrix: &Matrix) -> String {
    matrix
        .iter()
        .map(|(key, levels)| {
            let unset = if key == PATCH_KEY { "none" } else { "unset" };
            let values: Vec<&str> = levels.iter().map(|l| l.as_deref().unwrap_or(unset)).collect();
            format!("{key} = {}\n", values.join(", "))
        })
        .collect()
}

/// Every configuration of the grid, the last setting varying fastest.
pub fn configurations(matrix: &Matrix) -> Vec<Config> {
    let mut configs = vec![Config::new()];
    for (key, levels) in matrix {
        configs = configs
            .into_iter()
            .flat_map(|config| {
                levels.iter().map(move |level| {
                    let mut next = config.clone();
                    next.insert(key.clone(), level.clone());
                    next
                })
            })
            .collect();
    }
    if matrix.is_empty() { Vec::new() } else { configs }
}

/// How a configuration is named on pages, charts and in hypotheses:
/// `NCCL_ALGO=Ring NCCL_PROTO=(unset) batch=8`.
pub fn config_label(config: &Config) -> String {
    config
        .iter()
        .map(|(key, level)| {
            let name = placeholder(key).unwrap_or(key);
            let unset = if key == PATCH_KEY { "none" } else { "(unset)" };
            format!("{name}={}", level.as_deref().unwrap_or(unset))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether a run's configuration has every value `wanted` names (a partial
/// configuration picks all that agree on it).
pub fn matches(config: &Config, wanted: &Config) -> bool {
    wanted.iter().all(|(key, level)| config.get(key) == Some(level))
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Round after round, each configuration once per round: drift over the
    /// sweep's hours spreads over every configuration alike.
    #[default]
    Interleaved,
    /// The measured runs in a random order from `seed` (recorded).
    Shuffled,
    /// Each configuration's runs together (fastest when settings are costly to change).
    Grouped,
}

impl Order {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Interleaved => "interleaved",
            Self::Shuffled => "shuffled",
            Self::Grouped => "grouped",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Self::Interleaved, Self::Shuffled, Self::Grouped].into_iter().find(|o| o.as_str() == s)
    }
}

/// One run of the plan: which configuration, warm-up or not, and its number
/// among that configuration's warm-ups or measured runs (`index` of `of`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Planned {
    pub config: usize,
    pub warmup: bool,
    pub index: u32,
    pub of: u32,
}

/// SplitMix64: a small generator whose sequence for a seed never changes with
/// a dependency's version, so a recorded seed replays the same order.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// The order the sweep's runs go in. Warm-ups come first, interleaved (they
/// exist to warm the host, not to be compared), except when grouped, where
/// each configuration's warm-ups come just before its own runs.
pub fn plan(configs: usize, repeat: u32, warmup: u32, order: Order, seed: u64) -> Vec<Planned> {
    let warm = |config, index| Planned { config, warmup: true, index, of: warmup };
    let measured = |config, index| Planned { config, warmup: false, index, of: repeat };
    let mut runs = Vec::with_capacity(configs * (repeat + warmup) as usize);
    match order {
        Order::Grouped => {
            for c in 0..configs {
                runs.extend((1..=warmup).map(|w| warm(c, w)));
                runs.extend((1..=repeat).map(|r| measured(c, r)));
            }
        }
        Order::Interleaved | Order::Shuffled => {
            for w in 1..=warmup {
                runs.extend((0..configs).map(|c| warm(c, w)));
            }
            let mut rounds: Vec<Planned> =
                (1..=repeat).flat_map(|r| (0..configs).map(move |c| measured(c, r))).collect();
            if order == Order::Shuffled {
                // Fisher–Yates; then each configuration's runs renumbered in
                // the order they now run.
                let mut rng = SplitMix64(seed);
                for i in (1..rounds.len()).rev() {
                    let j = (rng.next() % (i as u64 + 1)) as usize;
                    rounds.swap(i, j);
                }
                let mut seen = vec![0u32; configs];
                for run in &mut rounds {
                    seen[run.config] += 1;
                    run.index = seen[run.config];
                }
            }
            runs.extend(rounds);
        }
    }
    runs
}

/// `POST /api/v1/steps/{id}/runs` on a step with a matrix makes one of these.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Sweep {
    pub id: i64,
    pub step_id: i64,
    pub configs: u32,
    pub repeat: u32,
    pub warmup: u32,
    pub order: Order,
    /// The shuffled order's seed (none for the others).
    pub seed: Option<u64>,
    /// Whether a failed run leaves the rest to run (true) or cancels them.
    pub keep_going: bool,
    /// Runs in all: configs × (warmup + repeat).
    pub runs: u32,
    pub who: Option<String>,
    pub created_at: String,
    /// Finished runs (any way), of which failed (not succeeded), and which one
    /// runs now with its configuration.
    pub done: u32,
    pub failed: u32,
    pub running: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_config: Option<String>,
}

impl Sweep {
    pub fn finished(&self) -> bool {
        self.done >= self.runs
    }

    /// `sweep 7 of 24 · NCCL_PROTO=LL NCCL_ALGO=Tree`, or how it ended.
    pub fn progress(&self) -> String {
        match (&self.running_config, self.finished()) {
            (_, true) if self.failed > 0 => format!("sweep done: {} runs, {} not succeeded", self.runs, self.failed),
            (_, true) => format!("sweep done: {} runs", self.runs),
            (Some(config), false) => format!("sweep {} of {} · running {config}", self.done + 1, self.runs),
            (None, false) => format!("sweep {} of {} · queued", self.done + 1, self.runs),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix(json: &str) -> Matrix {
        #[derive(Deserialize)]
        struct M(#[serde(deserialize_with = "deserialize_matrix")] Matrix);
        serde_json::from_str::<M>(json).unwrap().0
    }

    #[test]
    fn the_grid_of_the_nccl_example() {
        let m = matrix(r#"{"NCCL_PROTO": [null, "LL", "SIMPLE"], "NCCL_ALGO": ["Ring", "Tree"], "{batch}": [1, 8]}"#);
        let configs = configurations(&m);
        assert_eq!(configs.len(), 12);
        assert_eq!(config_label(&configs[0]), "NCCL_ALGO=Ring NCCL_PROTO=(unset) batch=1");
        assert_eq!(config_label(&configs[11]), "NCCL_ALGO=Tree NCCL_PROTO=SIMPLE batch=8");
        let ll: Config = [("NCCL_PROTO".to_string(), Some("LL".to_string()))].into();
        assert_eq!(configs.iter().filter(|c| matches(c, &ll)).count(), 4);
        assert!(configurations(&Matrix::new()).is_empty());
        assert!(serde_json::from_str::<serde_json::Value>(r#"{"A": [[1]]}"#).is_ok());
    }

    #[test]
    fn the_form_text_round_trips() {
        let m = parse_matrix("NCCL_PROTO = unset, LL, SIMPLE\n\n# a comment\n{batch} = 1, 8 , 32\n").unwrap();
        assert_eq!(m["NCCL_PROTO"], vec![None, Some("LL".into()), Some("SIMPLE".into())]);
        assert_eq!(m["{batch}"], vec![Some("1".into()), Some("8".into()), Some("32".into())]);
        assert_eq!(parse_matrix(&matrix_text(&m)).unwrap(), m);
        assert!(parse_matrix("JUSTANAME").unwrap_err().to_string().contains("Line 1"));
        assert_eq!(parse_matrix("A = 1\nA = 2").unwrap_err(), MatrixError::Twice("A".into()));
        for empty in ["A =", "A = 1, , 2", "= 1, 2", "A = 1,"] {
            assert!(matches!(parse_matrix(empty), Err(MatrixError::Empty { line: 1, .. })), "{empty}");
        }
    }

    #[test]
    fn nested_values_are_refused_with_a_reason() {
        #[derive(Debug, Deserialize)]
        struct M(
            #[serde(deserialize_with = "deserialize_matrix")]
            #[allow(dead_code)]
            Matrix,
        );
        let err = serde_json::from_str::<M>(r#"{"NCCL_PROTO": [["LL"]]}"#).unwrap_err().to_string();
        assert!(err.contains("NCCL_PROTO") && err.contains("null (unset)"), "{err}");
    }

    #[test]
    fn orders() {
        let grouped = plan(2, 2, 1, Order::Grouped, 0);
        let shape: Vec<(usize, bool, u32)> = grouped.iter().map(|p| (p.config, p.warmup, p.index)).collect();
        assert_eq!(shape, [(0, true, 1), (0, false, 1), (0, false, 2), (1, true, 1), (1, false, 1), (1, false, 2)]);
        let interleaved = plan(3, 2, 1, Order::Interleaved, 0);
        let shape: Vec<(usize, bool, u32)> = interleaved.iter().map(|p| (p.config, p.warmup, p.index)).collect();
        assert_eq!(
            shape,
            [
                (0, true, 1),
                (1, true, 1),
                (2, true, 1),
                (0, false, 1),
                (1, false, 1),
                (2, false, 1),
                (0, false, 2),
                (1, false, 2),
                (2, false, 2)
            ]
        );
        let a = plan(4, 5, 0, Order::Shuffled, 7);
        assert_eq!(a, plan(4, 5, 0, Order::Shuffled, 7), "a seed replays its order");
        assert_ne!(a, plan(4, 5, 0, Order::Shuffled, 8));
        assert_eq!(a.len(), 20);
        for c in 0..4 {
            let indexes: Vec<u32> = a.iter().filter(|p| p.config == c).map(|p| p.index).collect();
            assert_eq!(indexes, [1, 2, 3, 4, 5], "each configuration's runs numbered in run order");
        }
        assert_ne!(
            a.iter().map(|p| p.config).collect::<Vec<_>>(),
            plan(4, 5, 0, Order::Interleaved, 0).iter().map(|p| p.config).collect::<Vec<_>>()
        );
    }

    #[test]
    fn the_generator_is_splitmix64() {
        // Reference values of SplitMix64 from seed 0 (Vigna's splitmix64.c).
        let mut rng = SplitMix64(0);
        assert_eq!(rng.next(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(rng.next(), 0x6E78_9E6A_A1B9_65F4);
    }
}
