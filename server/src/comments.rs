//! Threaded comments on steps and annotations, and @mentions (who may comment
//! is checked in `crate::guarded`; the author is the signed-in user).
//!
//! A thread is one root comment and its replies; a reply to a reply joins the
//! same thread (one level, as in code review), and resolving any comment of a
//! thread resolves the thread.

use crate::db::{CommentRow, NewCommentRow, Store};
use crate::error::Result;
use crate::policy::{Anyone, Edit, Permit, Read, Readers};
use crate::time::timestamp;
use domain::comments::{BODY_CHARS, Comment, Mention, MentionIn, NewComment, NotTold, comment_anchor, mentioned_names};
use domain::error::ApiError;

#[derive(Clone)]
pub struct Comments {
    store: Store,
}

pub(crate) fn comment_view(row: CommentRow) -> Comment {
    Comment {
        html: crate::markdown::to_safe_html(&row.body),
        url: format!("/i/{}#{}", row.investigation_id, comment_anchor(row.id)),
        id: row.id,
        step_id: row.step_id,
        annotation_id: row.annotation_id,
        parent_id: row.parent_id,
        author: row.author,
        body: row.body,
        created_at: timestamp(row.created_at),
        resolved_at: row.resolved_at.map(timestamp),
        resolved_by: row.resolved_by,
        not_told: Vec::new(),
    }
}

/// Who the team is, as far as mentions go: asked only once a comment names
/// someone (a page of comments without mentions asks nothing), each name once.
struct Reach<'a> {
    store: &'a Store,
    investigation: &'a str,
    /// Whether there are accounts (without, `--no-auth`, a mention reaches no
    /// one and says nothing), and the members; read at the first mention.
    team: Option<(bool, Vec<String>)>,
    /// Whether the reader may learn which names are users (owners).
    owner: bool,
    /// name → whether there is such a user, and whether they read everything.
    users: std::collections::HashMap<String, Option<bool>>,
}

impl<'a> Reach<'a> {
    fn new(store: &'a Store, permit: &'a Permit<Read>) -> Reach<'a> {
        let owner = permit.role() >= crate::policy::Role::Owner;
        Reach { store, investigation: permit.investigation(), team: None, owner, users: Default::default() }
    }

    /// The names in `body` (other than its author) that reach no one.
    async fn not_told(&mut self, body: &str, author: &str) -> Result<Vec<NotTold>> {
        let mut not_told = Vec::new();
        let names: Vec<String> =
            mentioned_names(body).into_iter().filter(|n| !n.eq_ignore_ascii_case(author)).collect();
        if names.is_empty() {
            return Ok(not_told);
        }
        if self.team.is_none() {
            let accounts = self.store.user_count().await? > 0;
            let members = self.store.members(self.investigation).await?.into_iter().map(|m| m.user).collect();
            self.team = Some((accounts, members));
        }
        let Some((true, members)) = &self.team else { return Ok(not_told) };
        let members = members.clone();
        for name in names {
            let key = name.to_lowercase();
            let user = match self.users.get(&key) {
                Some(user) => *user,
                None => {
                    let user = self.store.user_by_name(&name).await?.map(|u| u.is_admin != 0);
                    self.users.insert(key, user);
                    user
                }
            };
            let member = members.iter().any(|m| m.eq_ignore_ascii_case(&name));
            let said = |user: bool| self.owner.then_some(user);
            match user {
                None => not_told.push(NotTold { name, user: said(false) }),
                Some(admin) if !admin && !member => not_told.push(NotTold { name, user: said(true) }),
                Some(_) => {}
            }
        }
        tracing::debug!(investigation = self.investigation, unreached = not_told.len(), "mentions checked");
        Ok(not_told)
    }
}

fn check_body(body: &str) -> Result<String> {
    let body = body.trim();
    if body.is_empty() {
        return Err(ApiError::invalid("The comment is empty.").into());
    }
    let chars = body.chars().count();
    if chars > BODY_CHARS {
        return Err(ApiError::invalid(format!("The comment is {chars} characters; the limit is {BODY_CHARS}.")).into());
    }
    Ok(body.to_string())
}

fn comment_not_found(id: i64) -> ApiError {
    ApiError::not_found(format!("There is no comment {id}."))
}

impl Comments {
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    /// Every comment of the investigation, oldest first.
    pub async fn of(&self, permit: &Permit<Read>) -> Result<Vec<Comment>> {
        let rows = self.store.comments_of_investigation(permit.investigation()).await?;
        let mut reach = Reach::new(&self.store, permit);
        let mut comments = Vec::with_capacity(rows.len());
        for row in rows {
            let mut comment = comment_view(row);
            comment.not_told = reach.not_told(&comment.body, &comment.author).await?;
            comments.push(comment);
        }
        Ok(comments)
    }

