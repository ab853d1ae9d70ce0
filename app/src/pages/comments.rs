//! Comment threads under steps and annotations, and `/mentions`: the comments
//! that name you, unread first.

use crate::components::PageTitle;
use crate::components::{Ability, ActionError, Can};
use domain::comments::{Comment, Mention, comment_anchor};
use domain::error::ApiError;
use domain::model::short_time;
use leptos::form::ActionForm;
use leptos::prelude::*;
use std::sync::Arc;

#[server]
pub async fn add_comment(
    investigation: String,
    step_id: Option<i64>,
    annotation_id: Option<i64>,
    parent_id: Option<i64>,
    body: String,
) -> Result<Comment, ApiError> {
    let new = domain::comments::NewComment { step_id, annotation_id, parent_id, body };
    crate::backend::call(move |notebook, actor| async move { notebook.add_comment(&actor, &investigation, new).await })
        .await
}

#[server]
pub async fn resolve_comment(id: i64, resolved: bool) -> Result<Comment, ApiError> {
    crate::backend::call(move |notebook, actor| async move { notebook.resolve_comment(&actor, id, resolved).await })
        .await
}

#[server]
pub async fn my_mentions(all: bool) -> Result<Vec<Mention>, ApiError> {
    crate::backend::call(move |notebook, actor| async move { notebook.mentions(&actor, all).await }).await
}

/// For the top bar: how many mentions are unread (0 when signed out: the badge
/// is no reason to fail, or to give a share link's page an error status).
#[server]
pub async fn unread_mentions() -> Result<usize, ApiError> {
    Ok(crate::backend::notebook()?.mentions(&crate::backend::actor()?, false).await.map_or(0, |m| m.len()))
}

/// Marks one mention read (`anchor`: `comment-12`, `annotation-3`), or all (none).
#[server]
pub async fn read_mentions(anchor: Option<String>) -> Result<(), ApiError> {
    let which = match anchor.as_deref() {
        None => None,
        Some(anchor) => Some(
            domain::comments::MentionIn::from_anchor(anchor)
                .ok_or_else(|| ApiError::invalid(format!("No mention is at {anchor:?}.")))?,
        ),
    };
    crate::backend::call(move |notebook, actor| async move { notebook.read_mentions(&actor, which).await }).await
}

/// The investigation's comments, for the threads under its steps.
#[derive(Clone)]
pub struct AllComments {
    pub investigation: String,
    pub comments: Arc<Vec<Comment>>,
}

/// The threads on a step (`annotation: None`) or on one of its annotations, and
/// a form to start one.
#[component]
pub fn Threads(step_id: i64, #[prop(optional)] annotation: Option<i64>) -> impl IntoView {
    let Some(all) = use_context::<AllComments>() else {
        return ().into_any();
    };
    let roots: Vec<Comment> = all
        .comments
        .iter()
        .filter(|c| c.step_id == step_id && c.annotation_id == annotation && c.parent_id.is_none())
        .cloned()
        .collect();
    let threads = roots
        .into_iter()
        .map(|root| {
            let replies: Vec<Comment> = all.comments.iter().filter(|c| c.parent_id == Some(root.id)).cloned().collect();
            view! { <Thread root replies investigation=all.investigation.clone()/> }
        })
        .collect_view();
    let add = ServerAction::<AddComment>::new();
    let label = if annotation.is_some() { "Comment on this annotation" } else { "Comment" };
    view! {
        <div class="threads">
            {threads}
            <Can what=Ability::Comment>
                <details class="new-thread">
                    <summary class="quiet">{label}</summary>
                    <ActionForm action=add attr:class="stacked comment-form">
                        <input type="hidden" name="investigation" value=all.investigation.clone()/>
                        <input type="hidden" name="step_id" value=step_id/>
                        {annotation.map(|a| view! { <input type="hidden" name="annotation_id" value=a/> })}
                        <textarea name="body" rows="3" required maxlength=domain::comments::BODY_CHARS
                            placeholder="Markdown; @name tells a teammate" aria-label="Comment"></textarea>
                        <ActionError action=add/>
                        <div class="form-actions"><button type="submit" class="primary">"Comment"</button></div>
                    </ActionForm>
                </details>
            </Can>
        </div>
    }
    .into_any()
}

