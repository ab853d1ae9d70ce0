//! A unified diff (`diff -u`, `git diff`; one file or several), as Sleuth
//! keeps and applies it. Each file's part is parsed by `diffy`; the split into
//! files, the path rules and applying by context are ours: a hunk is found by
//! its lines, nearest the line its header names, and where the file moved on
//! around it, with up to [`MAX_FUZZ`] context lines at each end let go
//! (GNU patch's fuzz), each hunk said applied where, or not.

/// Context lines a hunk may let go at each end when its whole context is not found.
pub const MAX_FUZZ: usize = 2;

/// One file's changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileDiff {
    /// The file, as the diff names it: absolute, or relative to where the
    /// patch is resolved (a `git diff`'s `a/`/`b/` taken off).
    pub path: String,
    pub hunks: Vec<Hunk>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hunk {
    /// Where it starts in the file it was made from (1-based).
    pub old_start: usize,
    pub lines: Vec<Line>,
}

/// A hunk's line, with its newline as the file has it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Line {
    Context(String),
    Delete(String),
    Insert(String),
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum DiffError {
    #[error("This is not a unified diff: no file header (`--- path` then `+++ path`) was found.")]
    NoFiles,
    #[error("The diff of {path} does not parse: {reason}")]
    Unreadable { path: String, reason: String },
    #[error("The diff of {path} changes nothing.")]
    Empty { path: String },
    #[error("{path:?} is not a file a patch may change: {why}")]
    Path { path: String, why: &'static str },
    #[error("{path} is changed twice in one patch; make it one diff of the file.")]
    Twice { path: String },
    #[error("A patch creates or deletes no file ({path}); it changes files that are there.")]
    CreatesOrDeletes { path: String },
}

/// The files a diff changes, in its order.
pub fn parse(text: &str) -> Result<Vec<FileDiff>, DiffError> {
    let mut files: Vec<FileDiff> = Vec::new();
    for part in parts(text) {
        let patch = diffy::Patch::from_str(&part).map_err(|e| DiffError::Unreadable {
            path: header_path(&part).unwrap_or_default(),
            reason: e.to_string().trim_start_matches("error parsing patch: ").to_string(),
        })?;
        let (old, new) = (patch.original().unwrap_or_default(), patch.modified().unwrap_or_default());
        if old == "/dev/null" || new == "/dev/null" {
            return Err(DiffError::CreatesOrDeletes { path: if old == "/dev/null" { new } else { old }.to_string() });
        }
        let path = checked_path(strip_git_prefix(new, &part))?;
        if patch.hunks().is_empty() {
            return Err(DiffError::Empty { path });
        }
        if files.iter().any(|f| f.path == path) {
            return Err(DiffError::Twice { path });
        }
        let hunks = patch
            .hunks()
            .iter()
            .map(|h| Hunk {
                old_start: h.old_range().start(),
                lines: h
                    .lines()
                    .iter()
                    .map(|l| match l {
                        diffy::Line::Context(t) => Line::Context((*t).to_string()),
                        diffy::Line::Delete(t) => Line::Delete((*t).to_string()),
                        diffy::Line::Insert(t) => Line::Insert((*t).to_string()),
                    })
                    .collect(),
            })
            .collect();
        files.push(FileDiff { path, hunks });
    }
    if files.is_empty() {
        return Err(DiffError::NoFiles);
    }
    Ok(files)
}

/// The diff cut into one part per file: from its `--- ` line to the next
/// file's, the lines that introduce the next (`diff --git …`, `index …`,
/// `diff -ru …`, `Only in …`) left out.
fn parts(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let starts: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].starts_with("--- ") && lines.get(i + 1).is_some_and(|n| n.starts_with("+++ ")))
        .collect();
    starts
        .iter()
        .enumerate()
        .map(|(k, &from)| {
            let to = starts.get(k + 1).copied().unwrap_or(lines.len());
            let mut part: String = lines[from..to]
                .iter()
                .take_while(|l| !(l.starts_with("diff ") || l.starts_with("Only in ")))
                .copied()
                .collect();
            if !part.ends_with('\n') {
                part.push('\n');
            }
            part
        })
        .collect()
}

