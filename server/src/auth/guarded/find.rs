//! Search (what the reader may read, enforced inside the query) and exports
//! (readers of the investigation; share links by their token, in `shares.rs`),
//! each export audited.

use crate::auth::access::Need;
use app::backend::Actor;
use app::error::ApiError;
use app::search::{Export, ExportFormat, SearchRequest, SearchResults};

#[async_trait::async_trait]
impl app::backend::FindOps for super::Guarded {
    async fn search(&self, actor: &Actor, request: SearchRequest) -> Result<SearchResults, ApiError> {
        // Admins read everything; anyone else the investigations they are a member of.
        let reader = (!actor.admin).then_some(actor.name.as_str());
        crate::search::search(&self.inner.store, self.inner.runner.outputs(), reader, &request).await
    }
    async fn export(
        &self,
        actor: &Actor,
        investigation: &str,
        format: ExportFormat,
        comments: bool,
    ) -> Result<Export, ApiError> {
        self.access.check(actor, investigation, Need::Read).await?;
        let export = self.inner.export(investigation, format, comments, &actor.name).await;
        let who = actor.name.clone();
        crate::export::audited(&self.inner.store, who, "investigation.export", investigation, comments, export).await
    }
    async fn export_shared(&self, token: &str, format: ExportFormat) -> Result<Export, ApiError> {
        self.inner.export_shared(token, format).await
    }
}
