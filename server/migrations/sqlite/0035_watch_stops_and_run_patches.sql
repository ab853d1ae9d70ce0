-- Why a watch stopped as one of a closed set (#51), beside the sentence in
-- `stopped`. Watches stopped before it get theirs from that sentence.
ALTER TABLE watches ADD COLUMN stop_reason TEXT
    CHECK (stop_reason IN ('creator_gone', 'step_deleted', 'step_changed', 'unrunnable', 'failing'));

UPDATE watches SET stop_reason = CASE
        WHEN stopped LIKE '%has no account here%' THEN 'creator_gone'
        WHEN stopped = 'Its step was deleted.' THEN 'step_deleted'
        WHEN stopped LIKE 'Step changed by %' THEN 'step_changed'
        WHEN stopped LIKE 'Stopped: %' THEN 'failing'
        ELSE 'unrunnable'
    END
WHERE stopped IS NOT NULL;

-- A patch applied on a host for a run (#52): each file's base, the hash of
-- what was written and of what was there at the end, where the originals are
-- kept on the host, and where it stands. `applied` rows are what a restart
-- puts back; a `dirty` one refuses new runs on its host until an admin
-- restores or accepts it.
CREATE TABLE run_patches (
    run_id      INTEGER PRIMARY KEY,
    patch_step  INTEGER NOT NULL,
    host        TEXT NOT NULL,
    keep_dir    TEXT NOT NULL,
    files       TEXT NOT NULL CHECK (json_valid(files)),
    state       TEXT NOT NULL CHECK (state IN ('applying', 'applied', 'reverted', 'refused', 'dirty', 'accepted')),
    said        TEXT,
    -- [path] cleared before the arm, and [ExpectationMet] read after it (JSON).
    caches      TEXT CHECK (caches IS NULL OR json_valid(caches)),
    expectations TEXT CHECK (expectations IS NULL OR json_valid(expectations)),
    applied_at  INTEGER,
    ended_at    INTEGER
) STRICT;

CREATE INDEX run_patches_by_state ON run_patches (state, host);

-- What a queued run waits for, when it is not its turn on its host (a patch
-- applied there for another run): said on its page until it starts.
ALTER TABLE runs ADD COLUMN waiting TEXT;
