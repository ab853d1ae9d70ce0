-- An investigation's bounds for its guards (#53), over the defaults: a JSON
-- object of the bounds it sets (`domain::guards::Bounds`); no row, none set.
CREATE TABLE guard_bounds (
    investigation_id  TEXT PRIMARY KEY NOT NULL REFERENCES investigations (id) ON DELETE CASCADE,
    bounds            TEXT NOT NULL,
    updated_at        BIGINT NOT NULL,
    updated_by        TEXT
);
