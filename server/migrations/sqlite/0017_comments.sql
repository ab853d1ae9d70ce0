-- Threaded comments on steps and on annotations. A thread is a root comment
-- (parent_id NULL) and its replies (parent_id = the root); resolving marks the
-- root. @name mentions of existing users are rows in `mentions`, read or not.
CREATE TABLE comments (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    investigation_id TEXT NOT NULL REFERENCES investigations (id) ON DELETE CASCADE,
    step_id          INTEGER NOT NULL REFERENCES steps (id) ON DELETE CASCADE,
    annotation_id    INTEGER REFERENCES annotations (id) ON DELETE CASCADE,
    parent_id        INTEGER REFERENCES comments (id) ON DELETE CASCADE,
    author           TEXT NOT NULL,
    body             TEXT NOT NULL,
    created_at       INTEGER NOT NULL,
    resolved_at      INTEGER,
    resolved_by      TEXT
) STRICT;

CREATE INDEX comments_by_investigation ON comments (investigation_id, id);

CREATE TABLE mentions (
    comment_id  INTEGER NOT NULL REFERENCES comments (id) ON DELETE CASCADE,
    user_name   TEXT NOT NULL COLLATE NOCASE,
    read_at     INTEGER,
    PRIMARY KEY (comment_id, user_name)
) STRICT;

CREATE INDEX mentions_by_user ON mentions (user_name, read_at);
