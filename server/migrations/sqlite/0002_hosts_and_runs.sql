-- GPU hosts reached over SSH, and the runs of command steps on them.

CREATE TABLE hosts (
    name           TEXT PRIMARY KEY NOT NULL,
    hostname       TEXT NOT NULL,
    port           INTEGER NOT NULL DEFAULT 22 CHECK (port BETWEEN 1 AND 65535),
    user           TEXT NOT NULL,
    -- A private key file on the Sleuth server; NULL means the ssh-agent.
    identity_file  TEXT,
    -- Name of another host to jump through.
    proxy_jump     TEXT REFERENCES hosts (name) ON UPDATE CASCADE,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
) STRICT;

-- A run keeps what it ran (host, command, env, cwd) as it was at the time, so
-- later edits of the step or the host never rewrite history.
CREATE TABLE runs (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    step_id        INTEGER NOT NULL REFERENCES steps (id) ON DELETE CASCADE,
    host           TEXT NOT NULL,
    command        TEXT NOT NULL,
    env            TEXT NOT NULL CHECK (json_valid(env)),
    cwd            TEXT,
    timeout_s      INTEGER,
    status         TEXT NOT NULL CHECK (status IN
                     ('queued', 'running', 'succeeded', 'failed', 'cancelled', 'timed_out', 'lost', 'interrupted')),
    exit_code      INTEGER,
    exit_signal    TEXT,
    error          TEXT,
    -- Repeat batches: "run k of n", warm-up runs flagged.
    batch_index    INTEGER NOT NULL DEFAULT 1,
    batch_size     INTEGER NOT NULL DEFAULT 1,
    warmup         INTEGER NOT NULL DEFAULT 0,
    stdout_bytes   INTEGER NOT NULL DEFAULT 0,
    stderr_bytes   INTEGER NOT NULL DEFAULT 0,
    lines          INTEGER NOT NULL DEFAULT 0,
    queued_at      INTEGER NOT NULL,
    started_at     INTEGER,
    finished_at    INTEGER
) STRICT;

CREATE INDEX runs_by_step ON runs (step_id, id);
CREATE INDEX runs_by_status ON runs (status);