    /// A comment (a thread, or a reply to one); its `@name`s become mentions.
    /// Every member may (viewers too: asking is how a reader takes part).
    pub async fn add(&self, permit: &Permit<Read>, new: NewComment) -> Result<Comment> {
        let investigation = permit.investigation();
        let body = check_body(&new.body)?;
        let elsewhere = || ApiError::invalid("That is in another investigation.");
        // Where the thread sits: a reply follows its thread; a new thread names a
        // step, or an annotation (whose step it then is on).
        let (step_id, annotation_id, parent_id) = if let Some(parent) = new.parent_id {
            let parent = self.store.comment(parent).await?.ok_or_else(|| comment_not_found(parent))?;
            if parent.investigation_id != investigation {
                return Err(elsewhere().into());
            }
            (parent.step_id, parent.annotation_id, Some(parent.parent_id.unwrap_or(parent.id)))
        } else if let Some(annotation) = new.annotation_id {
            let row = self
                .store
                .annotation(annotation)
                .await?
                .ok_or_else(|| ApiError::invalid(format!("There is no annotation {annotation}.")))?;
            (row.step_id, Some(annotation), None)
        } else if let Some(step) = new.step_id {
            (step, None, None)
        } else {
            return Err(ApiError::invalid("Say what the comment is on: step_id, annotation_id or parent_id.").into());
        };
        let step =
            self.store.step(step_id).await?.ok_or_else(|| ApiError::invalid(format!("There is no step {step_id}.")))?;
        if step.investigation_id != investigation {
            return Err(elsewhere().into());
        }
        let author = permit.actor().name.clone();
        let mentions = self.store.users_named_in(&body, &author).await?;
        let row = self
            .store
            .insert_comment(NewCommentRow {
                investigation,
                step_id,
                annotation_id,
                parent_id,
                author: &author,
                body: &body,
                mentions: &mentions,
            })
            .await?;
        tracing::info!(investigation, comment = row.id, mentions = mentions.len(), "comment added");
        let mut comment = comment_view(row);
        comment.not_told = Reach::new(&self.store, permit).not_told(&body, &author).await?;
        Ok(comment)
    }

    /// Resolves (or reopens) the thread the comment is in.
    pub async fn resolve(&self, permit: &Permit<Edit>, id: i64, resolved: bool) -> Result<Comment> {
        let row = self.store.comment(id).await?.filter(|c| c.investigation_id == permit.investigation());
        let row = row.ok_or_else(|| comment_not_found(id))?;
        let root = row.parent_id.unwrap_or(row.id);
        let by = permit.actor().name.clone();
        self.store.resolve_comment(root, resolved.then_some(by.as_str())).await?;
        let row = self.store.comment(root).await?.ok_or_else(|| comment_not_found(root))?;
        Ok(comment_view(row))
    }

    /// The caller's mentions, newest first (unread ones, or `all`), in
    /// investigations they may still read.
    pub async fn mentions(&self, readers: &Readers, all: bool) -> Result<Vec<Mention>> {
        let user = readers.actor().name.clone();
        let rows = self.store.mentions_of(&user, all).await?;
        Ok(rows
            .into_iter()
            .filter(|m| readers.may_read(&m.investigation_id))
            .map(|m| {
                let mut excerpt: String = m.body.chars().take(200).collect();
                if m.body.chars().count() > 200 {
                    excerpt.push('…');
                }
                let of = MentionIn::of(m.comment_id, m.annotation_id);
                let anchor = of.map(|of| format!("#{}", of.anchor())).unwrap_or_default();
                Mention {
                    url: format!("/i/{}{anchor}", m.investigation_id),
                    comment_id: m.comment_id,
                    annotation_id: m.annotation_id,
                    investigation_id: m.investigation_id,
                    investigation_title: m.title,
                    author: m.author,
                    excerpt,
                    created_at: timestamp(m.created_at),
                    read: m.read_at.is_some(),
                }
            })
            .collect())
    }

    /// Marks one comment's or annotation's mention read, or all of them (`None`).
    pub async fn read_mentions(&self, permit: &Anyone, which: Option<MentionIn>) -> Result<()> {
        let user = permit.actor().name.clone();
        Ok(self.store.read_mentions(&user, which).await?)
    }
}
