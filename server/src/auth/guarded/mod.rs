//! The notebook as every request sees it: each operation checks the caller's
//! role (see `access`) for the investigation it touches, then hands over to the
//! unguarded [`Service`]. One place, so no route or server function can forget:
//! one file per domain, one method per operation (the traits of `app::backend`).

mod find;
mod hosts;
mod hypotheses;
mod investigations;
mod measurements;
mod runs;
mod source;
mod steps;
mod team;

use super::access::{Access, Need};
use crate::db::OwnedBy;
use crate::notebook::Service;
use app::backend::Actor;
use app::error::ApiError;
use app::steps::StepBody;
use std::sync::Arc;

pub struct Guarded {
    inner: Arc<Service>,
    access: Access,
}

/// The host a body reads from when saved (snippets and greps fetch at once).
fn fetching_host(body: &StepBody) -> Option<&str> {
    match body {
        StepBody::Snippet(s) => Some(&s.host),
        StepBody::Grep(g) => Some(&g.host),
        _ => None,
    }
}

impl Guarded {
    pub fn new(inner: Arc<Service>, access: Access) -> Self {
        Self { inner, access }
    }

    /// Edit, or run (role and host) when saving `body` fetches from a host.
    async fn check_body(&self, actor: &Actor, investigation: &str, body: &StepBody) -> Result<(), ApiError> {
        match fetching_host(body) {
            Some(host) => {
                self.access.check(actor, investigation, Need::Run).await?;
                self.access.check_host(actor, host).await
            }
            None => self.access.check(actor, investigation, Need::Edit).await,
        }
    }

    /// Tells everyone viewing `investigation` that it changed, when `result` is a success.
    fn announce<T>(
        &self,
        actor: &Actor,
        investigation: Option<&str>,
        result: Result<T, ApiError>,
    ) -> Result<T, ApiError> {
        if let (Ok(_), Some(investigation)) = (&result, investigation) {
            self.inner.runner.live().changed(investigation, &actor.name);
            self.inner.runner.search().changed(investigation);
        }
        result
    }

    async fn step_investigation(&self, step: i64) -> Result<Option<String>, ApiError> {
        Ok(self.access.store().investigation_of(OwnedBy::Step, step).await?)
    }

    /// Run on a step's or run's host: runner role, and the host's allow-list.
    /// Returns the investigation checked.
    async fn check_run(
        &self,
        actor: &Actor,
        what: OwnedBy,
        id: i64,
        host: impl AsyncFnOnce() -> Result<String, ApiError>,
    ) -> Result<Option<String>, ApiError> {
        let investigation = self.access.check_of(actor, what, id, Need::Run).await?;
        self.access.check_host(actor, &host().await?).await?;
        Ok(investigation)
    }
}
