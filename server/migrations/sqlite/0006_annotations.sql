-- Markdown beside a line range of a snippet step. Line numbers are the file's; the
-- snapshot the author looked at is kept, so a later refresh that changed the file
-- can say the annotation may no longer point at the same code.
CREATE TABLE annotations (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    step_id      INTEGER NOT NULL REFERENCES steps (id) ON DELETE CASCADE,
    snapshot_id  INTEGER REFERENCES snapshots (id) ON DELETE SET NULL,
    start_line   INTEGER NOT NULL CHECK (start_line >= 1),
    end_line     INTEGER NOT NULL CHECK (end_line >= start_line),
    body         TEXT NOT NULL,
    author       TEXT,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
) STRICT;

CREATE INDEX annotations_by_step ON annotations (step_id, start_line, id);
