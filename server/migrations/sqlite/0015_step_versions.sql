-- Saves of a step carry the version they edited, so two people editing the same
-- note cannot silently overwrite each other (the later, stale save is refused
-- with who changed it and when).
ALTER TABLE steps ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE steps ADD COLUMN updated_by TEXT;
