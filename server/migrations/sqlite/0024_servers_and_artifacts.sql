-- Serving experiments: a run's directory on its host, the server beside it (as
-- the page shows it, and the handle to stop it by while one may be left
-- running), and the logs kept with it besides its output: the server's log and
-- the artifacts fetched from its directory. Their bytes are files
-- (DATA/runs/logs/{id}.out and .idx) like the run's own output.
-- What the run does besides its command (JSON: its server, its artifact globs).
ALTER TABLE runs ADD COLUMN plan TEXT CHECK (plan IS NULL OR json_valid(plan));
ALTER TABLE runs ADD COLUMN run_dir TEXT;
ALTER TABLE runs ADD COLUMN server TEXT CHECK (server IS NULL OR json_valid(server));
ALTER TABLE runs ADD COLUMN server_handle TEXT CHECK (server_handle IS NULL OR json_valid(server_handle));
ALTER TABLE runs ADD COLUMN artifact_notes TEXT CHECK (artifact_notes IS NULL OR json_valid(artifact_notes));

CREATE TABLE run_logs (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id      INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    kind        TEXT NOT NULL CHECK (kind IN ('server', 'artifact')),
    name        TEXT NOT NULL,
    size        INTEGER NOT NULL DEFAULT 0,
    sha256      TEXT,
    created_at  INTEGER NOT NULL
);
CREATE INDEX run_logs_by_run ON run_logs (run_id, id);
