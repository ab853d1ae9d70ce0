-- What an hour of a host costs, in any currency (NULL: not said). Each run on
-- it with a throughput gets cost_per_mtok from it (`metrics::cost`).
ALTER TABLE hosts ADD COLUMN price_per_hour REAL;
