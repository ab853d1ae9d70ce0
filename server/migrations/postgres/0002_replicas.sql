-- As SQLite's 0019: replicas and the runs each drives (see db/replicas.rs).
CREATE TABLE replicas (
    id          TEXT PRIMARY KEY NOT NULL,
    started_at  BIGINT NOT NULL,
    seen_at     BIGINT NOT NULL
);

ALTER TABLE runs ADD COLUMN replica TEXT;
CREATE INDEX runs_unfinished ON runs (replica) WHERE status IN ('queued', 'running');
