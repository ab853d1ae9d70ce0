//! Charts as SVG, drawn on the server (plotters' SVG backend): readable without
//! JavaScript, and the same file an export will carry.

use domain::metrics::{Comparison, GroupSummary};
pub use domain::run_pages::ChartAxis as Axis;
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
/// Lines of several configurations or runs, in order: the first grey (what the
/// others are compared with), then blue, as the two-group charts draw them.
const PALETTE: [RGBColor; 8] = [
    BASELINE,
    TREATMENT,
    RGBColor(207, 34, 46),
    RGBColor(26, 127, 55),
    RGBColor(130, 80, 223),
    RGBColor(191, 135, 0),
    RGBColor(27, 124, 131),
    RGBColor(191, 57, 137),
];

/// One experiment: the baseline group against the treatment group, and where
/// each run's dot is (`runs`: each side's runs, in the order of its values).
pub fn experiment(
    metric: &str,
    unit: &str,
    comparison: &Comparison,
    runs: [Vec<Option<i64>>; 2],
) -> Result<(String, Vec<domain::metrics::ChartPoint>), ChartError> {
    let groups = [("baseline", &comparison.baseline), ("treatment", &comparison.treatment)];
    by_group(metric, unit, &groups, &runs, comparison.baseline.mean)
}

/// Most dots drawn per group.
const DOTS: usize = 40;

/// Labels longer than this are cut (with …) under the x axis; the page lists them whole.
const LABEL_CHARS: usize = 28;

/// A metric per configuration: every value as a dot in its group, each group's mean
/// with ±1 stddev bars when repeated (a ring when measured once), and `baseline`
/// as a dashed line across. The first group is drawn grey, the others blue.
/// Also where each run's dot is: `runs[i]` are group `i`'s runs, in the order
/// of its values (a group drawn as quantiles has no dots of runs).
pub fn by_group(
    metric: &str,
    unit: &str,
    groups: &[(&str, &GroupSummary)],
    runs: &[Vec<Option<i64>>],
    baseline: f64,
) -> Result<(String, Vec<domain::metrics::ChartPoint>), ChartError> {
    let mut points = Vec::new();
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
            // A group of many runs shows evenly spaced quantiles of its values
            // as its dots: the spread is the same, the page stays light.
            let shown = if group.values.len() > DOTS {
                domain::distributions::compact(group.values.clone(), DOTS)
            } else {
                group.values.clone()
            };
            let k = shown.len().max(1) as f64;
            // Spread the dots sideways a little so equal values stay visible.
            let dots: Vec<(f64, f64)> =
                shown.iter().enumerate().map(|(j, v)| (x - 0.12 + 0.24 * (j as f64 + 0.5) / k, *v)).collect();
            if group.values.len() <= DOTS
                && let Some(ids) = runs.get(i)
            {
                for (dot, id) in dots.iter().zip(ids) {
                    if let Some(run) = id {
                        let (x, y) = chart.backend_coord(dot);
                        points.push(domain::metrics::ChartPoint { run: *run, x, y, value: dot.1 });
                    }
                }
            }
            chart.draw_series(dots.into_iter().map(|p| Circle::new(p, 3, color.mix(0.55).filled()))).map_err(err)?;
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
    Ok((svg, points))
}

