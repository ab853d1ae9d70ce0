//! What the JSON API streams or serves raw: a run's output, live (SSE frames
//! from its shared feed) and as bytes, and an investigation's events. They ask
//! the policy like every other operation, and a stream ends when the server
//! shuts down or its reader may no longer read (checked every [`RECHECK`]:
//! signed out, token revoked, membership removed).

use crate::auth::middleware::Reauth;
use crate::db::OwnedBy;
use crate::policy::{Access, Read};
use crate::runs::Live;
pub use crate::runs::{Output, Which};
use bytes::Bytes;
use domain::error::ApiError;
use domain::ports::Actor;
use futures::{Stream, StreamExt};
use std::sync::Arc;

/// How often a long-lived response checks that its reader may still read it.
pub const RECHECK: std::time::Duration = std::time::Duration::from_secs(10);

impl super::Guarded {
    /// The raw output of a run (or its server's log): all of it, or `limit` bytes from `offset`.
    pub async fn output(
        &self,
        actor: &Actor,
        run: i64,
        which: Which,
        offset: u64,
        limit: Option<u64>,
    ) -> Result<Output, ApiError> {
        let permit = self.access.permit_for::<Read>(actor, OwnedBy::Run, run).await?;
        Ok(self.notebook.runs.output(&permit, run, which, offset, limit).await?)
    }

    /// The same, through a share link (`Access::shared_run` says when).
    pub async fn shared_output(
        &self,
        token: &str,
        run: i64,
        which: Which,
        offset: u64,
        limit: Option<u64>,
    ) -> Result<Output, ApiError> {
        let permit = self.access.shared_run(token, run).await?;
        Ok(self.notebook.runs.output(&permit, run, which, offset, limit).await?)
    }

    /// A run's artifact through a share link.
    pub async fn shared_artifact(
        &self,
        token: &str,
        run: i64,
        artifact: i64,
    ) -> Result<(String, u64, Output), ApiError> {
        let permit = self.access.shared_run(token, run).await?;
        Ok(self.notebook.runs.artifact(&permit, run, artifact).await?)
    }

    /// A run's GPU telemetry through a share link.
    pub async fn shared_telemetry(&self, token: &str, run: i64) -> Result<domain::telemetry::Telemetry, ApiError> {
        let permit = self.access.shared_run(token, run).await?;
        Ok(self.notebook.runs.telemetry(&permit, run).await?)
    }

    /// One of a run's artifacts: its name, length and bytes.
    pub async fn artifact(&self, actor: &Actor, run: i64, artifact: i64) -> Result<(String, u64, Output), ApiError> {
        let permit = self.access.permit_for::<Read>(actor, OwnedBy::Run, run).await?;
        Ok(self.notebook.runs.artifact(&permit, run, artifact).await?)
    }

    /// A run's output from `offset` as SSE frames (`event: output`, then
    /// `end`); with `offsets_only`, frames that say only how far it has got.
    pub async fn follow_run(
        &self,
        actor: &Actor,
        run: i64,
        which: Which,
        offset: u64,
        offsets_only: bool,
        reauth: Reauth,
    ) -> Result<impl Stream<Item = Bytes> + Send + use<>, ApiError> {
        let permit = self.access.permit_for::<Read>(actor, OwnedBy::Run, run).await?;
        let slot = self.streams.take(actor)?;
        let frames = self.notebook.runs.follow(&permit, run, which, offset, offsets_only).await?;
        let stop = until_closed_or_lost(&self.live, self.access.clone(), reauth, permit.investigation().to_string());
        Ok(frames.take_until(stop).map(move |frame| {
            let _held = &slot;
            frame
        }))
    }

    /// An investigation's events: its runs queued, started and ended, changes,
    /// and who else has it open (`runs::events`). `known`: the runs fingerprint
    /// the reader's page shows; another one gets a first `{"sync":true}`.
    pub async fn follow_investigation(
        &self,
        actor: &Actor,
        investigation: &str,
        known: Option<u64>,
        reauth: Reauth,
    ) -> Result<impl Stream<Item = Bytes> + Send + use<>, ApiError> {
        let permit = self.access.permit::<Read>(actor, investigation).await?;
        let slot = self.streams.take(actor)?;
        // Only the run rows: rendering the whole investigation (output tails,
        // highlighted snippets) on every subscription would be wasted work.
        let fingerprint = self.notebook.runs.fingerprint(&permit).await?;
        let in_sync = known == Some(fingerprint);
        let events = crate::runs::events::follow(&self.live, investigation.to_string(), actor.name.clone(), in_sync);
        let stop = until_closed_or_lost(&self.live, self.access.clone(), reauth, investigation.to_string());
        Ok(events.take_until(stop).map(move |frame| {
            let _held = &slot;
            frame
        }))
    }
}

/// Resolves when the server shuts down, or the request's reader may no longer
/// read `investigation`.
fn until_closed_or_lost(
    live: &Arc<Live>,
    access: Access,
    reauth: Reauth,
    investigation: String,
) -> impl std::future::Future<Output = ()> + Send + use<> {
    let closed = live.closed();
    let lost = async move {
        loop {
            tokio::time::sleep(RECHECK).await;
            let allowed = match reauth.actor().await {
                Some(actor) => access.may_read(&actor, &investigation).await,
                None => false,
            };
            if !allowed {
                tracing::info!(investigation, "an event stream ended: its reader lost access");
                return;
            }
        }
    };
    async move {
        tokio::select! {
            () = closed => {}
            () = lost => {}
        }
    }
}
