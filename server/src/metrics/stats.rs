//! Baseline vs treatment on one metric: means, spread, and whether the difference
//! is more than noise.
//!
//! The interval is Welch's t interval for the difference of two means (no
//! assumption that both groups are equally noisy), expressed in percent of the
//! baseline mean. Dividing by the baseline mean treats it as exact, which slightly
//! understates the uncertainty of the percentage; with the handful of runs a
//! benchmark gets, the t quantile's width dominates. Checked against scipy (see the
//! tests).

use domain::metrics::{Comparison, GroupSummary};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Runs to suggest when a side has a single value.
pub const SUGGESTED_REPEAT: u32 = 5;

pub fn summarize(values: &[f64]) -> Option<GroupSummary> {
    if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let n = values.len();
    let mean = values.iter().sum::<f64>() / n as f64;
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = if n % 2 == 1 { sorted[n / 2] } else { (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0 };
    let stddev = (n > 1).then(|| (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n as f64 - 1.0)).sqrt());
    Some(GroupSummary { n, mean, median, stddev, values: values.to_vec() })
}

/// `(low, high)` of the 95 % Welch interval of `treatment − baseline`, or none
/// when either side has fewer than two values.
pub fn welch_interval(baseline: &GroupSummary, treatment: &GroupSummary) -> Option<(f64, f64)> {
    let (sb, st) = (baseline.stddev?, treatment.stddev?);
    let (nb, nt) = (baseline.n as f64, treatment.n as f64);
    let (vb, vt) = (sb * sb / nb, st * st / nt);
    let delta = treatment.mean - baseline.mean;
    let se = (vb + vt).sqrt();
    if se == 0.0 {
        return Some((delta, delta));
    }
    let df = (vb + vt).powi(2) / (vb * vb / (nb - 1.0) + vt * vt / (nt - 1.0));
    let t = StudentsT::new(0.0, 1.0, df).ok()?.inverse_cdf(0.975);
    Some((delta - t * se, delta + t * se))
}

/// "+3.1", "−42" (a real minus sign), to `digits` decimals.
fn signed(x: f64, digits: usize) -> String {
    let text = format!("{:.*}", digits, x.abs());
    if x < 0.0 && text.chars().any(|c| c.is_ascii_digit() && c != '0') {
        format!("−{text}")
    } else {
        format!("+{text}")
    }
}

fn digits(x: f64) -> usize {
    if x.abs() >= 10.0 { 0 } else { 1 }
}

pub fn compare(baseline: &[f64], treatment: &[f64]) -> Option<Comparison> {
    let (b, t) = (summarize(baseline)?, summarize(treatment)?);
    if b.mean == 0.0 {
        return None;
    }
    let delta_pct = (t.mean - b.mean) / b.mean.abs() * 100.0;
    let ci_pct = welch_interval(&b, &t).map(|(lo, hi)| (lo / b.mean.abs() * 100.0, hi / b.mean.abs() * 100.0));
    let d = digits(delta_pct);
    let (outcome, verdict) = match ci_pct {
        None => (
            "noise_unknown",
            format!(
                "{} %: noise unknown with {} run(s) per side — repeat {SUGGESTED_REPEAT} each",
                signed(delta_pct, d),
                b.n.min(t.n)
            ),
        ),
        Some((lo, hi)) if lo <= 0.0 && hi >= 0.0 => {
            let half = (hi - lo) / 2.0;
            ("within_noise", format!("{} % ± {:.1} %: within noise", signed(delta_pct, d), half))
        }
        Some((lo, hi)) => {
            let dd = digits(lo).max(digits(hi));
            let line = format!(
                "{} % (95 % CI {} … {} %)",
                signed(delta_pct, d),
                signed(lo, dd).replace('+', ""),
                signed(hi, dd).replace('+', "")
            );
            (if delta_pct > 0.0 { "increase" } else { "decrease" }, line)
        }
    };
    Some(Comparison { baseline: b, treatment: t, delta_pct, ci_pct, outcome: outcome.into(), verdict })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6 * b.abs().max(1.0)
    }

    /// Reference values from scipy 1.17.1, computed independently:
    /// ```python
    /// from scipy import stats
    /// r = stats.ttest_ind(t, b, equal_var=False)
    /// ci = r.confidence_interval(0.95)   # Welch interval of mean(t) - mean(b)
    /// ```
    #[test]
    fn welch_interval_matches_scipy() {
        let baseline = [57.4, 57.6, 57.5, 57.3, 57.7];
        let treatment = [57.9, 57.2, 58.1, 57.6];
        let (b, t) = (summarize(&baseline).unwrap(), summarize(&treatment).unwrap());
        let (lo, hi) = welch_interval(&b, &t).unwrap();
        assert!(close(lo, SCIPY_LO_1), "{lo}");
        assert!(close(hi, SCIPY_HI_1), "{hi}");

        let baseline = [1049.39, 1032.10, 1061.84];
        let treatment = [612.2, 598.7, 620.9, 605.0, 611.3, 603.8];
        let (b, t) = (summarize(&baseline).unwrap(), summarize(&treatment).unwrap());
        let (lo, hi) = welch_interval(&b, &t).unwrap();
        assert!(close(lo, SCIPY_LO_2), "{lo}");
        assert!(close(hi, SCIPY_HI_2), "{hi}");
    }

    // scipy 1.17.1, the two calls above.
    const SCIPY_LO_1: f64 = -0.39112088227713915;
    const SCIPY_HI_1: f64 = 0.7911208822771306;
    const SCIPY_LO_2: f64 = -471.3959916294226;
    const SCIPY_HI_2: f64 = -406.8573417039105;

    #[test]
    fn summaries() {
        let s = summarize(&[3.0, 1.0, 2.0, 10.0]).unwrap();
        assert_eq!((s.n, s.mean, s.median), (4, 4.0, 2.5));
        assert!(close(s.stddev.unwrap(), (50.0f64 / 3.0).sqrt()));
        assert_eq!(summarize(&[5.0]).unwrap().stddev, None);
        assert!(summarize(&[]).is_none());
        assert!(summarize(&[1.0, f64::NAN]).is_none());
    }

    #[test]
    fn verdict_lines() {
        let noise = compare(&[57.4, 57.6, 57.5, 57.3, 57.7], &[57.9, 57.2, 58.1, 57.6]).unwrap();
        assert_eq!(noise.outcome, "within_noise");
        assert!(noise.verdict.ends_with("within noise"), "{}", noise.verdict);
        assert!(noise.verdict.starts_with("+0.3 % ± "), "{}", noise.verdict);

        let worse = compare(&[1049.39, 1032.10, 1061.84], &[612.2, 598.7, 620.9, 605.0, 611.3, 603.8]).unwrap();
        assert_eq!(worse.outcome, "decrease");
        assert!(worse.verdict.starts_with("−42 % (95 % CI −"), "{}", worse.verdict);

        let one = compare(&[57.5], &[57.6]).unwrap();
        assert_eq!(one.outcome, "noise_unknown");
        assert_eq!(one.verdict, "+0.2 %: noise unknown with 1 run(s) per side — repeat 5 each");
        assert!(compare(&[0.0, 0.0], &[1.0, 2.0]).is_none(), "no percentage of zero");
        assert!(compare(&[], &[1.0]).is_none());
    }
}