#[component]
fn Thread(root: Comment, replies: Vec<Comment>, investigation: String) -> impl IntoView {
    let reply = ServerAction::<AddComment>::new();
    let resolve = ServerAction::<ResolveComment>::new();
    let resolved = root.resolved_at.is_some();
    let status = root
        .resolved_by
        .clone()
        .zip(root.resolved_at.clone())
        .map(|(by, at)| format!("Resolved by {by}, {}", short_time(&at)));
    let count = 1 + replies.len();
    let comments = std::iter::once(root.clone())
        .chain(replies)
        .map(|c| view! { <CommentView c investigation=investigation.clone()/> })
        .collect_view();
    view! {
        <details class="thread" data-resolved=resolved.to_string() open=!resolved>
            <summary class="muted">
                {match &status {
                    Some(s) => format!("{s} · {count} comment(s)"),
                    None => format!("Thread · {count} comment(s)"),
                }}
            </summary>
            {comments}
            <Can what=Ability::Comment>
                <div class="thread-actions">
                    <ActionForm action=reply attr:class="inline reply-form">
                        <input type="hidden" name="investigation" value=investigation/>
                        <input type="hidden" name="parent_id" value=root.id/>
                        <input name="body" required placeholder="Reply…" aria-label="Reply"/>
                        <button type="submit">"Reply"</button>
                        <ActionError action=reply/>
                    </ActionForm>
                    <Can what=Ability::Edit>
                        <ActionForm action=resolve attr:class="inline">
                            <input type="hidden" name="id" value=root.id/>
                            <input type="hidden" name="resolved" value=(!resolved).to_string()/>
                            <button type="submit" class="quiet">{if resolved { "Reopen" } else { "Resolve" }}</button>
                            <ActionError action=resolve/>
                        </ActionForm>
                    </Can>
                </div>
            </Can>
        </details>
    }
}

#[component]
fn CommentView(c: Comment, investigation: String) -> impl IntoView {
    let not_told = c.not_told.clone();
    view! {
        <div class="comment" id=comment_anchor(c.id)>
            <div class="comment-head">
                <strong class="author">{c.author.clone()}</strong>
                <a class="muted" href=format!("#{}", comment_anchor(c.id))><crate::components::Time at=c.created_at.clone()/></a>
            </div>
            <div class="markdown" inner_html=c.html.clone()></div>
            {not_told.into_iter().map(|n| view! { <NotToldNote n investigation=investigation.clone()/> }).collect_view()}
        </div>
    }
}

/// A mention that reached no one, and for an owner, adding that user.
#[component]
fn NotToldNote(n: domain::comments::NotTold, investigation: String) -> impl IntoView {
    let add = ServerAction::<crate::pages::members::SetMember>::new();
    let sentence = n.sentence();
    let name = n.name.clone();
    view! {
        <div class="notice mention-note" data-not-told=name>
            {sentence}
            {(n.user == Some(true)).then(|| view! {
                <Can what=Ability::Own>
                    <ActionForm action=add attr:class="inline">
                        <input type="hidden" name="investigation" value=investigation.clone()/>
                        <input type="hidden" name="user" value=n.name.clone()/>
                        <input type="hidden" name="role" value="viewer"/>
                        <button type="submit" class="quiet">{format!("Add {} as a viewer", n.name)}</button>
                        <ActionError action=add/>
                    </ActionForm>
                </Can>
            })}
        </div>
    }
}

/// `/mentions`: comments and annotations that name you; opening one marks it read.
#[component]
pub fn MentionsPage() -> impl IntoView {
    let read = ServerAction::<ReadMentions>::new();
    let list = Resource::new(|| (), |_| my_mentions(true));
    view! {
        <PageTitle text="Mentions · Sleuth"/>
        <section class="narrow-page wide">
            <h1>"Mentions"</h1>
            <ActionForm action=read attr:class="inline">
                <button type="submit" class="quiet">"Mark all read"</button>
            </ActionForm>
            <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
                        {move || Suspend::new(async move {
                        super::or_error(list.await.map(|mentions| {
                            if mentions.is_empty() {
                                return view! { <p class="empty">"Nobody has mentioned you yet. Comments with @your-name show up here."</p> }.into_any();
                            }
                            let items = mentions.into_iter().map(|m| view! { <MentionItem m/> }).collect_view();
                            view! { <ul class="mentions">{items}</ul> }.into_any()
                        }))
                    })}
                </Suspense>
        </section>
    }
}

/// Opening one marks it read first (`browser::misc`); without JavaScript the
/// link works, unmarked.
#[component]
fn MentionItem(m: Mention) -> impl IntoView {
    let anchor = m.of().map(|of| of.anchor());
    let what = if m.annotation_id.is_some() { " annotated, in " } else { " in " };
    view! {
        <li class="mention" data-read=m.read.to_string() data-comment=m.comment_id data-annotation=m.annotation_id>
            <a href=m.url.clone() data-mention=anchor>
                <strong>{m.author.clone()}</strong> {what} <span class="title">{m.investigation_title.clone()}</span>
            </a>
            " " <span class="muted"><crate::components::Time at=m.created_at.clone()/></span>
            {(!m.read).then(|| view! { " " <span class="tag unread">"unread"</span> })}
            <p class="excerpt">{m.excerpt.clone()}</p>
        </li>
    }
}
