-- The engine's own /metrics, scraped on the host while a run goes
-- (`crate::engine`): its series as text chunks, a few seconds of scrapes each
-- (`domain::engine::series`), and what the scraping said (JSON array).
CREATE TABLE run_engine (
    run_id  INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq     INTEGER NOT NULL,
    body    TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) STRICT;
ALTER TABLE runs ADD COLUMN engine_notes TEXT CHECK (engine_notes IS NULL OR json_valid(engine_notes));
-- Its requests as its report file timed them: [[start s after the first, TTFT ms], …].
ALTER TABLE runs ADD COLUMN request_timeline TEXT CHECK (request_timeline IS NULL OR json_valid(request_timeline));
