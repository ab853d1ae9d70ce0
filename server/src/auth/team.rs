//! The team's users, as admins manage them in the browser: added with a
//! one-time sign-in link instead of a password sent around, reset the same
//! way, made admins, removed. The link's page (`/welcome?token=…`) lets its
//! holder choose a password and signs them in; only the token's hash is kept.

use super::{Account, Auth, check_name, check_password, hash_password};
use crate::db::{ListedUserRow, NO_PASSWORD};
use crate::error::Result;
use crate::ids::{hash_secret, new_secret};
use crate::policy::Admin;
use crate::time::{now_ms, timestamp};
use domain::accounts::{SignInLink, TeamUser};
use domain::error::{ApiError, ErrorCode};

/// How long a sign-in link works.
pub const LINK_DAYS: i64 = 7;

fn listed(row: ListedUserRow) -> TeamUser {
    TeamUser {
        name: row.name,
        admin: row.is_admin != 0,
        created_at: timestamp(row.created_at),
        link_expires_at: row.link_expires_at.map(timestamp),
    }
}

impl Auth {
    fn refuse_without_accounts(&self) -> Result<()> {
        if self.disabled() {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                "Sleuth runs with --no-auth: there are no accounts to manage (everyone is the local admin).",
            )
            .into());
        }
        Ok(())
    }

    pub async fn team_users(&self) -> Result<Vec<TeamUser>> {
        Ok(self.store.users_listed().await?.into_iter().map(listed).collect())
    }

    async fn team_user(&self, name: &str) -> Result<TeamUser> {
        let users = self.team_users().await?;
        users
            .into_iter()
            .find(|u| u.name.eq_ignore_ascii_case(name))
            .ok_or_else(|| ApiError::not_found(format!("There is no user {name:?}.")).into())
    }

    /// Each change to the team, in the audit log: who, what, to whom, and how it went.
    async fn audit<T>(&self, by: &Admin, action: &'static str, name: &str, done: &Result<T>) {
        let entry = crate::db::NewAudit {
            who: by.actor().name.clone(),
            action,
            host: None,
            target: name.to_string(),
            env: None,
            outcome: crate::audit::outcome(done),
            run_id: None,
        };
        crate::audit::record(&self.store, entry).await;
    }

    /// A new user without a password, and the link they choose one with.
    pub async fn invite(&self, by: &Admin, name: &str, admin: bool) -> Result<SignInLink> {
        let name = name.trim();
        let done = self.try_invite(by, name, admin).await;
        self.audit(by, if admin { "user.add_admin" } else { "user.add" }, name, &done).await;
        done
    }

    async fn try_invite(&self, by: &Admin, name: &str, admin: bool) -> Result<SignInLink> {
        self.refuse_without_accounts()?;
        check_name(name)?;
        if self.store.insert_user(name, NO_PASSWORD, admin).await?.is_none() {
            return Err(ApiError::new(ErrorCode::Conflict, format!("There is a user {name:?} already.")).into());
        }
        tracing::info!(user = name, admin, by = %by.actor().name, "added user");
        self.link_for(by, name, false).await
    }

    /// A new link for an existing user; the old password and sessions stop working now.
    pub async fn reset(&self, by: &Admin, name: &str) -> Result<SignInLink> {
        let done = match self.refuse_without_accounts() {
            Ok(()) => self.link_for(by, name, true).await,
            Err(e) => Err(e),
        };
        if let Ok(link) = &done {
            tracing::info!(user = %link.user.name, by = %by.actor().name, "password reset; sessions ended");
        }
        self.audit(by, "user.reset", name, &done).await;
        done
    }

    /// Removes a user (not the last admin).
    pub async fn remove(&self, by: &Admin, name: &str) -> Result<()> {
        let done = match self.refuse_without_accounts() {
            Ok(()) => self.remove_user(name).await,
            Err(e) => Err(e),
        };
        self.audit(by, "user.remove", name, &done).await;
        done
    }

    async fn link_for(&self, by: &Admin, name: &str, lock_out: bool) -> Result<SignInLink> {
        let (token, hash) = new_secret();
        let expires = now_ms() + LINK_DAYS * 86_400_000;
        if self.store.issue_sign_in_link(name, &hash, &by.actor().name, expires, lock_out).await?.is_none() {
            return Err(ApiError::not_found(format!("There is no user {name:?}.")).into());
        }
        Ok(SignInLink {
            user: self.team_user(name).await?,
            url: format!("/welcome?token={token}"),
            expires_at: timestamp(expires),
        })
    }

    /// Makes a user an admin or not; the last admin stays one.
    pub async fn set_admin(&self, by: &Admin, name: &str, admin: bool) -> Result<TeamUser> {
        let done = self.try_set_admin(name, admin).await;
        self.audit(by, if admin { "user.make_admin" } else { "user.unmake_admin" }, name, &done).await;
        done
    }

    async fn try_set_admin(&self, name: &str, admin: bool) -> Result<TeamUser> {
        self.refuse_without_accounts()?;
        let user = self.team_user(name).await?;
        if user.admin && !admin && self.team_users().await?.iter().filter(|u| u.admin).count() == 1 {
            return Err(ApiError::invalid("That is the last admin; make someone else an admin first.").into());
        }
        self.store.set_admin(&user.name, admin).await?;
        tracing::info!(user = %user.name, admin, "admin changed");
        self.team_user(&user.name).await
    }

    /// Whom a sign-in link is for, if it still works (the welcome page asks
    /// before showing its form).
    pub async fn welcome(&self, token: &str) -> Result<Option<String>> {
        Ok(self.store.sign_in_link_user(&hash_secret(token)).await?.map(|row| row.name))
    }

    /// Uses a sign-in link: the password is set and a session opened; returns
    /// the account and the session's cookie value.
    pub async fn redeem(&self, token: &str, password: &str) -> Result<(Account, String)> {
        // A password that would be refused must not use the link up.
        check_password(password)?;
        let hash = hash_password(password)?;
        let Some(row) = self.store.redeem_sign_in_link(&hash_secret(token), &hash).await? else {
            return Err(ApiError::new(
                ErrorCode::Forbidden,
                format!(
                    "This sign-in link does not work any more (used already, replaced by a newer one, or older \
                     than {LINK_DAYS} days). Ask an admin for a new one."
                ),
            )
            .into());
        };
        let (secret, session) = new_secret();
        self.store.insert_session(&session, row.id, now_ms() + super::SESSION_DAYS * 86_400_000).await?;
        tracing::info!(user = %row.name, "chose a password through a sign-in link; signed in");
        Ok((row.into(), secret))
    }
}
