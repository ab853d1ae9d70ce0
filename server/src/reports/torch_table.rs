//! PyTorch's `prof.key_averages().table()` text: columns between lines of
//! dashes, right-aligned values with unit suffixes (`12.178us`, `2.338ms`,
//! `12.68%`), names cut to the column's width with `...`.
//!
//! Kernels are the rows with GPU time of their own and no CPU time (an
//! operator's row repeats its kernels' time as its own "Self CUDA", so only
//! kernel rows are summed). `ProfilerStep*` gives the steps: its call count and
//! its average CPU time. A table cut by `row_limit` still has the whole GPU
//! time in its footer; what the shown rows do not account for is "other".

use super::error::{ReadError, ReadResult};
use super::kernels::{Breakdown, CATEGORIES};
use super::report::Report;
use domain::runs::ReportFormat;

const FORMAT: ReportFormat = ReportFormat::TorchTable;

/// The table starts with a rule of dashes and a header naming `Self CPU`.
pub fn recognise(head: &str) -> bool {
    let mut lines = head.lines().map(str::trim_end).skip_while(|l| !is_rule(l));
    lines.next().is_some() && lines.next().is_some_and(|h| h.trim_start().starts_with("Name") && h.contains("Self CPU"))
}

fn is_rule(line: &str) -> bool {
    line.len() > 20 && line.starts_with('-') && line.chars().all(|c| c == '-' || c == ' ')
}

/// Where the name column ends: the rule's first run of dashes. Names are cut
/// to fit it; the other columns are single words, though their headers may
/// spill a character into the gap (`CUDA time avg` is wider than its column).
fn name_width(rule: &str) -> usize {
    rule.find(' ').unwrap_or(rule.len())
}

fn header(line: &str) -> Vec<String> {
    line.split("  ").map(str::trim).filter(|c| !c.is_empty()).map(str::to_string).collect()
}

fn cells(line: &str, width: usize) -> Vec<String> {
    let name: String = line.chars().take(width).collect();
    let rest: String = line.chars().skip(width).collect();
    std::iter::once(name.trim().to_string()).chain(rest.split_whitespace().map(str::to_string)).collect()
}

/// `12.178us` → ns.
fn ns(text: &str) -> Option<f64> {
    let text = text.trim();
    let (number, factor) = if let Some(n) = text.strip_suffix("us") {
        (n, 1e3)
    } else if let Some(n) = text.strip_suffix("ms") {
        (n, 1e6)
    } else if let Some(n) = text.strip_suffix("ns") {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1e9)
    } else {
        return None;
    };
    number.trim().parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0).map(|v| v * factor)
}

