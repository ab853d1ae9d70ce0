-- Who started a run. Filled once Sleuth has accounts; NULL in single-user mode.
ALTER TABLE runs ADD COLUMN who TEXT;
