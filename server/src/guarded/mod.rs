//! The one way in: the notebook as every request sees it. Each operation asks
//! the policy ([`Access`]) for the permit it needs — a role in the
//! investigation it touches, a host's allow-list, admin — and hands the permit
//! to the service, which cannot be called without one. One file per domain,
//! one method per operation, called by the JSON API's handlers as they are and
//! by the pages through `domain::ports` (answered in `ports.rs`); the streams
//! and raw output the JSON API serves are methods here too ([`streams`]).
//!
//! Internal errors become the wire error here, once, in the request's span
//! (`From<crate::error::Error> for ApiError`, by `?`).

mod accounts;
mod find;
mod hosts;
mod hypotheses;
mod investigations;
mod measurements;
mod operations;
mod ports;
mod replays;
mod runs;
mod source;
mod steps;
mod stream_slots;
pub mod streams;
mod team;
mod watches;

use crate::auth::Auth;
use crate::notebook::Notebook;
use crate::policy::Access;
use crate::runs::Live;
use crate::search::Index;
use domain::ports::Actor;
use std::sync::Arc;

pub struct Guarded {
    notebook: Notebook,
    access: Access,
    /// Pages and event streams hear of changes.
    live: Arc<Live>,
    /// The search index hears of them too.
    index: Arc<Index>,
    /// Accounts: tokens, users, the audit log.
    auth: Arc<Auth>,
    /// Live streams open, per person (each has a cap).
    streams: stream_slots::Streams,
}

impl Guarded {
    pub fn new(notebook: Notebook, access: Access, live: Arc<Live>, index: Arc<Index>, auth: Arc<Auth>) -> Self {
        Self { notebook, access, live, index, auth, streams: stream_slots::Streams::default() }
    }

    /// Tells everyone viewing `investigation` that it changed, when `result` is a success.
    fn announce<T>(
        &self,
        actor: &Actor,
        investigation: &str,
        result: crate::error::Result<T>,
    ) -> crate::error::Result<T> {
        if result.is_ok() {
            self.live.changed(investigation, &actor.name);
            self.index.changed(investigation);
        }
        result
    }
}
