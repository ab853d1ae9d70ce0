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
