//! Collective sweeps: the latency and bus bandwidth of an all-reduce (or other
//! collective) at each message size, one measurement per size keyed by it
//! (`allreduce_time_us` for `16384 B`), so a collective-budget calculator can
//! take the latency at the size a decode step sends.
//!
//! Two shapes are read, both found by their header words, never by column
//! position:
//! - nccl-tests (`all_reduce_perf`): `size count type redop root time algbw
//!   busbw #wrong time …`; the first (out-of-place) time and busbw are taken;
//! - a plain sweep such as a torch.distributed script prints:
//!   `size(B) time(us) algbw(GB/s) busbw(GB/s)`.
//!
//! Log lines between rows (NCCL INFO, torch warnings) are skipped, not fatal.

use super::found::{measurement, number};
use domain::metrics::Measurement;

const EXTRACTOR: &str = "collective-sweep";

/// Which collective the output is about, from the words it prints.
fn collective(text: &str) -> &'static str {
    let lower = text.to_ascii_lowercase();
    let names = [
        ("all_reduce", "allreduce"),
        ("allreduce", "allreduce"),
        ("all_gather", "allgather"),
        ("allgather", "allgather"),
        ("reduce_scatter", "reducescatter"),
        ("reducescatter", "reducescatter"),
        ("alltoall", "alltoall"),
        ("broadcast", "broadcast"),
    ];
    names
        .iter()
        .filter_map(|(word, name)| lower.find(word).map(|at| (at, *name)))
        .min()
        .map_or("collective", |(_, n)| n)
}

/// Column positions of size, time and busbw in a header line's words.
fn header(line: &str) -> Option<(usize, usize, Option<usize>)> {
    if line.contains('|') {
        return None; // a markdown table (llama-bench), not a sweep
    }
    let words: Vec<String> = line.trim_start_matches('#').split_whitespace().map(|w| w.to_ascii_lowercase()).collect();
    let find = |p: &str| words.iter().position(|w| w == p || w.starts_with(&format!("{p}(")));
    let (size, time) = (find("size")?, find("time")?);
    Some((size, time, find("busbw")))
}

pub fn extract(text: &str) -> Vec<Measurement> {
    let name = collective(text);
    let mut found = Vec::new();
    let mut columns: Option<(usize, usize, Option<usize>)> = None;
    let mut seen = std::collections::HashSet::new();
    for line in text.lines() {
        if let Some(h) = header(line) {
            columns = Some(h);
            continue;
        }
        let Some((size_at, time_at, busbw_at)) = columns else { continue };
        let words: Vec<&str> = line.split_whitespace().collect();
        // nccl-tests' unit line `#  (B)  (elements) … (us)`: no numbers, skip.
        let Some(size) = words.get(size_at).and_then(|w| w.parse::<u64>().ok()) else { continue };
        // Rows are all numbers but for type/redop words; a log line that happens to
        // start with an integer has letters where the time should be.
        let Some(time) = words.get(time_at).and_then(|w| number(w)) else { continue };
        if !seen.insert(size) {
            continue; // a second sweep in one output (rare): keep the first
        }
        let key = format!("{size} B");
        let mut t = measurement(format!("{name}_time_us"), time, "us", EXTRACTOR);
        t.key = Some(key.clone());
        found.push(t);
        if let Some(bw) = busbw_at.and_then(|at| words.get(at)).and_then(|w| number(w)) {
            let mut b = measurement(format!("{name}_busbw"), bw, "GB/s", EXTRACTOR);
            b.key = Some(key);
            found.push(b);
        }
    }
    // One stray integer line after a header is not a sweep.
    if found.iter().filter(|m| m.unit == "us").count() < 2 { Vec::new() } else { found }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn time_at(found: &[Measurement], key: &str) -> Option<f64> {
        found.iter().find(|m| m.unit == "us" && m.key.as_deref() == Some(key)).map(|m| m.value)
    }

    #[test]
    fn the_real_h200_sweeps_through_nccl_log_noise() {
        let ll = extract(&crate::fixtures::read("gpu-host-h200x2/allreduce-LL.log"));
        assert_eq!(ll.iter().filter(|m| m.metric == "allreduce_time_us").count(), 10, "{ll:?}");
        assert_eq!(time_at(&ll, "16384 B"), Some(38.96));
        assert_eq!(time_at(&ll, "268435456 B"), Some(2311.05));
        let bw = ll.iter().find(|m| m.metric == "allreduce_busbw" && m.key.as_deref() == Some("16777216 B"));
        assert_eq!(bw.map(|m| m.value), Some(129.79));
        let simple = extract(&crate::fixtures::read("gpu-host-h200x2/allreduce-SIMPLE.log"));
        assert_eq!(simple.iter().filter(|m| m.unit == "us").count(), 10);
    }

    #[test]
    fn nccl_tests_all_reduce_perf() {
        let out = "# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20\n\
#\n\
#                                                              out-of-place                       in-place          \n\
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n\
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       \n\
           8             2     float     sum      -1    17.46    0.00    0.00      0    17.07    0.00    0.00      0\n\
       16384          4096     float     sum      -1    24.10    0.68    1.19      0    23.90    0.69    1.20      0\n\
# Avg bus bandwidth    : 0.595\n\
# Collective test starting: all_reduce_perf\n";
        let found = extract(out);
        assert_eq!(time_at(&found, "8 B"), Some(17.46), "out-of-place time: {found:?}");
        assert_eq!(time_at(&found, "16384 B"), Some(24.10));
        assert!(found.iter().all(|m| m.metric.starts_with("allreduce_")), "{found:?}");
        let bw = found.iter().find(|m| m.metric == "allreduce_busbw" && m.key.as_deref() == Some("16384 B"));
        assert_eq!(bw.map(|m| m.value), Some(1.19));
    }

    #[test]
    fn other_tables_are_not_sweeps() {
        assert!(extract("size time\n1024 later\n").is_empty());
        assert!(extract("| model | size | time |\n| x | 1 | 2 |\n").is_empty());
        assert!(extract(&crate::fixtures::read("bench-outputs/vllm_bench_serve_pr36559.txt")).is_empty());
    }
}
