//! CSV lines as the field's tools write them (nsys kernel names, llama-bench's
//! every cell, AIPerf's tables): read with the `csv` crate, one line at a time,
//! since the readers look for their header and sections line by line.

/// One CSV line's cells (names with commas are quoted, `""` inside quotes).
pub fn split(line: &str) -> Vec<String> {
    let mut reader = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(line.as_bytes());
    match reader.records().next() {
        Some(Ok(record)) => record.iter().map(str::to_string).collect(),
        // An empty line is one empty cell, as a spreadsheet shows it.
        Some(Err(_)) | None => vec![String::new()],
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn quoted_cells_keep_their_commas() {
        assert_eq!(super::split(r#"1,"a, b","say ""hi""",x"#), ["1", "a, b", "say \"hi\"", "x"]);
        assert_eq!(super::split(""), [""]);
        assert_eq!(super::split("a,,b"), ["a", "", "b"]);
    }
}
