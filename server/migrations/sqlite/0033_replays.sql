-- An investigation replayed (`guarded/replays.rs`): the copy it ran in, where,
-- with what env, each original step and hypothesis against its copy (JSON
-- pairs), and the original's provenance manifest as it was replayed (its
-- conclusions then); `original_id` is none for a manifest from another Sleuth.
CREATE TABLE replays (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    investigation_id TEXT NOT NULL REFERENCES investigations (id) ON DELETE CASCADE,
    original_id      TEXT REFERENCES investigations (id) ON DELETE SET NULL,
    host             TEXT,
    env              TEXT NOT NULL CHECK (json_valid(env)),
    steps            TEXT NOT NULL CHECK (json_valid(steps)),
    hypotheses       TEXT NOT NULL CHECK (json_valid(hypotheses)),
    manifest         TEXT NOT NULL CHECK (json_valid(manifest)),
    created_by       TEXT,
    created_at       INTEGER NOT NULL
) STRICT;
CREATE INDEX replays_by_original ON replays (original_id, id);
