-- See sqlite/0034_annotation_mentions.sql.
CREATE TABLE annotation_mentions (
    annotation_id BIGINT NOT NULL REFERENCES annotations (id) ON DELETE CASCADE,
    user_name     TEXT COLLATE nocase NOT NULL,
    read_at       BIGINT,
    PRIMARY KEY (annotation_id, user_name)
);

CREATE INDEX annotation_mentions_by_user ON annotation_mentions (user_name, read_at);