fn header_path(part: &str) -> Option<String> {
    let line = part.lines().nth(1)?.strip_prefix("+++ ")?;
    Some(line.split('\t').next().unwrap_or(line).trim().to_string())
}

/// `git diff` names files `a/x` and `b/x`; `diff -u` names them as given.
fn strip_git_prefix<'a>(new: &'a str, part: &str) -> &'a str {
    let old = part.lines().next().and_then(|l| l.strip_prefix("--- ")).unwrap_or_default();
    match (old.starts_with("a/"), new.strip_prefix("b/")) {
        (true, Some(rest)) => rest,
        _ => new,
    }
}

/// A path a patch may write: no `..` (it could leave the directory it seems to
/// name), nothing empty or with control characters. Symlinks are checked on
/// the host, where the path is resolved.
pub fn checked_path(path: &str) -> Result<String, DiffError> {
    let bad = |why| Err(DiffError::Path { path: path.to_string(), why });
    let path = path.trim();
    if path.is_empty() || path == "/" {
        return bad("it names no file");
    }
    if path.chars().any(char::is_control) {
        return bad("it has control characters");
    }
    if path.split('/').any(|part| part == "..") {
        return bad("`..` could take it out of the directory it names");
    }
    Ok(path.to_string())
}

/// Where a hunk went, or that it did not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placed {
    /// At `line` (1-based, in the file as it was), `offset` lines from where
    /// its header said, with `fuzz` context lines let go at each end.
    At {
        line: usize,
        offset: isize,
        fuzz: usize,
    },
    NotFound,
}

/// `text` with `file`'s hunks applied, and where each went; `Err` with every
/// hunk's placing when one was not found (nothing is half applied).
pub fn apply(text: &str, file: &FileDiff) -> Result<(String, Vec<Placed>), Vec<Placed>> {
    let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_string).collect();
    // Where each earlier hunk moved the lines after it.
    let mut shift: isize = 0;
    // Lines before this are another hunk's: a later one goes after them.
    let mut floor = 0usize;
    let mut placed = Vec::with_capacity(file.hunks.len());
    let mut failed = false;
    for hunk in &file.hunks {
        let wanted = (hunk.old_start.max(1) - 1).saturating_add_signed(shift);
        match locate(&lines, hunk, wanted, floor) {
            Some((at, fuzz)) => {
                let (before, after) = trimmed(hunk, fuzz);
                let old: Vec<&String> = pre(hunk, before, after).collect();
                let new: Vec<String> = post(hunk, before, after).cloned().collect();
                let (removed, added) = (old.len(), new.len());
                lines.splice(at..at + removed, new);
                let original_line = at.saturating_add_signed(-shift) + 1;
                placed.push(Placed::At {
                    line: original_line,
                    offset: isize::try_from(at).unwrap_or(0) - isize::try_from(wanted).unwrap_or(0),
                    fuzz,
                });
                shift += isize::try_from(added).unwrap_or(0) - isize::try_from(removed).unwrap_or(0);
                floor = at + added;
            }
            None => {
                failed = true;
                placed.push(Placed::NotFound);
            }
        }
    }
    if failed { Err(placed) } else { Ok((lines.concat(), placed)) }
}

/// The hunk's context lines let go at its start and end for `fuzz` (only
/// context lines: a changed line is never let go).
fn trimmed(hunk: &Hunk, fuzz: usize) -> (usize, usize) {
    let leading = hunk.lines.iter().take_while(|l| matches!(l, Line::Context(_))).count();
    let trailing = hunk.lines.iter().rev().take_while(|l| matches!(l, Line::Context(_))).count();
    (fuzz.min(leading), fuzz.min(trailing))
}

fn pre(hunk: &Hunk, before: usize, after: usize) -> impl Iterator<Item = &String> {
    hunk.lines[before..hunk.lines.len() - after].iter().filter_map(|l| match l {
        Line::Context(t) | Line::Delete(t) => Some(t),
        Line::Insert(_) => None,
    })
}

