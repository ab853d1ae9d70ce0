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
use leptos_router::{LazyRoute, lazy_route};

/// A page whose code is a chunk of its own in the browser bundle (`./dev build`
/// splits the wasm with wasm-split): a reader downloads the code of the pages
/// they open, when they open them. Pages load their data themselves (it comes
/// with the server's HTML on a first load), so `data` has nothing to start.
macro_rules! lazy_page {
    ($route:ident, $page:path) => {
        pub struct $route;

        #[lazy_route]
        impl LazyRoute for $route {
            fn data() -> Self {
                Self
            }

            fn view(_this: Self) -> AnyView {
                $page().into_any()
            }
        }
    };
}

lazy_page!(Hosts, hosts::HostsPage);
lazy_page!(Login, accounts::LoginPage);
lazy_page!(Setup, accounts::SetupPage);
lazy_page!(Tokens, accounts::TokensPage);
lazy_page!(Audit, accounts::AuditPage);
lazy_page!(Mentions, comments::MentionsPage);
lazy_page!(Search, search::SearchPage);
lazy_page!(Source, source::SourcePage);

use crate::error::ApiError;
use leptos::prelude::*;
use leptos::server::codee::{Decoder, Encoder};

/// Page data whose hydration copy can leave out what the server rendered into
/// the page (see [`crate::model::Investigation::lighten`]).
pub trait Lighten: Clone + serde::Serialize {
    fn lighten(&mut self);
}

impl Lighten for crate::model::Investigation {
    fn lighten(&mut self) {
        crate::model::Investigation::lighten(self);
    }
}

impl Lighten for crate::shares::SharedView {
    fn lighten(&mut self) {
        self.investigation.lighten();
    }
}

/// The hydration encoding of a page resource: JSON of the value lightened, so
/// output, notes and code are in the page once, as HTML, not again as data.
/// Only the server encodes (into the page); fetches after hydration go through
/// server functions and carry everything.
pub struct Light;

impl<T: Lighten> Encoder<Result<T, ApiError>> for Light {
    type Error = serde_json::Error;
    type Encoded = String;

    fn encode(value: &Result<T, ApiError>) -> Result<String, Self::Error> {
        match value {
            Ok(data) => {
                let mut light = data.clone();
                light.lighten();
                serde_json::to_string(&Ok::<&T, &ApiError>(&light))
            }
            Err(e) => serde_json::to_string(&Err::<&T, &ApiError>(e)),
        }
    }
}

impl<T: serde::de::DeserializeOwned> Decoder<Result<T, ApiError>> for Light {
    type Error = serde_json::Error;
    type Encoded = str;

    fn decode(text: &str) -> Result<Result<T, ApiError>, Self::Error> {
        serde_json::from_str(text)
    }
}

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
