-- Host facts as captured (JSON of app::hosts::HostFacts), newest last. Kept, not
-- replaced, so a run can point at the facts that were current when it started.
CREATE TABLE host_facts (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    host_name    TEXT NOT NULL REFERENCES hosts (name) ON UPDATE CASCADE ON DELETE CASCADE,
    facts        TEXT NOT NULL CHECK (json_valid(facts)),
    captured_at  INTEGER NOT NULL
) STRICT;

CREATE INDEX host_facts_by_host ON host_facts (host_name, id);
