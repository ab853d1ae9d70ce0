//! Members, share links (owners), comments (editors) and mentions (one's own, in investigations one may still read).

use crate::db::OwnedBy;
use crate::policy::{Edit, Own, Read};
use domain::accounts::{Member, MemberChange};
use domain::comments::{Comment, Mention, MentionIn, NewComment};
use domain::error::ApiError;
use domain::model::{SharedView, StepWindow};
use domain::ports::Actor;
use domain::shares::{CreatedShareLink, NewShareLink, ShareLink};

impl super::Guarded {
    pub async fn members(&self, actor: &Actor, investigation: &str) -> Result<Vec<Member>, ApiError> {
        let permit = self.access.permit::<Read>(actor, investigation).await?;
        Ok(self.notebook.members.list(&permit).await?)
    }
    pub async fn set_member(
        &self,
        actor: &Actor,
        investigation: &str,
        change: MemberChange,
    ) -> Result<Vec<Member>, ApiError> {
        let permit = self.access.permit::<Own>(actor, investigation).await?;
        let done = self.notebook.members.set(&permit, change).await;
        Ok(self.announce(actor, investigation, done)?)
    }
    /// Whom an owner may add: the team's users not yet members.
    pub async fn member_candidates(&self, actor: &Actor, investigation: &str) -> Result<Vec<String>, ApiError> {
        let permit = self.access.permit::<Own>(actor, investigation).await?;
        Ok(self.notebook.members.candidates(&permit).await?)
    }
    pub async fn share_links(&self, actor: &Actor, investigation: &str) -> Result<Vec<ShareLink>, ApiError> {
        let permit = self.access.permit::<Own>(actor, investigation).await?;
        Ok(self.notebook.shares.links(&permit).await?)
    }
    pub async fn create_share_link(
        &self,
        actor: &Actor,
        investigation: &str,
        new: NewShareLink,
    ) -> Result<CreatedShareLink, ApiError> {
        let permit = self.access.permit::<Own>(actor, investigation).await?;
        Ok(self.notebook.shares.create(&permit, new).await?)
    }
    pub async fn revoke_share_link(&self, actor: &Actor, id: i64) -> Result<ShareLink, ApiError> {
        let permit = self.access.permit_for::<Own>(actor, OwnedBy::ShareLink, id).await?;
        Ok(self.notebook.shares.revoke(&permit, id).await?)
    }
    /// No role needed: the token is the right to read, and the view is read-only.
    pub async fn shared(&self, token: &str, window: Option<&StepWindow>) -> Result<SharedView, ApiError> {
        let permit = self.access.shared(token).await?;
        Ok(self.notebook.shared(&permit, window).await?)
    }
    pub async fn add_comment(&self, actor: &Actor, investigation: &str, new: NewComment) -> Result<Comment, ApiError> {
        let permit = self.access.permit::<Read>(actor, investigation).await?;
        let done = self.notebook.comments.add(&permit, new).await;
        Ok(self.announce(actor, investigation, done)?)
    }
    pub async fn resolve_comment(&self, actor: &Actor, id: i64, resolved: bool) -> Result<Comment, ApiError> {
        let permit = self.access.permit_for::<Edit>(actor, OwnedBy::Comment, id).await?;
        let done = self.notebook.comments.resolve(&permit, id, resolved).await;
        Ok(self.announce(actor, permit.investigation(), done)?)
    }
    /// Only mentions in investigations the reader may still read.
    pub async fn mentions(&self, actor: &Actor, all: bool) -> Result<Vec<Mention>, ApiError> {
        let readers = self.access.readers(actor).await?;
        Ok(self.notebook.comments.mentions(&readers, all).await?)
    }
    pub async fn read_mentions(&self, actor: &Actor, which: Option<MentionIn>) -> Result<(), ApiError> {
        Ok(self.notebook.comments.read_mentions(&self.access.anyone(actor), which).await?)
    }
}
