-- Which replica is indexing a run's output (`runs.indexed` = 2), so that when it
-- dies the others give the run back to the index instead of leaving it claimed.
ALTER TABLE runs ADD COLUMN index_claimed_by TEXT;
