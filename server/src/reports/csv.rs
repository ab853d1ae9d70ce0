//! CSV lines as the field's tools write them: cells with commas are quoted,
//! `""` is a quote inside quotes (nsys kernel names, llama-bench's every cell).

/// One CSV line's cells (names with commas are quoted, `""` inside quotes).
pub fn split(line: &str) -> Vec<String> {
    let mut cells = Vec::new();
    let mut cell = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cell.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => cells.push(std::mem::take(&mut cell)),
            _ => cell.push(c),
        }
    }
    cells.push(cell);
    cells
}

#[cfg(test)]
mod tests {
    #[test]
    fn quoted_cells_keep_their_commas() {
        assert_eq!(super::split(r#"1,"a, b","say ""hi""",x"#), ["1", "a, b", "say \"hi\"", "x"]);
        assert_eq!(super::split(""), [""]);
    }
}
