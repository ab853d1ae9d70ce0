-- Like steps (0015): saves of a hypothesis carry the version they edited, so a
-- stale save is refused with who changed it and when, never applied silently.
ALTER TABLE hypotheses ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE hypotheses ADD COLUMN updated_by TEXT;
