-- Report files read from a run's artifacts (crate::reports): which artifact was
-- read as what, with the reader's notes and the fields it did not know; the
-- per-request samples of each metric (sorted little-endian f32, at most
-- reports::samples::CAP of them, `count` the number there were); and each
-- investigation's SLO, from which goodput and the knee of a rate sweep follow.
CREATE TABLE run_reports (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id      INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    log_id      INTEGER REFERENCES run_logs (id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    format      TEXT,
    notes       TEXT NOT NULL CHECK (json_valid(notes)),
    metadata    TEXT NOT NULL CHECK (json_valid(metadata))
);
CREATE INDEX run_reports_by_run ON run_reports (run_id, id);

CREATE TABLE run_samples (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id      INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    metric      TEXT NOT NULL,
    unit        TEXT NOT NULL,
    key         TEXT,
    count       INTEGER NOT NULL,
    data        BLOB NOT NULL
);
CREATE INDEX run_samples_by_run ON run_samples (run_id, metric);

CREATE TABLE slos (
    investigation_id  TEXT PRIMARY KEY NOT NULL REFERENCES investigations (id) ON DELETE CASCADE,
    text              TEXT NOT NULL,
    updated_at        INTEGER NOT NULL,
    updated_by        TEXT
);