/// How a panel reads one series from a sample.
type Read = fn(&domain::telemetry::Sample) -> Option<f64>;

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
pub fn telemetry(telemetry: &domain::telemetry::Telemetry) -> Result<Option<String>, ChartError> {
    let gpus: Vec<&domain::telemetry::GpuSeries> = telemetry.gpus.iter().filter(|g| !g.samples.is_empty()).collect();
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

/// One panel of a run's timeline: its title, its lines (a label and its
/// points, seconds since the run started), and its y range's top when fixed.
pub struct TimelinePanel {
    pub title: String,
    pub max: Option<f64>,
    /// Points, not a line (one per request).
    pub dots: bool,
    pub lines: Vec<(String, Vec<(f64, f64)>)>,
}

/// A run's signals stacked on one time axis (seconds since it started): the
/// engine's queue over its KV-cache use over the GPUs' utilisation, so "TTFT
/// grew when the queue grew" is one look down. Lines in a panel are blue,
/// grey, then the palette's; each panel's caption names them. `None` when no
/// panel has a point.
pub fn timeline(panels: &[TimelinePanel]) -> Result<Option<String>, ChartError> {
    let drawn: Vec<&TimelinePanel> = panels.iter().filter(|p| p.lines.iter().any(|(_, l)| !l.is_empty())).collect();
    if drawn.is_empty() {
        return Ok(None);
    }
    let end_s =
        drawn.iter().flat_map(|p| p.lines.iter().flat_map(|(_, l)| l.iter().map(|(t, _)| *t))).fold(1.0, f64::max);
    let (width, panel_h) = (WIDTH + 240, 130u32);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, panel_h * drawn.len() as u32)).into_drawing_area();
        let err = |e: DrawingAreaErrorKind<_>| ChartError(e.to_string());
        root.fill(&WHITE).map_err(err)?;
        for (cell, panel) in root.split_evenly((drawn.len(), 1)).iter().zip(&drawn) {
            let colour = |i: usize| match i {
                0 => TREATMENT,
                1 => BASELINE,
                n => PALETTE[n % PALETTE.len()],
            };
            let named: Vec<String> = panel
                .lines
                .iter()
                .enumerate()
                .map(|(i, (label, _))| {
                    let name: String = label.chars().take(LABEL_CHARS).collect();
                    if panel.lines.len() > 1 {
                        format!("{name} ({})", ["blue", "grey"].get(i).unwrap_or(&""))
                    } else {
                        name
                    }
                })
                .collect();
            let caption = format!("{} — {}", panel.title, named.join(", "));
            let top = panel.max.unwrap_or_else(|| {
                let hi = panel.lines.iter().flat_map(|(_, l)| l.iter().map(|(_, v)| *v)).fold(0.0, f64::max);
                if hi > 0.0 { hi * 1.15 } else { 1.0 }
            });
            let mut chart = ChartBuilder::on(cell)
                .margin(6)
                .caption(caption, ("sans-serif", 12))
                .x_label_area_size(18)
                .y_label_area_size(44)
                .build_cartesian_2d(0f64..end_s, 0f64..top)
                .map_err(err)?;
            chart
                .configure_mesh()
                .x_labels(8)
                .y_labels(3)
                .x_label_formatter(&|x| format!("{x:.1}s"))
                .y_label_formatter(&|y| if *y >= 1000.0 { format!("{:.1}k", y / 1000.0) } else { format!("{y:.0}") })
                .label_style(("sans-serif", 9))
                .light_line_style(WHITE)
                .bold_line_style(RGBColor(234, 238, 242))
                .draw()
                .map_err(err)?;
            for (i, (_, points)) in panel.lines.iter().enumerate() {
                let shown = points.iter().copied().filter(|(t, v)| *t >= 0.0 && v.is_finite());
                if panel.dots {
                    chart.draw_series(shown.map(|p| Circle::new(p, 2, colour(i).filled()))).map_err(err)?;
                } else {
                    chart.draw_series(LineSeries::new(shown, colour(i).stroke_width(2))).map_err(err)?;
                }
            }
        }
        root.present().map_err(err)?;
    }
    Ok(Some(svg))
}

/// One run's GPUs as one line per panel: at each tick (the i-th sample of
/// every GPU, read from one `nvidia-smi` answer) the mean over its GPUs.
pub struct TelemetryLine<'a> {
    pub label: &'a str,
    pub telemetry: &'a domain::telemetry::Telemetry,
}

impl TelemetryLine<'_> {
    /// SM utilisation, the mean over the run's GPUs at each tick.
    pub fn gpu_util(&self) -> Vec<(f64, f64)> {
        self.points(|s| s.gpu_util)
    }

    fn points(&self, get: Read) -> Vec<(f64, f64)> {
        let gpus: Vec<&domain::telemetry::GpuSeries> =
            self.telemetry.gpus.iter().filter(|g| !g.samples.is_empty()).collect();
        let ticks = gpus.iter().map(|g| g.samples.len()).max().unwrap_or(0);
        (0..ticks)
            .filter_map(|i| {
                let read: Vec<(u64, f64)> =
                    gpus.iter().filter_map(|g| g.samples.get(i)).filter_map(|s| Some((s.t_ms, get(s)?))).collect();
                let t = read.iter().map(|(t, _)| *t).min()?;
                Some((t as f64 / 1000.0, read.iter().map(|(_, v)| v).sum::<f64>() / read.len() as f64))
            })
            .collect()
    }
}

