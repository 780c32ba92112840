-- Failure routing: a record a stage could not process within its retry bounds (or that can never
-- succeed, e.g. a block that does not decode) is kept here with its stage and error, and its
-- partition moves on. Written by the guard of every consumer (pipelines/failures/guarded-stage.ts);
-- listed and replayed through the admin API (/admin/v1/dead-letters).
--   id            '<stage>:<topic>:<partition>:<offset>', the same however often it is dead-lettered
--   key, headers  the record's key ('' when none; has_key tells) and headers (JSON object)
--   value         the record's bytes, base64, so any bytes survive; value_bytes: their length
--   error         the error and its causes;  attempts: calls made on the record before giving up
--   produced_at   when the record was produced;  dead_at: when it was dead-lettered
--   replayed_at   when an operator last replayed it onto its topic (0 = never)
-- Keyed by the record's position, so dead-lettering the same record again (its batch redelivered
-- after a crash) replaces the row; the version (replayed_at) keeps a replay mark over such a copy.
-- Nothing expires: a dead letter stays until an operator deletes it.
CREATE TABLE IF NOT EXISTS dead_letters
(
    id String,
    stage LowCardinality(String),
    topic LowCardinality(String),
    source_partition UInt32,
    source_offset UInt64,
    has_key UInt8,
    key String,
    headers String,
    value String,
    value_bytes UInt64,
    error String,
    attempts UInt32,
    produced_at DateTime64(3, 'UTC'),
    dead_at DateTime64(3, 'UTC'),
    replayed_at DateTime64(3, 'UTC') DEFAULT 0
)
ENGINE = ReplacingMergeTree(replayed_at)
ORDER BY (stage, topic, source_partition, source_offset);
