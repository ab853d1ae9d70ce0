-- What a grep step found when it ran: the hits (capped) and how many there were.
CREATE TABLE searches (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    step_id     INTEGER NOT NULL REFERENCES steps (id) ON DELETE CASCADE,
    hits        TEXT NOT NULL CHECK (json_valid(hits)),
    total       INTEGER NOT NULL,
    error       TEXT,
    searched_at INTEGER NOT NULL
) STRICT;

CREATE INDEX searches_by_step ON searches (step_id, id);
