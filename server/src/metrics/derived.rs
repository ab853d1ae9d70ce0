//! Derived metrics: a number computed from a run's other measurements by a
//! formula the team writes once per investigation — `hbm_gbps =
//! output_throughput * weights_gb`, with `weights_gb = 6.4` a named constant —
//! so "13 % of peak" is a number on every run of a sweep, not arithmetic done by
//! hand. Formulas are explicit and shown: `+ - * /`, parentheses, numbers,
//! metric names (a run's first unkeyed value of that metric), constants, and
//! the numeric settings of a sweep's run by name (`batch` for `{batch}`).
//! A run that lacks a metric the formula names, or divides by zero, gets no
//! value rather than a wrong one.

use domain::error::ApiError;
use domain::metrics::{DerivedDef, Measurement};
use std::collections::BTreeMap;

pub const EXTRACTOR: &str = "derived";
const MAX_FORMULA_CHARS: usize = 500;
const MAX_CONSTANTS: usize = 20;

#[derive(Clone, Debug, PartialEq)]
enum Expr {
    Number(f64),
    Name(String),
    Neg(Box<Expr>),
    Op(Box<Expr>, char, Box<Expr>),
}

struct Parser<'a> {
    text: &'a str,
    at: usize,
}

impl Parser<'_> {
    fn skip_space(&mut self) {
        while self.text[self.at..].starts_with(char::is_whitespace) {
            self.at += self.text[self.at..].chars().next().map_or(1, char::len_utf8);
        }
    }

    fn peek(&mut self) -> Option<char> {
        self.skip_space();
        self.text[self.at..].chars().next()
    }

    fn error(&self, what: &str) -> FormulaError {
        FormulaError { what: what.to_string(), at: self.at + 1 }
    }

    fn expr(&mut self) -> Result<Expr, FormulaError> {
        let mut left = self.term()?;
        while let Some(op @ ('+' | '-')) = self.peek() {
            self.at += 1;
            left = Expr::Op(Box::new(left), op, Box::new(self.term()?));
        }
        Ok(left)
    }

    fn term(&mut self) -> Result<Expr, FormulaError> {
        let mut left = self.factor()?;
        while let Some(op @ ('*' | '/' | '×' | '÷')) = self.peek() {
            self.at += op.len_utf8();
            let op = match op {
                '×' => '*',
                '÷' => '/',
                other => other,
            };
            left = Expr::Op(Box::new(left), op, Box::new(self.factor()?));
        }
        Ok(left)
    }

    fn factor(&mut self) -> Result<Expr, FormulaError> {
        match self.peek() {
            Some('-') => {
                self.at += 1;
                Ok(Expr::Neg(Box::new(self.factor()?)))
            }
            Some('(') => {
                self.at += 1;
                let inner = self.expr()?;
                if self.peek() != Some(')') {
                    return Err(self.error("a missing )"));
                }
                self.at += 1;
                Ok(inner)
            }
            Some(c) if c.is_ascii_digit() || c == '.' => {
                let rest = &self.text[self.at..];
                let mut end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
                // An exponent: 1e9, 2.5E-3.
                if rest[end..].starts_with(['e', 'E']) {
                    let after = &rest[end + 1..];
                    let sign = usize::from(after.starts_with(['+', '-']));
                    let digits = after[sign..].find(|c: char| !c.is_ascii_digit()).unwrap_or(after.len() - sign);
                    if digits > 0 {
                        end += 1 + sign + digits;
                    }
                }
                let number = rest[..end].parse::<f64>().map_err(|_| self.error("a malformed number"))?;
                self.at += end;
                Ok(Expr::Number(number))
            }
            Some(c) if c == '_' || c.is_ascii_alphabetic() => {
                let rest = &self.text[self.at..];
                let end = rest.find(|c: char| !(c == '_' || c.is_ascii_alphanumeric())).unwrap_or(rest.len());
                self.at += end;
                Ok(Expr::Name(rest[..end].to_string()))
            }
            Some(c) => Err(self.error(&format!("an unexpected {c:?}"))),
            None => Err(self.error("an unfinished formula")),
        }
    }
}

/// Where a formula stops making sense.
#[derive(Debug, thiserror::Error)]
#[error("{what} at character {at} of the formula")]
struct FormulaError {
    what: String,
    /// 1-based, in characters.
    at: usize,
}