/// Runs' GPU telemetry on one time axis (seconds since each run started): a
/// panel per reading (SM utilisation, power, memory used, SM clock), a line
/// per run, coloured as the runs are listed. `None` when no run was sampled.
pub fn telemetry_compared(lines: &[TelemetryLine]) -> Result<Option<String>, ChartError> {
    // A panel: its title, what it reads of a sample, its fixed top if any.
    type Panel = (&'static str, Read, Option<f64>);
    const READINGS: [Panel; 4] = [
        ("SM util % (GPU mean)", |s| s.gpu_util, Some(100.0)),
        ("power W (GPU mean)", |s| s.power_w, None),
        ("mem used GiB (GPU mean)", |s| s.mem_used_mib.map(|m| m / 1024.0), None),
        ("SM clock MHz (GPU mean)", |s| s.sm_clock_mhz, None),
    ];
    let drawn: Vec<(usize, &Panel)> = READINGS
        .iter()
        .enumerate()
        .filter(|(_, (_, get, _))| lines.iter().any(|l| !l.points(*get).is_empty()))
        .collect();
    if drawn.is_empty() {
        return Ok(None);
    }
    let end_s = lines
        .iter()
        .flat_map(|l| l.telemetry.gpus.iter().flat_map(|g| g.samples.iter().map(|s| s.t_ms)))
        .max()
        .map_or(1.0, |ms| (ms as f64 / 1000.0).max(1.0));
    let (columns, rows) = (2, drawn.len().div_ceil(2));
    let (width, height) = (WIDTH * 2, 200 * rows as u32 + 28);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        let err = |e: DrawingAreaErrorKind<_>| ChartError(e.to_string());
        root.fill(&WHITE).map_err(err)?;
        let (legend, body) = root.split_vertically(28);
        let mut x = 8;
        for (i, line) in lines.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let label: String = line.label.chars().take(LABEL_CHARS).collect();
            legend.draw(&PathElement::new([(x, 14), (x + 16, 14)], color.stroke_width(2))).map_err(err)?;
            legend.draw_text(&label, &("sans-serif", 12).into_font().color(&BLACK), (x + 20, 8)).map_err(err)?;
            x += 28 + 7 * label.chars().count() as i32;
        }
        for (cell, (_, (title, get, max))) in body.split_evenly((rows, columns)).iter().zip(&drawn) {
            let per_run: Vec<Vec<(f64, f64)>> = lines.iter().map(|l| l.points(*get)).collect();
            let top = max.unwrap_or_else(|| {
                let hi = per_run.iter().flatten().map(|(_, v)| *v).fold(0.0, f64::max);
                if hi > 0.0 { hi * 1.15 } else { 1.0 }
            });
            let mut chart = ChartBuilder::on(cell)
                .margin(8)
                .caption(*title, ("sans-serif", 12))
                .x_label_area_size(20)
                .y_label_area_size(44)
                .build_cartesian_2d(0f64..end_s, 0f64..top)
                .map_err(err)?;
            chart
                .configure_mesh()
                .x_labels(5)
                .y_labels(4)
                .x_label_formatter(&|x| format!("{x:.0}s"))
                .y_label_formatter(&|y| if *y >= 1000.0 { format!("{:.1}k", y / 1000.0) } else { format!("{y:.0}") })
                .label_style(("sans-serif", 10))
                .light_line_style(WHITE)
                .bold_line_style(RGBColor(234, 238, 242))
                .draw()
                .map_err(err)?;
            for (i, points) in per_run.into_iter().enumerate() {
                let color = PALETTE[i % PALETTE.len()];
                chart.draw_series(LineSeries::new(points, color.stroke_width(2))).map_err(err)?;
            }
        }
        root.present().map_err(err)?;
    }
    Ok(Some(svg))
}

/// One line of a CDF chart: its label, its values sorted, and its colour's
/// place in the palette (0 the baseline's grey, 1 blue, …); `thin` lines are
/// single runs under the pooled ones.
pub struct CdfLine<'a> {
    pub label: &'a str,
    pub sorted: &'a [f64],
    pub tone: usize,
    pub thin: bool,
}

/// Points per CDF line: enough for a smooth curve, few enough for a light page.
const CDF_POINTS: usize = 200;

/// Cumulative distributions of a per-request metric, overlaid: x the value,
/// y the share of requests at or under it; a dotted line marks `percentile`.
/// The x axis ends at the largest p99.9 so one straggler does not flatten
/// every curve (the caption says so).
pub fn cdf(metric: &str, unit: &str, lines: &[CdfLine], percentile: Option<f64>) -> Result<String, ChartError> {
    cdf_on(metric, unit, lines, percentile, Axis::Linear)
}

