//! Which file on the host a source reference in a run's output names.
//!
//! Absolute paths are checked as they are. A bare name (`custom_all_reduce.py`, as
//! vLLM logs it) or a relative one is searched for, in one shell round trip, under
//! the places the run makes likely:
//! - absolute paths in the run's output that end with the name, and the
//!   `site-packages` / `dist-packages` directories other paths in it lie in;
//! - the import path (`sys.path`, site directories) of the interpreters the command
//!   names (`/root/ml-env/bin/python …`), of the one in the shebang of its first
//!   word (`vllm serve …` → the `vllm` script's python), and of `python3`, each run
//!   with the run's environment and directory (so `PYTHONPATH` counts);
//! - the run's working directory, for relative names.
//!
//! Every name, path and directory is single-quoted into the script.

use super::Source;
use crate::error::Result;
use crate::policy::RunOn;
use crate::ssh::{self, quote::quote};
use domain::error::{ApiError, ErrorCode};
use domain::steps::snippet::SourceCandidates;
use regex::Regex;
use std::collections::BTreeSet;
use std::sync::LazyLock;

/// Output read for hints: the start (where startup logs name paths) and the end.
const HINT_BYTES: u64 = 4 * 1024 * 1024;
const MAX_CANDIDATES: usize = 50;

static ABSOLUTE_PATH: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"/(?:[\w.+@~-]+/)*[\w.+@~-]+").expect("valid regex"));
static PYTHON_IN_COMMAND: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?:^|[\s;&|(=])(/[^\s;&|()'\x22]*/python[0-9.]*)(?:\s|$)").expect("valid regex"));

const PYTHON_PATHS: &str = "import site, sys\n\
    dirs = {p for p in sys.path if p.startswith('/')}\n\
    try:\n    dirs.update(site.getsitepackages())\nexcept Exception:\n    pass\n\
    print('\\n'.join(sorted(dirs)))";

/// Hints for `file` found in output text.
fn hints_from_output(text: &str, file: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let suffix = format!("/{}", file.trim_start_matches("./"));
    let (mut direct, mut roots) = (BTreeSet::new(), BTreeSet::new());
    for m in ABSOLUTE_PATH.find_iter(text) {
        let path = m.as_str();
        if path.ends_with(&suffix) {
            direct.insert(path.to_string());
        }
        for marker in ["/site-packages", "/dist-packages"] {
            if let Some(i) = path.find(&format!("{marker}/")) {
                roots.insert(path[..i + marker.len()].to_string());
            }
        }
        if direct.len() + roots.len() > 200 {
            break;
        }
    }
    (direct, roots)
}

fn pythons_in_command(command: &str) -> BTreeSet<String> {
    PYTHON_IN_COMMAND.captures_iter(command).filter_map(|c| c.get(1)).map(|m| m.as_str().to_string()).collect()
}

/// The first word of a command that may be a Python console script (`vllm`).
fn first_program(command: &str) -> Option<&str> {
    command
        .split_whitespace()
        .find(|w| !w.contains('='))
        .filter(|w| w.chars().all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '/')))
}

fn check_reference(file: &str, line: u64) -> Result<(), ApiError> {
    if file.trim().is_empty() || file.len() > 4096 || file.chars().any(char::is_control) {
        return Err(ApiError::invalid("The file name must be one line of at most 4096 bytes."));
    }
    if line == 0 {
        return Err(ApiError::invalid("Line numbers start at 1."));
    }
    Ok(())
}

/// The shell script that lists `R\t<dir searched>` and `F\t<file found>` lines.
fn script(
    file: &str,
    direct: &BTreeSet<String>,
    roots: &BTreeSet<String>,
    pythons: &BTreeSet<String>,
    program: Option<&str>,
) -> String {
    let relative = file.trim_start_matches("./");
    let name = relative.rsplit('/').next().unwrap_or(relative);
    let words = |set: &BTreeSet<String>| set.iter().map(|s| quote(s)).collect::<Vec<_>>().join(" ");
    let mut s = String::new();
    if file.starts_with('/') {
        s.push_str(&format!("[ -f {0} ] && printf 'F\\t%s\\n' {0}\n", quote(file)));
        return s;
    }
    s.push_str(&format!(
        "name={}\nsuffix={}\nprog={}\n",
        quote(name),
        quote(&format!("/{relative}")),
        quote(PYTHON_PATHS)
    ));
    // Relative to the run's directory first: that is what the program itself saw.
    s.push_str(&format!("[ -f {0} ] && printf 'F\\t%s/%s\\n' \"$PWD\" {0}\n", quote(relative)));
    for path in direct {
        s.push_str(&format!("[ -f {0} ] && printf 'F\\t%s\\n' {0}\n", quote(path)));
    }
    s.push_str("{\n");
    s.push_str(&format!("  for py in {} python3; do \"$py\" -c \"$prog\" 2>/dev/null; done\n", words(pythons)));
    if let Some(program) = program {
        s.push_str(&format!(
            "  exe=$(command -v {} 2>/dev/null) && head -n 1 \"$exe\" 2>/dev/null \
             | sed -n 's/^#![[:space:]]*\\([^[:space:]]*python[^[:space:]]*\\).*/\\1/p' \
             | while IFS= read -r py; do \"$py\" -c \"$prog\" 2>/dev/null; done\n",
            quote(program)
        ));
    }
    if !roots.is_empty() {
        s.push_str(&format!("  printf '%s\\n' {}\n", words(roots)));
    }
    s.push_str("} | sort -u | while IFS= read -r d; do\n");
    s.push_str("  [ -d \"$d\" ] || continue\n  printf 'R\\t%s\\n' \"$d\"\n");
    s.push_str("  find \"$d\" -name \"$name\" -type f 2>/dev/null | grep -F -e \"$suffix\" | sed 's/^/F\\t/'\n");
    s.push_str("done\n");
    s
}

