//! View-only share links: create, list, revoke (owners; checked in
//! `crate::guarded`), and what a link shows to anyone who has it.
//!
//! A link shows the investigation as its members see it, minus everything about
//! the team: no members, no comments, no other links, no forms, and no names of
//! people — who ran, edited or annotated something reads "a team member"; only
//! the name of whoever made the link is shown, as its sender. Host credentials
//! are never in an investigation. With `hide_hosts`, hosts are renamed `host 1`,
//! `host 2` … in every `host` field and wherever the name stands as a word in
//! text (provenance, chart labels, commands, output: `ssh gpu` but not
//! `--query-gpu` or `/home/gpu/`; in HTML and SVG only outside tags), and their
//! addresses (and jump hosts) are replaced wherever they appear.

use crate::db::Store;
use crate::error::{Context, Result};
use crate::policy::{Own, Permit, Shared};
use crate::time::{now_ms, timestamp};
use domain::error::ApiError;
use domain::model::{Abilities, Investigation};
use domain::shares::{CreatedShareLink, LinkState, MAX_DAYS, NewShareLink, ShareLink};
use serde_json::Value;

#[derive(Clone)]
pub struct Shares {
    store: Store,
}

const LABEL_CHARS: usize = 100;
const DAY_MS: i64 = 24 * 60 * 60 * 1000;

fn link(row: crate::db::ShareRow, now: i64) -> ShareLink {
    let state = match (row.revoked_at, row.expires_at) {
        (Some(_), _) => LinkState::Revoked,
        (None, Some(at)) if at <= now => LinkState::Expired,
        _ => LinkState::Active,
    };
    ShareLink {
        id: row.id,
        label: row.label,
        hide_hosts: row.hide_hosts != 0,
        created_by: row.created_by,
        created_at: timestamp(row.created_at),
        expires_at: row.expires_at.map(timestamp),
        revoked_at: row.revoked_at.map(timestamp),
        state,
    }
}

fn not_found(id: i64) -> ApiError {
    ApiError::not_found(format!("There is no share link {id}."))
}

impl Shares {
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    /// The investigation's share links.
    pub async fn links(&self, permit: &Permit<Own>) -> Result<Vec<ShareLink>> {
        let now = now_ms();
        let rows = self.store.shares_of(permit.investigation()).await?;
        Ok(rows.into_iter().map(|r| link(r, now)).collect())
    }

    /// A new link; its URL (with the token) is in the answer and nowhere else.
    pub async fn create(&self, permit: &Permit<Own>, new: NewShareLink) -> Result<CreatedShareLink> {
        let investigation = permit.investigation();
        if self.store.investigation(investigation).await?.is_none() {
            return Err(crate::investigations::not_found(investigation).into());
        }
        let label = new.label.unwrap_or_default().trim().to_string();
        if label.chars().count() > LABEL_CHARS {
            return Err(ApiError::invalid(format!("A link's label has at most {LABEL_CHARS} characters.")).into());
        }
        let expires_at = match new.expires_in_days {
            Some(days @ 1..=MAX_DAYS) => Some(now_ms() + i64::from(days) * DAY_MS),
            Some(days) => {
                return Err(ApiError::invalid(format!(
                    "A link expires after 1 to {MAX_DAYS} days (or never: leave it out); not {days}."
                ))
                .into());
            }
            None => None,
        };
        let (token, hash) = crate::ids::new_secret();
        let who = permit.actor().name.clone();
        let row = self.store.insert_share(investigation, &hash, &label, new.hide_hosts, &who, expires_at).await?;
        tracing::info!(investigation, link = row.id, by = %who, "created a share link");
        Ok(CreatedShareLink { url: format!("/s/{token}"), link: link(row, now_ms()) })
    }

    pub async fn revoke(&self, permit: &Permit<Own>, id: i64) -> Result<ShareLink> {
        let row = self.store.revoke_share(id).await?.ok_or_else(|| not_found(id))?;
        tracing::info!(link = id, by = %permit.actor().name, "revoked a share link");
        Ok(link(row, now_ms()))
    }

    /// The investigation as the link's readers may see it: nothing about the
    /// team (members, comments, links), no forms, no names of people, and with
    /// `hide_hosts` no host names or addresses.
    pub async fn for_outsiders(&self, permit: &Shared, mut investigation: Investigation) -> Result<Investigation> {
        without_team(&mut investigation);
        let mut value = serde_json::to_value(&investigation).context("a shared investigation as JSON")?;
        self.hide(permit, &mut value).await?;
        serde_json::from_value(value).context("a shared investigation from JSON")
    }

