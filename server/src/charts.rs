//! Charts as SVG, drawn on the server (plotters' SVG backend): readable without
//! JavaScript, and the same file an export will carry.

use app::metrics::{Comparison, GroupSummary};
use plotters::prelude::*;

/// plotters could not draw a chart (its SVG backend writes to a string, so
/// this is a bug of ours or of plotters, never the user's).
#[derive(Debug, thiserror::Error)]
#[error("drawing a chart: {0}")]
pub struct ChartError(String);

const WIDTH: u32 = 520;
const HEIGHT: u32 = 260;
const BASELINE: RGBColor = RGBColor(87, 96, 106);
const TREATMENT: RGBColor = RGBColor(9, 105, 218);

/// One experiment: the baseline group against the treatment group.
pub fn experiment(metric: &str, unit: &str, comparison: &Comparison) -> Result<String, ChartError> {
    let groups = [("baseline", &comparison.baseline), ("treatment", &comparison.treatment)];
    by_group(metric, unit, &groups, comparison.baseline.mean)
}

/// Labels longer than this are cut (with …) under the x axis; the page lists them whole.
const LABEL_CHARS: usize = 28;

/// A metric per configuration: every value as a dot in its group, each group's mean
/// with ±1 stddev bars when repeated (a ring when measured once), and `baseline`
/// as a dashed line across. The first group is drawn grey, the others blue.
pub fn by_group(
    metric: &str,
    unit: &str,
    groups: &[(&str, &GroupSummary)],
    baseline: f64,
) -> Result<String, ChartError> {
    let all = groups.iter().flat_map(|(_, g)| g.values.iter().copied()).chain([baseline]);
    let (lo, hi) = all.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let spread = groups.iter().filter_map(|(_, g)| g.stddev.map(|s| (g.mean - s, g.mean + s)));
    let (lo, hi) = spread.fold((lo, hi), |(lo, hi), (a, b)| (lo.min(a), hi.max(b)));
    let pad = ((hi - lo) * 0.15).max(hi.abs() * 0.01).max(1e-9);
    let (y0, y1) = (lo - pad, hi + pad);
    let n = groups.len().max(1);
    // Room for each label under its column (about 7 px a character at 12 px).
    let longest = groups.iter().map(|(label, _)| label.chars().count().min(LABEL_CHARS)).max().unwrap_or(0) as u32;
    let per_group = (longest * 7 + 16).max(120);
    let width = WIDTH.max(per_group * n as u32 + 100).min(1800);
    let labels: Vec<String> = groups
        .iter()
        .map(|(label, _)| {
            if label.chars().count() > LABEL_CHARS {
                label.chars().take(LABEL_CHARS - 1).chain(['…']).collect()
            } else {
                label.to_string()
            }
        })
        .collect();

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, HEIGHT)).into_drawing_area();
        let err = |e: DrawingAreaErrorKind<_>| ChartError(e.to_string());
        root.fill(&WHITE).map_err(err)?;
        let right = n as f64 - 0.5;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(28)
            .y_label_area_size(64)
            .build_cartesian_2d(-0.5f64..right, y0..y1)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n)
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() > 0.01 || i < 0.0 {
                    String::new()
                } else {
                    labels.get(i as usize).cloned().unwrap_or_default()
                }
            })
            .y_desc(format!("{metric} ({unit})"))
            .label_style(("sans-serif", 12))
            .axis_desc_style(("sans-serif", 12))
            .light_line_style(WHITE)
            .bold_line_style(RGBColor(234, 238, 242))
            .draw()
            .map_err(err)?;
        let dashes = DashedLineSeries::new([(-0.5, baseline), (right, baseline)], 6, 4, BASELINE.stroke_width(1));
        chart.draw_series(dashes).map_err(err)?;
        for (i, (_, group)) in groups.iter().enumerate() {
            let color = if i == 0 { BASELINE } else { TREATMENT };
            let x = i as f64;
            let k = group.values.len().max(1) as f64;
            // Spread the dots sideways a little so equal values stay visible.
            let dots = group.values.iter().enumerate().map(|(j, v)| (x - 0.12 + 0.24 * (j as f64 + 0.5) / k, *v));
            chart.draw_series(dots.map(|p| Circle::new(p, 3, color.mix(0.55).filled()))).map_err(err)?;
            if let Some(s) = group.stddev {
                let bar = ErrorBar::new_vertical(
                    x + 0.25,
                    group.mean - s,
                    group.mean,
                    group.mean + s,
                    color.stroke_width(2),
                    8,
                );
                chart.draw_series([bar]).map_err(err)?;
            } else {
                chart.draw_series([Circle::new((x + 0.25, group.mean), 4, color.stroke_width(2))]).map_err(err)?;
            }
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// How a panel reads one series from a sample.
type Read = fn(&app::telemetry::Sample) -> Option<f64>;

/// One panel of the telemetry chart: a title, what to draw, and a y range floor.
struct Panel {
    title: &'static str,
    series: &'static [(&'static str, Read)],
    /// 100 for percentages; otherwise the range follows the data.
    max: Option<f64>,
}

