-- Search: a row per thing that can be found (a title and question, a note, a
-- command with its env, a hypothesis, an annotation, a comment, a snippet's
-- lines, a run's measurement labels, a piece of a run's output), with what a
-- result needs to link to it and what filters narrow by, and its words in an
-- FTS5 index. `body` keeps the text of everything but output, whose pieces
-- (start_byte, len) are read back from the run's output for excerpts; the FTS
-- table keeps no copy of any text (content=''), only the index.
CREATE TABLE search_docs (
    id                INTEGER PRIMARY KEY,
    investigation_id  TEXT NOT NULL REFERENCES investigations (id) ON DELETE CASCADE,
    kind              TEXT NOT NULL,
    step_id           INTEGER,
    run_id            INTEGER,
    -- The hypothesis, annotation or comment a row is.
    ref_id            INTEGER,
    -- Output: the piece's first byte and length; snippets: the first line's number.
    start_byte        INTEGER,
    len               INTEGER,
    first_line        INTEGER,
    host              TEXT,
    -- "\nNAME=value\n…" of the command's env and the run's configuration.
    env               TEXT,
    author            TEXT,
    created_at        INTEGER NOT NULL,
    body              TEXT
) STRICT;
CREATE INDEX search_docs_by_investigation ON search_docs (investigation_id, kind);
CREATE INDEX search_docs_by_run ON search_docs (run_id);

CREATE VIRTUAL TABLE search_words USING fts5 (words, content = '', contentless_delete = 1);

-- A row that goes (its investigation deleted, its text replaced) takes its words along.
CREATE TRIGGER search_docs_gone AFTER DELETE ON search_docs BEGIN
    DELETE FROM search_words WHERE rowid = old.id;
END;

-- Whether a finished run's output is in the index (0: not yet; a start-up
-- catches up on runs left out, e.g. by a restart or an older binary).
ALTER TABLE runs ADD COLUMN indexed INTEGER NOT NULL DEFAULT 0;
-- Every search counts the runs still waiting; only those are in this index.
CREATE INDEX runs_waiting_for_index ON runs (indexed) WHERE indexed <> 1;
