//! `nsys stats` reports: `cuda_gpu_kern_sum` (kernels), `nvtx_sum` (ranges) and
//! `cuda_api_sum` (API calls), as CSV (`-f csv`) or as the text tables
//! `--stats=true` prints (thousands separators, columns padded by spaces).
//! Times are in the unit the header names (`Total Time (ns)`; `--timeunit`
//! changes it).
//!
//! The console output of `nsys profile --stats=true` (several tables under
//! headings) is read as one report: see `read_console`.
//!
//! A kernel summary has no steps of its own: when a kernel runs once per decode
//! step (the argmax that picks each step's token), its count is the number of
//! steps, and calls per step follow from the others.

use super::csv::split as split_csv;
use super::error::{ReadError, ReadResult};
use super::kernels::Breakdown;
use super::report::Report;
use domain::runs::ReportFormat;

type Reader = fn(&str) -> ReadResult<Report>;

/// Which table the start of a file is.
pub fn recognise(head: &str) -> Option<Reader> {
    let first = head.lines().find(|l| !l.trim().is_empty())?.trim();
    let csv = first.starts_with("Time (%),Total Time (") || first.starts_with("\"Time (%)\"");
    let text = first.starts_with("Time (%)") && first.contains("  Total Time (");
    if !(csv || text) {
        return None;
    }
    let columns = columns(first, csv);
    if columns.iter().any(|c| c == "Instances") && columns.last().is_some_and(|c| c == "Name") {
        Some(if csv { kernels_csv } else { kernels_text })
    } else if columns.iter().any(|c| c == "Range") {
        Some(if csv { ranges_csv } else { ranges_text })
    } else if columns.iter().any(|c| c == "Num Calls") && looks_like_cuda_api(head, csv) {
        Some(if csv { api_csv } else { api_text })
    } else {
        None
    }
}

/// `cuda_api_sum` and `osrt_sum` have the same columns; CUDA's functions
/// start with `cu` (`cudaLaunchKernel`, `cuModuleLoad`).
fn looks_like_cuda_api(head: &str, csv: bool) -> bool {
    let names: Vec<String> = head
        .lines()
        .skip(1)
        .filter(|l| l.trim().chars().next().is_some_and(|c| c.is_ascii_digit()))
        .take(5)
        .filter_map(|l| if csv { split_csv(l).pop() } else { l.split_whitespace().last().map(str::to_string) })
        .collect();
    !names.is_empty() && names.iter().all(|n| n.starts_with("cu"))
}

/// The header's column names.
fn columns(header: &str, csv: bool) -> Vec<String> {
    if csv {
        split_csv(header)
    } else {
        // Text headers separate names by two or more spaces.
        header.split("  ").map(str::trim).filter(|c| !c.is_empty()).map(str::to_string).collect()
    }
}

/// Factor from the header's time unit to ns: `Total Time (us)` → 1000.
fn to_ns(columns: &[String]) -> ReadResult<f64> {
    let total =
        columns.iter().find(|c| c.starts_with("Total Time")).ok_or(ReadError::Missing("no Total Time column"))?;
    match total.trim_start_matches("Total Time").trim().trim_matches(|c| c == '(' || c == ')') {
        "ns" => Ok(1.0),
        "us" | "µs" => Ok(1e3),
        "ms" => Ok(1e6),
        "s" | "sec" => Ok(1e9),
        other => Err(ReadError::TimeUnit(other.to_string())),
    }
}

/// Rows as (cells by column name) from a CSV or text table.
fn rows(text: &str, csv: bool) -> ReadResult<(Vec<String>, Vec<Vec<String>>)> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header = lines.next().ok_or(ReadError::Missing("empty"))?.trim();
    let columns = columns(header, csv);
    let mut rows = Vec::new();
    for (at, line) in lines.enumerate() {
        let line = line.trim();
        if line.starts_with("---") || line.starts_with("Time (%)") {
            continue;
        }
        if !line.chars().next().is_some_and(|c| c.is_ascii_digit()) {
            // The text form's table ends where the next report's heading begins.
            if csv {
                return Err(ReadError::at(at + 2, ReadError::NotARow));
            }
            break;
        }
        let cells = if csv {
            split_csv(line)
        } else {
            // Every column but the last (the name, which has spaces) is one word.
            let mut cells: Vec<String> = Vec::new();
            let mut rest = line;
            for _ in 0..columns.len() - 1 {
                let trimmed = rest.trim_start();
                let end = trimmed.find(char::is_whitespace).unwrap_or(trimmed.len());
                cells.push(trimmed[..end].to_string());
                rest = &trimmed[end..];
            }
            cells.push(rest.trim().to_string());
            cells
        };
        if cells.len() != columns.len() {
            return Err(ReadError::at(at + 2, ReadError::Cells { found: cells.len(), expected: columns.len() }));
        }
        rows.push(cells);
    }
    Ok((columns, rows))
}