fn post(hunk: &Hunk, before: usize, after: usize) -> impl Iterator<Item = &String> {
    hunk.lines[before..hunk.lines.len() - after].iter().filter_map(|l| match l {
        Line::Context(t) | Line::Insert(t) => Some(t),
        Line::Delete(_) => None,
    })
}

/// Where the hunk's old lines are, nearest `wanted`, at or after `floor`; with
/// the least fuzz that finds them.
fn locate(lines: &[String], hunk: &Hunk, wanted: usize, floor: usize) -> Option<(usize, usize)> {
    for fuzz in 0..=MAX_FUZZ {
        let (before, after) = trimmed(hunk, fuzz);
        if fuzz > 0 && (before, after) == trimmed(hunk, fuzz - 1) {
            continue; // nothing more to let go
        }
        let old: Vec<&String> = pre(hunk, before, after).collect();
        // Nearest first: wanted, then one below and one above, and so on.
        let wanted = wanted + before;
        let fits = |at: usize| {
            at >= floor && at + old.len() <= lines.len() && old.iter().zip(&lines[at..]).all(|(a, b)| *a == b)
        };
        let span = lines.len().max(wanted) + 1;
        for distance in 0..span {
            for at in [wanted.checked_sub(distance), wanted.checked_add(distance).filter(|_| distance > 0)]
                .into_iter()
                .flatten()
            {
                if fits(at) {
                    return Some((at, fuzz));
                }
            }
        }
    }
    None
}

/// Lines added and removed, over every file: `(+, −)`.
pub fn counts(files: &[FileDiff]) -> (usize, usize) {
    let lines = files.iter().flat_map(|f| &f.hunks).flat_map(|h| &h.lines);
    lines.fold((0, 0), |(plus, minus), l| match l {
        Line::Insert(_) => (plus + 1, minus),
        Line::Delete(_) => (plus, minus + 1),
        Line::Context(_) => (plus, minus),
    })
}

/// `text` with the files `resolved` names (as [`parse`] reads them) named by
/// the absolute paths they were resolved to on the host: each pair of file
/// headers rewritten, the `diff --git`/`index` lines of those files left out
/// (they name them the old way). Every other line is kept as it is.
pub fn with_paths(text: &str, resolved: &std::collections::HashMap<String, String>) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let pair = line.starts_with("--- ") && lines.get(i + 1).is_some_and(|n| n.starts_with("+++ "));
        if pair {
            let part = format!("{line}{}", lines[i + 1]);
            let new = header_path(&part).unwrap_or_default();
            let new = new.trim_matches('"');
            if let Some(path) = resolved.get(strip_git_prefix(new, &part)) {
                // The lines that introduced this file the old way go with it.
                while out.last().is_some_and(|l| l.starts_with("diff --git ") || l.starts_with("index ")) {
                    out.pop();
                }
                let named = header_name(path);
                out.push(format!("--- {named}\n"));
                out.push(format!("+++ {named}\n"));
                i += 2;
                continue;
            }
        }
        out.push(line.to_string());
        i += 1;
    }
    out.concat()
}

