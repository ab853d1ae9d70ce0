-- See sqlite/0030_host_price.sql.
ALTER TABLE hosts ADD COLUMN price_per_hour DOUBLE PRECISION;
