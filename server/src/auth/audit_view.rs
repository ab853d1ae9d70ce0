//! Reading the audit log (admins only), as JSON or CSV.

use super::Auth;
use crate::policy::Admin;
use domain::accounts::AuditEntry;

pub const MAX_ENTRIES: i64 = 100_000;

impl Auth {
    /// The newest `limit` entries, newest first.
    pub async fn audit_log(&self, _: &Admin, limit: i64) -> crate::error::Result<Vec<AuditEntry>> {
        let rows = self.store.audit_entries(limit.clamp(1, MAX_ENTRIES)).await?;
        Ok(rows
            .into_iter()
            .map(|r| AuditEntry {
                id: r.id,
                at: crate::time::timestamp(r.at),
                who: r.who,
                action: r.action,
                host: r.host,
                target: r.target,
                env: serde_json::from_str(&r.env).unwrap_or_default(),
                outcome: r.outcome,
                run_id: r.run_id,
            })
            .collect())
    }
}

/// One CSV cell: quoted, quotes doubled, and a leading `= + - @` (or tab/CR)
/// defused with `'` so a spreadsheet does not run a command someone typed.
fn cell(text: &str) -> String {
    let defused =
        if text.starts_with(['=', '+', '-', '@', '\t', '\r']) { format!("'{text}") } else { text.to_string() };
    format!("\"{}\"", defused.replace('"', "\"\""))
}

pub fn to_csv(entries: &[AuditEntry]) -> String {
    let mut out = String::from("id,at,who,action,host,target,env,outcome,run_id\n");
    for e in entries {
        let env: Vec<String> = e.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let row = [
            e.id.to_string(),
            cell(&e.at),
            cell(&e.who),
            cell(&e.action),
            cell(e.host.as_deref().unwrap_or("")),
            cell(&e.target),
            cell(&env.join(" ")),
            cell(e.outcome.as_deref().unwrap_or("")),
            e.run_id.map(|r| r.to_string()).unwrap_or_default(),
        ];
        out.push_str(&row.join(","));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_cells_are_quoted_and_formulas_defused() {
        assert_eq!(cell(r#"echo "hi""#), r#""echo ""hi""""#);
        assert_eq!(cell("=HYPERLINK(\"x\")"), r#""'=HYPERLINK(""x"")""#);
        assert_eq!(cell("-rf"), "\"'-rf\"");
        let entry = AuditEntry {
            id: 1,
            at: "t".into(),
            who: "ada".into(),
            action: "run.start".into(),
            host: Some("gpu".into()),
            target: "a,b\nc".into(),
            env: vec![("NCCL_PROTO".into(), "LL".into())],
            outcome: None,
            run_id: Some(4),
        };
        let csv = to_csv(&[entry]);
        assert_eq!(
            csv.lines().nth(1),
            Some(r#"1,"t","ada","run.start","gpu","a,b"#),
            "the newline stays inside quotes"
        );
        assert!(csv.ends_with("\"NCCL_PROTO=LL\",\"\",4\n"), "{csv}");
    }
}
