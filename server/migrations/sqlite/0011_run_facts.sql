-- Each run points at the host facts current when it started (captured before
-- the first run of a day on that host), so an experiment can tell whether its
-- groups ran on the same driver, GPUs and packages.
ALTER TABLE runs ADD COLUMN facts_id INTEGER REFERENCES host_facts (id) ON DELETE SET NULL;
