pub mod accounts;
pub mod comments;
pub mod home;
pub mod hosts;
pub mod hypotheses;
pub mod investigation;
pub mod members;
pub mod search;
pub mod shared;
pub mod source;

use crate::components::ErrorPanel;
use crate::error::ApiError;
use leptos::prelude::*;

/// The fallback of the pages' error boundaries: our own errors keep their wording,
/// anything else is shown as text.
pub fn error_fallback(errors: ArcRwSignal<Errors>) -> impl IntoView {
    move || {
        errors
            .read()
            .iter()
            .map(|(_, e)| {
                let error =
                    e.downcast_ref::<ApiError>().cloned().unwrap_or_else(|| ApiError::bad_request(e.to_string()));
                view! { <ErrorPanel error/> }
            })
            .collect_view()
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
