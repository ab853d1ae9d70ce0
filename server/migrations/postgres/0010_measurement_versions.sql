-- As SQLite's 0027: a counter per investigation bumped by every change to its
-- measurements, in the same transaction, so a server may keep them in memory.
CREATE TABLE measurement_versions (
    investigation_id  TEXT PRIMARY KEY NOT NULL REFERENCES investigations (id) ON DELETE CASCADE,
    version           BIGINT NOT NULL
);

INSERT INTO measurement_versions (investigation_id, version)
    SELECT DISTINCT investigation_id, 1 FROM measurements;

CREATE FUNCTION sleuth_measurements_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO measurement_versions (investigation_id, version) VALUES (NEW.investigation_id, 1)
            ON CONFLICT (investigation_id) DO UPDATE SET version = measurement_versions.version + 1;
    ELSE
        UPDATE measurement_versions SET version = version + 1 WHERE investigation_id = OLD.investigation_id;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER measurements_changed AFTER INSERT OR UPDATE OR DELETE ON measurements
    FOR EACH ROW EXECUTE FUNCTION sleuth_measurements_changed();