fn cell<'a>(columns: &[String], row: &'a [String], name: &str) -> Option<&'a str> {
    columns.iter().position(|c| c.starts_with(name)).and_then(|i| row.get(i)).map(String::as_str)
}

/// A kernel table's GPU time by category, with steps where a kernel runs
/// once per step.
fn kernel_breakdown(text: &str, csv: bool) -> ReadResult<Breakdown> {
    let (columns, rows) = rows(text, csv)?;
    let ns = to_ns(&columns)?;
    let mut breakdown = Breakdown::default();
    let mut once_per_step: Option<(u64, String)> = None;
    for row in &rows {
        let (Some(total), Some(calls), Some(name)) =
            (cell(&columns, row, "Total Time"), cell(&columns, row, "Instances"), cell(&columns, row, "Name"))
        else {
            continue;
        };
        let (Some(total), Some(calls)) = (crate::metrics::number(total), crate::metrics::number(calls)) else {
            return Err(ReadError::NoNumbers(name.to_string()));
        };
        breakdown.add(name, total * ns, calls as u64);
        if name.to_ascii_lowercase().contains("argmax") && once_per_step.is_none() {
            once_per_step = Some((calls as u64, name.chars().take(80).collect()));
        }
    }
    if rows.is_empty() {
        return Err(ReadError::Missing("a kernel table without rows"));
    }
    if let Some((steps, name)) = once_per_step {
        breakdown.steps = Some(steps);
        breakdown.steps_from = Some(format!("the kernel run once per step ({name})"));
    }
    Ok(breakdown)
}

fn kernels(text: &str, csv: bool) -> ReadResult<Report> {
    let mut report = Report::new(ReportFormat::NsysKernels);
    kernel_breakdown(text, csv)?.measure(&mut report);
    Ok(report)
}

fn kernels_csv(text: &str) -> ReadResult<Report> {
    kernels(text, true)
}

fn kernels_text(text: &str) -> ReadResult<Report> {
    kernels(text, false)
}

/// NVTX ranges that mark steps: any whose name says `step` (`decode_step`
/// ×64, or PyTorch's `ProfilerStep#N` one instance each): their count and
/// mean length.
#[derive(Default)]
struct Steps {
    count: u64,
    total_ns: f64,
    names: Vec<String>,
}

fn ranges_into(text: &str, csv: bool, report: &mut Report) -> ReadResult<Steps> {
    let (columns, rows) = rows(text, csv)?;
    let ns = to_ns(&columns)?;
    let mut steps = Steps::default();
    for row in &rows {
        let (Some(range), Some(avg), Some(count)) =
            (cell(&columns, row, "Range"), cell(&columns, row, "Avg"), cell(&columns, row, "Instances"))
        else {
            continue;
        };
        let key = format!("range={}", range.chars().take(80).collect::<String>());
        if let (Some(avg), Some(count)) = (crate::metrics::number(avg), crate::metrics::number(count)) {
            report.add("nvtx_range_ms_mean", avg * ns / 1e6, "ms", Some(&key));
            report.add("nvtx_range_count", count, "ranges", Some(&key));
            if range.to_ascii_lowercase().contains("step") {
                steps.count += count as u64;
                steps.total_ns += avg * ns * count;
                if steps.names.len() < 3 {
                    steps.names.push(range.chars().take(60).collect());
                }
            }
        }
    }
    if steps.count > 0 {
        report.add("nvtx_steps", steps.count as f64, "steps", None);
        report.add("nvtx_step_ms_mean", steps.total_ns / steps.count as f64 / 1e6, "ms", None);
    }
    Ok(steps)
}

fn ranges(text: &str, csv: bool) -> ReadResult<Report> {
    let mut report = Report::new(ReportFormat::NsysNvtx);
    ranges_into(text, csv, &mut report)?;
    Ok(report)
}

fn ranges_csv(text: &str) -> ReadResult<Report> {
    ranges(text, true)
}

fn ranges_text(text: &str) -> ReadResult<Report> {
    ranges(text, false)
}

/// Rows kept of an API summary (by time, as nsys sorts them).
const API_ROWS: usize = 40;

