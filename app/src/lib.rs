//! Sleuth's user interface and the domain types shared by the server and the browser.
//!
//! Compiled twice: with `ssr` into the server, which renders every page to
//! complete HTML and answers server functions, and with `hydrate` to wasm32.
//! Pages are server components (leptos "islands" mode): the browser gets their
//! HTML and none of their code. What makes a page interactive in the browser is
//! [`browser`] (forms posted without leaving the page, live output and edits,
//! line selection, long timelines opening in parts), which works on the server's
//! HTML through its data attributes, and a few `#[island]`s: widgets that show
//! what an action answered (a new share link, a new token, a host's connection
//! test). Nothing server-only may be reached from `hydrate`.

// `#[server]` writes the browser's stub of a server function with the form's
// fields as its arguments and does not carry an `allow` given to the function
// over to it, so a form of eight fields would warn in the wasm build only.
#![cfg_attr(feature = "hydrate", allow(clippy::too_many_arguments))]

pub mod api;
#[cfg(feature = "ssr")]
pub mod backend;
#[cfg(feature = "hydrate")]
mod browser;
pub mod components;
pub mod guards;
pub mod pages;
pub mod steps;

use leptos::prelude::*;
use leptos_meta::{MetaTags, provide_meta_context};
use leptos_router::{
    SsrMode,
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
                <Loader options/>
                <MetaTags/>
            </head>
            <body>
                <App/>
            </body>
        </html>
    }
}

/// Loads the browser bundle and starts it ([`start`]). leptos's own
/// `HydrationScripts` in islands mode hydrates every island as a child of one
/// owner that lives forever; Sleuth's pages draw parts of themselves anew from
/// the server (`browser::page`), so each island gets an owner of its own that
/// is cleaned up when its element leaves the page — hence this loader, which
/// hands the bundle's exports (the islands' hydration functions among them) to
/// `start`.
#[component]
fn Loader(options: LeptosOptions) -> impl IntoView {
    // Everything outside an island is server HTML only: no hydration markers,
    // and no resource data written into the page (what HydrationScripts does
    // with `islands=true`).
    if let Some(context) = Owner::current_shared_context() {
        context.set_is_hydrating(false);
    }
    let pkg = format!("/{}/{}", options.site_pkg_dir, options.output_name);
    // wasm-bindgen names the module `…_bg.wasm`; cargo-leptos (which sets
    // LEPTOS_OUTPUT_NAME when it builds) renames it.
    let js = format!("{pkg}.js");
    let wasm =
        if option_env!("LEPTOS_OUTPUT_NAME").is_some() { format!("{pkg}.wasm") } else { format!("{pkg}_bg.wasm") };
    let script = format!(
        "import init, * as sleuth from {js:?};\
         init({{ module_or_path: {wasm:?} }}).then(() => sleuth.start(sleuth));"
    );
    let nonce = leptos::nonce::use_nonce();
    view! {
        <link rel="modulepreload" href=js/>
        <link rel="preload" href=wasm r#as="fetch" r#type="application/wasm" crossorigin="anonymous"/>
        <script type="module" nonce=nonce>{script}</script>
    }
}

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    view! {
        <Router>
            <TopBar/>
            <StoreBanner/>
            <main>
                // Async: pages are sent whole, so they read well without JavaScript
                // and a missing investigation is a real 404.
                <Routes fallback=pages::NotFound>
                    <Route path=path!("/") view=pages::home::HomePage ssr=SsrMode::Async/>
                    <Route path=path!("/hosts") view=pages::hosts::HostsPage ssr=SsrMode::Async/>
                    <Route path=path!("/login") view=pages::accounts::LoginPage ssr=SsrMode::Async/>
                    <Route path=path!("/setup") view=pages::accounts::SetupPage ssr=SsrMode::Async/>
                    <Route path=path!("/welcome") view=pages::accounts::WelcomePage ssr=SsrMode::Async/>
                    <Route path=path!("/users") view=pages::users::UsersPage ssr=SsrMode::Async/>
                    <Route path=path!("/tokens") view=pages::accounts::TokensPage ssr=SsrMode::Async/>
                    <Route path=path!("/audit") view=pages::accounts::AuditPage ssr=SsrMode::Async/>
                    <Route path=path!("/mentions") view=pages::comments::MentionsPage ssr=SsrMode::Async/>
                    <Route path=path!("/search") view=pages::search::SearchPage ssr=SsrMode::Async/>
                    <Route path=path!("/runs/:id") view=pages::run::RunPageView ssr=SsrMode::Async/>
                    <Route path=path!("/compare") view=pages::compare::ComparePage ssr=SsrMode::Async/>
                    <Route path=path!("/runs/:id/source") view=pages::source::SourcePage ssr=SsrMode::Async/>
                    <Route path=path!("/s/:token") view=pages::shared::SharedPage ssr=SsrMode::Async/>
                    <Route path=path!("/i/:id/chart") view=pages::chart::ChartPage ssr=SsrMode::Async/>
                    <Route path=path!("/i/:id/frontier") view=pages::frontier::FrontierPage ssr=SsrMode::Async/>
                    <Route path=path!("/i/:id/history") view=pages::history::HistoryPage ssr=SsrMode::Async/>
                    <Route path=path!("/replays/:id") view=pages::replay::ReplayPage ssr=SsrMode::Async/>
                    <Route
                        path=path!("/i/:id")
                        view=pages::investigation::InvestigationPage
                        ssr=SsrMode::Async
                    />
                </Routes>
            </main>
            <Shortcuts/>
        </Router>
    }
}

