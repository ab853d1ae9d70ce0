//! Building the remote command line. Values are single-quoted for a POSIX shell
//! (the login shell sshd starts runs what we send), which leaves nothing inside
//! them special: spaces, `$(…)`, backquotes, `;` and newlines arrive as typed.

/// `value` as one POSIX shell word.
pub fn quote(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('\'');
    for c in value.chars() {
        if c == '\'' {
            // Close the quote, add an escaped quote, reopen.
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// `value` as a shell word for people to read: bare when nothing in it needs
/// quoting (`LL`, `/opt/x.py`), else [`quote`]d.
pub fn quote_if_needed(value: &str) -> String {
    let plain = !value.is_empty() && value.chars().all(|c| c.is_ascii_alphanumeric() || "_./:=,+-@%".contains(c));
    if plain { value.to_string() } else { quote(value) }
}

/// Whether `name` can be an environment variable name in a POSIX shell.
pub fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// The script sent with `exec`: optional `cd`, the environment as quoted
/// `export`s (sshd's AcceptEnv usually refuses `setenv` requests) and `unset`s
/// (a sweep's "leave it unset", even where the login environment sets it), then
/// the command exactly as the user wrote it.
///
/// Panics never: names are checked by the caller ([`is_env_name`]); an invalid
/// one here is skipped rather than spliced in.
pub fn remote_script<'a>(
    command: &str,
    env: impl IntoIterator<Item = (&'a str, &'a str)>,
    unset: impl IntoIterator<Item = &'a str>,
    cwd: Option<&str>,
) -> String {
    let mut script = String::new();
    for name in unset {
        if is_env_name(name) {
            script.push_str(&format!("unset {name}\n"));
        }
    }
    for (name, value) in env {
        if is_env_name(name) {
            script.push_str(&format!("export {name}={}\n", quote(value)));
        }
    }
    if let Some(dir) = cwd.filter(|d| !d.is_empty()) {
        script.push_str(&format!("cd {} || exit 126\n", quote(dir)));
    }
    script.push_str(command);
    script
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// What `sh` makes of a quoted word: the test runs a real shell.
    fn through_sh(value: &str) -> String {
        let out = Command::new("sh").arg("-c").arg(format!("printf %s {}", quote(value))).output().expect("sh runs");
        String::from_utf8(out.stdout).expect("utf8")
    }

    #[test]
    fn only_words_that_need_it_are_quoted() {
        assert_eq!(quote_if_needed("LL"), "LL");
        assert_eq!(quote_if_needed("/opt/x.py"), "/opt/x.py");
        assert_eq!(quote_if_needed("a b"), "'a b'");
        assert_eq!(quote_if_needed(""), "''");
        assert_eq!(quote_if_needed("$(x)"), "'$(x)'");
    }

    #[test]
    fn hostile_values_survive_a_real_shell() {
        for value in [
            "",
            "plain",
            "with spaces",
            "it's",
            "'''",
            "$(touch /tmp/sleuth-pwned)",
            "`id`",
            "a;b && c | d",
            "line1\nline2",
            "\\'\\",
            "$HOME ${PATH}",
            "ünïcödé ✓",
        ] {
            assert_eq!(through_sh(value), value, "quote({value:?}) = {}", quote(value));
        }
        assert!(!std::path::Path::new("/tmp/sleuth-pwned").exists());
    }

    #[test]
    fn env_names_are_checked() {
        assert!(is_env_name("NCCL_PROTO"));
        assert!(is_env_name("_x1"));
        assert!(!is_env_name("1X"));
        assert!(!is_env_name("A-B"));
        assert!(!is_env_name("A=B"));
        assert!(!is_env_name(""));
        assert!(!is_env_name("X;rm"));
    }

    #[test]
    fn script_exports_then_changes_dir_then_runs() {
        let script = remote_script("echo \"$A\"", [("A", "x y"), ("bad name", "z")], ["U", "no;"], Some("/tmp/a b"));
        assert_eq!(script, "unset U\nexport A='x y'\ncd '/tmp/a b' || exit 126\necho \"$A\"");
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(remote_script("echo \"${NCCL_PROTO-unset}\"", [], ["NCCL_PROTO"], None))
            .env("NCCL_PROTO", "LL")
            .output()
            .expect("sh");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "unset\n", "unset even where the login environment sets it");
    }
}
