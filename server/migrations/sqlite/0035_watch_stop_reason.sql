-- Why a watch stopped as one of a closed set (#51), beside the sentence in
-- `stopped`. Watches stopped before it get theirs from that sentence.
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