fn parse(text: &str) -> Result<Expr, FormulaError> {
    let mut parser = Parser { text, at: 0 };
    let expr = parser.expr()?;
    match parser.peek() {
        None => Ok(expr),
        Some(c) => Err(parser.error(&format!("an unexpected {c:?}"))),
    }
}

fn names(expr: &Expr, into: &mut Vec<String>) {
    match expr {
        Expr::Number(_) => {}
        Expr::Name(n) => {
            if !into.contains(n) {
                into.push(n.clone());
            }
        }
        Expr::Neg(e) => names(e, into),
        Expr::Op(a, _, b) => {
            names(a, into);
            names(b, into);
        }
    }
}

fn eval(expr: &Expr, value_of: &dyn Fn(&str) -> Option<f64>) -> Option<f64> {
    let value = match expr {
        Expr::Number(n) => *n,
        Expr::Name(n) => value_of(n)?,
        Expr::Neg(e) => -eval(e, value_of)?,
        Expr::Op(a, op, b) => {
            let (a, b) = (eval(a, value_of)?, eval(b, value_of)?);
            match op {
                '+' => a + b,
                '-' => a - b,
                '*' => a * b,
                _ if b == 0.0 => return None,
                _ => a / b,
            }
        }
    };
    value.is_finite().then_some(value)
}

fn is_metric_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
        && name.len() <= 64
}

/// Checks a definition: its name, its formula, its constants; a formula that
/// names itself is refused (it would never have a value).
pub fn check(def: &DerivedDef) -> Result<(), ApiError> {
    if !is_metric_name(&def.name) {
        return Err(ApiError::invalid(format!(
            "{:?} is not a metric name: letters, digits and _, like hbm_gbps.",
            def.name
        )));
    }
    if def.unit.chars().count() > 20 {
        return Err(ApiError::invalid("The unit is at most 20 characters."));
    }
    if def.formula.trim().is_empty() || def.formula.chars().count() > MAX_FORMULA_CHARS {
        return Err(ApiError::invalid(format!("The formula is 1 to {MAX_FORMULA_CHARS} characters.")));
    }
    let expr = parse(&def.formula).map_err(|e| ApiError::invalid(format!("The formula has {e}.")))?;
    if def.constants.len() > MAX_CONSTANTS {
        return Err(ApiError::invalid(format!("At most {MAX_CONSTANTS} constants.")));
    }
    for (name, value) in &def.constants {
        if !is_metric_name(name) || !value.is_finite() {
            return Err(ApiError::invalid(format!(
                "The constant {name:?} needs a name (letters, digits, _) and a finite number."
            )));
        }
    }
    let mut used = Vec::new();
    names(&expr, &mut used);
    if used.contains(&def.name) {
        return Err(ApiError::invalid(format!("The formula of {} names {} itself.", def.name, def.name)));
    }
    Ok(())
}

/// A sweep run's numeric settings as formula variables: `{batch}` = 8 is `batch`.
pub fn settings_of(config: &domain::sweeps::Config) -> BTreeMap<String, f64> {
    config
        .iter()
        .filter_map(|(key, level)| {
            let name = domain::sweeps::placeholder(key).unwrap_or(key);
            Some((name.to_string(), level.as_deref()?.trim().parse::<f64>().ok().filter(|v| v.is_finite())?))
        })
        .collect()
}

