//! Reading OpenSSH client configuration (`~/.ssh/config`) to import hosts.
//!
//! Resolution follows ssh_config(5): every `Host` block whose patterns match the
//! alias applies, in file order, and for each keyword the first value found wins.
//! Patterns use `*` and `?`; a `!pattern` that matches excludes the block.
//! `Match` blocks and `Include` are not evaluated (they are reported as skipped).

use std::collections::HashMap;

/// One host as resolved for an alias.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved {
    pub alias: String,
    pub hostname: String,
    pub user: Option<String>,
    pub port: Option<u16>,
    pub identity_file: Option<String>,
    /// The first hop of ProxyJump, as written (an alias or `[user@]host[:port]`).
    pub proxy_jump: Option<String>,
}

#[derive(Debug, Default)]
pub struct Parsed {
    pub hosts: Vec<Resolved>,
    /// Lines that were not understood or not evaluated, with why.
    pub skipped: Vec<String>,
}

struct Block {
    patterns: Vec<String>,
    options: Vec<(String, String)>,
}

/// Whether `name` matches an ssh_config pattern with `*` and `?`.
pub fn wildcard_match(pattern: &str, name: &str) -> bool {
    fn go(p: &[u8], n: &[u8]) -> bool {
        match (p.first(), n.first()) {
            (None, None) => true,
            (Some(b'*'), _) => go(&p[1..], n) || (!n.is_empty() && go(p, &n[1..])),
            (Some(b'?'), Some(_)) => go(&p[1..], &n[1..]),
            (Some(a), Some(b)) if a.eq_ignore_ascii_case(b) => go(&p[1..], &n[1..]),
            _ => false,
        }
    }
    go(pattern.as_bytes(), name.as_bytes())
}

fn block_applies(patterns: &[String], alias: &str) -> bool {
    let mut positive = false;
    for pattern in patterns {
        if let Some(negated) = pattern.strip_prefix('!') {
            if wildcard_match(negated, alias) {
                return false;
            }
        } else if wildcard_match(pattern, alias) {
            positive = true;
        }
    }
    positive
}

fn unquote(value: &str) -> String {
    let v = value.trim();
    v.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(v).to_string()
}

pub fn parse(text: &str) -> Parsed {
    let mut parsed = Parsed::default();
    // Options before the first Host line apply to every host.
    let mut blocks = vec![Block { patterns: vec!["*".into()], options: Vec::new() }];
    let mut in_match = false;
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (keyword, value) = match line.find(|c: char| c.is_whitespace() || c == '=') {
            Some(i) => (&line[..i], line[i..].trim_start_matches(|c: char| c.is_whitespace() || c == '=')),
            None => (line, ""),
        };
        let keyword = keyword.to_ascii_lowercase();
        match keyword.as_str() {
            "host" => {
                in_match = false;
                blocks.push(Block { patterns: value.split_whitespace().map(unquote).collect(), options: Vec::new() });
            }
            "match" => {
                in_match = true;
                parsed.skipped.push(format!("line {}: Match blocks are not evaluated", n + 1));
            }
            "include" => parsed.skipped.push(format!("line {}: Include is not followed ({value})", n + 1)),
            _ if in_match => {}
            _ => {
                if let Some(block) = blocks.last_mut() {
                    block.options.push((keyword, unquote(value)));
                }
            }
        }
    }

    // Concrete aliases: Host patterns without wildcards or negation, in order.
    let mut seen = HashMap::new();
    let aliases: Vec<String> = blocks
        .iter()
        .flat_map(|b| b.patterns.iter())
        .filter(|p| !p.contains(['*', '?', '!']))
        .filter(|p| seen.insert(p.to_string(), ()).is_none())
        .cloned()
        .collect();

    for alias in aliases {
        let mut values: HashMap<String, String> = HashMap::new();
        for block in blocks.iter().filter(|b| block_applies(&b.patterns, &alias)) {
            for (keyword, value) in &block.options {
                values.entry(keyword.clone()).or_insert_with(|| value.clone());
            }
        }
        let hostname = values.get("hostname").map(|h| h.replace("%h", &alias)).unwrap_or_else(|| alias.clone());
        let user = values.get("user").cloned();
        let port = match values.get("port").map(|p| p.parse::<u16>()) {
            Some(Ok(p)) => Some(p),
            Some(Err(_)) => {
                parsed.skipped.push(format!("{alias}: Port {:?} is not a number", values["port"]));
                continue;
            }
            None => None,
        };
        let identity_file = values
            .get("identityfile")
            .map(|f| f.replace("%h", &hostname).replace("%r", user.as_deref().unwrap_or("")).replace("%%", "%"));
        let proxy_jump = values
            .get("proxyjump")
            .and_then(|j| j.split(',').next())
            .map(|j| j.trim().to_string())
            .filter(|j| !j.is_empty() && !j.eq_ignore_ascii_case("none"));
        parsed.hosts.push(Resolved { alias, hostname, user, port, identity_file, proxy_jump });
    }
    parsed
}

