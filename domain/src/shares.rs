//! View-only share links: a random token in the URL lets anyone read one
//! investigation without an account, until the link expires or is revoked.

use serde::{Deserialize, Serialize};

/// Longest a link may live; "never" is also allowed.
pub const MAX_DAYS: u32 = 365;

/// A link as its owners see it (never its token: only a hash is kept).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct ShareLink {
    pub id: i64,
    pub label: String,
    /// Readers see `host 1`, `host 2` … instead of host names, and no addresses.
    pub hide_hosts: bool,
    pub created_by: String,
    pub created_at: String,
    pub expires_at: Option<String>,
    pub revoked_at: Option<String>,
    pub state: LinkState,
}

/// Where a share link is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum LinkState {
    Active,
    Expired,
    Revoked,
}

impl LinkState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Expired => "expired",
            Self::Revoked => "revoked",
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct NewShareLink {
    #[serde(default)]
    pub label: Option<String>,
    /// 1 to 365; absent: the link does not expire.
    #[serde(default)]
    pub expires_in_days: Option<u32>,
    #[serde(default)]
    pub hide_hosts: bool,
}

/// A link just created: the only time its URL is seen.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct CreatedShareLink {
    /// `/s/{token}`, relative to the server.
    pub url: String,
    pub link: ShareLink,
}
