-- Numbers measured in run output (by the built-in extractors and the
-- investigation's own), and numbers people enter by hand (run_id NULL).
-- A run's rows are replaced when it is extracted again.
CREATE TABLE measurements (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    investigation_id  TEXT NOT NULL REFERENCES investigations (id) ON DELETE CASCADE,
    run_id            INTEGER REFERENCES runs (id) ON DELETE CASCADE,
    metric            TEXT NOT NULL,
    value             REAL NOT NULL,
    unit              TEXT NOT NULL,
    extractor         TEXT NOT NULL,
    stddev            REAL,
    key               TEXT,
    -- Manual measurements: what was measured where, and a config label.
    note              TEXT,
    label             TEXT,
    created_at        INTEGER NOT NULL
) STRICT;

CREATE INDEX measurements_by_run ON measurements (run_id, id);
CREATE INDEX measurements_by_investigation ON measurements (investigation_id, metric);

-- User-defined extractors: a regex with one capture group, per investigation.
CREATE TABLE extractors (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    investigation_id  TEXT NOT NULL REFERENCES investigations (id) ON DELETE CASCADE,
    name              TEXT NOT NULL,
    pattern           TEXT NOT NULL,
    unit              TEXT NOT NULL,
    created_at        INTEGER NOT NULL,
    UNIQUE (investigation_id, name)
) STRICT;
