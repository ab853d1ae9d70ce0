//! The server's own state for its operators (admins): `/metrics`.

use app::backend::Actor;
use app::error::ApiError;

impl super::Guarded {
    /// Prometheus text: runs, the queue, the SSH pool, store errors, disk free.
    pub async fn operations(&self, actor: &Actor) -> Result<String, ApiError> {
        let admin = self.access.admin(actor, "read the server's metrics")?;
        Ok(crate::operations::render(&self.notebook.operations(&admin).await?))
    }
}