impl Source {
    /// The files on the run's host that a reference in its output (`x.py:137`)
    /// may name, found by one search on the host (audited).
    pub async fn candidates(&self, permit: &RunOn, run_id: i64, file: &str, line: u64) -> Result<SourceCandidates> {
        check_reference(file, line)?;
        let gone = || ApiError::not_found(format!("There is no run {run_id}."));
        let run = self.store.run(run_id).await?.filter(|r| r.host == permit.host()).ok_or_else(gone)?;
        let investigation_id =
            self.store.run_investigation(run_id).await?.filter(|i| i == permit.investigation()).ok_or_else(gone)?;
        let outputs = &self.outputs;
        let mut text = String::new();
        if !file.starts_with('/') {
            let (head, len) = outputs.read_range(run_id, 0, HINT_BYTES).await.unwrap_or_default();
            text.push_str(&String::from_utf8_lossy(&head));
            if len > HINT_BYTES {
                let from = len.saturating_sub(HINT_BYTES).max(HINT_BYTES);
                let (tail, _) = outputs.read_range(run_id, from, HINT_BYTES).await.unwrap_or_default();
                text.push_str(&String::from_utf8_lossy(&tail));
            }
        }
        let (direct, roots) = hints_from_output(&text, file);
        let pythons = pythons_in_command(&run.command);
        let program = first_program(&run.command).filter(|p| !p.contains('/'));
        let body = script(file, &direct, &roots, &pythons, program);
        let env_json = run.env.clone();
        let run = crate::runs::run_from_row(run)?;
        let unset = run.config.as_ref().map(crate::runs::unset_in).unwrap_or_default();
        let env = &run.env;
        let pairs = env.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        let mut full = ssh::quote::remote_script(&body, pairs, unset.iter().map(String::as_str), None);
        if let Some(cwd) = run.cwd.as_deref().filter(|c| !c.is_empty()) {
            // A directory that is gone since the run still leaves the other places.
            full = format!("cd {} 2>/dev/null\n{full}", quote(cwd));
        }
        let target = self.hosts.target(&run.host).await?;
        let captured: Result<ssh::exec::Captured> = match tokio::time::timeout(
            std::time::Duration::from_secs(60),
            ssh::exec::capture(self.hosts.pool(), &target, &full, 1024 * 1024),
        )
        .await
        {
            Err(_) => Err(ApiError::new(ErrorCode::HostUnreachable, "Searching the host took over 60 s.").into()),
            Ok(captured) => captured.map_err(Into::into),
        };
        let entry = crate::db::NewAudit {
            who: permit.actor().name.clone(),
            action: "source.search",
            host: Some(run.host.clone()),
            target: format!("where is {file} (for run {run_id})"),
            env: Some(env_json),
            outcome: crate::audit::outcome(&captured),
            run_id: Some(run_id),
        };
        crate::audit::record(&self.store, entry).await;
        let captured = captured?;
        let out = String::from_utf8_lossy(&captured.stdout);
        let mut candidates: Vec<String> = Vec::new();
        let mut searched = Vec::new();
        for line in out.lines() {
            match line.split_once('\t') {
                Some(("F", path)) if !candidates.iter().any(|c| c == path) => candidates.push(path.to_string()),
                Some(("R", dir)) => searched.push(dir.to_string()),
                _ => {}
            }
        }
        candidates.truncate(MAX_CANDIDATES);
        tracing::info!(run = run_id, file, found = candidates.len(), "resolved a source reference");
        let investigation_title =
            self.store.investigation(&investigation_id).await?.map(|row| row.title).unwrap_or_default();
        Ok(SourceCandidates {
            run_id,
            step_id: run.step_id,
            investigation_id,
            investigation_title,
            host: run.host,
            file: file.to_string(),
            line,
            candidates,
            searched,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_paths_give_files_and_package_roots() {
        let text = "loading /opt/venv/lib/python3.12/site-packages/vllm/config.py\n\
                    warn at /srv/vllm/distributed/custom_all_reduce.py:137\n";
        let (direct, roots) = hints_from_output(text, "custom_all_reduce.py");
        assert_eq!(direct.into_iter().collect::<Vec<_>>(), ["/srv/vllm/distributed/custom_all_reduce.py"]);
        assert_eq!(roots.into_iter().collect::<Vec<_>>(), ["/opt/venv/lib/python3.12/site-packages"]);
    }

    #[test]
    fn interpreters_named_by_the_command() {
        let found = pythons_in_command(
            "NCCL_PROTO=LL /root/ml-env/bin/python -m vllm.entrypoints.openai.api_server; /usr/bin/python3.12 x.py",
        );
        assert_eq!(found.into_iter().collect::<Vec<_>>(), ["/root/ml-env/bin/python", "/usr/bin/python3.12"]);
        assert_eq!(first_program("NCCL_PROTO=LL vllm serve m --tp 8"), Some("vllm"));
        assert_eq!(first_program("$(evil) x"), None);
    }

    #[test]
    fn every_name_in_the_script_is_quoted() {
        let hostile = "a'b;$(touch x)`y`.py";
        let s = script(
            hostile,
            &BTreeSet::new(),
            &BTreeSet::from(["/d';rm -rf /".to_string()]),
            &BTreeSet::new(),
            Some("vllm"),
        );
        assert!(s.contains(&quote("a'b;$(touch x)`y`.py")), "{s}");
        assert!(s.contains(&quote("/d';rm -rf /")), "{s}");
        assert!(check_reference("x.py\nrm -rf /", 3).is_err());
        assert!(check_reference("x.py", 0).is_err());
    }
}
