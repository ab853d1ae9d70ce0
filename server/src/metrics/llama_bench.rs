//! `llama-bench` markdown tables: one measurement per row, named by its test
//! (`pp512`, `tg128`; old builds print `pp 512`), with the `t/s` column's mean ±
//! stddev, keyed by model. Columns are found by their header names.

use super::found::number;
use domain::metrics::Measurement;

fn cells(line: &str) -> Option<Vec<String>> {
    let line = line.trim();
    let inner = line.strip_prefix('|')?.strip_suffix('|')?;
    Some(inner.split('|').map(|c| c.trim().to_string()).collect())
}

fn is_rule(cells: &[String]) -> bool {
    cells.iter().all(|c| !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':')))
}

pub fn extract(text: &str) -> Vec<Measurement> {
    let mut found = Vec::new();
    let mut header: Option<Vec<String>> = None;
    let mut rows: Vec<(String, String, f64, Option<f64>, String)> = Vec::new();
    for line in text.lines() {
        let Some(cells) = cells(line) else {
            header = None;
            continue;
        };
        if is_rule(&cells) {
            continue;
        }
        let Some(head) = &header else {
            let lower: Vec<String> = cells.iter().map(|c| c.to_lowercase()).collect();
            if lower.iter().any(|c| c == "test") && lower.iter().any(|c| c == "t/s") {
                header = Some(lower);
            }
            continue;
        };
        let column = |name: &str| head.iter().position(|h| h == name).and_then(|i| cells.get(i));
        let (Some(test), Some(speed)) = (column("test"), column("t/s")) else { continue };
        let test: String = test.chars().filter(|c| !c.is_whitespace()).collect();
        if test.is_empty() {
            continue;
        }
        let (mean, spread) = match speed.split_once('±') {
            Some((m, s)) => (number(m), number(s)),
            None => (number(speed), None),
        };
        let Some(mean) = mean else { continue };
        let model = column("model").cloned().unwrap_or_default();
        // Other settings that vary between rows (threads, ngl, n_batch…) tell rows apart.
        let settings: Vec<String> = head
            .iter()
            .zip(&cells)
            .filter(|(h, _)| !matches!(h.as_str(), "model" | "size" | "params" | "backend" | "test" | "t/s"))
            .map(|(h, c)| format!("{h}={c}"))
            .collect();
        rows.push((model, test, mean, spread, settings.join(" ")));
    }
    for (i, (model, test, mean, spread, settings)) in rows.iter().enumerate() {
        let ambiguous =
            rows.iter().enumerate().any(|(j, r)| j != i && r.0 == *model && r.1 == *test && r.4 != *settings);
        let key = if ambiguous { format!("{model} · {settings}") } else { model.clone() };
        found.push(Measurement {
            metric: test.clone(),
            value: *mean,
            unit: "tok/s".into(),
            extractor: "llama-bench".into(),
            stddev: *spread,
            key: Some(key).filter(|k| !k.is_empty()),
        });
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_real_old_format_with_spaced_test_names() {
        let found = extract(&crate::fixtures::read("bench-outputs/llama_bench_issue3869.txt"));
        assert_eq!(found.len(), 2, "{found:#?}");
        assert_eq!((found[0].metric.as_str(), found[0].value, found[0].stddev), ("pp512", 998.41, Some(114.47)));
        assert_eq!((found[1].metric.as_str(), found[1].value, found[1].stddev), ("tg128", 39.39, Some(0.16)));
        assert_eq!(found[1].key.as_deref(), Some("llama 7B mostly Q4_K - Small"));
        assert!(found.iter().all(|m| m.unit == "tok/s" && m.extractor == "llama-bench"));
    }

    #[test]
    fn new_format_with_threads_columns_keys_rows_apart() {
        let text = "| model                          |       size |     params | backend    | threads | test |                  t/s |\n\
                    | ------------------------------ | ---------: | ---------: | ---------- | ------: | ---: | -------------------: |\n\
                    | qwen2 7B Q4_K - Medium         |   4.36 GiB |     7.62 B | CPU        |       8 | pp512 |        71.20 ± 0.51 |\n\
                    | qwen2 7B Q4_K - Medium         |   4.36 GiB |     7.62 B | CPU        |      16 | pp512 |        98.02 ± 1.10 |\n\
                    | qwen2 7B Q4_K - Medium         |   4.36 GiB |     7.62 B | CPU        |      16 | tg128 |        12.40 ± 0.02 |\n\
                    \n\
                    build: 8a1d9c25 (4230)\n";
        let found = extract(text);
        assert_eq!(found.len(), 3, "{found:#?}");
        assert_eq!(found[0].key.as_deref(), Some("qwen2 7B Q4_K - Medium · threads=8"));
        assert_eq!(found[1].key.as_deref(), Some("qwen2 7B Q4_K - Medium · threads=16"));
        assert_eq!(found[2].key.as_deref(), Some("qwen2 7B Q4_K - Medium"), "only one tg128 row");
        assert_eq!(found[2].value, 12.40);
    }

    #[test]
    fn other_markdown_tables_are_ignored() {
        assert!(extract("| a | b |\n|---|---|\n| 1 | 2 |\n").is_empty());
    }
}
