-- The customer id each SDK row carried as sent (raw_log.customer_id is the attributed one: the
-- row's, else its device's). The hourly log export writes it as `customer_ids`; reading it from
-- the stored JSON (`row`) cost the engine ~1.2 s of CPU per million rows, about half of the
-- export line's expression (measured at `94393aa`). The SDK builder writes it from now on; rows
-- stored before compute it from `row` when read (no mutation of old parts).
ALTER TABLE raw_log ADD COLUMN IF NOT EXISTS sent_customer_id String DEFAULT JSONExtractString(row, 'customer_id') AFTER customer_id;
