-- View-only capability links to one investigation. Anyone with the URL may read
-- it without an account until it expires or is revoked. Only the token's SHA-256
-- is stored (256-bit random, like API tokens); the URL is shown once.
CREATE TABLE share_links (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    investigation_id TEXT NOT NULL REFERENCES investigations (id) ON DELETE CASCADE,
    token_hash       TEXT NOT NULL UNIQUE,
    label            TEXT NOT NULL,
    hide_hosts       INTEGER NOT NULL,
    created_by       TEXT NOT NULL,
    created_at       INTEGER NOT NULL,
    expires_at       INTEGER,
    revoked_at       INTEGER
) STRICT;

CREATE INDEX share_links_by_investigation ON share_links (investigation_id);
