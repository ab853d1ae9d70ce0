-- Replicas of a team server and the runs each drives (see db/replicas.rs).
-- A replica renews `seen_at` every few seconds; the runs of one that stopped
-- renewing are interrupted by the others. On SQLite there is one server, which
-- interrupts what its previous process left when it starts.
CREATE TABLE replicas (
    id          TEXT PRIMARY KEY NOT NULL,
    started_at  INTEGER NOT NULL,
    seen_at     INTEGER NOT NULL
) STRICT;

ALTER TABLE runs ADD COLUMN replica TEXT;
