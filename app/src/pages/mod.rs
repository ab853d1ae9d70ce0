pub mod accounts;
pub mod chart;
pub mod comments;
pub mod compare;
pub mod definitions;
pub mod frontier;
pub mod history;
pub mod home;
pub mod hosts;
pub mod hypotheses;
pub mod investigation;
pub mod measurements;
pub mod members;
pub mod replay;
pub mod run;
pub mod search;
pub mod share_links;
pub mod shared;
pub(crate) mod shown;
pub mod source;
pub mod users;

use crate::components::ErrorPanel;
use domain::error::ApiError;
use leptos::prelude::*;

/// A page's data as the page, or the panel that says why it could not be
/// loaded (with its status: `backend::set_status` gave the response one).
pub fn or_error<V: IntoView + 'static>(loaded: Result<V, ApiError>) -> AnyView {
    match loaded {
        Ok(page) => page.into_any(),
        Err(error) => view! { <ErrorPanel error/> }.into_any(),
    }
}

/// Marks a page read through a share link: its reader has no account, so the
/// page links only to what the link itself serves.
#[derive(Clone, Copy, Debug)]
pub struct Outsider;

/// Whether this page is for a share link's reader.
pub fn outsider() -> bool {
    use_context::<Outsider>().is_some()
}

/// An investigation as a breadcrumb names it: its title (shortened), or its id
/// where it has none.
pub fn crumb_title(title: &str, id: &str) -> String {
    const CHARS: usize = 60;
    let title = title.trim();
    match title.chars().count() {
        0 => id.to_string(),
        n if n > CHARS => format!("{}…", title.chars().take(CHARS - 1).collect::<String>()),
        _ => title.to_string(),
    }
}

#[component]
pub fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    crate::backend::set_status(&ApiError::not_found(""));
    view! {
        <ErrorPanel error=ApiError::not_found("There is no page at this address.")/>
    }
}
