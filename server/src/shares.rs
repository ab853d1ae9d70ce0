//! View-only share links: create, list, revoke (owners; checked in
//! `auth::guarded`), and what a link shows to anyone who has it.
//!
//! A link shows the investigation as its members see it, minus everything about
//! the team: no members, no comments, no other links, no forms. Host credentials are never
//! in an investigation. With `hide_hosts`, hosts are renamed `host 1`, `host 2` …
//! in every `host` field, and their addresses (and jump hosts) are replaced
//! wherever they appear in text (commands, output, paths) before the page is
//! rendered. Names are not replaced in text: a host called `gpu` would turn
//! `--query-gpu` into nonsense, and names are the team's labels, not addresses.

use crate::notebook::{Service, store_error, timestamp};
use app::backend::Notebook;
use app::error::{ApiError, ErrorCode};
use app::model::{Abilities, Investigation};
use app::shares::{CreatedShareLink, MAX_DAYS, NewShareLink, ShareLink, SharedView};
use serde_json::Value;

const LABEL_CHARS: usize = 100;
const DAY_MS: i64 = 24 * 60 * 60 * 1000;

fn link(row: crate::db::ShareRow, now: i64) -> ShareLink {
    let state = match (row.revoked_at, row.expires_at) {
        (Some(_), _) => "revoked",
        (None, Some(at)) if at <= now => "expired",
        _ => "active",
    };
    ShareLink {
        id: row.id,
        label: row.label,
        hide_hosts: row.hide_hosts != 0,
        created_by: row.created_by,
        created_at: timestamp(row.created_at),
        expires_at: row.expires_at.map(timestamp),
        revoked_at: row.revoked_at.map(timestamp),
        state: state.into(),
    }
}

fn not_found(id: i64) -> ApiError {
    ApiError::not_found(format!("There is no share link {id}."))
}

impl Service {
    pub(crate) async fn share_links_impl(&self, investigation: &str) -> Result<Vec<ShareLink>, ApiError> {
        let now = crate::db::now_ms();
        let rows = self.store.shares_of(investigation).await.map_err(store_error)?;
        Ok(rows.into_iter().map(|r| link(r, now)).collect())
    }

    pub(crate) async fn create_share_link_impl(
        &self,
        investigation: &str,
        new: NewShareLink,
    ) -> Result<CreatedShareLink, ApiError> {
        self.existing_investigation(investigation).await?;
        let label = new.label.unwrap_or_default().trim().to_string();
        if label.chars().count() > LABEL_CHARS {
            return Err(ApiError::invalid(format!("A link's label has at most {LABEL_CHARS} characters.")));
        }
        let expires_at = match new.expires_in_days {
            Some(days @ 1..=MAX_DAYS) => Some(crate::db::now_ms() + i64::from(days) * DAY_MS),
            Some(days) => {
                return Err(ApiError::invalid(format!(
                    "A link expires after 1 to {MAX_DAYS} days (or never: leave it out); not {days}."
                )));
            }
            None => None,
        };
        let (token, hash) = crate::auth::new_secret();
        let who = crate::audit::actor_name();
        let row = self
            .store
            .insert_share(investigation, &hash, &label, new.hide_hosts, &who, expires_at)
            .await
            .map_err(store_error)?;
        tracing::info!(investigation, link = row.id, by = %who, "created a share link");
        Ok(CreatedShareLink { url: format!("/s/{token}"), link: link(row, crate::db::now_ms()) })
    }

    pub(crate) async fn revoke_share_link_impl(&self, id: i64) -> Result<ShareLink, ApiError> {
        let row = self.store.revoke_share(id).await.map_err(store_error)?.ok_or_else(|| not_found(id))?;
        tracing::info!(link = id, by = %crate::audit::actor_name(), "revoked a share link");
        Ok(link(row, crate::db::now_ms()))
    }