/// `cuda_api_sum`: time and calls per CUDA API function. A launch-bound
/// decode shows as `cudaLaunchKernel` calls per step near the kernel count.
fn api_into(text: &str, csv: bool, report: &mut Report) -> ReadResult<()> {
    let (columns, rows) = rows(text, csv)?;
    let ns = to_ns(&columns)?;
    for row in rows.iter().take(API_ROWS) {
        let (Some(total), Some(calls), Some(name)) =
            (cell(&columns, row, "Total Time"), cell(&columns, row, "Num Calls"), cell(&columns, row, "Name"))
        else {
            continue;
        };
        let key = format!("api={}", name.chars().take(80).collect::<String>());
        if let (Some(total), Some(calls)) = (crate::metrics::number(total), crate::metrics::number(calls)) {
            report.add("cuda_api_ms", total * ns / 1e6, "ms", Some(&key));
            report.add("cuda_api_calls", calls, "calls", Some(&key));
        }
    }
    if rows.len() > API_ROWS {
        report
            .notes
            .push(format!("{} more API functions not kept (the {API_ROWS} slowest are)", rows.len() - API_ROWS));
    }
    Ok(())
}

fn api(text: &str, csv: bool) -> ReadResult<Report> {
    let mut report = Report::new(ReportFormat::NsysApi);
    api_into(text, csv, &mut report)?;
    Ok(report)
}

fn api_csv(text: &str) -> ReadResult<Report> {
    api(text, true)
}

fn api_text(text: &str) -> ReadResult<Report> {
    api(text, false)
}

/// `nsys profile --stats=true` (or `nsys stats` with several reports): each
/// table under its `[k/N] Executing 'name' stats report` heading. Kernels,
/// NVTX ranges and API calls are read into one report, and ranges that mark
/// steps give the kernel breakdown its steps and step time.
pub fn is_console(head: &str) -> bool {
    head.lines().any(|l| section_name(l).is_some())
}

fn section_name(line: &str) -> Option<&str> {
    let rest = line.trim().split_once("Executing '")?.1;
    let (name, tail) = rest.split_once('\'')?;
    tail.trim_start().starts_with("stats report").then_some(name)
}