/// The derived values of a run whose measurements are `found`; `settings` are
/// its sweep configuration's numbers. A name is looked up as a constant, then
/// a setting, then a metric.
pub fn apply(defs: &[DerivedDef], found: &[Measurement], settings: &BTreeMap<String, f64>) -> Vec<Measurement> {
    // A metric's value in a run: its first unkeyed measurement, else its first.
    let mut values: BTreeMap<&str, f64> = BTreeMap::new();
    for m in found.iter().filter(|m| m.key.is_none()).chain(found.iter().filter(|m| m.key.is_some())) {
        values.entry(m.metric.as_str()).or_insert(m.value);
    }
    defs.iter()
        .filter_map(|def| {
            let expr = parse(&def.formula).ok()?;
            let value_of = |name: &str| {
                def.constants.get(name).or_else(|| settings.get(name)).or_else(|| values.get(name)).copied()
            };
            let value = eval(&expr, &value_of)?;
            Some(Measurement {
                metric: def.name.clone(),
                value: (value * 1e6).round() / 1e6,
                unit: def.unit.clone(),
                extractor: EXTRACTOR.into(),
                stddev: None,
                key: None,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(metric: &str, value: f64, key: Option<&str>) -> Measurement {
        Measurement {
            metric: metric.into(),
            value,
            unit: String::new(),
            extractor: "x".into(),
            stddev: None,
            key: key.map(str::to_string),
        }
    }

    fn def(name: &str, formula: &str, constants: &[(&str, f64)]) -> DerivedDef {
        DerivedDef {
            name: name.into(),
            unit: "GB/s".into(),
            formula: formula.into(),
            constants: constants.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }

    #[test]
    fn the_roofline_as_a_number_on_every_run() {
        // The founding story: 57.5 tok/s × 27.83 GB / 8 GPUs against 1 500 GB/s.
        let defs = [
            def("hbm_gbps", "output_throughput * weights_gb / gpus", &[("weights_gb", 27.83), ("gpus", 8.0)]),
            def("pct_of_peak", "100 × output_throughput × weights_gb ÷ 8 / 1.5e3", &[("weights_gb", 27.83)]),
        ];
        let got = apply(&defs, &[m("output_throughput", 57.5, None)], &BTreeMap::new());
        assert_eq!(got.len(), 2);
        assert!((got[0].value - 200.028_125).abs() < 1e-6, "{got:?}");
        assert!((got[1].value - 13.335).abs() < 1e-3, "{got:?}");
        assert!(got.iter().all(|m| m.extractor == EXTRACTOR));
    }

    #[test]
    fn precedence_signs_and_what_gives_no_value() {
        let one = |formula: &str, found: &[Measurement]| {
            apply(&[def("d", formula, &[])], found, &BTreeMap::new()).first().map(|m| m.value)
        };
        assert_eq!(one("1 + 2 * 3", &[]), Some(7.0));
        assert_eq!(one("(1 + 2) * 3", &[]), Some(9.0));
        assert_eq!(one("-2 * -3", &[]), Some(6.0));
        assert_eq!(one("10 - 4 - 3", &[]), Some(3.0), "left to right");
        assert_eq!(one("x / 0", &[m("x", 1.0, None)]), None, "no division by zero");
        assert_eq!(one("missing * 2", &[]), None, "a run without the metric gets no value");
        let keyed = [m("tg128", 10.0, Some("model a")), m("tg128", 20.0, None)];
        assert_eq!(one("tg128", &keyed), Some(20.0), "the unkeyed value first");
        // A sweep's numeric settings are variables too: tok/s per sequence.
        let config: domain::sweeps::Config =
            [("{batch}".to_string(), Some("8".to_string())), ("NCCL_PROTO".to_string(), Some("LL".to_string()))].into();
        let settings = settings_of(&config);
        assert_eq!(settings.get("batch"), Some(&8.0));
        assert!(!settings.contains_key("NCCL_PROTO"), "only numbers");
        let per_seq = apply(&[def("per_seq", "decode / batch", &[])], &[m("decode", 400.0, None)], &settings);
        assert_eq!(per_seq[0].value, 50.0);
    }

    #[test]
    fn bad_definitions_get_a_reason() {
        for (d, reason) in [
            (def("bad name", "1", &[]), "not a metric name"),
            (def("d", "1 +", &[]), "unfinished"),
            (def("d", "(1 + 2", &[]), "missing )"),
            (def("d", "2 ^ 3", &[]), "unexpected '^'"),
            (def("d", "d * 2", &[]), "names d itself"),
            (def("d", "x", &[("1x", 2.0)]), "constant"),
            (def("d", "x", &[("x", f64::NAN)]), "finite"),
            (def("d", "", &[]), "1 to 500"),
        ] {
            let err = check(&d).unwrap_err().message;
            assert!(err.contains(reason), "{reason:?} in {err:?}");
        }
        assert!(check(&def("hbm_gbps", "tok_s * weights_gb", &[("weights_gb", 6.4)])).is_ok());
    }
}
