-- Every remote action (command run and its end, snippet fetch, grep, source
-- search, host test, facts capture, host-key trust): who, when, host, what
-- exactly, env, outcome. Append-only: the triggers refuse changes and deletes,
-- so nothing in the app can rewrite it (whoever holds the file can, of course).
CREATE TABLE audit_log (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    at         INTEGER NOT NULL,
    who        TEXT NOT NULL,
    action     TEXT NOT NULL,
    host       TEXT,
    -- The exact command, path or pattern.
    target     TEXT NOT NULL,
    env        TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(env)),
    outcome    TEXT,
    run_id     INTEGER
) STRICT;

CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
