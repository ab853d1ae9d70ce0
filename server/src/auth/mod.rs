//! Accounts, sessions and API tokens, and the two checks every request passes
//! (see `middleware`): who is asking, and whether a state-changing request
//! comes from Sleuth's own pages.
//!
//! - Passwords: argon2id (the `argon2` crate's defaults: 19 MiB, 2 passes).
//! - Sessions and API tokens: 256-bit random, base64url; only their SHA-256 is
//!   stored, so a copy of the database does not let anyone in.
//! - Sessions last `SESSION_DAYS`; cookies are HttpOnly, SameSite=Lax, and
//!   Secure when Sleuth is told it is served over https.
//! - `--no-auth` makes every request the local admin; `serve` refuses it on any
//!   address but loopback.

pub mod audit_view;
pub mod command;
pub mod limiter;
pub mod middleware;
pub mod team;

use crate::db::{Store, UserRow};
use crate::ids::{hash_secret, new_secret};
use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, SaltString};
use domain::accounts::{ApiToken, NewApiToken, User};
use domain::error::{ApiError, ErrorCode};
use domain::ports::Actor;

pub const SESSION_COOKIE: &str = "sleuth_session";

/// The caller of a JSON handler, from the request the sign-in check saw
/// (`middleware::guard` keeps an [`Actor`] with every request it lets in):
/// `Caller(actor): Caller`, then `&actor` to the notebook. Without one, 401.
pub struct Caller(pub Actor);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Caller {
    type Rejection = crate::error::AppError;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<Actor>()
            .cloned()
            .map(Caller)
            .ok_or_else(|| ApiError::new(ErrorCode::Unauthenticated, "Sign in first.").into())
    }
}

pub const SESSION_DAYS: i64 = 14;
const NAME_CHARS: usize = 40;
const MIN_PASSWORD_CHARS: usize = 10;

/// A signed-in person as the server keeps them (the id stays on the server).
#[derive(Clone, Debug, PartialEq)]
pub struct Account {
    pub id: i64,
    pub user: User,
}

impl Account {
    /// Who this account's requests are for.
    pub fn actor(&self) -> Actor {
        Actor { name: self.user.name.clone(), admin: self.user.admin, local: false }
    }
}

impl From<UserRow> for Account {
    fn from(row: UserRow) -> Self {
        Self { id: row.id, user: User { name: row.name, admin: row.is_admin != 0 } }
    }
}

pub struct Auth {
    store: Store,
    /// Every request is the local admin (single user on 127.0.0.1).
    disabled: bool,
    /// Cookies get `Secure` (Sleuth is served over https, behind a proxy).
    pub secure_cookies: bool,
    pub limiter: limiter::Limiter,
}

pub fn hash_password(password: &str) -> crate::error::Result<String> {
    let salt = SaltString::encode_b64(&rand::random::<[u8; 16]>())
        .map_err(|e| crate::error::Error::internal("a password's salt", e.to_string()))?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| crate::error::Error::internal("hashing a password", e.to_string()))
}

/// Whether `password` matches the PHC-format `hash`, computed in `memory`
/// (grown to the hash's memory cost, and kept for the next check).
fn verify_password(password: &str, hash: &str, memory: &mut Vec<argon2::Block>) -> bool {
    let Ok(parsed) = PasswordHash::new(hash) else { return false };
    let (Some(salt), Some(expected)) = (parsed.salt, parsed.hash) else { return false };
    let (Ok(algorithm), Ok(params)) =
        (argon2::Algorithm::try_from(parsed.algorithm), argon2::Params::try_from(&parsed))
    else {
        return false;
    };
    let version = match parsed.version.map(argon2::Version::try_from).transpose() {
        Ok(version) => version.unwrap_or_default(),
        Err(_) => return false,
    };
    let mut salt_bytes = [0u8; 64];
    let Ok(salt) = salt.decode_b64(&mut salt_bytes) else { return false };
    memory.resize(params.block_count(), argon2::Block::default());
    let mut out = vec![0u8; expected.len()];
    Argon2::new(algorithm, version, params)
        .hash_password_into_with_memory(password.as_bytes(), salt, &mut out, &mut memory[..])
        .is_ok()
        && constant_time_eq(&out, expected.as_bytes())
}

/// Names are what @mentions and audit lines show: short, no spaces.
pub fn check_name(name: &str) -> crate::error::Result<()> {
    let valid = !name.is_empty()
        && name.chars().count() <= NAME_CHARS
        && name.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !valid {
        return Err(ApiError::invalid(format!(
            "A user name is 1–{NAME_CHARS} letters, digits, `_`, `-` or `.` (it is how @mentions name you)."
        ))
        .into());
    }
    Ok(())
}

pub fn check_password(password: &str) -> crate::error::Result<()> {
    if password.chars().count() < MIN_PASSWORD_CHARS {
        return Err(ApiError::invalid(format!("Choose a password of at least {MIN_PASSWORD_CHARS} characters.")).into());
    }
    Ok(())
}

