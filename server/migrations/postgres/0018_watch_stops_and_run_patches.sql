-- See sqlite/0035_watch_stops_and_run_patches.sql.
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

CREATE TABLE run_patches (
    run_id      BIGINT PRIMARY KEY,
    patch_step  BIGINT NOT NULL,
    host        TEXT NOT NULL,
    keep_dir    TEXT NOT NULL,
    files       TEXT NOT NULL CHECK (sleuth_is_json(files)),
    state       TEXT NOT NULL CHECK (state IN ('applying', 'applied', 'reverted', 'refused', 'dirty', 'accepted')),
    said        TEXT,
    caches      TEXT CHECK (caches IS NULL OR sleuth_is_json(caches)),
    expectations TEXT CHECK (expectations IS NULL OR sleuth_is_json(expectations)),
    applied_at  BIGINT,
    ended_at    BIGINT
);

CREATE INDEX run_patches_by_state ON run_patches (state, host);

-- What a queued run waits for, when it is not its turn on its host (a patch
-- applied there for another run): said on its page until it starts.
ALTER TABLE runs ADD COLUMN waiting TEXT;
