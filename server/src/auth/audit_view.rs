//! Reading the audit log (admins only), as JSON or CSV.

use super::Auth;
use crate::policy::Admin;
use domain::accounts::AuditEntry;

pub const MAX_ENTRIES: i64 = 100_000;

impl Auth {
    /// The newest `limit` entries, newest first.
    pub async fn audit_log(&self, _: &Admin, limit: i64) -> crate::error::Result<Vec<AuditEntry>> {
        let rows = self.store.audit_entries(limit.clamp(1, MAX_ENTRIES)).await?;
        rows.into_iter()
            .map(|r| {
                Ok(AuditEntry {
                    env: crate::error::stored(&r.env, || format!("audit entry {}'s environment", r.id))?,
                    id: r.id,
                    at: crate::time::timestamp(r.at),
                    who: r.who,
                    action: r.action,
                    host: r.host,
                    target: r.target,
                    outcome: r.outcome,
                    run_id: r.run_id,
                })
            })
            .collect()
    }
}

/// A leading `= + - @` (or tab/CR) defused with `'`, so a spreadsheet does
/// not run a command someone typed.
fn defused(text: &str) -> String {
    if text.starts_with(['=', '+', '-', '@', '\t', '\r']) { format!("'{text}") } else { text.to_string() }
}

/// Text cells quoted (quotes doubled, formulas defused), numbers bare.
pub fn to_csv(entries: &[AuditEntry]) -> String {
    let mut out = csv::WriterBuilder::new().quote_style(csv::QuoteStyle::NonNumeric).from_writer(Vec::new());
    let mut rows = Vec::with_capacity(entries.len());
    for e in entries {
        let env: Vec<String> = e.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        rows.push([
            e.id.to_string(),
            defused(&e.at),
            defused(&e.who),
            defused(&e.action),
            defused(e.host.as_deref().unwrap_or("")),
            defused(&e.target),
            defused(&env.join(" ")),
            defused(e.outcome.as_deref().unwrap_or("")),
            e.run_id.map(|r| r.to_string()).unwrap_or_default(),
        ]);
    }
    // Writing into memory fails only if the memory does; a header-only file is still a CSV.
    for row in rows {
        if out.write_record(&row).is_err() {
            break;
        }
    }
    let body = String::from_utf8(out.into_inner().unwrap_or_default()).unwrap_or_default();
    // The header's names bare, as spreadsheets and `csvkit` expect them.
    format!("id,at,who,action,host,target,env,outcome,run_id\n{body}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_cells_are_quoted_and_formulas_defused() {
        let only = |text: &str| {
            let csv = to_csv(&[AuditEntry {
                id: 1,
                at: text.into(),
                who: String::new(),
                action: String::new(),
                host: None,
                target: String::new(),
                env: vec![],
                outcome: None,
                run_id: None,
            }]);
            csv.lines().nth(1).unwrap_or_default().split_once(',').map(|(_, rest)| rest.to_string()).unwrap_or_default()
        };
        assert!(only(r#"echo "hi""#).starts_with(r#""echo ""hi""","#));
        assert!(only("=HYPERLINK(\"x\")").starts_with(r#""'=HYPERLINK(""x"")","#));
        assert!(only("-rf").starts_with("\"'-rf\","));
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
