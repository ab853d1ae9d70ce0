//! Who is signed in, as the pages and server functions see it.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct User {
    pub name: String,
    pub admin: bool,
}

/// An API token as listed (the token itself is shown once, at creation).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct ApiToken {
    pub id: i64,
    pub label: String,
    pub created_at: String,
    pub last_used_at: Option<String>,
    pub revoked_at: Option<String>,
}

/// A token just created: the only time its secret is seen.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct NewApiToken {
    pub token: String,
    pub info: ApiToken,
}

/// One remote action, as the audit log keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct AuditEntry {
    pub id: i64,
    pub at: String,
    pub who: String,
    /// `run.start`, `run.end`, `snippet.fetch`, `grep`, `source.search`,
    /// `host.test`, `host.trust`, `facts.capture`.
    pub action: String,
    pub host: Option<String>,
    /// The exact command, path, pattern or fingerprint.
    pub target: String,
    pub env: Vec<(String, String)>,
    pub outcome: Option<String>,
    pub run_id: Option<i64>,
}

/// An investigation member's role, in the order of what it allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Viewer,
    Editor,
    Runner,
    Owner,
}

impl Role {
    /// Owners first, as lists show them.
    pub const ALL: [Role; 4] = [Role::Owner, Role::Runner, Role::Editor, Role::Viewer];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Viewer => "viewer",
            Self::Editor => "editor",
            Self::Runner => "runner",
            Self::Owner => "owner",
        }
    }
}

closed_set_words!(Role, UnknownRole);

/// A role that is none of [`Role`] (a stored one the schema should have kept out).
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not a role (owner, runner, editor, viewer)")]
pub struct UnknownRole(pub String);

/// Someone's role in an investigation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Member {
    pub user: String,
    pub role: Role,
}

/// A change of membership (`PUT /investigations/{id}/members`): a role, or
/// `none` to take the user's away.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct MemberChange {
    pub user: String,
    pub role: RoleChange,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum RoleChange {
    Owner,
    Runner,
    Editor,
    Viewer,
    /// No role: the user is no longer a member.
    None,
}

impl RoleChange {
    /// The role given; `None` where it is taken away.
    pub fn role(self) -> Option<Role> {
        match self {
            Self::Owner => Some(Role::Owner),
            Self::Runner => Some(Role::Runner),
            Self::Editor => Some(Role::Editor),
            Self::Viewer => Some(Role::Viewer),
            Self::None => None,
        }
    }
}

/// Who may run on a host: everyone, or the listed users (admins always).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct HostAccess {
    pub whole_team: bool,
    #[serde(default)]
    pub users: Vec<String>,
}

/// A user as the users page and `GET /api/v1/users` list them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct TeamUser {
    pub name: String,
    pub admin: bool,
    pub created_at: String,
    /// When the one-time sign-in link waiting for them expires (none waiting: absent).
    pub link_expires_at: Option<String>,
}

/// `POST /api/v1/users`: a user to add; they choose their password through
/// the sign-in link the answer carries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NewUser {
    pub name: String,
    #[serde(default)]
    pub admin: bool,
}

/// `PATCH /api/v1/users/{name}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct UserChange {
    pub admin: bool,
}

/// A one-time sign-in link just made: the only time its URL is seen (only its
/// hash is kept). `url` is a path on this Sleuth (`/welcome?token=…`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct SignInLink {
    pub user: TeamUser,
    pub url: String,
    pub expires_at: String,
}
