//! Small building blocks shared by the pages.

use domain::error::ApiError;
use domain::model::InvestigationStatus;
use leptos::prelude::*;
use leptos::server_fn::ServerFn;

/// The message of the last failed run of `action`, if any, in words a person can act on.
///
/// On the server this shows the error of a form posted without JavaScript (its
/// redirect back carries it); in the browser, forms are posted by
/// `browser::forms`, which puts the message in the same place: a `p.error`
/// inside the form, before its buttons.
#[component]
pub fn ActionError<S>(action: ServerAction<S>) -> impl IntoView
where
    S: ServerFn<Error = ApiError> + Clone + Send + Sync + 'static,
    S::Output: Clone + Send + Sync + 'static,
{
    let value = action.value();
    move || {
        value
            .try_with(|value| match value {
                Some(Err(e)) => Some(view! { <p class="error" role="alert"><Said text=e.message.clone()/></p> }),
                _ => None,
            })
            .flatten()
    }
}

/// The document's `<title>`. leptos_meta writes a `<Title>`'s text into the
/// server-rendered head as it is, so a title like `</title><script>…` would be
/// markup there; on the server it is escaped first. In the browser the text is
/// set as `textContent`, which is never parsed, so it goes as it is.
#[component]
pub fn PageTitle(#[prop(into)] text: String) -> impl IntoView {
    #[cfg(feature = "ssr")]
    let text = domain::html::escape_text(&text);
    view! { <leptos_meta::Title text/> }
}

#[component]
pub fn StatusBadge(status: InvestigationStatus) -> impl IntoView {
    view! { <span class=format!("badge badge-{}", status.as_str())>{status.as_str()}</span> }
}

/// A destructive action behind a second click. Works without JavaScript: it is a
/// `<details>` whose body holds the real form (`children`).
#[component]
pub fn Confirm(
    /// The text of the first button, e.g. "Delete…".
    label: &'static str,
    /// What will happen, said plainly.
    #[prop(into)]
    prompt: String,
    children: Children,
) -> impl IntoView {
    view! {
        <details class="confirm">
            <summary class="button danger-quiet">{label}</summary>
            <div class="confirm-body">
                <p>{prompt}</p>
                {children()}
            </div>
        </details>
    }
}

/// Now, in Unix milliseconds: the server's clock, or the browser's.
pub fn now_ms() -> i64 {
    #[cfg(feature = "hydrate")]
    {
        web_sys::js_sys::Date::now() as i64
    }
    #[cfg(not(feature = "hydrate"))]
    {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }
}

/// A time as people say it ("3 min ago"), the exact UTC time on hover; the
/// browser keeps the words current (`browser::keys`).
#[component]
pub fn Time(#[prop(into)] at: String) -> impl IntoView {
    let said = domain::model::relative_time(&at, now_ms());
    let exact = domain::model::short_time(&at);
    view! { <time datetime=at title=exact data-relative="">{said}</time> }
}

/// Copies `text` to the clipboard when clicked (`browser::keys`); says
/// "Copied" for a moment, or how to copy by hand where the browser refuses.
#[component]
pub fn CopyButton(
    #[prop(into)] text: String,
    #[prop(into, default = "Copy".to_string())] label: String,
) -> impl IntoView {
    let title = format!("Copy to the clipboard: {}", text.chars().take(80).collect::<String>());
    view! { <button type="button" class="copy quiet" data-copy=text title=title>{label}</button> }
}

/// A link shown once (a share link, a sign-in link): the whole URL, selected
/// when focused (`browser::keys`), and a button that copies it.
#[component]
pub fn LinkToCopy(#[prop(into)] url: String, #[prop(into)] label: String) -> impl IntoView {
    view! {
        <div class="copy-row">
            <input class="link-url" readonly value=url.clone() aria-label=label/>
            <CopyButton text=url label="Copy link"/>
        </div>
    }
}

/// Shown where a page could not load its data.
/// A sentence from the server, what it marks with backticks as code.
#[component]
pub fn Said(#[prop(into)] text: String) -> impl IntoView {
    domain::html::code_spans(&text)
        .into_iter()
        .map(|(code, part)| if code { view! { <code>{part}</code> }.into_any() } else { part.into_any() })
        .collect_view()
}

#[component]
pub fn ErrorPanel(error: ApiError) -> impl IntoView {
    let title = match error.code {
        domain::error::ErrorCode::NotFound => "Not found",
        domain::error::ErrorCode::Network => "Server unreachable",
        domain::error::ErrorCode::Gone => "This link no longer works",
        domain::error::ErrorCode::Forbidden => "Not allowed",
        _ => "Could not load this page",
    };
    view! {
        <section class="panel error-panel">
            <h1>{title}</h1>
            <p><Said text=error.message/></p>
            <p><a href="/">"Back to investigations"</a></p>
        </section>
    }
}

