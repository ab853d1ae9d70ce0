-- One-time sign-in links (see migrations/sqlite/0025_sign_in_links.sql).
CREATE TABLE sign_in_links (
    token_hash  TEXT PRIMARY KEY NOT NULL,
    user_id     BIGINT NOT NULL UNIQUE REFERENCES users (id) ON DELETE CASCADE,
    created_by  TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL
);
