-- A counter per investigation that every change to its measurements bumps, in
-- the same transaction (triggers, so cascades from deleted runs count too):
-- a server keeps an investigation's measurements in memory while the counter
-- it read them at is current, and a page of a thousand runs does not read
-- 24 000 rows each time it is drawn. Replicas share it through the database.
CREATE TABLE measurement_versions (
    investigation_id  TEXT PRIMARY KEY NOT NULL REFERENCES investigations (id) ON DELETE CASCADE,
    version           INTEGER NOT NULL
) STRICT;

INSERT INTO measurement_versions (investigation_id, version)
    SELECT DISTINCT investigation_id, 1 FROM measurements;

CREATE TRIGGER measurements_inserted AFTER INSERT ON measurements
BEGIN
    INSERT INTO measurement_versions (investigation_id, version) VALUES (NEW.investigation_id, 1)
        ON CONFLICT (investigation_id) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER measurements_updated AFTER UPDATE ON measurements
BEGIN
    UPDATE measurement_versions SET version = version + 1 WHERE investigation_id = OLD.investigation_id;
END;

CREATE TRIGGER measurements_deleted AFTER DELETE ON measurements
BEGIN
    UPDATE measurement_versions SET version = version + 1 WHERE investigation_id = OLD.investigation_id;
END;
