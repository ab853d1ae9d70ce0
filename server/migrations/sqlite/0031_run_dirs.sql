-- Run directories on hosts (`~/.sleuth/runs/<id>-<tag>`, `runs::retention`):
-- how long a host keeps them (NULL: 7 days), a cap on their size (NULL: none),
-- and the last sweep's report (JSON).
ALTER TABLE hosts ADD COLUMN run_dirs_keep_days INTEGER;
ALTER TABLE hosts ADD COLUMN run_dirs_max_mb INTEGER;
ALTER TABLE hosts ADD COLUMN run_dirs_swept TEXT;
-- 1: the run was ended while its command may still run on its host (its
-- Sleuth was killed); whoever starts next stops what is left and clears it.
ALTER TABLE runs ADD COLUMN client_left INTEGER NOT NULL DEFAULT 0;
