//! Watches: who may run a step may watch it (each firing is checked again, as
//! its creator has the right then); readers of the investigation see its
//! watches. What a watch may be is `crate::watches::Watches`.

use crate::policy::{Read, Run};
use domain::error::ApiError;
use domain::ports::Actor;
use domain::watches::{Watch, WatchRequest};

impl super::Guarded {
    /// How watches behave here (the scheduler's webhook allow-list).
    pub fn watch_settings(&self) -> &crate::watches::Settings {
        self.notebook.watches.settings()
    }

    /// The watches the scheduler is tending now (it marks them).
    pub fn watches_being_tended(&self) -> crate::watches::Tending {
        self.notebook.watches.tending()
    }

    /// `POST /api/v1/steps/{id}/watch`; `through`: the address asked (links' base).
    pub async fn watch_step(
        &self,
        actor: &Actor,
        step: i64,
        request: WatchRequest,
        through: Option<String>,
    ) -> Result<Watch, ApiError> {
        let runs_it = self.access.run_on_step(actor, step).await?;
        let found = self.notebook.steps.get(&runs_it.permit().read(), step).await?;
        let id = self.notebook.watches.create(runs_it.permit(), &found, request, through).await?;
        self.watch(actor, id).await
    }

    pub async fn watch(&self, actor: &Actor, id: i64) -> Result<Watch, ApiError> {
        let missing = || ApiError::not_found(format!("There is no watch {id}."));
        let row = self.notebook.watches.row(id).await?.ok_or_else(missing)?;
        self.access.permit::<Read>(actor, &row.investigation_id).await.map_err(|_| missing())?;
        Ok(crate::watches::rows::view(&row)?)
    }

    /// `GET /api/v1/watches`: those of investigations the actor may read.
    pub async fn watches(&self, actor: &Actor) -> Result<Vec<Watch>, ApiError> {
        let mut out = Vec::new();
        for row in self.notebook.watches.rows().await? {
            if self.access.permit::<Read>(actor, &row.investigation_id).await.is_ok() {
                out.push(crate::watches::rows::view(&row)?);
            }
        }
        Ok(out)
    }

    /// An investigation's watches (its page's banner and list).
    pub async fn watches_of(&self, actor: &Actor, investigation: &str) -> Result<Vec<Watch>, ApiError> {
        let permit = self.access.permit::<Read>(actor, investigation).await?;
        let rows = self.notebook.watches.rows_of(&permit).await?;
        Ok(rows.iter().map(crate::watches::rows::view).collect::<crate::error::Result<_>>()?)
    }

    /// `DELETE /api/v1/watches/{id}`: who may run its step stops it, at once.
    pub async fn delete_watch(&self, actor: &Actor, id: i64) -> Result<(), ApiError> {
        let missing = || ApiError::not_found(format!("There is no watch {id}."));
        let row = self.notebook.watches.row(id).await?.ok_or_else(missing)?;
        self.access.permit::<Read>(actor, &row.investigation_id).await.map_err(|_| missing())?;
        let permit = self.access.permit::<Run>(actor, &row.investigation_id).await?;
        let done = self.notebook.watches.delete(&permit, id).await;
        Ok(self.announce(actor, &row.investigation_id, done)?)
    }
}
