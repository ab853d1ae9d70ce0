-- One-time sign-in links: an admin adds a user (or resets one) and hands over a
-- link instead of a password; whoever opens it chooses the password. Only the
-- token's SHA-256 is kept, like sessions. A user has at most one waiting link.
CREATE TABLE sign_in_links (
    token_hash  TEXT PRIMARY KEY NOT NULL,
    user_id     INTEGER NOT NULL UNIQUE REFERENCES users (id) ON DELETE CASCADE,
    created_by  TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL
) STRICT;