pub fn read_console(text: &str) -> ReadResult<Report> {
    let mut report = Report::new(ReportFormat::NsysStats);
    let mut breakdown = None;
    let mut steps = Steps::default();
    let mut sections = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let starts: Vec<(usize, &str)> =
        lines.iter().enumerate().filter_map(|(i, l)| section_name(l).map(|n| (i, n))).collect();
    for (k, (at, name)) in starts.iter().enumerate() {
        let end = starts.get(k + 1).map_or(lines.len(), |(next, _)| *next);
        let body = lines[at + 1..end].join("\n");
        if body.lines().all(|l| !l.trim_start().starts_with("Time (%)")) {
            continue; // "SKIPPED: does not contain …"
        }
        let table = &body[body.find("Time (%)").unwrap_or(0)..];
        let read = match *name {
            "cuda_gpu_kern_sum" | "gpukernsum" => kernel_breakdown(table, false).map(|b| breakdown = Some(b)),
            "nvtx_sum" | "nvtxsum" | "nvtx_pushpop_sum" => ranges_into(table, false, &mut report).map(|s| {
                if s.count > 0 {
                    steps = s;
                }
            }),
            "cuda_api_sum" | "cudaapisum" => api_into(table, false, &mut report),
            _ => continue,
        };
        match read {
            Ok(()) => sections.push(*name),
            Err(e) => report.notes.push(format!("{name}: {e}")),
        }
    }
    if let Some(mut breakdown) = breakdown {
        if steps.count > 0 {
            breakdown.steps = Some(steps.count);
            breakdown.step_ns = Some(steps.total_ns / steps.count as f64);
            breakdown.steps_from = Some(format!("the NVTX ranges {}", steps.names.join(", ")));
        }
        breakdown.measure(&mut report);
    }
    if sections.is_empty() {
        return Err(ReadError::Missing("no kernel, NVTX or CUDA API table among its reports"));
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(r: &Report, metric: &str, key: Option<&str>) -> Option<f64> {
        r.measurements.iter().find(|m| m.metric == metric && m.key.as_deref() == key).map(|m| m.value)
    }

    #[test]
    fn the_decode_kernel_summary_per_step() {
        let text = crate::fixtures::read("reports/nsys/llm-perf-opt_per-stage_decode_cuda_gpu_kern_sum.csv");
        let r = recognise(&text).expect("a kernel table")(&text).expect("read");
        // The fixture's SOURCE: the argmax kernel runs 64 times, once per step;
        // 16448 gemvx calls / 64 = 257 per step. No NCCL: one GPU.
        assert_eq!(value(&r, "decode_steps", None), Some(64.0));
        assert_eq!(value(&r, "kernel_calls", Some("category=collective")), Some(0.0));
        assert_eq!(value(&r, "collective_calls_per_step", None), Some(0.0));
        let gemm_calls = value(&r, "kernel_calls", Some("category=gemm")).unwrap();
        assert!(gemm_calls >= 16448.0 + 2304.0, "{gemm_calls}");
        let shares: f64 = kernels_share(&r);
        assert!((shares - 100.0).abs() < 1e-6, "{shares}");
        // The table's Time (%) column: the two gemvx rows alone are 34.4 + 14.8 %.
        assert!(value(&r, "gpu_time_share_pct", Some("category=gemm")).unwrap() >= 49.2);
    }

    fn kernels_share(r: &Report) -> f64 {
        r.measurements.iter().filter(|m| m.metric == "gpu_time_share_pct").map(|m| m.value).sum()
    }

    #[test]
    fn units_come_from_the_header_and_text_tables_have_separators() {
        let us = "Time (%),Total Time (us),Instances,Avg (us),Med (us),Min (us),Max (us),StdDev (us),Name\n\
                  60.0,1500.5,160,9.4,9.0,8.0,12.0,1.0,\"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)\"\n\
                  40.0,1000.0,10,100.0,100.0,90.0,110.0,2.0,\"void at::native::reduce_kernel<512, 1, argmax>\"\n";
        let r = recognise(us).expect("kernels")(us).expect("read");
        assert_eq!(value(&r, "gpu_time_ms", Some("category=collective")), Some(1.5005));
        assert_eq!(value(&r, "collective_calls_per_step", None), Some(16.0));
        let text = crate::fixtures::read("reports/nsys/nsight-systems-deep-dive_README_stats_text.md");
        let table = text
            .lines()
            .skip_while(|l| !(l.contains("Time (%)") && l.contains("Instances") && l.trim_end().ends_with("Name")))
            .collect::<Vec<_>>()
            .join("\n");
        let r = recognise(&table).expect("a text kernel table")(&table).expect("read");
        assert!(value(&r, "gpu_time_ms", None).is_some_and(|ms| ms > 0.0));
        let cut = &us[..us.len() - 75];
        assert!(recognise(cut).expect("kernels")(cut).is_err(), "a cut row is an error, not a number");
    }

    /// The first `nsys profile --stats=true` of the fixture, as its console printed it.
    fn first_console_run() -> String {
        let text = crate::fixtures::read("reports/nsys/nsight-systems-deep-dive_README_stats_text.md");
        let runs: Vec<&str> = text.split("sudo $(which nsys) profile").collect();
        runs[1].to_string()
    }

    #[test]
    fn a_stats_console_output_is_one_report() {
        let run = first_console_run();
        assert!(is_console(&run));
        let r = read_console(&run).expect("read");
        assert_eq!(r.format.as_str(), "nsys-stats");
        // By hand from the fixture: vectorAdd 1,831,281 ns over 1,010 launches;
        // cudaLaunchKernel 1,010 calls, 3,201,638 ns; the osrt table is not CUDA's.
        assert_eq!(value(&r, "gpu_time_ms", None), Some(1.831281));
        assert_eq!(value(&r, "cuda_api_calls", Some("api=cudaLaunchKernel")), Some(1010.0));
        assert_eq!(value(&r, "cuda_api_ms", Some("api=cudaLaunchKernel")), Some(3.201638));
        assert_eq!(value(&r, "cuda_api_calls", Some("api=sem_wait")), None);
        assert_eq!(value(&r, "nvtx_range_count", Some("range=Profile_Loop")), Some(1.0));
        assert_eq!(value(&r, "decode_steps", None), None, "no range marks steps");
        // A range that marks steps gives the kernels their steps and step time.
        let stepped = run.replace("Profile_Loop", "Decode_Step ");
        let r = read_console(&stepped).expect("read");
        assert_eq!(value(&r, "decode_steps", None), Some(1.0));
        assert_eq!(value(&r, "step_time_ms", None), Some(3.481709));
        assert!(r.notes.iter().any(|n| n.contains("NVTX ranges Decode_Step")), "{:?}", r.notes);
    }

    #[test]
    fn an_api_summary_alone_and_the_os_runtime_one_is_not_it() {
        let run = first_console_run();
        let table = |name: &str| {
            let at = run.find(&format!("Executing '{name}'")).expect(name);
            let body = &run[at..];
            let body = &body[body.find("Time (%)").expect("header")..];
            body[..body.find("\n\n").unwrap_or(body.len())].to_string()
        };
        let api = table("cuda_api_sum");
        let r = recognise(&api).expect("an API table")(&api).expect("read");
        assert_eq!(r.format.as_str(), "nsys-api");
        assert_eq!(value(&r, "cuda_api_calls", Some("api=cudaMalloc")), Some(3.0));
        assert!(recognise(&table("osrt_sum")).is_none(), "OS runtime calls are not CUDA's");
    }
}
