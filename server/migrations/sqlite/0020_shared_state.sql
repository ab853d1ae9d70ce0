-- What every replica of a team server must see the same, kept in the store
-- rather than in one process or one data dir (see db/host_keys.rs and
-- db/sign_in.rs). SQLite has them too, so there is one way to do each.

-- Host keys confirmed by a person (or trusted on first use), as OpenSSH's
-- known_hosts has them: `pattern` is `name` for port 22, `[name]:port` otherwise;
-- one key per host and algorithm. Before this, DATA/known_hosts held them: the
-- server imports that file once (serve.rs).
CREATE TABLE host_keys (
    pattern     TEXT NOT NULL,
    algorithm   TEXT NOT NULL,
    key         TEXT NOT NULL,
    added_at    INTEGER NOT NULL,
    PRIMARY KEY (pattern, algorithm)
) STRICT;

-- The key a host offered that nobody has confirmed yet (one per host and
-- port): a person reads its fingerprint and confirms it, possibly through
-- another replica than the one that connected.
CREATE TABLE host_key_offers (
    pattern     TEXT PRIMARY KEY NOT NULL,
    key         TEXT NOT NULL,
    offered_at  INTEGER NOT NULL
) STRICT;

-- Failed (or still being checked) sign-ins, one row per limiter key and
-- attempt: `pair:NAME|ADDRESS` and `client:ADDRESS` (auth/limiter.rs).
CREATE TABLE sign_in_failures (
    id   INTEGER PRIMARY KEY AUTOINCREMENT,
    key  TEXT NOT NULL,
    at   INTEGER NOT NULL
) STRICT;
CREATE INDEX sign_in_failures_by_key ON sign_in_failures (key, at);
CREATE INDEX sign_in_failures_by_age ON sign_in_failures (at);

-- While there is no user: the hashes of the first-admin setup links that
-- servers printed (each replica prints one; any of them works, once).
CREATE TABLE setup_tokens (
    token_hash  TEXT PRIMARY KEY NOT NULL,
    created_at  INTEGER NOT NULL
) STRICT;
