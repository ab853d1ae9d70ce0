//! Users, sessions and API tokens. Tokens are looked up by their SHA-256 hash.

use super::{Store, StoreResult};
use crate::time::now_ms;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct UserRow {
    pub id: i64,
    pub name: String,
    pub password_hash: String,
    pub is_admin: i64,
    pub created_at: i64,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TokenRow {
    pub id: i64,
    pub user_id: i64,
    pub label: String,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
    pub revoked_at: Option<i64>,
}

const USER_COLUMNS: &str = "id, name, password_hash, is_admin, created_at";

/// A user as the users page lists them, with the expiry of the sign-in link
/// waiting for them, if one is.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ListedUserRow {
    pub name: String,
    pub is_admin: i64,
    pub created_at: i64,
    pub link_expires_at: Option<i64>,
}

/// A password hash no password matches (not a PHC string): the account of
/// someone whose sign-in link is not used yet, or was reset.
pub const NO_PASSWORD: &str = "!";

impl Store {
    pub async fn user_count(&self) -> StoreResult<i64> {
        let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM users").fetch_one(&self.pool).await?;
        Ok(n)
    }

    /// `None` when the name is taken (names compare case-insensitively).
    pub async fn insert_user(&self, name: &str, password_hash: &str, admin: bool) -> StoreResult<Option<UserRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "INSERT INTO users (name, password_hash, is_admin, created_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT (name) DO NOTHING RETURNING {USER_COLUMNS}"
        )))
        .bind(name)
        .bind(password_hash)
        .bind(i64::from(admin))
        .bind(now_ms())
        .fetch_all(&self.pool)
        .await?
        .into_iter()
        .next())
    }

    pub async fn user_by_name(&self, name: &str) -> StoreResult<Option<UserRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {USER_COLUMNS} FROM users WHERE name = $1")))
            .bind(name)
            .fetch_optional(&self.pool)
            .await?)
    }

    pub async fn users(&self) -> StoreResult<Vec<UserRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {USER_COLUMNS} FROM users ORDER BY name")))
            .fetch_all(&self.pool)
            .await?)
    }

    /// New password hash; every session of the user ends. `false`: no such user.
    pub async fn set_password(&self, name: &str, password_hash: &str) -> StoreResult<bool> {
        let mut tx = self.begin_write().await?;
        let done = sqlx::query("UPDATE users SET password_hash = $1 WHERE name = $2")
            .bind(password_hash)
            .bind(name)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM sessions WHERE user_id = (SELECT id FROM users WHERE name = $1)")
            .bind(name)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(done.rows_affected() == 1)
    }

    /// Removes the user with their roles and host-list entries (sessions and
    /// tokens go by cascade). `false`: no such user.
    pub async fn delete_user(&self, name: &str) -> StoreResult<bool> {
        let mut tx = self.begin_write().await?;
        for sql in
            ["DELETE FROM investigation_members WHERE user_name = $1", "DELETE FROM host_users WHERE user_name = $1"]
        {
            sqlx::query(sql).bind(name).execute(&mut *tx).await?;
        }
        let done = sqlx::query("DELETE FROM users WHERE name = $1").bind(name).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(done.rows_affected() == 1)
    }

    pub async fn insert_session(&self, token_hash: &str, user: i64, expires_at: i64) -> StoreResult<()> {
        sqlx::query("INSERT INTO sessions (token_hash, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)")
            .bind(token_hash)
            .bind(user)
            .bind(now_ms())
            .bind(expires_at)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The user of an unexpired session.
    pub async fn session_user(&self, token_hash: &str) -> StoreResult<Option<UserRow>> {
        self.user_of_expiring("sessions", token_hash).await
    }

    /// The user an unexpired secret of `table` (`sessions`, `sign_in_links`:
    /// `token_hash`, `user_id`, `expires_at`) belongs to.
    async fn user_of_expiring(&self, table: &'static str, token_hash: &str) -> StoreResult<Option<UserRow>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT u.id, u.name, u.password_hash, u.is_admin, u.created_at FROM {table} s
             JOIN users u ON u.id = s.user_id WHERE s.token_hash = $1 AND s.expires_at > $2"
        )))
        .bind(token_hash)
        .bind(now_ms())
        .fetch_optional(&self.pool)
        .await?)
    }

    pub async fn delete_session(&self, token_hash: &str) -> StoreResult<()> {
        sqlx::query("DELETE FROM sessions WHERE token_hash = $1 OR expires_at <= $2")
            .bind(token_hash)
            .bind(now_ms())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    pub async fn insert_token(&self, user: i64, label: &str, token_hash: &str) -> StoreResult<TokenRow> {
        Ok(sqlx::query_as(
            "INSERT INTO api_tokens (user_id, label, token_hash, created_at) VALUES ($1, $2, $3, $4)
             RETURNING id, user_id, label, created_at, last_used_at, revoked_at",
        )
        .bind(user)
        .bind(label)
        .bind(token_hash)
        .bind(now_ms())
        .fetch_all(&self.pool)
        .await?
        .into_iter()
        .next()
        .ok_or(sqlx::Error::RowNotFound)?)
    }

    /// The user of an unrevoked token, noting that it was used.
    pub async fn token_user(&self, token_hash: &str) -> StoreResult<Option<UserRow>> {
        let user = sqlx::query_as(
            "SELECT u.id, u.name, u.password_hash, u.is_admin, u.created_at FROM api_tokens t
             JOIN users u ON u.id = t.user_id WHERE t.token_hash = $1 AND t.revoked_at IS NULL",
        )
        .bind(token_hash)
        .fetch_optional(&self.pool)
        .await?;
        if user.is_some() {
            // Best effort, and at most once a minute: a read must not depend on
            // a write succeeding (a full disk would lock everyone out).
            let stamped = sqlx::query(
                "UPDATE api_tokens SET last_used_at = $1
                 WHERE token_hash = $2 AND (last_used_at IS NULL OR last_used_at < $3)",
            )
            .bind(now_ms())
            .bind(token_hash)
            .bind(now_ms() - 60_000)
            .execute(&self.pool)
            .await;
            if let Err(e) = stamped {
                tracing::warn!("could not note when an API token was last used: {e}");
            }
        }
        Ok(user)
    }

    pub async fn tokens_of(&self, user: i64) -> StoreResult<Vec<TokenRow>> {
        Ok(sqlx::query_as(
            "SELECT id, user_id, label, created_at, last_used_at, revoked_at FROM api_tokens
             WHERE user_id = $1 ORDER BY id",
        )
        .bind(user)
        .fetch_all(&self.pool)
        .await?)
    }

    /// `false` when the user has no such unrevoked token.
    pub async fn revoke_token(&self, user: i64, id: i64) -> StoreResult<bool> {
        let done =
            sqlx::query("UPDATE api_tokens SET revoked_at = $1 WHERE id = $2 AND user_id = $3 AND revoked_at IS NULL")
                .bind(now_ms())
                .bind(id)
                .bind(user)
                .execute(&self.pool)
                .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Keeps the hash of a first-admin setup link; links older than a day go.
    pub async fn insert_setup_token(&self, token_hash: &str) -> StoreResult<()> {
        let now = now_ms();
        sqlx::query("DELETE FROM setup_tokens WHERE created_at < $1")
            .bind(now - 86_400_000)
            .execute(&self.pool)
            .await?;
        sqlx::query("INSERT INTO setup_tokens (token_hash, created_at) VALUES ($1, $2)")
            .bind(token_hash)
            .bind(now)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Uses up every setup link at once, if `token_hash` is one of them: of two
    /// replicas asked at the same moment, one gets `true`.
    pub async fn take_setup_tokens(&self, token_hash: &str) -> StoreResult<bool> {
        let taken: Vec<(String,)> =
            sqlx::query_as("DELETE FROM setup_tokens RETURNING token_hash").fetch_all(&self.pool).await?;
        let found = taken.iter().any(|(hash,)| hash == token_hash);
        if !found {
            // Not ours to use up: the links stay valid.
            for (hash,) in &taken {
                sqlx::query("INSERT INTO setup_tokens (token_hash, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING")
                    .bind(hash)
                    .bind(now_ms())
                    .execute(&self.pool)
                    .await?;
            }
        }
        Ok(found)
    }

    pub async fn users_listed(&self) -> StoreResult<Vec<ListedUserRow>> {
        Ok(sqlx::query_as(
            "SELECT u.name, u.is_admin, u.created_at, l.expires_at AS link_expires_at FROM users u
             LEFT JOIN sign_in_links l ON l.user_id = u.id AND l.expires_at > $1 ORDER BY u.name",
        )
        .bind(now_ms())
        .fetch_all(&self.pool)
        .await?)
    }

    /// `false`: no such user.
    pub async fn set_admin(&self, name: &str, admin: bool) -> StoreResult<bool> {
        let done = sqlx::query("UPDATE users SET is_admin = $1 WHERE name = $2")
            .bind(i64::from(admin))
            .bind(name)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// A new one-time sign-in link for the user, replacing any waiting one.
    /// With `lock_out` (a reset), their password stops working and their
    /// sessions end, in the same transaction. `None`: no such user.
    pub async fn issue_sign_in_link(
        &self,
        name: &str,
        token_hash: &str,
        created_by: &str,
        expires_at: i64,
        lock_out: bool,
    ) -> StoreResult<Option<UserRow>> {
        let mut tx = self.begin_write().await?;
        if lock_out {
            sqlx::query("UPDATE users SET password_hash = $1 WHERE name = $2")
                .bind(NO_PASSWORD)
                .bind(name)
                .execute(&mut *tx)
                .await?;
            sqlx::query("DELETE FROM sessions WHERE user_id = (SELECT id FROM users WHERE name = $1)")
                .bind(name)
                .execute(&mut *tx)
                .await?;
        }
        let user: Option<UserRow> =
            sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {USER_COLUMNS} FROM users WHERE name = $1")))
                .bind(name)
                .fetch_optional(&mut *tx)
                .await?;
        let Some(user) = user else { return Ok(None) };
        sqlx::query(
            "INSERT INTO sign_in_links (token_hash, user_id, created_by, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (user_id) DO UPDATE SET token_hash = excluded.token_hash, created_by = excluded.created_by,
                 created_at = excluded.created_at, expires_at = excluded.expires_at",
        )
        .bind(token_hash)
        .bind(user.id)
        .bind(created_by)
        .bind(now_ms())
        .bind(expires_at)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Some(user))
    }

    /// The user an unexpired sign-in link is for.
    pub async fn sign_in_link_user(&self, token_hash: &str) -> StoreResult<Option<UserRow>> {
        self.user_of_expiring("sign_in_links", token_hash).await
    }

    /// Uses the link up and sets the password it was for, together: of two
    /// tabs submitting at once, one gets the user. `None`: no such link (used,
    /// expired or never made).
    pub async fn redeem_sign_in_link(&self, token_hash: &str, password_hash: &str) -> StoreResult<Option<UserRow>> {
        let mut tx = self.begin_write().await?;
        let taken: Option<(i64,)> =
            sqlx::query_as("DELETE FROM sign_in_links WHERE token_hash = $1 AND expires_at > $2 RETURNING user_id")
                .bind(token_hash)
                .bind(now_ms())
                .fetch_optional(&mut *tx)
                .await?;
        let Some((user,)) = taken else { return Ok(None) };
        let row: UserRow = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "UPDATE users SET password_hash = $1 WHERE id = $2 RETURNING {USER_COLUMNS}"
        )))
        .bind(password_hash)
        .bind(user)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Some(row))
    }

    /// Whether a first-admin setup link would still work (no user yet, and it
    /// is one of the links kept): the setup page asks before showing its form.
    pub async fn setup_token_valid(&self, token_hash: &str) -> StoreResult<bool> {
        let (n,): (i64,) = sqlx::query_as(
            "SELECT COUNT(*) FROM setup_tokens WHERE token_hash = $1 AND created_at > $2
                 AND NOT EXISTS (SELECT 1 FROM users)",
        )
        .bind(token_hash)
        .bind(now_ms() - 86_400_000)
        .fetch_one(&self.pool)
        .await?;
        Ok(n > 0)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// A transaction that reads before it writes (a sign-in link reads its
    /// user first) is not refused while others write all the time, as a
    /// run's output does: on SQLite a plain `BEGIN` failed such a write at
    /// once with "database is locked" (a CI run's invite answered 500).
    #[tokio::test]
    async fn links_are_issued_while_others_write() {
        for (_dir, _db, store) in crate::db::test_stores().await {
            store.insert_user("carol", super::NO_PASSWORD, false).await.unwrap().unwrap();
            let stop = Arc::new(AtomicBool::new(false));
            let writer = tokio::spawn({
                let (store, stop) = (store.clone(), stop.clone());
                async move {
                    let mut n = 0;
                    while !stop.load(Ordering::Relaxed) {
                        store.insert_investigation(&format!("w{n}"), "busy", "").await.unwrap();
                        n += 1;
                    }
                    n
                }
            });
            for i in 0..200 {
                let issued = store.issue_sign_in_link("carol", &format!("hash{i}"), "admin", i64::MAX, false).await;
                assert!(matches!(issued, Ok(Some(_))), "link {i}: {issued:?}");
            }
            stop.store(true, Ordering::Relaxed);
            assert!(writer.await.unwrap() > 0, "the other writer wrote meanwhile");
        }
    }
}