/// How a CDF's value axis is drawn: log when the values span more than a
/// factor of ten and are all above zero (a 9 ms curve beside a 5 s tail; a
/// linear axis would draw the fast side as a line at zero), else linear.
pub fn axis_for(lines: &[CdfLine]) -> Axis {
    let low = lines.iter().filter_map(|l| l.sorted.first().copied()).fold(f64::INFINITY, f64::min);
    let high = lines.iter().filter_map(|l| l.sorted.last().copied()).fold(0.0f64, f64::max);
    if low > 0.0 && low.is_finite() && high / low > 10.0 { Axis::Log } else { Axis::Linear }
}

/// [`cdf`] on the axis asked for.
pub fn cdf_on(
    metric: &str,
    unit: &str,
    lines: &[CdfLine],
    percentile: Option<f64>,
    axis: Axis,
) -> Result<String, ChartError> {
    let top =
        lines.iter().filter_map(|l| domain::distributions::percentile(l.sorted, 99.9)).fold(0.0f64, f64::max).max(1e-9);
    let low = lines.iter().filter_map(|l| l.sorted.first().copied()).fold(f64::INFINITY, f64::min);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        let err = |e: DrawingAreaErrorKind<_>| ChartError(e.to_string());
        root.fill(&WHITE).map_err(err)?;
        let mut builder = ChartBuilder::on(&root);
        builder.margin(12).x_label_area_size(32).y_label_area_size(48);
        let x_desc = match axis {
            Axis::Linear => format!("{metric} ({unit})"),
            Axis::Log => format!("{metric} ({unit}, log scale)"),
        };
        match axis {
            Axis::Linear => {
                let low = if low.is_finite() { (low - (top - low) * 0.05).max(0.0) } else { 0.0 };
                let chart = builder.build_cartesian_2d(low..top * 1.02, 0.0f64..1.0).map_err(err)?;
                draw_cdf(chart, &x_desc, lines, percentile, (low, top * 1.02))?;
            }
            Axis::Log => {
                let low = if low.is_finite() && low > 0.0 { low * 0.8 } else { top / 1e3 };
                let chart = builder.build_cartesian_2d((low..top * 1.25).log_scale(), 0.0f64..1.0).map_err(err)?;
                draw_cdf(chart, &x_desc, lines, percentile, (low, top * 1.25))?;
            }
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// The lines of [`cdf_on`] on a chart whose value axis is `x` (linear or log).
fn draw_cdf<'a, X>(
    mut chart: ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, plotters::coord::types::RangedCoordf64>>,
    x_desc: &str,
    lines: &[CdfLine],
    percentile: Option<f64>,
    (low, high): (f64, f64),
) -> Result<(), ChartError>
where
    X: Ranged<ValueType = f64> + plotters::coord::ranged1d::ValueFormatter<f64>,
{
    let err = |e: DrawingAreaErrorKind<_>| ChartError(e.to_string());
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc("share of requests")
        .label_style(("sans-serif", 12))
        .axis_desc_style(("sans-serif", 12))
        .light_line_style(WHITE)
        .bold_line_style(RGBColor(234, 238, 242))
        .draw()
        .map_err(err)?;
    if let Some(p) = percentile {
        let y = p / 100.0;
        chart.draw_series(DashedLineSeries::new([(low, y), (high, y)], 2, 3, BASELINE.stroke_width(1))).map_err(err)?;
    }
    // Thin lines first, so the pooled ones are drawn over them.
    let mut ordered: Vec<&CdfLine> = lines.iter().collect();
    ordered.sort_by_key(|l| !l.thin);
    for line in ordered {
        let color = PALETTE[line.tone % PALETTE.len()];
        let style = if line.thin { color.mix(0.3).stroke_width(1) } else { color.stroke_width(2) };
        let points = domain::distributions::cdf_points(line.sorted, CDF_POINTS)
            .into_iter()
            .map(|(x, y)| (x.clamp(low, high), y));
        let series = chart.draw_series(LineSeries::new(points, style)).map_err(err)?;
        if !line.thin {
            let label: String = line.label.chars().take(LABEL_CHARS).collect();
            series.label(label).legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], color.stroke_width(2)));
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(208, 215, 222))
        .label_font(("sans-serif", 12))
        .draw()
        .map_err(err)?;
    Ok(())
}