const PANELS: [Panel; 5] = [
    Panel { title: "SM / mem util %", series: &[("sm", |s| s.gpu_util), ("mem", |s| s.mem_util)], max: Some(100.0) },
    Panel { title: "power W", series: &[("W", |s| s.power_w)], max: None },
    Panel { title: "mem used GiB", series: &[("GiB", |s| s.mem_used_mib.map(|m| m / 1024.0))], max: None },
    Panel { title: "SM clock MHz", series: &[("MHz", |s| s.sm_clock_mhz)], max: None },
    Panel { title: "PCIe rx / tx MB/s", series: &[("rx", |s| s.pcie_rx_mbs), ("tx", |s| s.pcie_tx_mbs)], max: None },
];
const PANEL_W: u32 = 190;
const PANEL_H: u32 = 118;

/// A run's GPU telemetry: a row of small panels per GPU (utilisation, power,
/// memory used, SM clock, PCIe), every panel on the same time axis — seconds
/// since the run started, as its output's chunk times count. `None` without samples.
pub fn telemetry(telemetry: &app::telemetry::Telemetry) -> Result<Option<String>, ChartError> {
    let gpus: Vec<&app::telemetry::GpuSeries> = telemetry.gpus.iter().filter(|g| !g.samples.is_empty()).collect();
    if gpus.is_empty() {
        return Ok(None);
    }
    let end_s = gpus
        .iter()
        .flat_map(|g| g.samples.iter().map(|s| s.t_ms))
        .max()
        .map_or(1.0, |ms| (ms as f64 / 1000.0).max(1.0));
    let panels: Vec<&Panel> = PANELS
        .iter()
        .filter(|p| gpus.iter().any(|g| g.samples.iter().any(|s| p.series.iter().any(|(_, get)| get(s).is_some()))))
        .collect();
    let width = PANEL_W * panels.len() as u32 + 90;
    let height = PANEL_H * gpus.len() as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        let err = |e: DrawingAreaErrorKind<_>| ChartError(e.to_string());
        root.fill(&WHITE).map_err(err)?;
        for (row, gpu) in root.split_evenly((gpus.len(), 1)).iter().zip(&gpus) {
            let (label, cells) = row.split_horizontally(90);
            let name = format!("GPU {}", gpu.index);
            label.draw_text(&name, &("sans-serif", 13).into_font().color(&BLACK), (4, 44)).map_err(err)?;
            if !gpu.name.is_empty() {
                let short: String = gpu.name.chars().take(14).collect();
                label.draw_text(&short, &("sans-serif", 10).into_font().color(&BASELINE), (4, 62)).map_err(err)?;
            }
            for (cell, panel) in cells.split_evenly((1, panels.len())).iter().zip(&panels) {
                let points = |get: Read| -> Vec<(f64, f64)> {
                    gpu.samples.iter().filter_map(|s| Some((s.t_ms as f64 / 1000.0, get(s)?))).collect()
                };
                let top = panel.max.unwrap_or_else(|| {
                    let hi = panel.series.iter().flat_map(|(_, get)| points(*get)).map(|(_, v)| v).fold(0.0, f64::max);
                    if hi > 0.0 { hi * 1.15 } else { 1.0 }
                });
                let mut chart = ChartBuilder::on(cell)
                    .margin(6)
                    .caption(panel.title, ("sans-serif", 11))
                    .x_label_area_size(18)
                    .y_label_area_size(34)
                    .build_cartesian_2d(0f64..end_s, 0f64..top)
                    .map_err(err)?;
                chart
                    .configure_mesh()
                    .x_labels(3)
                    .y_labels(3)
                    .x_label_formatter(&|x| format!("{x:.0}s"))
                    .y_label_formatter(&|y| {
                        if *y >= 1000.0 { format!("{:.0}k", y / 1000.0) } else { format!("{y:.0}") }
                    })
                    .label_style(("sans-serif", 9))
                    .light_line_style(WHITE)
                    .bold_line_style(RGBColor(234, 238, 242))
                    .draw()
                    .map_err(err)?;
                for (i, (_, get)) in panel.series.iter().enumerate() {
                    let color = if i == 0 { TREATMENT } else { BASELINE };
                    chart.draw_series(LineSeries::new(points(*get), color.stroke_width(1))).map_err(err)?;
                }
            }
        }
        root.present().map_err(err)?;
    }
    Ok(Some(svg))
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

