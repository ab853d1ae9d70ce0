-- An investigation replayed (`crate::replays`): the copy it ran in, where, with
-- what env, and each original step and hypothesis against its copy (JSON pairs).
CREATE TABLE replays (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    investigation_id TEXT NOT NULL REFERENCES investigations (id) ON DELETE CASCADE,
    original_id      TEXT NOT NULL REFERENCES investigations (id) ON DELETE CASCADE,
    host             TEXT,
    env              TEXT NOT NULL CHECK (json_valid(env)),
    steps            TEXT NOT NULL CHECK (json_valid(steps)),
    hypotheses       TEXT NOT NULL CHECK (json_valid(hypotheses)),
    created_by       TEXT,
    created_at       INTEGER NOT NULL
) STRICT;
CREATE INDEX replays_by_original ON replays (original_id, id);
