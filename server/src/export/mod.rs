//! An investigation as one file for people without an account: HTML that opens
//! offline (CSS inline, charts as inline SVG, no scripts, no requests — a CSP
//! says so too), GitHub-flavoured Markdown, or a zip of the Markdown with its
//! charts as SVG files beside it.
//!
//! Both formats are written from one [`Report`]: the investigation as the API
//! answers it (so a share link's report has its hosts hidden and people's
//! names out, exactly as the link shows them), plus each run's output
//! excerpt: its last lines and every line a measurement's value or a source
//! reference is on, with what was left out counted.

mod html;
mod markdown;
mod report;
mod walk;
mod zip;

pub use report::{Report, ZIP_FILES_BUDGET};

use domain::search::{Export, ExportFormat};

/// The report as a file of `format`.
pub fn render(report: &Report, format: ExportFormat) -> crate::error::Result<Export> {
    use crate::error::Context;
    let name = report::file_stem(&report.investigation.title, &report.investigation.id);
    let bytes = match format {
        ExportFormat::Html => html::render(report).into_bytes(),
        ExportFormat::Md => markdown::render(report, None).into_bytes(),
        ExportFormat::Zip => {
            let mut charts = Vec::new();
            let md = markdown::render(report, Some(&mut charts));
            let md = md + &markdown::attachments(&report.attachments);
            let mut files = vec![(format!("{name}.md"), md.into_bytes())];
            files.extend(charts.into_iter().map(|(file, svg)| (file, svg.into_bytes())));
            files.extend(report.attachments.iter().filter_map(|a| Some((a.path.clone(), a.bytes.clone()?))));
            if let Some(manifest) = &report.manifest {
                let json = serde_json::to_vec_pretty(manifest).context("the provenance manifest as JSON")?;
                files.push(("provenance.json".to_string(), json));
            }
            zip::stored(&files).context("zipping the export")?
        }
    };
    Ok(Export { filename: format!("{name}.{}", format.extension()), format, bytes })
}

/// Writes the export's audit row (`action`: `investigation.export` or
/// `share.export`), whatever came of it, and hands the export on.
pub async fn audited(
    store: &crate::db::Store,
    who: String,
    action: &'static str,
    investigation: &str,
    comments: bool,
    export: crate::error::Result<Export>,
) -> crate::error::Result<Export> {
    let with = if comments { ", with comments" } else { "" };
    let outcome = match &export {
        Ok(e) => format!("{} ({} bytes{with})", e.format.extension(), e.bytes.len()),
        Err(_) => crate::audit::outcome(&export).unwrap_or_default(),
    };
    let entry = crate::db::NewAudit {
        who,
        action,
        host: None,
        target: investigation.to_string(),
        env: None,
        outcome: Some(outcome),
        run_id: None,
    };
    crate::audit::record(store, entry).await;
    export
}