/// A step's history: each run's value in order (a dot each), each
/// segment's mean between change points as a line, and each change marked
/// where it begins, red for a regression, blue for an improvement.
pub fn history(
    metric: &str,
    unit: &str,
    runs: &[domain::history::HistoryPoint],
    changes: &[domain::history::Change],
) -> Result<String, ChartError> {
    let values: Vec<f64> = runs.iter().map(|r| r.value).filter(|v| v.is_finite()).collect();
    let (lo, hi) = values.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(*v), b.max(*v)));
    let pad = ((hi - lo) * 0.1).max(hi.abs() * 0.02).max(1e-9);
    let (lo, hi) = (if lo.is_finite() { lo - pad } else { 0.0 }, if hi.is_finite() { hi + pad } else { 1.0 });
    let n = runs.len().max(2) as f64;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH + 240, HEIGHT)).into_drawing_area();
        let err = |e: DrawingAreaErrorKind<_>| ChartError(e.to_string());
        root.fill(&WHITE).map_err(err)?;
        let caption = format!("{metric} by run{}", if unit.is_empty() { String::new() } else { format!(" ({unit})") });
        let mut chart = ChartBuilder::on(&root)
            .margin(10)
            .caption(caption, ("sans-serif", 13))
            .x_label_area_size(24)
            .y_label_area_size(56)
            .build_cartesian_2d(-0.5f64..n - 0.5, lo..hi)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("run, in order")
            // Runs are counted: as many labels as runs (up to 10), so that the
            // ticks fall on whole runs, and none on a half run.
            .x_labels(runs.len().clamp(2, 10))
            .y_labels(5)
            .x_label_formatter(&|x| {
                if (x - x.round()).abs() < 1e-6 { format!("{}", x.round() as i64 + 1) } else { String::new() }
            })
            .label_style(("sans-serif", 10))
            .light_line_style(WHITE)
            .bold_line_style(RGBColor(234, 238, 242))
            .draw()
            .map_err(err)?;
        for change in changes {
            let colour = if change.direction == domain::history::ChangeDirection::Regression {
                RGBColor(207, 34, 46)
            } else {
                TREATMENT
            };
            let x = change.index as f64 - 0.5;
            chart.draw_series(LineSeries::new([(x, lo), (x, hi)], colour.stroke_width(2))).map_err(err)?;
        }
        // Each segment's mean, from change to change.
        let mut bounds: Vec<usize> = vec![0];
        bounds.extend(changes.iter().map(|c| c.index));
        bounds.push(runs.len());
        for w in bounds.windows(2) {
            let part: Vec<f64> = runs[w[0]..w[1]].iter().map(|r| r.value).collect();
            if part.is_empty() {
                continue;
            }
            let mean = part.iter().sum::<f64>() / part.len() as f64;
            let line = [(w[0] as f64 - 0.4, mean), (w[1] as f64 - 0.6, mean)];
            chart.draw_series(LineSeries::new(line, BASELINE.stroke_width(2))).map_err(err)?;
        }
        let dots = runs.iter().enumerate().filter(|(_, r)| r.value.is_finite());
        chart
            .draw_series(dots.map(|(i, r)| Circle::new((i as f64, r.value), 3, TREATMENT.mix(0.7).filled())))
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// One configuration of a rate chart: its label, and per rate measured
/// (achieved request rate, p50, p99 of the latency drawn).
pub struct RateLine<'a> {
    pub label: &'a str,
    pub points: Vec<(f64, Option<f64>, Option<f64>)>,
}

