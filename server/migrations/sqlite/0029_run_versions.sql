-- As measurement_versions (0027), for runs: a counter per investigation that
-- every change to its runs bumps in the same transaction (a run queued,
-- started, counted, ended; a step deleted with its runs), so a server keeps
-- the runs of a thousand-run investigation in memory while it is current.
CREATE TABLE run_versions (
    investigation_id  TEXT PRIMARY KEY NOT NULL REFERENCES investigations (id) ON DELETE CASCADE,
    version           INTEGER NOT NULL
) STRICT;

INSERT INTO run_versions (investigation_id, version)
    SELECT DISTINCT s.investigation_id, 1 FROM runs r JOIN steps s ON s.id = r.step_id;

CREATE TRIGGER runs_inserted AFTER INSERT ON runs
BEGIN
    INSERT INTO run_versions (investigation_id, version)
        SELECT investigation_id, 1 FROM steps WHERE id = NEW.step_id
        ON CONFLICT (investigation_id) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER runs_updated AFTER UPDATE ON runs
BEGIN
    UPDATE run_versions SET version = version + 1
        WHERE investigation_id = (SELECT investigation_id FROM steps WHERE id = NEW.step_id);
END;

CREATE TRIGGER runs_deleted AFTER DELETE ON runs
BEGIN
    UPDATE run_versions SET version = version + 1
        WHERE investigation_id = (SELECT investigation_id FROM steps WHERE id = OLD.step_id);
END;

-- A step's runs go with it (a cascade, when the step may be gone already).
CREATE TRIGGER steps_deleted_with_runs AFTER DELETE ON steps
BEGIN
    UPDATE run_versions SET version = version + 1 WHERE investigation_id = OLD.investigation_id;
END;
