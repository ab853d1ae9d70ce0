//! The server's own state for its operators (admins): `/metrics`; whether
//! the database answers (for anyone: it says nothing about the data).

use domain::error::ApiError;
use domain::ports::Actor;

impl super::Guarded {
    /// Prometheus text: runs, the queue, the SSH pool, store errors, disk free.
    pub async fn operations(&self, actor: &Actor) -> Result<String, ApiError> {
        let admin = self.access.admin(actor, "read the server's metrics")?;
        Ok(crate::operations::render(&self.notebook.operations(&admin).await?))
    }

    /// See [`crate::db::Store::reachable_now`].
    pub fn store_reachable_now(&self) -> bool {
        self.notebook.store_reachable_now()
    }

    pub fn note_store_unreachable(&self) {
        self.notebook.note_store_unreachable();
    }
}