/// Latency against load: per configuration, p50 (solid) and p99 (dashed)
/// against the achieved request rate; the SLO's bound as a dotted line and the
/// knee as a ring where the configuration last meets it.
pub fn rates(
    metric: &str,
    unit: &str,
    lines: &[RateLine],
    bound: Option<f64>,
    knees: &[(usize, f64)],
) -> Result<String, ChartError> {
    let xs = lines.iter().flat_map(|l| l.points.iter().map(|p| p.0));
    let ys = lines.iter().flat_map(|l| l.points.iter().flat_map(|p| [p.1, p.2]).flatten()).chain(bound);
    let x1 = xs.fold(0.0f64, f64::max).max(1e-9) * 1.08;
    let y1 = ys.fold(0.0f64, f64::max).max(1e-9) * 1.1;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT + 40)).into_drawing_area();
        let err = |e: DrawingAreaErrorKind<_>| ChartError(e.to_string());
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(32)
            .y_label_area_size(56)
            .build_cartesian_2d(0.0..x1, 0.0..y1)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("achieved request rate (req/s)")
            .y_desc(format!("{metric} ({unit})"))
            .label_style(("sans-serif", 12))
            .axis_desc_style(("sans-serif", 12))
            .light_line_style(WHITE)
            .bold_line_style(RGBColor(234, 238, 242))
            .draw()
            .map_err(err)?;
        if let Some(b) = bound {
            chart
                .draw_series(DashedLineSeries::new([(0.0, b), (x1, b)], 2, 3, BASELINE.stroke_width(1)))
                .map_err(err)?;
        }
        for (i, line) in lines.iter().enumerate() {
            let color = PALETTE[(i + 1) % PALETTE.len()];
            let mut sorted = line.points.clone();
            sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
            let p50: Vec<(f64, f64)> = sorted.iter().filter_map(|p| Some((p.0, p.1?))).collect();
            let p99: Vec<(f64, f64)> = sorted.iter().filter_map(|p| Some((p.0, p.2?))).collect();
            let label: String = line.label.chars().take(LABEL_CHARS).collect();
            chart
                .draw_series(LineSeries::new(p50.clone(), color.stroke_width(2)))
                .map_err(err)?
                .label(format!("{label} p50"))
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], color.stroke_width(2)));
            chart.draw_series(p50.iter().map(|p| Circle::new(*p, 3, color.filled()))).map_err(err)?;
            if p99.len() > 1 {
                chart.draw_series(DashedLineSeries::new(p99.clone(), 5, 3, color.stroke_width(2))).map_err(err)?;
            }
            chart.draw_series(p99.iter().map(|p| Circle::new(*p, 3, color.stroke_width(1)))).map_err(err)?;
            for (_, rate) in knees.iter().filter(|(at, _)| *at == i) {
                if let Some(point) = p99.iter().chain(&p50).find(|p| p.0 == *rate) {
                    chart.draw_series([Circle::new(*point, 7, color.stroke_width(2))]).map_err(err)?;
                }
            }
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(208, 215, 222))
            .label_font(("sans-serif", 12))
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// A sweep's frontier: each configuration at (its mean `minimize`, its mean
/// `maximize`), with its intervals as bars; those nothing beats on both joined
/// (blue), the others grey; one that meets the SLO ringed.
pub fn frontier(
    maximize: &str,
    minimize: &str,
    points: &[domain::frontier::FrontierPoint],
) -> Result<String, ChartError> {
    let xs = points.iter().flat_map(|p| [Some(p.minimize), p.minimize_ci.map(|c| c.1)]).flatten();
    let ys = points.iter().flat_map(|p| [Some(p.maximize), p.maximize_ci.map(|c| c.1)]).flatten();
    let x1 = xs.fold(0.0f64, f64::max).max(1e-9) * 1.12;
    let y1 = ys.fold(0.0f64, f64::max).max(1e-9) * 1.12;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT + 40)).into_drawing_area();
        let err = |e: DrawingAreaErrorKind<_>| ChartError(e.to_string());
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(32)
            .y_label_area_size(56)
            .build_cartesian_2d(0.0..x1, 0.0..y1)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(format!("{minimize} (lower is better)"))
            .y_desc(format!("{maximize} (higher is better)"))
            .label_style(("sans-serif", 12))
            .axis_desc_style(("sans-serif", 12))
            .light_line_style(WHITE)
            .bold_line_style(RGBColor(234, 238, 242))
            .draw()
            .map_err(err)?;
        let mut line: Vec<(f64, f64)> =
            points.iter().filter(|p| p.on_frontier).map(|p| (p.minimize, p.maximize)).collect();
        line.sort_by(|a, b| a.0.total_cmp(&b.0));
        chart.draw_series(LineSeries::new(line, TREATMENT.stroke_width(2))).map_err(err)?;
        for p in points {
            let color = if p.on_frontier { TREATMENT } else { BASELINE };
            let at = (p.minimize, p.maximize);
            if let Some((lo, hi)) = p.maximize_ci {
                chart
                    .draw_series([ErrorBar::new_vertical(at.0, lo, at.1, hi, color.mix(0.6).stroke_width(1), 6)])
                    .map_err(err)?;
            }
            if let Some((lo, hi)) = p.minimize_ci {
                chart
                    .draw_series([ErrorBar::new_horizontal(at.1, lo, at.0, hi, color.mix(0.6).stroke_width(1), 6)])
                    .map_err(err)?;
            }
            chart.draw_series([Circle::new(at, 4, color.filled())]).map_err(err)?;
            if p.meets_slo == Some(true) {
                chart.draw_series([Circle::new(at, 8, color.stroke_width(2))]).map_err(err)?;
            }
            let label: String = p.label.chars().take(LABEL_CHARS).collect();
            chart.draw_series([Text::new(label, at, ("sans-serif", 11).into_font().color(&BLACK))]).map_err(err)?;
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
        let (svg, points) =
            experiment("output_throughput", "tok/s", &comparison, [vec![Some(1), Some(2), Some(3)], vec![]]).unwrap();
        assert_eq!(points.iter().map(|p| p.run).collect::<Vec<_>>(), [1, 2, 3], "the baseline's runs' dots");
        assert!(svg.starts_with("<svg"), "{svg}");
        let texts: Vec<&str> = svg.split("</text>").filter_map(|t| t.rsplit('>').next()).map(str::trim).collect();
        assert!(texts.contains(&"baseline") && texts.contains(&"treatment"), "axis labels: {texts:?}");
        assert!(texts.contains(&"output_throughput (tok/s)"), "axis title");
        assert!(svg.matches("<circle").count() >= 6, "a dot per run");
        assert!(svg.contains("<polyline") || svg.contains("<line"), "the baseline line and the bars");
    }

    #[test]
    fn a_history_labels_each_run_once_on_whole_runs() {
        for n in [3usize, 7, 40] {
            let runs: Vec<_> = (0..n)
                .map(|i| domain::history::HistoryPoint {
                    run_id: i as i64 + 1,
                    value: 100.0 + (i % 3) as f64,
                    at: None,
                })
                .collect();
            let svg = history("output_throughput", "tok/s", &runs, &[]).unwrap();
            let texts: Vec<&str> = svg.split("</text>").filter_map(|t| t.rsplit('>').next()).map(str::trim).collect();
            let numbers: Vec<i64> = texts.iter().filter_map(|t| t.parse::<i64>().ok()).collect();
            let mut once = numbers.clone();
            once.dedup();
            assert_eq!(numbers, once, "{n} runs: a run number twice: {numbers:?}");
            assert!(numbers.iter().all(|k| (1..=n as i64).contains(k)), "{n} runs: {numbers:?}");
            assert!(numbers.len() >= 2, "{n} runs: {numbers:?}");
        }
    }
}