#[cfg(test)]
mod telemetry_tests {
    use super::*;
    use app::telemetry::{GpuSeries, Sample, Telemetry};

    #[test]
    fn a_row_per_gpu_and_only_panels_with_data() {
        let samples = |util: f64| {
            (0..20)
                .map(|i| Sample {
                    t_ms: i * 500,
                    gpu_util: Some(util),
                    mem_util: Some(util / 2.0),
                    power_w: Some(300.0),
                    ..Sample::default()
                })
                .collect::<Vec<_>>()
        };
        let t = Telemetry {
            gpus: vec![
                GpuSeries { index: 0, name: "NVIDIA H200".into(), samples: samples(70.0) },
                GpuSeries { index: 1, name: "NVIDIA H200".into(), samples: samples(10.0) },
            ],
            notes: vec![],
        };
        let svg = telemetry(&t).unwrap().expect("a chart");
        let texts: Vec<&str> = svg.split("</text>").filter_map(|t| t.rsplit('>').next()).map(str::trim).collect();
        assert!(texts.contains(&"GPU 0") && texts.contains(&"GPU 1"), "{texts:?}");
        assert!(texts.contains(&"SM / mem util %") && texts.contains(&"power W"), "{texts:?}");
        assert!(!texts.contains(&"PCIe rx / tx MB/s"), "no PCIe samples, no panel");
        assert!(svg.matches("<polyline").count() >= 6, "lines per GPU and series");
        assert!(telemetry(&Telemetry::default()).unwrap().is_none());
    }
}

#[cfg(test)]
mod by_group_tests {
    use super::*;

    #[test]
    fn one_column_per_configuration_with_the_baseline_dashed() {
        let s = |v: &[f64]| crate::metrics::stats::summarize(v).unwrap();
        let (a, b, c) = (s(&[57.4, 57.6, 57.5]), s(&[57.3]), s(&[57.7, 57.5]));
        let long = "NCCL_PROTO=SIMPLE NCCL_ALGO=Ring NCCL_DEBUG=INFO";
        let svg =
            by_group("output_throughput", "tok/s", &[("(default env)", &a), ("NCCL_PROTO=LL", &b), (long, &c)], 57.5)
                .unwrap();
        let texts: Vec<&str> = svg.split("</text>").filter_map(|t| t.rsplit('>').next()).map(str::trim).collect();
        for label in ["(default env)", "NCCL_PROTO=LL", "NCCL_PROTO=SIMPLE NCCL_ALGO…"] {
            assert!(texts.contains(&label), "{label} in {texts:?}");
        }
        assert!(svg.matches("<circle").count() > 6, "a dot per value and a ring for the single run");
    }
}