/// A path as a diff header names it: quoted, as git quotes, where it holds a
/// quote or a backslash (control characters are refused by [`checked_path`]).
fn header_name(path: &str) -> String {
    if path.contains(['"', '\\']) {
        format!("\"{}\"", path.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        path.to_string()
    }
}

/// The diff of `path` from `old` to `new`, with three lines of context: what
/// "Edit these lines" saves.
pub fn between(path: &str, old: &str, new: &str) -> String {
    diffy::DiffOptions::new()
        .set_original_filename(path.to_string())
        .set_modified_filename(path.to_string())
        .create_patch(old, new)
        .to_string()
}

/// [`between`] for lines of a file that start at line `first` (a snippet's
/// range): its hunks numbered where the lines are in the file.
pub fn between_lines(path: &str, old: &str, new: &str, first: usize) -> String {
    let shift = first.saturating_sub(1);
    between(path, old, new)
        .split_inclusive('\n')
        .map(|line| match shifted_header(line, shift) {
            Some(header) => header,
            None => line.to_string(),
        })
        .collect()
}

/// `@@ -a,b +c,d @@…` with `shift` added to `a` and `c`.
fn shifted_header(line: &str, shift: usize) -> Option<String> {
    let rest = line.strip_prefix("@@ -")?;
    let (ranges, tail) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let move_range = |range: &str| -> Option<String> {
        let (start, len) = range.split_once(',').map_or((range, None), |(s, l)| (s, Some(l)));
        let start: usize = start.parse().ok()?;
        // An empty range (`-0,0`) names the line before it; it moves too.
        Some(format!("{}{}", start + shift, len.map(|l| format!(",{l}")).unwrap_or_default()))
    };
    Some(format!("@@ -{} +{} @@{tail}", move_range(old)?, move_range(new)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_resolved_are_named_absolute_in_the_headers_and_the_rest_kept() {
        let text = "diff --git a/vllm/a.py b/vllm/a.py\nindex 1..2 100644\n--- a/vllm/a.py\n+++ b/vllm/a.py\n@@ -1,2 +1,2 @@\n x\n-y\n+z\n--- /etc/kept.py\n+++ /etc/kept.py\n@@ -3 +3 @@\n-1\n+2\n";
        let resolved = std::collections::HashMap::from([(
            "vllm/a.py".to_string(),
            "/opt/my env/lib/\"odd\"/vllm/a.py".to_string(),
        )]);
        let out = with_paths(text, &resolved);
        assert!(out.starts_with("--- \"/opt/my env/lib/\\\"odd\\\"/vllm/a.py\"\n+++ "), "{out}");
        assert!(
            out.ends_with("@@ -1,2 +1,2 @@\n x\n-y\n+z\n--- /etc/kept.py\n+++ /etc/kept.py\n@@ -3 +3 @@\n-1\n+2\n"),
            "{out}"
        );
        let files = parse(&out).unwrap();
        assert_eq!(files[0].path, "/opt/my env/lib/\"odd\"/vllm/a.py");
        assert_eq!(files[1].path, "/etc/kept.py");
        assert_eq!(files[0].hunks, parse(text).unwrap()[0].hunks);
    }

    #[test]
    fn lines_of_a_snippet_make_a_diff_numbered_as_the_file_is() {
        let file: String = (1..=200).map(|i| format!("line {i}\n")).collect();
        let shown: String = (130..=140).map(|i| format!("line {i}\n")).collect();
        let edited = shown.replace("line 135\n", "line 135 (edited)\n");
        let diff = between_lines("/opt/x.py", &shown, &edited, 130);
        assert!(diff.contains("@@ -132,7 +132,7 @@"), "{diff}");
        let parsed = parse(&diff).unwrap();
        let (text, placed) = apply(&file, &parsed[0]).unwrap();
        assert_eq!(text, file.replace("line 135\n", "line 135 (edited)\n"));
        assert_eq!(placed, [Placed::At { line: 132, offset: 0, fuzz: 0 }]);
    }

    /// Shaped like vLLM's gate: two checks, the second "easy to miss".
    const GATE: &str = "\
import os


class CustomAllreduce:
    def __init__(self, world_size, fully_connected):
        if world_size > 2 and not fully_connected:
            logger.warning(\"Custom allreduce is disabled because it's not supported on more than two PCIe-only GPUs.\")
            return
        self.disabled = False

    def should_custom_ar(self, inp):
        if self.disabled:
            return False
        if self.world_size > 2 and not self.fully_connected:
            return False
        return inp.numel() < self.max_size
";

    fn relaxed() -> String {
        GATE.replace("if world_size > 2 and not fully_connected:", "if world_size > 8 and not fully_connected:")
            .replace(
                "if self.world_size > 2 and not self.fully_connected:",
                "if self.world_size > 8 and not self.fully_connected:",
            )
    }

    #[test]
    fn a_diff_made_here_reads_back_and_applies_to_its_base() {
        let diff = between("/opt/vllm/custom_all_reduce.py", GATE, &relaxed());
        let files = parse(&diff).expect("parses");
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].path, "/opt/vllm/custom_all_reduce.py");
        assert_eq!(counts(&files), (2, 2));
        let (patched, placed) = apply(GATE, &files[0]).expect("applies");
        assert_eq!(patched, relaxed());
        assert!(placed.iter().all(|p| matches!(p, Placed::At { offset: 0, fuzz: 0, .. })), "{placed:?}");
    }

    #[test]
    fn a_hunk_is_found_where_the_file_moved_on_and_with_fuzz_where_its_edge_changed() {
        let files = parse(&between("gate.py", GATE, &relaxed())).expect("parses");
        // Lines added above: found further down, by its lines.
        let moved = format!("# a header\n# of three\n# lines\n{GATE}");
        let (patched, placed) = apply(&moved, &files[0]).expect("applies by context");
        assert_eq!(patched, format!("# a header\n# of three\n# lines\n{}", relaxed()));
        assert!(placed.iter().all(|p| matches!(p, Placed::At { offset: 3, fuzz: 0, .. })), "{placed:?}");
        // A context line at a hunk's edge changed: applied with fuzz.
        let edged = GATE.replace("        self.disabled = False\n", "        self.disabled = False  # set\n");
        let (patched, placed) = apply(&edged, &files[0]).expect("applies with fuzz");
        assert!(patched.contains("world_size > 8 and not fully_connected"));
        assert!(placed.iter().any(|p| matches!(p, Placed::At { fuzz: 1.., .. })), "{placed:?}");
        // The changed lines themselves gone: not applied, and nothing half done.
        let gone = GATE.replace("if world_size > 2 and not fully_connected:", "if not fully_connected:");
        let placed = apply(&gone, &files[0]).expect_err("the first hunk's lines are gone");
        assert_eq!(placed[0], Placed::NotFound);
    }

    #[test]
    fn diffs_of_several_files_lose_their_prefixes_and_keep_their_order() {
        let recursive = "diff -ru old/a.py new/a.py\n--- old/a.py\t2026-12-07\n+++ new/a.py\t2026-12-07\n@@ -1 +1 @@\n-1\n+2\nOnly in new: c.py\ndiff -ru old/b.py new/b.py\n--- old/b.py\n+++ new/b.py\n@@ -1 +1 @@\n-1\n+2\n";
        let paths: Vec<String> = parse(recursive).expect("parses").into_iter().map(|f| f.path).collect();
        assert_eq!(paths, ["new/a.py", "new/b.py"]);
        let text = "diff --git a/vllm/a.py b/vllm/a.py\nindex 1..2 100644\n--- a/vllm/a.py\n+++ b/vllm/a.py\n@@ -1,2 +1,2 @@\n x\n-y\n+z\ndiff --git a/vllm/b.py b/vllm/b.py\n--- a/vllm/b.py\n+++ b/vllm/b.py\n@@ -3 +3 @@\n-1\n+2\n";
        let files = parse(text).expect("parses");
        let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["vllm/a.py", "vllm/b.py"]);
        assert_eq!(counts(&files), (2, 2));
        assert_eq!(files[1].hunks[0].old_start, 3);
    }

    #[test]
    fn paths_that_could_leave_their_directory_and_other_non_patches_are_refused() {
        let one = |path: &str| format!("--- {path}\n+++ {path}\n@@ -1 +1 @@\n-a\n+b\n");
        for path in ["/opt/vllm/../../etc/passwd", "../x.py", "a/../../b"] {
            assert!(matches!(parse(&one(path)), Err(DiffError::Path { .. })), "{path}");
        }
        assert_eq!(parse("just some text\n"), Err(DiffError::NoFiles));
        assert!(matches!(
            parse("--- /dev/null\n+++ new.py\n@@ -0,0 +1 @@\n+x\n"),
            Err(DiffError::CreatesOrDeletes { .. })
        ));
        let twice = format!("{}{}", one("/x.py"), one("/x.py"));
        assert!(matches!(parse(&twice), Err(DiffError::Twice { .. })));
        assert!(matches!(parse("--- x\n+++ x\n@@ -1 +1 @@\n-a\n"), Err(DiffError::Unreadable { .. })));
    }
}
