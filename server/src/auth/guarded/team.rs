//! Members, share links (owners), comments (editors) and mentions (one's own, in investigations one may still read).

use crate::auth::access::Need;
use crate::db::OwnedBy;
use app::accounts::Member;
use app::backend::Actor;
use app::comments::{Comment, Mention, NewComment};
use app::error::ApiError;
use app::model::StepWindow;
use app::shares::{CreatedShareLink, NewShareLink, ShareLink, SharedView};

#[async_trait::async_trait]
impl app::backend::TeamOps for super::Guarded {
    async fn members(&self, actor: &Actor, investigation: &str) -> Result<Vec<Member>, ApiError> {
        self.access.check(actor, investigation, Need::Read).await?;
        self.inner.members(investigation).await
    }
    async fn set_member(&self, actor: &Actor, investigation: &str, member: Member) -> Result<Vec<Member>, ApiError> {
        self.access.check(actor, investigation, Need::Own).await?;
        let done = self.inner.set_member(investigation, member).await;
        self.announce(actor, Some(investigation), done)
    }
    async fn share_links(&self, actor: &Actor, investigation: &str) -> Result<Vec<ShareLink>, ApiError> {
        self.access.check(actor, investigation, Need::Own).await?;
        self.inner.share_links(investigation).await
    }
    async fn create_share_link(
        &self,
        actor: &Actor,
        investigation: &str,
        new: NewShareLink,
    ) -> Result<CreatedShareLink, ApiError> {
        self.access.check(actor, investigation, Need::Own).await?;
        self.inner.create_share_link(actor, investigation, new).await
    }
    async fn revoke_share_link(&self, actor: &Actor, id: i64) -> Result<ShareLink, ApiError> {
        self.access.check_of(actor, OwnedBy::ShareLink, id, Need::Own).await?;
        self.inner.revoke_share_link(actor, id).await
    }
    /// No role needed: the token is the right to read, and the view is read-only.
    async fn shared(&self, token: &str, window: Option<&StepWindow>) -> Result<SharedView, ApiError> {
        self.inner.shared(token, window).await
    }
    async fn add_comment(&self, actor: &Actor, investigation: &str, new: NewComment) -> Result<Comment, ApiError> {
        self.access.check(actor, investigation, Need::Edit).await?;
        let done = self.inner.add_comment(actor, investigation, new).await;
        self.announce(actor, Some(investigation), done)
    }
    async fn resolve_comment(&self, actor: &Actor, id: i64, resolved: bool) -> Result<Comment, ApiError> {
        let at = self.access.check_of(actor, OwnedBy::Comment, id, Need::Edit).await?;
        let done = self.inner.resolve_comment(actor, id, resolved).await;
        self.announce(actor, at.as_deref(), done)
    }
    /// Only mentions in investigations the reader may still read.
    async fn mentions(&self, actor: &Actor, all: bool) -> Result<Vec<Mention>, ApiError> {
        let mentions = self.inner.mentions(actor, all).await?;
        Ok(match self.access.readable(actor).await? {
            None => mentions,
            Some(ids) => mentions.into_iter().filter(|m| ids.contains(&m.investigation_id)).collect(),
        })
    }
    async fn read_mentions(&self, actor: &Actor, comment: Option<i64>) -> Result<(), ApiError> {
        self.inner.read_mentions(actor, comment).await
    }
}
