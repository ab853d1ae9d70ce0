-- See sqlite/0031_run_dirs.sql.
ALTER TABLE hosts ADD COLUMN run_dirs_keep_days INTEGER;
ALTER TABLE hosts ADD COLUMN run_dirs_max_mb INTEGER;
ALTER TABLE hosts ADD COLUMN run_dirs_swept TEXT;
ALTER TABLE runs ADD COLUMN client_left INTEGER NOT NULL DEFAULT 0;
