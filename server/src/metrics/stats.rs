//! Baseline vs treatment on one metric: means, spread, and whether the difference
//! is more than noise.
//!
//! The interval is Welch's t interval for the difference of two means (no
//! assumption that both groups are equally noisy), expressed in percent of the
//! baseline mean. Dividing by the baseline mean treats it as exact, which slightly
//! understates the uncertainty of the percentage; with the handful of runs a
//! benchmark gets, the t quantile's width dominates. Checked against scipy (see the
//! tests).
//!
//! A positive metric (a latency, a throughput) cannot fall by more than all of
//! it; where the interval above would reach below −100 % (a baseline that
//! varies 100–5000 ms against 10 ms), the comparison is made on the
//! logarithms instead: the ratio of geometric means, with the Welch interval
//! of the difference of mean logs, which stays above −100 %. The verdict says
//! so, and `scale` is `log`.

use domain::metrics::{Comparison, GroupSummary, Outcome, Scale};
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

/// `(low, high)` of the 95 % t interval of a group's mean; none with one value.
pub fn mean_interval(group: &GroupSummary) -> Option<(f64, f64)> {
    let s = group.stddev?;
    let n = group.n as f64;
    let t = StudentsT::new(0.0, 1.0, n - 1.0).ok()?.inverse_cdf(0.975);
    let half = t * s / n.sqrt();
    Some((group.mean - half, group.mean + half))
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

/// The ratio of geometric means as a change in percent, and the 95 % Welch
/// interval of the mean logs' difference as one; none unless every value is
/// positive and each side has two or more.
fn log_ratio(baseline: &[f64], treatment: &[f64]) -> Option<(f64, (f64, f64))> {
    if baseline.iter().chain(treatment).any(|v| *v <= 0.0) {
        return None;
    }
    let logs = |values: &[f64]| summarize(&values.iter().map(|v| v.ln()).collect::<Vec<_>>());
    let (b, t) = (logs(baseline)?, logs(treatment)?);
    let (lo, hi) = welch_interval(&b, &t)?;
    let pct = |x: f64| (x.exp() - 1.0) * 100.0;
    Some((pct(t.mean - b.mean), (pct(lo), pct(hi))))
}

/// A bound of an interval in percent, with the decimals it needs not to read
/// as −100 when it is above it.
fn bound(x: f64) -> String {
    let mut places = digits(x);
    // −99.97 to no decimals would read "−100": more decimals until it does not.
    while places < 4 && x > -100.0 && format!("{:.*}", places, x).parse::<f64>() == Ok(-100.0) {
        places += 1;
    }
    signed(x, places).replace('+', "")
}

pub fn compare(baseline: &[f64], treatment: &[f64]) -> Option<Comparison> {
    let (b, t) = (summarize(baseline)?, summarize(treatment)?);
    if b.mean == 0.0 {
        return None;
    }
    let delta_pct = (t.mean - b.mean) / b.mean.abs() * 100.0;
    let linear = welch_interval(&b, &t).map(|(lo, hi)| (lo / b.mean.abs() * 100.0, hi / b.mean.abs() * 100.0));
    let logged = match linear {
        Some((lo, _)) if lo < -100.0 => log_ratio(baseline, treatment),
        _ => None,
    };
    if let Some((delta_pct, (lo, hi))) = logged {
        let outcome = Outcome::of(delta_pct, (lo, hi));
        let verdict = format!(
            "{} % (95 % CI {} … {} %; ratio of geometric means, on the log scale){}",
            signed(delta_pct, digits(delta_pct)),
            bound(lo),
            bound(hi),
            if outcome == Outcome::WithinNoise { ": within noise" } else { "" }
        );
        return Some(Comparison {
            baseline: b,
            treatment: t,
            delta_pct,
            ci_pct: Some((lo, hi)),
            outcome,
            verdict,
            scale: Scale::Log,
        });
    }
    let ci_pct = linear;
    let d = digits(delta_pct);
    let (outcome, verdict) = match ci_pct {
        None => (
            Outcome::NoiseUnknown,
            format!(
                "{} %: noise unknown with {} run(s) per side — repeat {SUGGESTED_REPEAT} each",
                signed(delta_pct, d),
                b.n.min(t.n)
            ),
        ),
        Some((lo, hi)) if lo <= 0.0 && hi >= 0.0 => {
            let half = (hi - lo) / 2.0;
            (Outcome::WithinNoise, format!("{} % ± {:.1} %: within noise", signed(delta_pct, d), half))
        }
        Some((lo, hi)) => {
            let dd = digits(lo).max(digits(hi));
            let line = format!(
                "{} % (95 % CI {} … {} %)",
                signed(delta_pct, d),
                signed(lo, dd).replace('+', ""),
                signed(hi, dd).replace('+', "")
            );
            (Outcome::of(delta_pct, (lo, hi)), line)
        }
    };
    Some(Comparison { baseline: b, treatment: t, delta_pct, ci_pct, outcome, verdict, scale: Scale::Linear })
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
        assert_eq!(noise.outcome, Outcome::WithinNoise);
        assert!(noise.verdict.ends_with("within noise"), "{}", noise.verdict);
        assert!(noise.verdict.starts_with("+0.3 % ± "), "{}", noise.verdict);

        let worse = compare(&[1049.39, 1032.10, 1061.84], &[612.2, 598.7, 620.9, 605.0, 611.3, 603.8]).unwrap();
        assert_eq!(worse.outcome, Outcome::Decrease);
        assert!(worse.verdict.starts_with("−42 % (95 % CI −"), "{}", worse.verdict);

        let one = compare(&[57.5], &[57.6]).unwrap();
        assert_eq!(one.outcome, Outcome::NoiseUnknown);
        assert_eq!(one.verdict, "+0.2 %: noise unknown with 1 run(s) per side — repeat 5 each");
        assert!(compare(&[0.0, 0.0], &[1.0, 2.0]).is_none(), "no percentage of zero");
        assert_eq!(worse.scale, Scale::Linear, "the interval stays above −100 %: as it was");

        // 100–5000 ms against 10 ms: the linear interval would pass −100 %.
        let (slow, fast) = ([100.0, 5000.0, 2500.0, 800.0], [10.0, 10.4, 9.7]);
        let (b, t) = (summarize(&slow).unwrap(), summarize(&fast).unwrap());
        assert!(welch_interval(&b, &t).unwrap().0 / b.mean * 100.0 < -100.0, "the case this is for");
        let faster = compare(&slow, &fast).unwrap();
        let (lo, hi) = faster.ci_pct.unwrap();
        assert_eq!(faster.scale, Scale::Log);
        assert!(-100.0 < lo && lo <= faster.delta_pct && faster.delta_pct <= hi, "{faster:?}");
        // The geometric means' ratio: (10·10.4·9.7)^(1/3) / (100·5000·2500·800)^(1/4) − 1.
        let expected =
            ((10.0f64 * 10.4 * 9.7).powf(1.0 / 3.0) / (100.0f64 * 5000.0 * 2500.0 * 800.0).powf(0.25) - 1.0) * 100.0;
        assert!((faster.delta_pct - expected).abs() < 1e-9, "{} vs {expected}", faster.delta_pct);
        assert!(faster.verdict.contains("ratio of geometric means, on the log scale"), "{}", faster.verdict);
        assert!(!faster.verdict.contains("−100 …"), "a bound above −100 % does not read as −100: {}", faster.verdict);
        assert!(compare(&[], &[1.0]).is_none());
    }
}