/// The action of a form inside an island. The server renders the island as it
/// first is, with no answer: a form posted without JavaScript carries its error
/// back in the address, which the browser's copy of the island does not read,
/// and the two must draw the same.
pub fn island_action<S>() -> ServerAction<S>
where
    S: ServerFn + Clone + Send + Sync + 'static,
    S::Output: Send + Sync + 'static,
    S::Error: Send + Sync + 'static,
{
    let action = ServerAction::<S>::new();
    #[cfg(feature = "ssr")]
    action.value().set(None);
    action
}

/// The event that asks the browser side to draw the page anew
/// (`browser::page` listens for it on the document).
pub const REDRAW_EVENT: &str = "sleuth-redraw";

/// Asks for the page to be drawn anew from the server (in the browser; the
/// server has nothing to draw again).
pub fn redraw_page() {
    #[cfg(feature = "hydrate")]
    if let Some(document) = web_sys::window().and_then(|w| w.document())
        && let Ok(event) = web_sys::Event::new(REDRAW_EVENT)
    {
        let _ = document.dispatch_event(&event);
    }
}

/// In an island: each time `action` succeeds, empties its form (the returned
/// reference's) and draws the page anew from the server — what
/// `browser::forms` does after any other form. The island, its props the same,
/// keeps its place and what it shows.
pub fn refresh_page_on_success<S>(action: ServerAction<S>) -> NodeRef<leptos::html::Form>
where
    S: ServerFn + Clone + Send + Sync + 'static,
    S::Output: Send + Sync + 'static,
    S::Error: Send + Sync + 'static,
{
    let form = NodeRef::<leptos::html::Form>::new();
    #[cfg(feature = "hydrate")]
    {
        let value = action.value();
        Effect::new(move |_| {
            if value.with(|v| matches!(v, Some(Ok(_)))) {
                if let Some(form) = form.get_untracked() {
                    form.reset();
                }
                redraw_page();
            }
        });
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = action;
    form
}

/// A `<select name="host">` of the known hosts, `chosen` preselected, with a
/// pointer to the Hosts page when there are none.
#[component]
pub fn HostSelect(#[prop(optional, into)] chosen: String) -> impl IntoView {
    let hosts = Resource::new(|| (), |_| crate::api::list_hosts());
    view! {
        <Suspense fallback=|| view! { <select name="host" disabled=true><option>"Loading hosts…"</option></select> }>
            {move || {
                let chosen = chosen.clone();
                Suspend::new(async move {
                    let hosts = hosts.await.unwrap_or_default();
                    let empty = hosts.is_empty();
                    view! {
                        <select name="host" required>
                            {hosts
                                .into_iter()
                                .map(|h| {
                                    let selected = h.name == chosen;
                                    view! {
                                        <option value=h.name.clone() selected=selected>
                                            {h.name.clone()} " (" {h.user.clone()} "@" {h.hostname.clone()} ")"
                                        </option>
                                    }
                                })
                                .collect_view()}
                        </select>
                        {empty.then(|| view! { <span class="muted">"No hosts yet: " <a href="/hosts">"add one"</a> "."</span> })}
                    }
                })
            }}
        </Suspense>
    }
}

/// Text to put inside a `<textarea>`. leptos 0.8 (tachys 0.2.19) writes textarea
/// children unescaped when rendering on the server, so a saved `</textarea><script>`
/// would break out of the element (leptos-rs/leptos#4730, reverted in #4819; the
/// fix #4821 is not released for 0.8). The server render gets the text escaped, which
/// the browser decodes back; the browser builds text nodes itself and needs nothing.
pub fn textarea_text(text: &str) -> String {
    if cfg!(feature = "ssr") {
        text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
    } else {
        text.to_string()
    }
}

/// Shows its children only to readers who may do `what` in this investigation
/// (the page provides their [`Abilities`](domain::model::Abilities); without them,
/// as on a share link, nothing). Hiding is a courtesy: the server checks anyway.
#[component]
pub fn Can(what: Ability, children: Children) -> impl IntoView {
    let abilities = abilities();
    let allowed = match what {
        Ability::Comment => abilities.comment,
        Ability::Edit => abilities.edit,
        Ability::Run => abilities.run,
        Ability::Own => abilities.own,
    };
    allowed.then(children)
}

/// The reader's abilities in the investigation on this page (none elsewhere).
pub fn abilities() -> domain::model::Abilities {
    use_context::<domain::model::Abilities>().unwrap_or_default()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ability {
    Comment,
    Edit,
    Run,
    Own,
}

/// A measured value as the pages print it: whole numbers without decimals, others with two.
pub fn format_value(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 { format!("{value:.0}") } else { format!("{value:.2}") }
}

#[cfg(test)]
mod tests {
    #[test]
    fn titles_are_escaped_for_the_head() {
        assert_eq!(
            domain::html::escape_text("</title><script>alert('x')</script> & \"q\""),
            "&lt;/title&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
    }
}