pub fn read(text: &str) -> ReadResult<Report> {
    let mut lines = text.lines().map(str::trim_end).skip_while(|l| !is_rule(l));
    let rule = lines.next().ok_or(ReadError::Missing("no table"))?;
    let width = name_width(rule);
    let header = header(lines.next().ok_or(ReadError::Missing("a table without a header"))?);
    let column = |names: &[&str]| header.iter().position(|h| names.contains(&h.as_str()));
    let (Some(name), Some(self_cpu), Some(self_gpu), Some(calls)) = (
        column(&["Name"]),
        column(&["Self CPU"]),
        column(&["Self CUDA", "Self Device", "Self XPU"]),
        column(&["# of Calls"]),
    ) else {
        return Err(ReadError::Missing("the table has no Self CUDA column (was CUDA activity profiled?)"));
    };
    let cpu_avg = column(&["CPU time avg"]);
    let gpu_avg = column(&["CUDA time avg", "Device time avg"]);
    let mut report = Report::new(FORMAT);
    let mut breakdown = Breakdown::default();
    let mut annotated = 0u64;
    let mut steps: Option<(u64, Option<f64>)> = None;
    let mut gpu_total = None;
    let mut rows = 0usize;
    for (at, line) in lines.enumerate() {
        if is_rule(line) || line.trim().is_empty() {
            continue;
        }
        if let Some(total) = line.trim().strip_prefix("Self CUDA time total:") {
            gpu_total = ns(total);
            continue;
        }
        if line.trim().starts_with("Self ") && line.contains("time total:") {
            continue;
        }
        let row = cells(line, width);
        let count = row.get(calls).and_then(|c| c.parse::<u64>().ok());
        let (Some(row_name), Some(count), true) = (row.get(name), count, row.len() == header.len()) else {
            return Err(ReadError::at(at + 3, ReadError::NotARow));
        };
        rows += 1;
        let own_cpu = row.get(self_cpu).and_then(|c| ns(c)).unwrap_or(0.0);
        let own_gpu = row.get(self_gpu).and_then(|c| ns(c)).unwrap_or(0.0);
        if row_name.starts_with("ProfilerStep") {
            // Two rows: the CPU's steps and their GPU-side annotation.
            let cpu = cpu_avg.and_then(|c| row.get(c)).and_then(|c| ns(c)).filter(|v| *v > 0.0);
            let gpu = gpu_avg.and_then(|c| row.get(c)).and_then(|c| ns(c)).filter(|v| *v > 0.0);
            match (&mut steps, cpu) {
                (Some(known), Some(cpu)) => known.1 = Some(cpu),
                (None, _) => steps = Some((count, cpu.or(gpu))),
                _ => {}
            }
        } else if row_name.starts_with("nccl:") {
            annotated += count;
        } else if own_cpu == 0.0 && own_gpu > 0.0 {
            breakdown.add(row_name, own_gpu, count);
        }
    }
    if rows == 0 {
        return Err(ReadError::Missing("a table without rows"));
    }
    let shown: f64 = breakdown.totals.iter().map(|(ns, _)| ns).sum();
    if let Some(total) = gpu_total.filter(|t| *t > shown * 1.001) {
        let other = CATEGORIES.iter().position(|c| *c == "other").unwrap_or(4);
        breakdown.totals[other].0 += total - shown;
        report.notes.push(format!(
            "{:.3} ms of the {:.3} ms GPU time are in rows the table left out (row_limit): counted as other",
            (total - shown) / 1e6,
            total / 1e6
        ));
    }
    breakdown.calls_from_annotations(annotated, &mut report);
    if let Some((count, step_ns)) = steps {
        breakdown.steps = Some(count);
        breakdown.step_ns = step_ns;
        breakdown.steps_from = Some("the table's ProfilerStep* row".into());
    } else {
        report.notes.push("no ProfilerStep* row: per-step figures need torch.profiler.schedule".into());
    }
    breakdown.measure(&mut report);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(r: &Report, metric: &str, key: Option<&str>) -> Option<f64> {
        r.measurements.iter().find(|m| m.metric == metric && m.key.as_deref() == key).map(|m| m.value)
    }

    fn made_on_the_h200(file: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tools/gpu-check/results").join(file);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn units_and_spans() {
        assert_eq!(ns("12.178us"), Some(12_178.0));
        assert_eq!(ns("2.338ms"), Some(2_338_000.0));
        assert_eq!(ns("1.500s"), Some(1.5e9));
        assert_eq!(ns("12.68%"), None);
        assert_eq!(ns("-1.0ms"), None);
        assert_eq!(cells("  a b c   1.0ms  2", 7), ["a b c", "1.0ms", "2"]);
    }

    #[test]
    fn the_top_of_a_table_from_the_h200() {
        // `decode_trace.txt`: the top 15 rows (row_limit=15) of a 24-layer decode
        // loop's profile, 5 steps. Kernel rows, by hand: attention 6.264 ms,
        // GEMM 2.514 + 0.383976 ms, element-wise 0.252668 + 0.244002 ms.
        let text = made_on_the_h200("decode_trace.txt");
        assert!(recognise(&text));
        let r = read(&text).expect("read");
        assert_eq!(r.format.as_str(), "torch-table");
        assert_eq!(value(&r, "decode_steps", None), Some(5.0));
        assert_eq!(value(&r, "step_time_ms", None), Some(9.756), "the CPU's ProfilerStep* average");
        let near = |metric: &str, key: Option<&str>, want: f64| {
            let got = value(&r, metric, key).unwrap_or_else(|| panic!("{metric} {key:?}"));
            assert!((got - want).abs() < 1e-9, "{metric} {key:?}: {got} != {want}");
        };
        near("gpu_time_ms", Some("category=attention"), 6.264);
        near("gpu_time_ms", Some("category=gemm"), 2.514 + 0.383976);
        // The footer's total GPU time is kept whole; what the rows left out is other.
        near("gpu_time_ms", None, 9.707);
        assert!(r.notes.iter().any(|n| n.contains("row_limit")), "{:?}", r.notes);
    }

    #[test]
    fn the_whole_table_counts_the_collective_calls() {
        // `decode_trace_table.txt`: every row of the same profile. Two
        // all_reduce calls per layer × 24 layers: `nccl:all_reduce` 240 calls
        // over 5 steps (one rank: NCCL ran no kernel, so no collective GPU time).
        let r = read(&made_on_the_h200("decode_trace_table.txt")).expect("read");
        assert_eq!(value(&r, "collective_calls_per_step", None), Some(48.0));
        assert_eq!(value(&r, "gpu_time_ms", Some("category=collective")), Some(0.0));
        let total = value(&r, "gpu_time_ms", None).expect("total");
        assert!((total - 9.707).abs() < 0.001, "the kernel rows add up to the footer: {total}");
        assert!(!r.notes.iter().any(|n| n.contains("row_limit")), "{:?}", r.notes);
    }

    #[test]
    fn cut_and_foreign_tables() {
        let text = made_on_the_h200("decode_trace.txt");
        let cut: String = text.lines().take(12).map(|l| format!("{l}\n")).collect();
        let half = &cut[..cut.len() - 40];
        assert!(read(half).is_err(), "a row cut in half is an error, not a number");
        let no_gpu = "-----------------------  ------------  ------------\n\
                      Name                       Self CPU    # of Calls\n\
                      -----------------------  ------------  ------------\n\
                      aten::mm                    1.000ms             2\n";
        assert!(recognise(no_gpu));
        assert!(read(no_gpu).unwrap_err().to_string().contains("Self CUDA"));
    }
}