/// The top bar: search and the team's pages; for a share link's reader (who
/// has no account) only the name and a way to sign in, so every link works.
#[component]
fn TopBar() -> impl IntoView {
    let location = leptos_router::hooks::use_location();
    let outsider = move || location.pathname.with(|p| p.starts_with("/s/"));
    view! {
        <header class="topbar">
            {move || if outsider() {
                view! {
                    <span class="brand">"Sleuth"</span>
                    <span class="tagline">"LLM-serving performance notebook"</span>
                    <nav class="topnav"><a href="/login">"Sign in"</a></nav>
                }.into_any()
            } else {
                view! {
                    <A href="/" attr:class="brand">"Sleuth"</A>
                    <span class="tagline">"LLM-serving performance notebook"</span>
                    <pages::search::SearchBox/>
                    <nav class="topnav">
                        // Where the box is hidden (a narrow window), the search page.
                        <a class="search-link" href="/search">"Search"</a>
                        <A href="/">"Investigations"</A>
                        <A href="/hosts">"Hosts"</A>
                        <pages::accounts::SignedIn/>
                    </nav>
                }.into_any()
            }}
        </header>
    }
}

/// While the server refuses writes or new runs (a full data disk, the
/// free-space floor), every page says so and why, above everything else.
#[component]
fn StoreBanner() -> impl IntoView {
    let status = Resource::new(|| (), |_| pages::hosts::server_status());
    view! {
        <Suspense fallback=|| ()>
            {move || Suspend::new(async move {
                status.await.ok().and_then(|s| s.refusing).map(|why| view! {
                    <p class="store-banner" role="alert">{why}</p>
                })
            })}
        </Suspense>
    }
}

/// The keyboard shortcuts, listed under `?` (`browser::keys` shows and hides it).
#[component]
fn Shortcuts() -> impl IntoView {
    let keys = [
        ("Ctrl+Enter / ⌘+Enter", "save the form you are in; run a command step"),
        ("Esc", "cancel an edit; close a menu or this list"),
        ("/", "search"),
        ("?", "show or hide this list"),
    ];
    view! {
        <div id="shortcuts" class="shortcuts" role="dialog" aria-label="Keyboard shortcuts" hidden>
            <h2>"Keyboard shortcuts"</h2>
            <table>
                {keys.into_iter().map(|(k, what)| view! { <tr><td><kbd>{k}</kbd></td><td>{what}</td></tr> }).collect_view()}
            </table>
            <button type="button" class="quiet" data-shortcuts-close="">"Close"</button>
        </div>
    }
}

/// Entry point of the browser bundle, called by [`Loader`]'s script with the
/// bundle's exports: makes the server-rendered page interactive.
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn start(exports: wasm_bindgen::JsValue) {
    console_error_panic_hook::set_once();
    browser::start(exports);
}
