//! Sleuth's user interface and the domain types shared by the server and the browser.
//!
//! Compiled twice: with `ssr` into the server (which renders every page to HTML and
//! answers server functions), and with `hydrate` to wasm32, which makes the served
//! HTML interactive. Nothing server-only may be reached from `hydrate`.

pub mod accounts;
pub mod api;
#[cfg(feature = "ssr")]
pub mod backend;
pub mod comments;
pub mod components;
pub mod error;
pub mod hosts;
pub mod hypotheses;
#[cfg(feature = "hydrate")]
mod live;
pub mod metrics;
pub mod model;
pub mod pages;
pub mod runs;
pub mod search;
pub mod shares;
pub mod steps;
pub mod sweeps;
pub mod telemetry;

use leptos::prelude::*;
use leptos_meta::{MetaTags, provide_meta_context};
use leptos_router::{
    Lazy, SsrMode,
    components::{A, Route, Router, Routes},
    path,
};

/// The HTML document around the app; rendered on the server only.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <meta name="color-scheme" content="light dark"/>
                <link rel="stylesheet" href="/pkg/sleuth.css"/>
                <link rel="stylesheet" href="/highlight.css"/>
                <link rel="icon" href="/favicon.svg" type="image/svg+xml"/>
                <HydrationScripts options/>
                <MetaTags/>
            </head>
            <body>
                <App/>
            </body>
        </html>
    }
}

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    view! {
        <Router>
            <header class="topbar">
                <A href="/" attr:class="brand">"Sleuth"</A>
                <span class="tagline">"LLM-serving performance notebook"</span>
                <pages::search::SearchBox/>
                <nav class="topnav">
                    <A href="/">"Investigations"</A>
                    <A href="/hosts">"Hosts"</A>
                    <pages::accounts::SignedIn/>
                </nav>
            </header>
            <main>
                // Async: pages are sent whole, so they read well without JavaScript
                // and a missing investigation is a real 404.
                <Routes fallback=pages::NotFound>
                    <Route path=path!("/") view=pages::home::HomePage ssr=SsrMode::Async/>
                    <Route path=path!("/hosts") view={Lazy::<pages::Hosts>::new()} ssr=SsrMode::Async/>
                    <Route path=path!("/login") view={Lazy::<pages::Login>::new()} ssr=SsrMode::Async/>
                    <Route path=path!("/setup") view={Lazy::<pages::Setup>::new()} ssr=SsrMode::Async/>
                    <Route path=path!("/tokens") view={Lazy::<pages::Tokens>::new()} ssr=SsrMode::Async/>
                    <Route path=path!("/audit") view={Lazy::<pages::Audit>::new()} ssr=SsrMode::Async/>
                    <Route path=path!("/mentions") view={Lazy::<pages::Mentions>::new()} ssr=SsrMode::Async/>
                    <Route path=path!("/search") view={Lazy::<pages::Search>::new()} ssr=SsrMode::Async/>
                    <Route path=path!("/runs/:id/source") view={Lazy::<pages::Source>::new()} ssr=SsrMode::Async/>
                    <Route path=path!("/s/:token") view=pages::shared::SharedPage ssr=SsrMode::Async/>
                    <Route
                        path=path!("/i/:id")
                        view=pages::investigation::InvestigationPage
                        ssr=SsrMode::Async
                    />
                </Routes>
            </main>
        </Router>
    }
}

/// Entry point of the wasm bundle: attaches to the server-rendered page. The
/// page's own code is a chunk loaded first (its route is lazy), so hydration
/// is asynchronous.
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    let Some(body) = document().body() else { return };
    wasm_bindgen_futures::spawn_local(async move {
        leptos::mount::hydrate_from_async(body.clone(), App).await.forget();
        // A signal for tests and scripts that the page is now interactive.
        let _ = body.set_attribute("data-hydrated", "");
        // When, in ms since navigation started (the big-investigation benchmark reads it).
        if let Some(now) = window().performance().map(|p| p.now()) {
            let _ = body.set_attribute("data-hydrated-at", &format!("{now:.0}"));
        }
    });
}