pub fn check_new_user(name: &str, password: &str) -> crate::error::Result<()> {
    check_name(name)?;
    check_password(password)
}

impl Auth {
    pub fn new(store: Store, disabled: bool, secure_cookies: bool) -> Self {
        let limiter = limiter::Limiter::new(store.clone());
        Self { store, disabled, secure_cookies, limiter }
    }

    pub fn disabled(&self) -> bool {
        self.disabled
    }

    /// With no user yet: a new one-time setup token (printed by `serve`). It is
    /// kept (hashed) in the store, so behind a load balancer any replica takes it.
    pub async fn setup_token_if_empty(&self) -> crate::error::Result<Option<String>> {
        if self.disabled || self.store.user_count().await? > 0 {
            return Ok(None);
        }
        let (token, hash) = new_secret();
        self.store.insert_setup_token(&hash).await?;
        Ok(Some(token))
    }

    pub async fn add_user(&self, name: &str, password: &str, admin: bool) -> crate::error::Result<Account> {
        check_new_user(name, password)?;
        let hash = hash_password(password)?;
        let row = self.store.insert_user(name, &hash, admin).await?;
        let row =
            row.ok_or_else(|| ApiError::new(ErrorCode::Conflict, format!("There is a user {name:?} already.")))?;
        tracing::info!(user = %row.name, admin, "added user");
        Ok(row.into())
    }

    pub async fn users(&self) -> crate::error::Result<Vec<User>> {
        let rows = self.store.users().await?;
        Ok(rows.into_iter().map(|r| Account::from(r).user).collect())
    }

    /// A new password; the user is signed out everywhere (API tokens stay).
    pub async fn set_password(&self, name: &str, password: &str) -> crate::error::Result<()> {
        check_new_user(name, password)?;
        let hash = hash_password(password)?;
        if !self.store.set_password(name, &hash).await? {
            return Err(ApiError::not_found(format!("There is no user {name:?}.")).into());
        }
        tracing::info!(user = name, "password changed; sessions ended");
        Ok(())
    }

    /// Removes a user (not the last admin): sessions, tokens, roles, host lists.
    pub async fn remove_user(&self, name: &str) -> crate::error::Result<()> {
        let users = self.users().await?;
        let user = users
            .iter()
            .find(|u| u.name.eq_ignore_ascii_case(name))
            .ok_or_else(|| ApiError::not_found(format!("There is no user {name:?}.")))?;
        if user.admin && users.iter().filter(|u| u.admin).count() == 1 {
            return Err(ApiError::invalid("That is the last admin; add another admin first.").into());
        }
        self.store.delete_user(&user.name).await?;
        tracing::info!(user = %user.name, "removed user");
        Ok(())
    }

    /// Whether the setup page's link would still create the first admin.
    /// Whether nobody has an account yet (with accounts on).
    pub async fn awaiting_setup(&self) -> crate::error::Result<bool> {
        Ok(!self.disabled && self.store.user_count().await? == 0)
    }

    pub async fn setup_link_works(&self, token: &str) -> crate::error::Result<bool> {
        Ok(!self.disabled && self.store.setup_token_valid(&hash_secret(token)).await?)
    }

    /// The first admin, from the setup URL's token (used up on success).
    pub async fn create_first_admin(&self, token: &str, name: &str, password: &str) -> crate::error::Result<Account> {
        // A name or password that would be refused must not use the link up.
        check_new_user(name, password)?;
        if self.store.user_count().await? > 0 || !self.store.take_setup_tokens(&hash_secret(token)).await? {
            return Err(ApiError::new(
                ErrorCode::Forbidden,
                "This setup link is not valid (used already, or more than a day old). Sign in instead.",
            )
            .into());
        }
        match self.add_user(name, password, true).await {
            Ok(account) => Ok(account),
            Err(e) => {
                // The link was not used after all.
                let _ = self.store.insert_setup_token(&hash_secret(token)).await;
                Err(e)
            }
        }
    }

    /// Checks a password (the attempt reserved with the limiter first, see
    /// `limiter`) and opens a session; returns its cookie value.
    pub async fn sign_in(&self, name: &str, password: &str, client: &str) -> crate::error::Result<(Account, String)> {
        let attempt = self.limiter.reserve(name, client).await?;
        let row = self.store.user_by_name(name).await?;
        // Verify against a real hash even for unknown names, so timing does not tell them apart.
        let hash = row.as_ref().map_or(DUMMY_HASH, |r| r.password_hash.as_str()).to_string();
        let password = password.to_string();
        let verified = attempt.verify(move |memory| verify_password(&password, &hash, memory)).await?;
        let Some(row) = row.filter(|_| verified) else {
            drop(attempt);
            tracing::warn!(user = name, client, "failed sign-in");
            return Err(ApiError::new(ErrorCode::Unauthenticated, "Wrong name or password.").into());
        };
        attempt.succeeded().await?;
        let (secret, hash) = new_secret();
        let expires = crate::time::now_ms() + SESSION_DAYS * 86_400_000;
        self.store.insert_session(&hash, row.id, expires).await?;
        tracing::info!(user = %row.name, "signed in");
        Ok((row.into(), secret))
    }

