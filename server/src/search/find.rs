//! Answering a search: the query understood, run in the store with the
//! reader's rights, each row made a result with its permalink and excerpt.

use super::excerpt;
use super::query::{Query, QueryError};
use crate::db::{DocQuery, DocRow, OutputKey, Store};
use crate::error::Result;
use crate::output::Outputs;
use crate::policy::Readers;
use domain::error::ApiError;
use domain::search::DocKind;
use domain::search::{DEFAULT_LIMIT, MAX_LIMIT, SearchHit, SearchRequest, SearchResults};

impl From<QueryError> for ApiError {
    fn from(e: QueryError) -> Self {
        ApiError::invalid(e.to_string())
    }
}

/// Searching what the reader may read.
#[derive(Clone)]
pub struct Search {
    store: Store,
    outputs: Outputs,
}

impl Search {
    pub fn new(store: Store, outputs: Outputs) -> Self {
        Self { store, outputs }
    }

    /// What the reader may read that matches, with its permalinks and excerpts
    /// (rights are part of the store's query).
    pub async fn find(&self, readers: &Readers, request: &SearchRequest) -> Result<SearchResults> {
        search(&self.store, &self.outputs, readers.member(), request).await
    }
}

/// `reader`: `None` for an admin (everything), else the user whose memberships count.
async fn search(
    store: &Store,
    outputs: &Outputs,
    reader: Option<&str>,
    request: &SearchRequest,
) -> Result<SearchResults> {
    let query = Query::parse(&request.q).map_err(ApiError::from)?;
    let newest_first = match request.sort.as_deref() {
        None | Some("" | "relevance") => query.terms.is_empty(),
        Some("newest") => true,
        Some(other) => {
            return Err(ApiError::invalid(format!("sort is relevance or newest, not {other:?}.")).into());
        }
    };
    let limit = request.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
    let offset = request.offset.unwrap_or(0);
    let f = &query.filters;
    let doc_query = DocQuery {
        text: match store.backend() {
            crate::db::Backend::Sqlite => query.fts5(),
            crate::db::Backend::Postgres => query.tsquery(),
        },
        reader: reader.map(str::to_string),
        host: f.host.clone(),
        metric: f.metric.clone(),
        env: f
            .env
            .iter()
            .map(|(k, v)| match v {
                Some(v) => format!("\n{k}={v}\n"),
                None => format!("\n{k}="),
            })
            .collect(),
        status: f.status.clone(),
        author: f.author.clone(),
        kind: f.kind,
        after_ms: f.after_ms,
        before_ms: f.before_ms,
        newest_first,
        limit: i64::from(limit),
        offset: i64::from(offset),
    };
    let crate::db::Found { rows, total, ranked } = store.search_docs(&doc_query).await?;
    let note = (!newest_first && !ranked).then(|| {
        format!(
            "{total} matches are too many to rank (at most {}): newest first. A phrase or a filter narrows them.",
            crate::db::RANK_AT_MOST
        )
    });
    let marks = query.marks();
    let mut results = Vec::with_capacity(rows.len());
    for row in rows {
        results.push(hit(outputs, row, &marks).await);
    }
    Ok(SearchResults {
        total: u64::try_from(total).unwrap_or(0),
        results,
        understood: query.understood(),
        sort: if ranked { "relevance" } else { "newest" }.into(),
        note,
        offset,
        limit,
        indexing: u64::try_from(store.runs_waiting_for_index().await?).unwrap_or(0),
    })
}

async fn hit(outputs: &Outputs, row: DocRow, marks: &excerpt::Marks) -> SearchHit {
    let page = format!("/i/{}", row.investigation_id);
    let step = row.step_id.map(|s| format!("{page}#step-{s}"));
    let mut line = None;
    let mut output_url = None;
    let (url, html) = match row.kind {
        DocKind::Output | DocKind::ServerLog => {
            let (run, start) = (row.run_id.unwrap_or(0), row.start_byte.unwrap_or(0).max(0) as u64);
            let len = row.len.unwrap_or(0).max(0) as u64;
            let (key, stream) = match (row.kind, row.ref_id) {
                (DocKind::ServerLog, Some(log)) => (OutputKey::Log(log), "&stream=server"),
                _ => (OutputKey::Run(run), ""),
            };
            let text = match outputs.read_range(key, start, len).await {
                Ok((bytes, _)) => String::from_utf8_lossy(&bytes).into_owned(),
                Err(e) => {
                    tracing::warn!(run, "cannot read output for a search excerpt: {e}");
                    String::new()
                }
            };
            // The line that matched: its number, its bytes in the output, its excerpt.
            let (n, _) = excerpt::first_match(&text, marks).unwrap_or((0, 0));
            let line_start: usize = text.split_inclusive('\n').take(n).map(str::len).sum();
            let line_text = text[line_start..].split('\n').next().unwrap_or("");
            line = Some(row.first_line.unwrap_or(1).max(1) as u64 + n as u64);
            output_url = Some(format!(
                "/api/v1/runs/{run}/output?offset={}&limit={}{stream}",
                start + line_start as u64,
                line_text.len().max(1)
            ));
            // The run's own page: the step shows only its newest run.
            (format!("/runs/{run}"), excerpt::excerpt(line_text, marks))
        }
        DocKind::Snippet if row.first_line.is_some() => {
            let text = row.body.clone().unwrap_or_default();
            // The body is the path, then the snapshot's lines.
            let (n, _) = excerpt::first_match(&text, marks).unwrap_or((0, 0));
            let shown = text.lines().nth(n).unwrap_or("");
            let url = match (row.step_id, n) {
                (Some(s), n) if n >= 1 => {
                    let l = row.first_line.unwrap_or(1) as u64 + n as u64 - 1;
                    line = Some(l);
                    format!("{page}#{}", domain::steps::snippet::range_anchor(s, l, l))
                }
                _ => step.clone().unwrap_or_else(|| page.clone()),
            };
            (url, excerpt::excerpt(shown, marks))
        }
        kind => {
            let text = row.body.clone().unwrap_or_default();
            let url = match (kind, row.ref_id) {
                (DocKind::Hypothesis, Some(id)) => format!("{page}#{}", domain::hypotheses::hypothesis_anchor(id)),
                (DocKind::Annotation, Some(id)) => format!("{page}#{}", domain::steps::snippet::annotation_anchor(id)),
                (DocKind::Comment, Some(id)) => format!("{page}#{}", domain::comments::comment_anchor(id)),
                _ => step.clone().unwrap_or_else(|| page.clone()),
            };
            (url, excerpt::excerpt(&text, marks))
        }
    };
    SearchHit {
        kind: row.kind,
        investigation_id: row.investigation_id,
        title: row.title,
        step_id: row.step_id,
        run_id: row.run_id,
        url,
        html,
        line,
        output_url,
        at: crate::time::timestamp(row.created_at),
        author: row.author,
    }
}
