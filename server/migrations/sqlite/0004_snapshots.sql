-- What a snippet step showed when it was fetched. Every fetch (and refresh) adds
-- a row, so a link shows what its author saw even after the file changed.
CREATE TABLE snapshots (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    step_id      INTEGER NOT NULL REFERENCES steps (id) ON DELETE CASCADE,
    path         TEXT NOT NULL,
    start_line   INTEGER NOT NULL,
    end_line     INTEGER NOT NULL,
    lines        TEXT NOT NULL CHECK (json_valid(lines)),
    total_lines  INTEGER,
    size         INTEGER NOT NULL,
    mtime        INTEGER,
    sha256       TEXT,
    notes        TEXT NOT NULL CHECK (json_valid(notes)),
    fetched_at   INTEGER NOT NULL
) STRICT;

CREATE INDEX snapshots_by_step ON snapshots (step_id, id);
