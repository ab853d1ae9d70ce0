//! Search (what the reader may read, enforced inside the query) and exports
//! (readers of the investigation; share links by their token), each export audited.

use crate::policy::Read;
use domain::error::ApiError;
use domain::ports::Actor;
use domain::search::{Export, ExportFormat, SearchRequest, SearchResults};

impl super::Guarded {
    pub async fn search(&self, actor: &Actor, request: SearchRequest) -> Result<SearchResults, ApiError> {
        let readers = self.access.readers(actor).await?;
        Ok(self.notebook.search.find(&readers, &request).await?)
    }
    pub async fn export(
        &self,
        actor: &Actor,
        investigation: &str,
        format: ExportFormat,
        comments: bool,
    ) -> Result<Export, ApiError> {
        let permit = self.access.permit::<Read>(actor, investigation).await?;
        Ok(self.notebook.export(&permit, format, comments).await?)
    }
    pub async fn export_shared(&self, token: &str, format: ExportFormat) -> Result<Export, ApiError> {
        let permit = self.access.shared(token).await?;
        Ok(self.notebook.export_shared(&permit, format).await?)
    }
}