/// `[user@]host[:port]`, the form ProxyJump allows besides an alias.
pub fn parse_jump(spec: &str) -> (Option<String>, String, Option<u16>) {
    let (user, rest) = match spec.split_once('@') {
        Some((u, r)) => (Some(u.to_string()), r),
        None => (None, spec),
    };
    match rest.rsplit_once(':') {
        Some((host, port)) if port.parse::<u16>().is_ok() => (user, host.to_string(), port.parse().ok()),
        _ => (user, rest.to_string(), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = r#"
# GPU boxes
Host h200-* !h200-old
    User ml
    IdentityFile ~/.ssh/gpu_%h
    ProxyJump bastion

Host h200-a
    HostName 10.0.0.11
    Port 2222
    User root

Host h200-b h200-old
    HostName=10.0.0.12

Host bastion
    HostName bastion.example.com
    User jump
    ProxyJump none

Host *
    User fallback
    Port 22

Match host foo
    User ignored
"#;

    #[test]
    fn resolves_like_openssh_first_match_wins() {
        let parsed = parse(CONFIG);
        let by = |alias: &str| parsed.hosts.iter().find(|h| h.alias == alias).cloned().unwrap();
        let a = by("h200-a");
        // "h200-*" comes first, so its User wins over the specific block's.
        assert_eq!(a.user.as_deref(), Some("ml"));
        assert_eq!(a.hostname, "10.0.0.11");
        assert_eq!(a.port, Some(2222));
        assert_eq!(a.identity_file.as_deref(), Some("~/.ssh/gpu_10.0.0.11"));
        assert_eq!(a.proxy_jump.as_deref(), Some("bastion"));
        let b = by("h200-b");
        assert_eq!((b.hostname.as_str(), b.port), ("10.0.0.12", Some(22)));
        // Excluded by the negated pattern: gets only the catch-all.
        let old = by("h200-old");
        assert_eq!(old.user.as_deref(), Some("fallback"));
        assert_eq!(old.proxy_jump, None);
        let bastion = by("bastion");
        assert_eq!(bastion.proxy_jump, None, "ProxyJump none");
        assert_eq!(parsed.hosts.len(), 4, "wildcard patterns are not hosts");
        assert_eq!(parsed.skipped.len(), 1, "{:?}", parsed.skipped);
    }

    #[test]
    fn wildcards_and_jump_specs() {
        assert!(wildcard_match("gpu-?", "gpu-1"));
        assert!(!wildcard_match("gpu-?", "gpu-10"));
        assert!(wildcard_match("*.example.com", "a.b.example.com"));
        assert!(wildcard_match("GPU*", "gpu7"));
        assert_eq!(parse_jump("ops@bastion:2200"), (Some("ops".into()), "bastion".into(), Some(2200)));
        assert_eq!(parse_jump("bastion"), (None, "bastion".into(), None));
    }
}
