-- Who may do what with an investigation: `owner` (everything, incl. sharing and
-- deleting it), `runner` (an editor who may also run commands and fetch from
-- hosts), `editor` (notes, steps, hypotheses, annotations), `viewer` (read).
-- The creator becomes its owner. Admins may do everything everywhere.
CREATE TABLE investigation_members (
    investigation_id  TEXT NOT NULL REFERENCES investigations (id) ON DELETE CASCADE,
    user_name         TEXT NOT NULL COLLATE NOCASE,
    role              TEXT NOT NULL CHECK (role IN ('owner', 'runner', 'editor', 'viewer')),
    PRIMARY KEY (investigation_id, user_name)
) STRICT;

CREATE INDEX investigation_members_by_user ON investigation_members (user_name);

-- Which users may run on a host: everyone (the default), or the listed ones.
ALTER TABLE hosts ADD COLUMN whole_team INTEGER NOT NULL DEFAULT 1;
CREATE TABLE host_users (
    host_name  TEXT NOT NULL REFERENCES hosts (name) ON UPDATE CASCADE ON DELETE CASCADE,
    user_name  TEXT NOT NULL COLLATE NOCASE,
    PRIMARY KEY (host_name, user_name)
) STRICT;