#[cfg(test)]
mod telemetry_tests {
    use super::*;
    use domain::telemetry::{GpuSeries, Sample, Telemetry};

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

    #[test]
    fn runs_compared_on_one_axis_as_the_mean_of_their_gpus() {
        let gpu = |index: u32, util: f64, jitter: u64| GpuSeries {
            index,
            name: String::new(),
            samples: (0..10)
                .map(|i| Sample { t_ms: i * 1000 + jitter, gpu_util: Some(util), ..Sample::default() })
                .collect(),
        };
        let a = Telemetry { gpus: vec![gpu(0, 80.0, 0), gpu(1, 40.0, 7)], notes: vec![] };
        let b = Telemetry { gpus: vec![gpu(0, 20.0, 3)], notes: vec![] };
        let line = TelemetryLine { label: "run 1", telemetry: &a };
        let points = line.points(|s| s.gpu_util);
        assert_eq!(points.len(), 10, "a point per tick, not per GPU reading: {points:?}");
        assert_eq!(points[2], (2.0, 60.0), "the tick's first reading's time, the GPUs' mean");
        let hostile = "<img src=x onerror=alert(1)>";
        let svg =
            telemetry_compared(&[line, TelemetryLine { label: hostile, telemetry: &b }]).unwrap().expect("a chart");
        let texts: Vec<&str> = svg.split("</text>").filter_map(|t| t.rsplit('>').next()).map(str::trim).collect();
        assert!(texts.contains(&"SM util % (GPU mean)"), "{texts:?}");
        assert!(!texts.contains(&"power W (GPU mean)"), "no power readings, no panel: {texts:?}");
        assert!(!svg.contains("<img"), "a label is text");
        let drawn =
            |color: &str| svg.split("<polyline").filter(|l| l.contains(color) && l.matches(',').count() > 5).count();
        assert_eq!((drawn("#57606A"), drawn("#0969DA")), (1, 1), "a line per run, in the runs' colours");
        let none = [TelemetryLine { label: "run 3", telemetry: &Telemetry::default() }];
        assert!(telemetry_compared(&none).unwrap().is_none());
    }
}

#[cfg(test)]
mod distribution_tests {
    use super::*;

    fn texts(svg: &str) -> Vec<&str> {
        svg.split("</text>").filter_map(|t| t.rsplit('>').next()).map(str::trim).collect()
    }

