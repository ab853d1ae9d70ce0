-- Accounts: people with argon2id-hashed passwords, their browser sessions and
-- API tokens. Only hashes of session and API tokens are stored (SHA-256: they
-- are 256-bit random, so a slow hash adds nothing); the tokens themselves are
-- shown once.
CREATE TABLE users (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    name           TEXT NOT NULL UNIQUE COLLATE NOCASE,
    password_hash  TEXT NOT NULL,
    is_admin       INTEGER NOT NULL DEFAULT 0,
    created_at     INTEGER NOT NULL
) STRICT;

CREATE TABLE sessions (
    token_hash     TEXT PRIMARY KEY NOT NULL,
    user_id        INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at     INTEGER NOT NULL,
    expires_at     INTEGER NOT NULL
) STRICT;

CREATE TABLE api_tokens (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id        INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    label          TEXT NOT NULL,
    token_hash     TEXT NOT NULL UNIQUE,
    created_at     INTEGER NOT NULL,
    last_used_at   INTEGER,
    revoked_at     INTEGER
) STRICT;

CREATE INDEX sessions_by_user ON sessions (user_id);
CREATE INDEX api_tokens_by_user ON api_tokens (user_id);
