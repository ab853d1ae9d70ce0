-- @name mentions in annotations reach Mentions as comments' do (#49): one row
-- per annotation and named user, read or not. An edit that names someone new
-- adds a row; one that drops a name keeps the row (they were told).
CREATE TABLE annotation_mentions (
    annotation_id INTEGER NOT NULL REFERENCES annotations (id) ON DELETE CASCADE,
    user_name     TEXT NOT NULL COLLATE NOCASE,
    read_at       INTEGER,
    PRIMARY KEY (annotation_id, user_name)
) STRICT;

CREATE INDEX annotation_mentions_by_user ON annotation_mentions (user_name, read_at);