    /// Takes people's names out of any JSON (an investigation and what goes
    /// with it) and, if the link hides hosts, renames the hosts it mentions and
    /// blanks their addresses.
    pub async fn hide(&self, permit: &Shared, value: &mut Value) -> Result<()> {
        let mut names = Vec::new();
        let mut replacements = Vec::new();
        if permit.hide_hosts() {
            collect_hosts(value, &mut names);
            for name in &names {
                if let Some(host) = self.store.host(name).await? {
                    replacements.push((host.hostname.clone(), "(address hidden)".to_string()));
                    if let Some(jump) = host.proxy_jump.filter(|j| !j.is_empty()) {
                        replacements.push((jump, "(address hidden)".to_string()));
                    }
                }
            }
            // Longest first, so `gpu.example.com` goes before `gpu`.
            replacements.retain(|(from, _)| from.len() >= 3);
            replacements.sort_by_key(|(from, _)| std::cmp::Reverse(from.len()));
        }
        rewrite(value, "", &names, &replacements);
        Ok(())
    }
}

/// The investigation without what is the team's own: members, comments,
/// share links, and the forms of any role.
pub fn without_team(investigation: &mut Investigation) {
    investigation.members.clear();
    investigation.share_links.clear();
    investigation.comments.clear();
    // Watches name their creators and webhooks, replays their makers, and
    // both link the team's pages: a link shows none of it.
    investigation.watches.clear();
    investigation.replays.clear();
    investigation.replay_of = None;
    investigation.outline.iter_mut().for_each(|step| step.comments.clear());
    investigation.abilities = Abilities::default();
    // Source references open a page of the team's; for outsiders they are text.
    for run in investigation.steps.iter_mut().flat_map(|step| step.runs.iter_mut()) {
        for tail in run.tail.iter_mut().chain(run.server_tail.iter_mut()) {
            tail.html = crate::snippets::refs::unlink(&tail.html);
        }
    }
}

/// The distinct values of every `host` field, in order of appearance.
fn collect_hosts(value: &Value, names: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                match (key.as_str(), v) {
                    ("host", Value::String(name)) if !name.is_empty() && !names.contains(name) => {
                        names.push(name.clone())
                    }
                    _ => collect_hosts(v, names),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_hosts(v, names)),
        _ => {}
    }
}

/// Fields that name a person (who ran, edited, annotated).
const PERSON_FIELDS: [&str; 4] = ["who", "updated_by", "author", "created_by"];
const SOMEONE: &str = "a team member";

/// `host` fields become their alias, people's names go, and every other
/// string has the host names and addresses replaced.
fn rewrite(value: &mut Value, key: &str, names: &[String], replacements: &[(String, String)]) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if let ("host", Value::String(name)) = (key.as_str(), &*v)
                    && let Some(i) = names.iter().position(|n| n == name)
                {
                    *v = Value::String(alias(i));
                } else if PERSON_FIELDS.contains(&key.as_str()) && v.as_str().is_some_and(|s| !s.is_empty()) {
                    *v = Value::String(SOMEONE.into());
                } else {
                    rewrite(v, key, names, replacements);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| rewrite(v, key, names, replacements)),
        Value::String(text) => {
            for (from, to) in replacements {
                if text.contains(from.as_str()) {
                    *text = text.replace(from.as_str(), to);
                }
            }
            if !names.is_empty() && !vocabulary(key) {
                let markup = key.ends_with("html") || key == "svg";
                *text = replace_names(text, names, markup);
            }
        }
        _ => {}
    }
}

/// Fields whose values are the API's own words (a status, a step kind), ids,
/// addresses or times, not text anyone wrote: a host called `open` must not
/// turn an investigation's status into `host 1`.
fn vocabulary(key: &str) -> bool {
    const KEYS: [&str; 11] =
        ["status", "kind", "calculator", "direction", "outcome", "role", "state", "metric", "extractor", "id", "url"];
    KEYS.contains(&key) || key.ends_with("_id") || key.ends_with("_at")
}

fn alias(i: usize) -> String {
    format!("host {}", i + 1)
}

/// Characters a host name (or a longer word it is part of) is made of; a name
/// is replaced only where it is a whole such word, so `gpu` stays in
/// `--query-gpu`, `gpu.example.com` and `/home/gpu/` (a trailing `.` or `:`
/// ends a sentence or precedes a port, and is not part of the word).
fn word_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')
}

