-- As SQLite's 0023: the replica indexing a run's output, released when it dies.
ALTER TABLE runs ADD COLUMN index_claimed_by TEXT;
