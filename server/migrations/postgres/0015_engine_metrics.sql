-- See sqlite/0032_engine_metrics.sql.
CREATE TABLE run_engine (
    run_id  BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq     BIGINT NOT NULL,
    body    TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
ALTER TABLE runs ADD COLUMN engine_notes TEXT CHECK (engine_notes IS NULL OR sleuth_is_json(engine_notes));
ALTER TABLE runs ADD COLUMN request_timeline TEXT CHECK (request_timeline IS NULL OR sleuth_is_json(request_timeline));
