-- While a run goes: how long its host has not answered (keepalive pings, every
-- 5 s), in seconds, once that is 15 s or more; NULL while it answers. Pages say
-- "no data from gpu1 for 20 s" from it (every replica reads it here).
ALTER TABLE runs ADD COLUMN host_quiet_s INTEGER;