/// `text` with every whole-word host name replaced by its alias; with
/// `markup`, only outside `<…>` tags, so element and attribute names stay.
fn replace_names(text: &str, names: &[String], markup: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    let mut in_tag = false;
    let flush = |word: &mut String, out: &mut String| {
        let core = word.trim_end_matches('.');
        match names.iter().position(|n| n == core) {
            Some(i) => {
                let dots = &word[core.len()..];
                out.push_str(&alias(i));
                out.push_str(dots);
            }
            None => out.push_str(word),
        }
        word.clear();
    };
    for c in text.chars() {
        if markup && in_tag {
            out.push(c);
            in_tag = c != '>';
        } else if markup && c == '<' {
            flush(&mut word, &mut out);
            out.push(c);
            in_tag = true;
        } else if word_char(c) {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hosts_are_renamed_and_their_addresses_blanked_everywhere() {
        let mut value = json!({
            "steps": [
                { "body": { "host": "gpu-box", "command": "ssh gpu-box.corp.example nvidia-smi" },
                  "runs": [{ "host": "gpu-box", "tail": { "html": "connected to 10.1.2.3 (gpu-box)" } }] },
                { "body": { "host": "db", "command": "ls" } }
            ]
        });
        let mut names = Vec::new();
        collect_hosts(&value, &mut names);
        assert_eq!(names, ["gpu-box", "db"]);
        let replacements = vec![
            ("gpu-box.corp.example".to_string(), "(address hidden)".to_string()),
            ("10.1.2.3".to_string(), "(address hidden)".to_string()),
        ];
        rewrite(&mut value, "", &names, &replacements);
        let text = value.to_string();
        assert!(!text.contains("corp.example") && !text.contains("10.1.2.3"), "{text}");
        assert_eq!(value["steps"][0]["body"]["host"], "host 1");
        assert_eq!(value["steps"][1]["body"]["host"], "host 2", "a short name is still renamed in its field");
        assert_eq!(value["steps"][0]["body"]["command"], "ssh (address hidden) nvidia-smi");
        assert_eq!(value["steps"][0]["runs"][0]["tail"]["html"], "connected to (address hidden) (host 1)");
    }

    #[test]
    fn names_are_replaced_as_words_and_never_inside_tags() {
        let names = vec!["gpu".to_string(), "text".to_string()];
        assert_eq!(
            replace_names("ssh gpu nvidia-smi --query-gpu=name /home/gpu/x gpu.example.com on gpu.", &names, false),
            "ssh host 1 nvidia-smi --query-gpu=name /home/gpu/x gpu.example.com on host 1."
        );
        assert_eq!(
            replace_names(r#"<text class="gpu">gpu&#32;text</text>"#, &names, true),
            r#"<text class="gpu">host 1&#32;host 2</text>"#
        );
    }

    #[test]
    fn the_apis_own_words_are_not_host_names() {
        let names = vec!["open".to_string(), "command".to_string()];
        let mut value = json!({ "status": "open", "steps": [{ "body": { "kind": "command", "host": "command",
            "command": "ssh command true" }, "investigation_id": "open" }], "question": "is open slow?" });
        rewrite(&mut value, "", &names, &[]);
        assert_eq!(value["status"], "open");
        assert_eq!(value["steps"][0]["body"]["kind"], "command");
        assert_eq!(value["steps"][0]["body"]["host"], "host 2");
        assert_eq!(value["steps"][0]["body"]["command"], "ssh host 2 true");
        assert_eq!(value["steps"][0]["investigation_id"], "open");
        assert_eq!(value["question"], "is host 1 slow?", "text is text");
    }

    #[test]
    fn people_are_not_named() {
        let mut value = json!({ "steps": [{ "updated_by": "ada", "runs": [{ "who": "bob" }],
            "annotations": [{ "author": "cy", "body": "ada said so" }] }] });
        rewrite(&mut value, "", &[], &[]);
        assert_eq!(value["steps"][0]["updated_by"], SOMEONE);
        assert_eq!(value["steps"][0]["runs"][0]["who"], SOMEONE);
        assert_eq!(value["steps"][0]["annotations"][0]["author"], SOMEONE);
        assert_eq!(value["steps"][0]["annotations"][0]["body"], "ada said so", "what people wrote stays");
    }

    #[test]
    fn a_link_knows_whether_it_still_works() {
        let row = |expires_at, revoked_at| crate::db::ShareRow {
            id: 1,
            investigation_id: "x".into(),
            label: String::new(),
            hide_hosts: 0,
            created_by: "ada".into(),
            created_at: 0,
            expires_at,
            revoked_at,
        };
        assert_eq!(link(row(None, None), 10).state, LinkState::Active);
        assert_eq!(link(row(Some(20), None), 10).state, LinkState::Active);
        assert_eq!(link(row(Some(10), None), 10).state, LinkState::Expired);
        assert_eq!(link(row(Some(20), Some(5)), 10).state, LinkState::Revoked);
    }
}
