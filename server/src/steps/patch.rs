//! Patch steps: the diff read and checked, its files listed with their bases
//! (`crate::patches` reads missing bases from the host when it is saved).

use crate::patches::diff;
use domain::error::ApiError;
use domain::hosts::is_host_name;
use domain::steps::patch::{MAX_DIFF_BYTES, PatchBody, PatchFile};

pub fn validate(mut body: PatchBody) -> Result<PatchBody, ApiError> {
    body.host = body.host.trim().to_string();
    if !is_host_name(&body.host) {
        return Err(ApiError::invalid("Choose the host whose files the patch changes."));
    }
    if body.diff.len() > MAX_DIFF_BYTES {
        return Err(ApiError::invalid(format!("A patch's diff may hold at most {} KiB.", MAX_DIFF_BYTES >> 10)));
    }
    // A diff pasted from a browser's text area comes with CRLF line ends.
    if body.diff.contains("\r\n") {
        body.diff = body.diff.replace("\r\n", "\n");
    }
    let files = diff::parse(&body.diff).map_err(|e| ApiError::invalid(e.to_string()))?;
    // A relative path (`git diff`'s `vllm/…/x.py`) is resolved on the host
    // when the step is saved (`crate::patches::Patches::with_bases`).
    let given = std::mem::take(&mut body.files);
    if let Some(stray) = given.iter().find(|g| !files.iter().any(|f| f.path == g.path)) {
        return Err(ApiError::invalid(format!("The diff does not change {:?}, whose base was given.", stray.path)));
    }
    for file in &files {
        let base = given.iter().find(|g| g.path == file.path).and_then(|g| g.base.clone());
        if let Some(base) = &base
            && !is_sha256(base)
        {
            return Err(ApiError::invalid(format!("The base of {} must be a sha256 in hex (64 digits).", file.path)));
        }
        let (added, removed) = diff::counts(std::slice::from_ref(file));
        body.files.push(PatchFile {
            path: file.path.clone(),
            base: base.map(|b| b.to_ascii_lowercase()),
            added: u32::try_from(added).unwrap_or(u32::MAX),
            removed: u32::try_from(removed).unwrap_or(u32::MAX),
        });
    }
    check_caches(&body.caches)?;
    if body.expect.len() > MAX_CHECKS {
        return Err(ApiError::invalid(format!("A patch has at most {MAX_CHECKS} expectations.")));
    }
    for e in &mut body.expect {
        e.text = e.text.trim().to_string();
        if e.text.is_empty() || e.text.len() > 500 || e.text.contains(['\n', '\0']) {
            return Err(ApiError::invalid(
                "An expectation is one line of 1 to 500 bytes, looked for in the run's output and server log.",
            ));
        }
    }
    Ok(body)
}

/// Caches and expectations a patch may have, each.
const MAX_CHECKS: usize = 8;

/// A cache is removed with `rm -rf` on the host: an absolute path or one
/// under the home directory (`~/…`), at least two names deep, no `..`.
fn check_caches(caches: &[String]) -> Result<(), ApiError> {
    if caches.len() > MAX_CHECKS {
        return Err(ApiError::invalid(format!("A patch clears at most {MAX_CHECKS} caches.")));
    }
    for cache in caches {
        let rest = cache.strip_prefix("~/").or_else(|| cache.strip_prefix('/'));
        let names: Vec<&str> = rest.unwrap_or_default().split('/').filter(|n| !n.is_empty()).collect();
        let bad = rest.is_none()
            || names.len() < 2
            || names.iter().any(|n| *n == ".." || *n == ".")
            || cache.chars().any(char::is_control);
        if bad {
            return Err(ApiError::invalid(format!(
                "{cache:?} is not a cache a patch may clear: give an absolute path or one under ~/, at least two names deep, without `..` (~/.cache/vllm/torch_compile_cache)."
            )));
        }
    }
    Ok(())
}

