-- The engine's own /metrics, scraped on the host while a run goes
-- (`crate::engine`): its series as text chunks, a few seconds of scrapes each
-- (`domain::engine::series`), and what the scraping said (JSON array).
CREATE TABLE run_engine (
    run_id  INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq     INTEGER NOT NULL,
    body    TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) STRICT;
ALTER TABLE runs ADD COLUMN engine_notes TEXT CHECK (engine_notes IS NULL OR json_valid(engine_notes));
-- Its requests as its report file timed them: [[start s after the first, TTFT ms], …].
ALTER TABLE runs ADD COLUMN request_timeline TEXT CHECK (request_timeline IS NULL OR json_valid(request_timeline));
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
-- A step run on a schedule and judged after each run (`crate::watches`).
-- `next_at` is claimed by compare-and-set: on a team server one replica fires
-- each time. `judged_run`: the newest run whose history was judged;
-- `told_run`: the first run after the newest change told to the webhook.
CREATE TABLE watches (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    step_id          INTEGER NOT NULL REFERENCES steps (id) ON DELETE CASCADE,
    investigation_id TEXT NOT NULL REFERENCES investigations (id) ON DELETE CASCADE,
    metric           TEXT NOT NULL,
    config           TEXT,
    every_s          INTEGER,
    cron             TEXT,
    webhook          TEXT,
    max_failures     INTEGER NOT NULL,
    created_by       TEXT,
    created_at       INTEGER NOT NULL,
    next_at          INTEGER,
    runs             INTEGER NOT NULL DEFAULT 0,
    failures         INTEGER NOT NULL DEFAULT 0,
    last_run         INTEGER,
    judged_run       INTEGER,
    told_run         INTEGER,
    last_change      TEXT CHECK (last_change IS NULL OR json_valid(last_change)),
    last_told        TEXT,
    stopped          TEXT
) STRICT;
CREATE INDEX watches_by_investigation ON watches (investigation_id, id);
CREATE INDEX watches_due ON watches (next_at);
