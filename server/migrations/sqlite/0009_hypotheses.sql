-- A hypothesis of an investigation, with its experiment: a baseline group and a
-- treatment group of runs (listed, or every run of listed steps) compared on one
-- metric. Lists are JSON arrays of ids; runs and steps that are deleted later
-- simply drop out of the groups.
CREATE TABLE hypotheses (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    investigation_id  TEXT NOT NULL REFERENCES investigations (id) ON DELETE CASCADE,
    statement         TEXT NOT NULL,
    rationale         TEXT NOT NULL DEFAULT '',
    metric            TEXT,
    direction         TEXT CHECK (direction IN ('increase', 'decrease')),
    expected_pct      REAL,
    status            TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'supported', 'refuted', 'inconclusive')),
    baseline          TEXT NOT NULL DEFAULT '{"runs":[],"steps":[]}' CHECK (json_valid(baseline)),
    treatment         TEXT NOT NULL DEFAULT '{"runs":[],"steps":[]}' CHECK (json_valid(treatment)),
    evidence          TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(evidence)),
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL
) STRICT;

CREATE INDEX hypotheses_by_investigation ON hypotheses (investigation_id, id);
