-- As SQLite's 0029: a counter per investigation bumped by every change to its
-- runs, in the same transaction, so a server may keep them in memory.
CREATE TABLE run_versions (
    investigation_id  TEXT PRIMARY KEY NOT NULL REFERENCES investigations (id) ON DELETE CASCADE,
    version           BIGINT NOT NULL
);

INSERT INTO run_versions (investigation_id, version)
    SELECT DISTINCT s.investigation_id, 1 FROM runs r JOIN steps s ON s.id = r.step_id;

CREATE FUNCTION sleuth_runs_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    inv TEXT;
BEGIN
    IF TG_OP = 'DELETE' THEN
        SELECT investigation_id INTO inv FROM steps WHERE id = OLD.step_id;
    ELSE
        SELECT investigation_id INTO inv FROM steps WHERE id = NEW.step_id;
    END IF;
    IF inv IS NOT NULL THEN
        INSERT INTO run_versions (investigation_id, version) VALUES (inv, 1)
            ON CONFLICT (investigation_id) DO UPDATE SET version = run_versions.version + 1;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER runs_changed AFTER INSERT OR UPDATE OR DELETE ON runs
    FOR EACH ROW EXECUTE FUNCTION sleuth_runs_changed();

-- A step's runs go with it (a cascade, when the step may be gone already);
-- only an existing counter is bumped: the investigation may be going too.
CREATE FUNCTION sleuth_steps_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE run_versions SET version = version + 1 WHERE investigation_id = OLD.investigation_id;
    RETURN NULL;
END
$$;

CREATE TRIGGER steps_deleted_with_runs AFTER DELETE ON steps
    FOR EACH ROW EXECUTE FUNCTION sleuth_steps_deleted();