    #[test]
    fn cdfs_overlay_with_labels_escaped() {
        let a: Vec<f64> = (1..=500).map(f64::from).collect();
        let b: Vec<f64> = (1..=500).map(|v| f64::from(v) * 0.7).collect();
        let hostile = "<script>alert(1)</script>";
        let lines = [
            CdfLine { label: "baseline", sorted: &a, tone: 0, thin: false },
            CdfLine { label: hostile, sorted: &b, tone: 1, thin: false },
            CdfLine { label: "run 3", sorted: &b[..250], tone: 1, thin: true },
        ];
        let svg = cdf("ttft_ms", "ms", &lines, Some(99.0)).unwrap();
        assert!(!svg.contains("<script"), "markup in a label is text");
        assert!(svg.contains("&lt;script&gt;"), "and shown as such");
        assert!(texts(&svg).contains(&"share of requests"));
        assert!(svg.matches("<polyline").count() >= 3, "a line per series");
    }

    #[test]
    fn latencies_across_decades_get_a_log_axis_where_both_curves_are_seen() {
        // 9 ms against a 5 s tail: on a linear axis the fast run is a line at zero.
        let fast: Vec<f64> = (0..200).map(|i| 8.0 + f64::from(i) * 0.01).collect();
        let slow: Vec<f64> = (0..200).map(|i| 300.0 + f64::from(i) * 25.0).collect();
        let lines = [
            CdfLine { label: "run 1", sorted: &fast, tone: 0, thin: false },
            CdfLine { label: "run 2", sorted: &slow, tone: 1, thin: false },
        ];
        assert_eq!(axis_for(&lines), Axis::Log);
        let near = [CdfLine { label: "a", sorted: &fast, tone: 0, thin: false }];
        assert_eq!(axis_for(&near), Axis::Linear, "8…10 ms: linear");
        let zero = [0.0, 5.0, 500.0];
        assert_eq!(axis_for(&[CdfLine { label: "z", sorted: &zero, tone: 0, thin: false }]), Axis::Linear);
        // The fast curve's x positions: spread over a part of the width on a
        // log axis, squeezed into a pixel or two on a linear one.
        let spread = |svg: &str| {
            // The first curve: the first line of many points (ticks and the legend have two).
            let xs: Vec<f64> = svg
                .split("<polyline")
                .skip(1)
                .filter_map(|l| l.split("points=\"").nth(1)?.split('"').next())
                .map(|points| points.split(' ').filter_map(|p| p.split(',').next()?.parse().ok()).collect::<Vec<f64>>())
                .find(|xs| xs.len() > 50)
                .expect("a curve");
            xs.iter().copied().fold(f64::MIN, f64::max) - xs.iter().copied().fold(f64::MAX, f64::min)
        };
        let log = cdf_on("ttft_ms", "ms", &lines, None, Axis::Log).unwrap();
        let linear = cdf_on("ttft_ms", "ms", &lines, None, Axis::Linear).unwrap();
        assert!(texts(&log).contains(&"ttft_ms (ms, log scale)"), "{:?}", texts(&log));
        assert!(spread(&linear) < 2.0, "linear: {}", spread(&linear));
        assert!(spread(&log) > 5.0, "log: {}", spread(&log));
    }

    #[test]
    fn a_rate_chart_per_configuration() {
        let lines = [
            RateLine {
                label: "<b>tp=8</b>",
                points: vec![
                    (1.0, Some(50.0), Some(80.0)),
                    (4.0, Some(60.0), Some(150.0)),
                    (7.5, Some(90.0), Some(400.0)),
                ],
            },
            RateLine { label: "tp=4", points: vec![(1.0, Some(55.0), Some(90.0)), (3.9, Some(80.0), Some(260.0))] },
        ];
        let svg = rates("ttft_ms", "ms", &lines, Some(200.0), &[(0, 4.0)]).unwrap();
        assert!(!svg.contains("<b>"));
        assert!(texts(&svg).contains(&"achieved request rate (req/s)"));
        assert!(svg.matches("<circle").count() >= 10, "p50 and p99 points, and the knee's ring");
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
        let (svg, _) = by_group(
            "output_throughput",
            "tok/s",
            &[("(default env)", &a), ("NCCL_PROTO=LL", &b), (long, &c)],
            &[],
            57.5,
        )
        .unwrap();
        let texts: Vec<&str> = svg.split("</text>").filter_map(|t| t.rsplit('>').next()).map(str::trim).collect();
        for label in ["(default env)", "NCCL_PROTO=LL", "NCCL_PROTO=SIMPLE NCCL_ALGO…"] {
            assert!(texts.contains(&label), "{label} in {texts:?}");
        }
        assert!(svg.matches("<circle").count() > 6, "a dot per value and a ring for the single run");
    }
}