    pub(crate) async fn shared_impl(&self, token: &str) -> Result<SharedView, ApiError> {
        let unknown = || {
            ApiError::not_found("This share link does not exist: it may be mistyped, or its investigation was deleted.")
        };
        let row = self.store.share_by_hash(&crate::auth::hash_secret(token)).await.map_err(store_error)?;
        let row = row.ok_or_else(unknown)?;
        let now = crate::db::now_ms();
        if let Some(at) = row.revoked_at {
            return Err(ApiError::new(
                ErrorCode::Gone,
                format!("This share link was revoked on {}. Ask whoever sent it for a new one.", day(at)),
            ));
        }
        if let Some(at) = row.expires_at.filter(|at| *at <= now) {
            return Err(ApiError::new(
                ErrorCode::Gone,
                format!("This share link expired on {}. Ask whoever sent it for a new one.", day(at)),
            ));
        }
        let mut investigation = self.investigation(&row.investigation_id).await?;
        investigation.members.clear();
        investigation.share_links.clear();
        investigation.comments.clear();
        investigation.abilities = Abilities::default();
        if row.hide_hosts != 0 {
            investigation = self.without_hosts(investigation).await?;
        }
        Ok(SharedView {
            investigation,
            expires_at: row.expires_at.map(timestamp),
            hide_hosts: row.hide_hosts != 0,
            shared_by: row.created_by,
        })
    }

    /// Renames the hosts the investigation mentions and blanks their addresses.
    async fn without_hosts(&self, investigation: Investigation) -> Result<Investigation, ApiError> {
        let mut value = serde_json::to_value(&investigation).map_err(internal)?;
        let mut names = Vec::new();
        collect_hosts(&value, &mut names);
        let mut replacements = Vec::new();
        for name in &names {
            if let Some(host) = self.store.host(name).await.map_err(store_error)? {
                replacements.push((host.hostname.clone(), "(address hidden)".to_string()));
                if let Some(jump) = host.proxy_jump.filter(|j| !j.is_empty()) {
                    replacements.push((jump, "(address hidden)".to_string()));
                }
            }
        }
        // Longest first, so `gpu.example.com` goes before `gpu`.
        replacements.retain(|(from, _)| from.len() >= 3);
        replacements.sort_by_key(|(from, _)| std::cmp::Reverse(from.len()));
        rewrite(&mut value, &names, &replacements);
        serde_json::from_value(value).map_err(internal)
    }
}

fn internal(e: serde_json::Error) -> ApiError {
    crate::notebook::internal("share link view", e)
}

/// `2026-11-30` of a stored time.
fn day(ms: i64) -> String {
    timestamp(ms).chars().take(10).collect()
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

/// `host` fields become their alias; every other string has the names and
/// addresses replaced.
fn rewrite(value: &mut Value, names: &[String], replacements: &[(String, String)]) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if let ("host", Value::String(name)) = (key.as_str(), &*v)
                    && let Some(i) = names.iter().position(|n| n == name)
                {
                    *v = Value::String(format!("host {}", i + 1));
                } else {
                    rewrite(v, names, replacements);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| rewrite(v, names, replacements)),
        Value::String(text) => {
            for (from, to) in replacements {
                if text.contains(from.as_str()) {
                    *text = text.replace(from.as_str(), to);
                }
            }
        }
        _ => {}
    }
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
        rewrite(&mut value, &names, &replacements);
        let text = value.to_string();
        assert!(!text.contains("corp.example") && !text.contains("10.1.2.3"), "{text}");
        assert_eq!(value["steps"][0]["body"]["host"], "host 1");
        assert_eq!(value["steps"][1]["body"]["host"], "host 2", "a short name is still renamed in its field");
        assert_eq!(value["steps"][0]["body"]["command"], "ssh (address hidden) nvidia-smi");
        assert_eq!(value["steps"][0]["runs"][0]["tail"]["html"], "connected to (address hidden) (gpu-box)");
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
        assert_eq!(link(row(None, None), 10).state, "active");
        assert_eq!(link(row(Some(20), None), 10).state, "active");
        assert_eq!(link(row(Some(10), None), 10).state, "expired");
        assert_eq!(link(row(Some(20), Some(5)), 10).state, "revoked");
    }
}
