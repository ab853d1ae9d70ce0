-- The highlighted lines of a snapshot (JSON array of HTML strings), computed once
-- when it is fetched: highlighting thousands of lines on every page view would
-- cost more than the rest of the page. Classed spans, so themes can change freely.
-- NULL for snapshots stored before; those are highlighted when shown.
ALTER TABLE snapshots ADD COLUMN html_lines TEXT CHECK (html_lines IS NULL OR json_valid(html_lines));
