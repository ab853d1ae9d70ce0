//! Investigation members and host allow-lists (see migration 0014).

use super::{Store, StoreResult};
use domain::accounts::{Member, Role};

/// A role as stored: one the schema's CHECK should have kept out is an error, not "no role".
#[derive(sqlx::FromRow)]
struct RoleRow {
    #[sqlx(try_from = "String")]
    role: Role,
}

#[derive(sqlx::FromRow)]
struct MemberRow {
    user_name: String,
    #[sqlx(try_from = "String")]
    role: Role,
}

impl Store {
    pub async fn role_of(&self, investigation: &str, user: &str) -> StoreResult<Option<Role>> {
        let row: Option<RoleRow> =
            sqlx::query_as("SELECT role FROM investigation_members WHERE investigation_id = $1 AND user_name = $2")
                .bind(investigation)
                .bind(user)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.map(|r| r.role))
    }

    pub async fn set_member(&self, investigation: &str, user: &str, role: Role) -> StoreResult<()> {
        set_member_in(&mut *self.pool.acquire().await?, investigation, user, role).await
    }

    pub async fn remove_member(&self, investigation: &str, user: &str) -> StoreResult<bool> {
        let done = sqlx::query("DELETE FROM investigation_members WHERE investigation_id = $1 AND user_name = $2")
            .bind(investigation)
            .bind(user)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// The members, owners first.
    pub async fn members(&self, investigation: &str) -> StoreResult<Vec<Member>> {
        let rows: Vec<MemberRow> = sqlx::query_as(
            "SELECT user_name, role FROM investigation_members WHERE investigation_id = $1
             ORDER BY CASE role WHEN 'owner' THEN 0 WHEN 'runner' THEN 1 WHEN 'editor' THEN 2 ELSE 3 END, user_name",
        )
        .bind(investigation)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(|r| Member { user: r.user_name, role: r.role }).collect())
    }

    /// Ids of the investigations `user` is a member of.
    pub async fn investigations_of(&self, user: &str) -> StoreResult<Vec<String>> {
        let rows: Vec<(String,)> =
            sqlx::query_as("SELECT investigation_id FROM investigation_members WHERE user_name = $1")
                .bind(user)
                .fetch_all(&self.pool)
                .await?;
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }

    /// Whether `user` holds one of `roles` in any investigation.
    pub async fn has_role_anywhere(&self, user: &str, roles: &[&str]) -> StoreResult<bool> {
        let mut found = false;
        for role in roles {
            let (any,): (i64,) =
                sqlx::query_as("SELECT CASE WHEN EXISTS (SELECT 1 FROM investigation_members WHERE user_name = $1 AND role = $2) THEN 1 ELSE 0 END")
                    .bind(user)
                    .bind(role)
                    .fetch_one(&self.pool)
                    .await?;
            found |= any != 0;
        }
        Ok(found)
    }

    /// The investigations with a run that points at host facts `facts_id`.
    pub async fn investigations_with_facts(&self, facts_id: i64) -> StoreResult<Vec<String>> {
        let rows: Vec<(String,)> = sqlx::query_as(
            "SELECT DISTINCT s.investigation_id FROM runs r JOIN steps s ON s.id = r.step_id WHERE r.facts_id = $1",
        )
        .bind(facts_id)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }

    /// `None` when there is no such host.
    pub async fn host_allows(&self, host: &str, user: &str) -> StoreResult<Option<bool>> {
        let row: Option<(i64, i64)> = sqlx::query_as(
            "SELECT whole_team, CASE WHEN EXISTS (SELECT 1 FROM host_users WHERE host_name = h.name AND user_name = $1)
                                 THEN 1 ELSE 0 END
             FROM hosts h WHERE name = $2",
        )
        .bind(user)
        .bind(host)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(|(team, listed)| team != 0 || listed != 0))
    }

    /// `(whole_team, users)`.
    pub async fn host_access(&self, host: &str) -> StoreResult<(bool, Vec<String>)> {
        let (team,): (i64,) = sqlx::query_as("SELECT whole_team FROM hosts WHERE name = $1")
            .bind(host)
            .fetch_optional(&self.pool)
            .await?
            .unwrap_or((1,));
        let users: Vec<(String,)> =
            sqlx::query_as("SELECT user_name FROM host_users WHERE host_name = $1 ORDER BY user_name")
                .bind(host)
                .fetch_all(&self.pool)
                .await?;
        Ok((team != 0, users.into_iter().map(|(u,)| u).collect()))
    }

    pub async fn set_host_access(&self, host: &str, whole_team: bool, users: &[String]) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        sqlx::query("UPDATE hosts SET whole_team = $1 WHERE name = $2")
            .bind(i64::from(whole_team))
            .bind(host)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM host_users WHERE host_name = $1").bind(host).execute(&mut *tx).await?;
        for user in users {
            sqlx::query("INSERT INTO host_users (host_name, user_name) VALUES ($1, $2) ON CONFLICT DO NOTHING")
                .bind(host)
                .bind(user)
                .execute(&mut *tx)
                .await?;
        }
        Ok(tx.commit().await?)
    }

    /// The investigation a step, annotation, hypothesis or measurement belongs to.
    pub async fn investigation_of(&self, what: OwnedBy, id: i64) -> StoreResult<Option<String>> {
        let sql = match what {
            OwnedBy::Step => "SELECT investigation_id FROM steps WHERE id = $1",
            OwnedBy::Run => "SELECT s.investigation_id FROM runs r JOIN steps s ON s.id = r.step_id WHERE r.id = $1",
            OwnedBy::Annotation => {
                "SELECT s.investigation_id FROM annotations a JOIN steps s ON s.id = a.step_id WHERE a.id = $1"
            }
            OwnedBy::Hypothesis => "SELECT investigation_id FROM hypotheses WHERE id = $1",
            OwnedBy::Measurement => "SELECT investigation_id FROM measurements WHERE id = $1",
            OwnedBy::ShareLink => "SELECT investigation_id FROM share_links WHERE id = $1",
            OwnedBy::Comment => "SELECT investigation_id FROM comments WHERE id = $1",
            OwnedBy::Sweep => {
                "SELECT s.investigation_id FROM sweeps w JOIN steps s ON s.id = w.step_id WHERE w.id = $1"
            }
        };
        let row: Option<(String,)> = sqlx::query_as(sql).bind(id).fetch_optional(&self.pool).await?;
        Ok(row.map(|(i,)| i))
    }
}

#[derive(Clone, Copy, Debug)]
pub enum OwnedBy {
    Step,
    Run,
    Annotation,
    Hypothesis,
    Measurement,
    ShareLink,
    Comment,
    Sweep,
}

/// Gives `user` the `role` in `investigation`, on `conn`.
pub(super) async fn set_member_in(
    conn: &mut sqlx::AnyConnection,
    investigation: &str,
    user: &str,
    role: Role,
) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO investigation_members (investigation_id, user_name, role) VALUES ($1, $2, $3)
         ON CONFLICT (investigation_id, user_name) DO UPDATE SET role = excluded.role",
    )
    .bind(investigation)
    .bind(user)
    .bind(role.as_str())
    .execute(conn)
    .await?;
    Ok(())
}
