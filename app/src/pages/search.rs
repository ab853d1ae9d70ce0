//! `/search?q=…`: everything the reader may read, found by the top bar's box.
//! A plain GET form and plain links, so it works the same without JavaScript.

use crate::components::PageTitle;
use domain::error::ApiError;
use domain::search::{SearchHit, SearchResults};
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

#[server]
pub async fn find(q: String, sort: Option<String>, offset: Option<u32>) -> Result<SearchResults, ApiError> {
    let request = domain::search::SearchRequest { q, sort, limit: None, offset };
    crate::backend::call(move |notebook, actor| async move { notebook.search(&actor, request).await }).await
}

/// The box in the top bar.
#[component]
pub fn SearchBox() -> impl IntoView {
    let query = use_query_map();
    let value = move || query.with(|q| q.get("q").unwrap_or_default());
    view! {
        <form class="search-box" action="/search" method="get" role="search">
            <input type="search" name="q" value=value placeholder="Search notes, commands, output…" aria-label="Search"/>
        </form>
    }
}

#[component]
pub fn SearchPage() -> impl IntoView {
    let query = use_query_map();
    let asked = move || {
        query.with(|q| {
            (q.get("q").unwrap_or_default(), q.get("sort"), q.get("offset").and_then(|o| o.parse::<u32>().ok()))
        })
    };
    let results = Resource::new(asked, |(q, sort, offset)| async move {
        if q.trim().is_empty() { Ok(None) } else { find(q, sort, offset).await.map(Some) }
    });
    view! {
        {move || view! { <PageTitle text=format!("{} · Search · Sleuth", asked().0)/> }}
        <section class="narrow-page wide search-page">
            <h1>"Search"</h1>
            <form class="search-form" action="/search" method="get" role="search">
                // Nothing asked yet: the reader came to type (`/` in a narrow window lands here).
                <input type="search" name="q" value=move || asked().0 aria-label="Search for" autofocus=move || asked().0.trim().is_empty()
                    placeholder=r#"words, "a phrase", prefix*, -not, host:gpu env:NCCL_PROTO=LL status:failed"#/>
                <select name="sort" aria-label="Order">
                    <option value="relevance" selected=move || asked().1.as_deref() != Some("newest")>"Most relevant"</option>
                    <option value="newest" selected=move || asked().1.as_deref() == Some("newest")>"Newest first"</option>
                </select>
                <button type="submit">"Search"</button>
            </form>
            <p class="muted help">
                "Filters: " <code>"host:NAME"</code> " " <code>"metric:NAME"</code> " " <code>"env:NAME=value"</code> " "
                <code>"status:failed"</code> " " <code>"author:NAME"</code> " " <code>"kind:output"</code> " "
                <code>"after:2026-11-01"</code> " " <code>"before:…"</code>
            </p>
            <Transition fallback=|| view! { <p class="muted">"Searching…"</p> }>
                        {move || Suspend::new(async move {
                        super::or_error(results.await.map(|found| match found {
                            None => view! { <p class="empty">"Type what you are looking for: an error line, a setting, a file."</p> }.into_any(),
                            Some(found) => view! { <Results found asked=asked().0/> }.into_any(),
                        }))
                    })}
                </Transition>
        </section>
    }
}

#[component]
fn Results(found: SearchResults, asked: String) -> impl IntoView {
    if found.results.is_empty() {
        return view! {
            <p class="empty">"Nothing found for " <code>{found.understood.clone()}</code> "."
                {(found.indexing > 0).then(|| format!(" {} runs are still being indexed; try again in a moment.", found.indexing))}
            </p>
        }
        .into_any();
    }
    let (from, to) = (found.offset + 1, found.offset + found.results.len() as u32);
    let page = |offset: u32| {
        let mut url = format!("/search?q={}", encode(&asked));
        if found.sort == "newest" {
            url.push_str("&sort=newest");
        }
        if offset > 0 {
            url.push_str(&format!("&offset={offset}"));
        }
        url
    };
    let previous = (found.offset > 0).then(|| page(found.offset.saturating_sub(found.limit)));
    let next = (u64::from(to) < found.total).then(|| page(to));
    // Grouped by investigation, in the order their first result came.
    let mut groups: Vec<(String, String, Vec<SearchHit>)> = Vec::new();
    for hit in found.results {
        match groups.iter_mut().find(|(id, _, _)| *id == hit.investigation_id) {
            Some(group) => group.2.push(hit),
            None => groups.push((hit.investigation_id.clone(), hit.title.clone(), vec![hit])),
        }
    }
    let groups = groups
        .into_iter()
        .map(|(id, title, hits)| {
            let hits = hits.into_iter().map(|hit| view! { <Hit hit/> }).collect_view();
            view! {
                <section class="search-group">
                    <h2><a href=format!("/i/{id}")>{title}</a></h2>
                    <ul class="search-hits">{hits}</ul>
                </section>
            }
        })
        .collect_view();
    view! {
        <p class="muted search-count">
            {format!("{from}–{to} of {} for ", found.total)} <code>{found.understood.clone()}</code>
            {format!(", {}", if found.sort == "newest" { "newest first" } else { "most relevant first" })}
            {(found.indexing > 0).then(|| format!(" · {} runs still being indexed", found.indexing))}
        </p>
        {found.note.clone().map(|note| view! { <p class="notice">{note}</p> })}
        {groups}
        <nav class="pager">
            {previous.map(|url| view! { <a href=url rel="prev">"← Previous"</a> })}
            " "
            {next.map(|url| view! { <a href=url rel="next">"Next →"</a> })}
        </nav>
    }
    .into_any()
}

#[component]
fn Hit(hit: SearchHit) -> impl IntoView {
    use domain::search::DocKind;
    let what = match (hit.kind, hit.line, hit.run_id) {
        (DocKind::Output, Some(line), Some(run)) => format!("output of run {run}, line {line}"),
        (DocKind::ServerLog, Some(line), Some(run)) => format!("server log of run {run}, line {line}"),
        (DocKind::Snippet, Some(line), _) => format!("source, line {line}"),
        (kind, _, _) => kind.as_str().to_string(),
    };
    view! {
        <li class="search-hit" data-kind=hit.kind.as_str()>
            <a class="hit-link" href=hit.url.clone()>
                <span class="tag">{what}</span>
                // The server escaped the text, then marked the matches.
                <span class="excerpt" inner_html=hit.html.clone()></span>
            </a>
            <span class="muted">
                " " <crate::components::Time at=hit.at.clone()/>
                {hit.author.clone().map(|a| format!(" · {a}"))}
                {hit.output_url.clone().map(|url| view! { " · " <a href=url>"raw line"</a> })}
            </span>
        </li>
    }
}

pub(crate) use domain::html::query_encode as encode;

#[cfg(test)]
mod tests {
    #[test]
    fn queries_survive_the_address() {
        assert_eq!(super::encode(r#""a b" env:X=1&y"#), "%22a+b%22+env%3AX%3D1%26y");
    }
}
