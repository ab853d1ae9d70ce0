-- Evidence that does not drift (#49).
--
-- Who made a run: a person (a Run press, a sweep, the CLI), a watch on its
-- schedule, or a replay; `origin_id` names the watch or replay (kept when it is
-- deleted: the run was still its). A hypothesis's arms leave watch runs out
-- unless they ask for them.
ALTER TABLE runs ADD COLUMN origin TEXT NOT NULL DEFAULT 'person' CHECK (origin IN ('person', 'watch', 'replay'));
ALTER TABLE runs ADD COLUMN origin_id INTEGER;
-- One Run press or one sweep: the id of its first run. An arm may keep to one.
ALTER TABLE runs ADD COLUMN launch INTEGER;
UPDATE runs SET launch = (SELECT min(r.id) FROM runs r WHERE r.sweep_id = runs.sweep_id) WHERE sweep_id IS NOT NULL;
CREATE INDEX runs_by_origin ON runs (origin, origin_id) WHERE origin <> 'person';

-- A hypothesis's status follows its verdict until a person sets it (0); one a
-- person had set before this migration stays theirs.
ALTER TABLE hypotheses ADD COLUMN status_auto INTEGER NOT NULL DEFAULT 1;
UPDATE hypotheses SET status_auto = 0 WHERE status <> 'open';

-- Each verdict a hypothesis showed, when the runs it rests on changed: what it
-- was is kept, so a page can say "was +100 % on 4 runs; now +2 % on 16 — runs
-- 9–16 joined" instead of changing its conclusion silently.
CREATE TABLE hypothesis_verdicts (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    hypothesis_id  INTEGER NOT NULL REFERENCES hypotheses (id) ON DELETE CASCADE,
    at             INTEGER NOT NULL,
    baseline_runs  TEXT NOT NULL CHECK (json_valid(baseline_runs)),
    treatment_runs TEXT NOT NULL CHECK (json_valid(treatment_runs)),
    delta_pct      REAL,
    outcome        TEXT,
    verdict        TEXT
) STRICT;
CREATE INDEX hypothesis_verdicts_by_hypothesis ON hypothesis_verdicts (hypothesis_id, id);

-- A watch runs what its creator approved (#50): the step's version and body
-- when it was made; an edit by anyone else stops it. `base_url`: where its
-- links point (`--public-url`, else the address it was made through).
ALTER TABLE watches ADD COLUMN step_version INTEGER;
ALTER TABLE watches ADD COLUMN approved TEXT CHECK (approved IS NULL OR json_valid(approved));
ALTER TABLE watches ADD COLUMN base_url TEXT;

-- What went wrong after a replay's copy was made (a snippet not read on the
-- new host): JSON array of sentences.
ALTER TABLE replays ADD COLUMN notes TEXT CHECK (notes IS NULL OR json_valid(notes));
