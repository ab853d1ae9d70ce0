-- See sqlite/0028_host_quiet.sql.
ALTER TABLE runs ADD COLUMN host_quiet_s BIGINT;
