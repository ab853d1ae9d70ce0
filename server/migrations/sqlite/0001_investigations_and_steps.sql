-- Investigations and their timeline of steps.
-- Times are Unix milliseconds (UTC). Step bodies are the kind's JSON fields.

CREATE TABLE investigations (
    id          TEXT PRIMARY KEY NOT NULL,
    title       TEXT NOT NULL,
    question    TEXT NOT NULL DEFAULT '',
    status      TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'closed')),
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
) STRICT;

-- AUTOINCREMENT: a deleted step's id is never handed out again, so an old
-- link to `#step-{id}` can never point at a different step.
CREATE TABLE steps (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    investigation_id  TEXT NOT NULL REFERENCES investigations (id) ON DELETE CASCADE,
    position          INTEGER NOT NULL,
    kind              TEXT NOT NULL,
    body              TEXT NOT NULL CHECK (json_valid(body)),
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL
) STRICT;

CREATE INDEX steps_by_investigation ON steps (investigation_id, position);
