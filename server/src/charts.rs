//! Charts as SVG, drawn on the server (plotters' SVG backend): readable without
//! JavaScript, and the same file an export will carry.

use app::metrics::Comparison;
use plotters::prelude::*;

const WIDTH: u32 = 520;
const HEIGHT: u32 = 260;
const BASELINE: RGBColor = RGBColor(87, 96, 106);
const TREATMENT: RGBColor = RGBColor(9, 105, 218);

/// One experiment: every run's value as a dot in its group, each group's mean with
/// ±1 stddev bars when repeated, and the baseline mean as a dashed line across.
pub fn experiment(metric: &str, unit: &str, comparison: &Comparison) -> Result<String, String> {
    let groups = [("baseline", &comparison.baseline, BASELINE), ("treatment", &comparison.treatment, TREATMENT)];
    let all = groups.iter().flat_map(|(_, g, _)| g.values.iter().copied());
    let (lo, hi) = all.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let spread = groups.iter().filter_map(|(_, g, _)| g.stddev.map(|s| (g.mean - s, g.mean + s)));
    let (lo, hi) = spread.fold((lo, hi), |(lo, hi), (a, b)| (lo.min(a), hi.max(b)));
    let pad = ((hi - lo) * 0.15).max(hi.abs() * 0.01).max(1e-9);
    let (y0, y1) = (lo - pad, hi + pad);

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        let err = |e: DrawingAreaErrorKind<_>| e.to_string();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(28)
            .y_label_area_size(64)
            .build_cartesian_2d(-0.5f64..1.5f64, y0..y1)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(2)
            .x_label_formatter(&|x| match x.round() as i64 {
                0 => "baseline".into(),
                1 => "treatment".into(),
                _ => String::new(),
            })
            .y_desc(format!("{metric} ({unit})"))
            .label_style(("sans-serif", 12))
            .axis_desc_style(("sans-serif", 12))
            .light_line_style(WHITE)
            .bold_line_style(RGBColor(234, 238, 242))
            .draw()
            .map_err(err)?;
        let base = comparison.baseline.mean;
        chart.draw_series(LineSeries::new([(-0.5, base), (1.5, base)], BASELINE.stroke_width(1))).map_err(err)?;
        for (i, (_, group, color)) in groups.iter().enumerate() {
            let x = i as f64;
            let n = group.values.len().max(1) as f64;
            // Spread the dots sideways a little so equal values stay visible.
            let dots = group.values.iter().enumerate().map(|(k, v)| (x - 0.12 + 0.24 * (k as f64 + 0.5) / n, *v));
            chart.draw_series(dots.map(|p| Circle::new(p, 3, color.mix(0.55).filled()))).map_err(err)?;
            if let Some(s) = group.stddev {
                chart
                    .draw_series([ErrorBar::new_vertical(
                        x + 0.25,
                        group.mean - s,
                        group.mean,
                        group.mean + s,
                        color.stroke_width(2),
                        8,
                    )])
                    .map_err(err)?;
            } else {
                chart.draw_series([Circle::new((x + 0.25, group.mean), 4, color.stroke_width(2))]).map_err(err)?;
            }
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_experiment_chart_has_both_groups_and_the_baseline() {
        let comparison = crate::metrics::stats::compare(&[57.4, 57.6, 57.5], &[33.1, 33.4, 33.0]).unwrap();
        let svg = experiment("output_throughput", "tok/s", &comparison).unwrap();
        assert!(svg.starts_with("<svg"), "{svg}");
        let texts: Vec<&str> = svg.split("</text>").filter_map(|t| t.rsplit('>').next()).map(str::trim).collect();
        assert!(texts.contains(&"baseline") && texts.contains(&"treatment"), "axis labels: {texts:?}");
        assert!(texts.contains(&"output_throughput (tok/s)"), "axis title");
        assert!(svg.matches("<circle").count() >= 6, "a dot per run");
        assert!(svg.contains("<polyline") || svg.contains("<line"), "the baseline line and the bars");
    }
}