    pub async fn sign_out(&self, session: &str) -> crate::error::Result<()> {
        Ok(self.store.delete_session(&hash_secret(session)).await?)
    }

    pub async fn session_account(&self, session: &str) -> crate::error::Result<Option<Account>> {
        Ok(self.store.session_user(&hash_secret(session)).await?.map(Account::from))
    }

    pub async fn token_account(&self, token: &str) -> crate::error::Result<Option<Account>> {
        Ok(self.store.token_user(&hash_secret(token)).await?.map(Account::from))
    }

    /// `Set-Cookie` for a session (or, with `None`, one that removes it).
    pub fn session_cookie(&self, session: Option<&str>) -> String {
        let secure = if self.secure_cookies { "; Secure" } else { "" };
        match session {
            Some(value) => format!(
                "{SESSION_COOKIE}={value}; Path=/; HttpOnly; SameSite=Lax; Max-Age={}{secure}",
                SESSION_DAYS * 86_400
            ),
            None => format!("{SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0{secure}"),
        }
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    async fn user_id(&self, name: &str) -> crate::error::Result<i64> {
        let row = self.store.user_by_name(name).await?;
        Ok(row.map(|r| r.id).ok_or_else(|| ApiError::not_found(format!("There is no user {name:?}.")))?)
    }

    pub async fn create_token(&self, user: &str, label: &str) -> crate::error::Result<NewApiToken> {
        let label = label.trim();
        if label.is_empty() || label.chars().count() > 100 {
            return Err(ApiError::invalid("Label the token (1–100 characters): what is it for?").into());
        }
        let id = self.user_id(user).await?;
        let (token, hash) = new_secret();
        let row = self.store.insert_token(id, label, &hash).await?;
        tracing::info!(user, token = row.id, "created API token");
        Ok(NewApiToken { token, info: token_of(row) })
    }

    pub async fn tokens(&self, user: &str) -> crate::error::Result<Vec<ApiToken>> {
        let id = self.user_id(user).await?;
        Ok(self.store.tokens_of(id).await?.into_iter().map(token_of).collect())
    }

    pub async fn revoke_token(&self, user: &str, token: i64) -> crate::error::Result<()> {
        let id = self.user_id(user).await?;
        if !self.store.revoke_token(id, token).await? {
            return Err(ApiError::not_found(format!("You have no active API token {token}.")).into());
        }
        tracing::info!(user, token, "revoked API token");
        Ok(())
    }
}

fn token_of(row: crate::db::TokenRow) -> ApiToken {
    use crate::time::timestamp;
    ApiToken {
        id: row.id,
        label: row.label,
        created_at: timestamp(row.created_at),
        last_used_at: row.last_used_at.map(timestamp),
        revoked_at: row.revoked_at.map(timestamp),
    }
}

/// A valid argon2id hash of a random password, checked when the name is unknown.
const DUMMY_HASH: &str =
    "$argon2id$v=19$m=19456,t=2,p=1$c2xldXRoLWR1bW15LXNhbHQ$0Q3tPbKc9uJ1oB3e4y4bm4XU7kT5o6KJtMZGxwq3yS8";

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_hash_with_argon2id_and_verify() {
        let hash = hash_password("correct horse battery").unwrap();
        assert!(hash.starts_with("$argon2id$"), "{hash}");
        let mut memory = Vec::new();
        assert!(verify_password("correct horse battery", &hash, &mut memory));
        assert!(!verify_password("correct horse batterx", &hash, &mut memory));
        assert!(!verify_password("x", "not a hash", &mut memory));
        assert!(!verify_password("correct horse battery", DUMMY_HASH, &mut memory));
        assert_eq!(memory.len(), 19 * 1024, "19 MiB of 1 KiB blocks, kept for the next check");
        assert!(PasswordHash::new(DUMMY_HASH).is_ok(), "the dummy hash parses, so unknown names cost the same");
    }

    #[test]
    fn secrets_are_random_and_stored_hashed() {
        let (a, ha) = new_secret();
        let (b, _) = new_secret();
        assert_ne!(a, b);
        assert_eq!(a.len(), 43, "256 bits in base64url");
        assert_eq!(ha, hash_secret(&a));
        assert!(!ha.contains(&a));
    }

    #[test]
    fn user_names_and_passwords() {
        assert!(check_new_user("ada", "long enough!").is_ok());
        assert!(check_new_user("a b", "long enough!").is_err());
        assert!(check_new_user("<script>", "long enough!").is_err());
        assert!(check_new_user("ada", "short").unwrap_err().to_string().contains("10"));
    }
}