pub fn is_sha256(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIFF: &str =
        "--- /opt/vllm/gate.py\n+++ /opt/vllm/gate.py\n@@ -1,3 +1,3 @@\n a = 1\n-slow = True\n+slow = False\n c = 3\n";

    fn body(diff: &str, files: Vec<PatchFile>) -> PatchBody {
        PatchBody { host: " gpu ".into(), diff: diff.into(), files, caches: Vec::new(), expect: Vec::new() }
    }

    #[test]
    fn files_come_from_the_diff_with_their_counts_and_given_bases() {
        let base = "AB".repeat(32);
        let given = vec![PatchFile { path: "/opt/vllm/gate.py".into(), base: Some(base), added: 9, removed: 9 }];
        let checked = validate(body(DIFF, given)).unwrap();
        assert_eq!(checked.host, "gpu");
        assert_eq!(checked.files.len(), 1);
        let file = &checked.files[0];
        assert_eq!((file.added, file.removed), (1, 1), "counted from the diff, not taken from the request");
        assert_eq!(file.base.as_deref(), Some("ab".repeat(32).as_str()));
        assert!(!checked.reads_host());
        assert!(validate(body(DIFF, vec![])).unwrap().reads_host(), "no base given: read from the host");
    }

    #[test]
    fn bad_patches_are_refused_with_a_reason() {
        let say = |b: PatchBody| validate(b).err().map(|e| e.message).unwrap_or_default();
        assert!(say(body(&DIFF.replace("/opt/vllm", "/opt/../etc"), vec![])).contains("`..`"));
        let relative =
            validate(body(&DIFF.replace("/opt/vllm/", "vllm/"), vec![])).expect("resolved on the host later");
        assert!(relative.reads_host() && relative.files[0].path == "vllm/gate.py", "{:?}", relative.files);
        assert!(say(body("hello", vec![])).contains("not a unified diff"));
        let stray = vec![PatchFile { path: "/etc/passwd".into(), base: None, added: 0, removed: 0 }];
        assert!(say(body(DIFF, stray)).contains("does not change \"/etc/passwd\""));
        let short =
            vec![PatchFile { path: "/opt/vllm/gate.py".into(), base: Some("abc".into()), added: 0, removed: 0 }];
        assert!(say(body(DIFF, short)).contains("sha256"));
        assert!(say(PatchBody { host: "no host".into(), ..body(DIFF, vec![]) }).contains("host"));
        assert!(say(body(&"x".repeat(MAX_DIFF_BYTES + 1), vec![])).contains("KiB"));
    }

    #[test]
    fn caches_are_deep_enough_to_clear_and_expectations_are_lines() {
        let with = |caches: &[&str]| PatchBody {
            caches: caches.iter().map(|c| c.to_string()).collect(),
            ..body(DIFF, vec![])
        };
        assert!(validate(with(&["~/.cache/vllm/torch_compile_cache", "/tmp/torchinductor_root/x"])).is_ok());
        for bad in ["~", "~/.cache", "/", "/etc", "relative/cache/dir", "~/.cache/../..", "/tmp/./x"] {
            assert!(validate(with(&[bad])).is_err(), "{bad} is refused");
        }
        let expect = |text: &str| PatchBody {
            expect: vec![domain::steps::patch::Expectation { text: text.into(), present: false }],
            ..body(DIFF, vec![])
        };
        assert_eq!(
            validate(expect("  Custom allreduce is disabled ")).unwrap().expect[0].text,
            "Custom allreduce is disabled"
        );
        assert!(validate(expect("two\nlines")).is_err());
        assert!(validate(expect("")).is_err());
    }

    #[test]
    fn a_pasted_diff_with_crlf_reads_as_one_with_lf() {
        let checked = validate(body(&DIFF.replace('\n', "\r\n"), vec![])).unwrap();
        assert_eq!(checked.diff, DIFF);
    }
}
