-- See sqlite/0035_watch_stop_reason.sql.
ALTER TABLE watches ADD COLUMN stop_reason TEXT
    CHECK (stop_reason IN ('creator_gone', 'step_deleted', 'step_changed', 'unrunnable', 'failing'));

UPDATE watches SET stop_reason = CASE
        WHEN stopped LIKE '%has no account here%' THEN 'creator_gone'
        WHEN stopped = 'Its step was deleted.' THEN 'step_deleted'
        WHEN stopped LIKE 'Step changed by %' THEN 'step_changed'
        WHEN stopped LIKE 'Stopped: %' THEN 'failing'
        ELSE 'unrunnable'
    END
WHERE stopped IS NOT NULL;
