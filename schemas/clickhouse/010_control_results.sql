-- Control plane (pipelines/control/): the journal and answer of every control command, by id.
-- Admin writes (orgs, apps, keys, ...) and due scheduler jobs are commands on the one-partition
-- control topic; one owner applies them in order. For each command it first writes a row here
-- with applied = 0 holding the rows it is about to write (`writes`, JSON) and its answer, then
-- those rows, then the same row with applied = 1 (and `writes` emptied). So:
--   * a command whose id has an applied row is never applied again (a redelivery, a second
--     scheduler's copy of a due job): its recorded answer stands;
--   * an owner that dies between the two rows leaves applied = 0: the next owner rewrites the
--     journaled rows (the same rows: idempotent) instead of allocating new ids;
--   * the edge that took the command waits for applied = 1 and answers with status and body.
--   command_id  a uuid drawn by the edge, or '<job>:<period start ms>' for a due job
--   kind        create-org, create-app, create-key, revoke-key, run-job
--   status      the HTTP status of the answer;  body: its JSON body
--   taken_at    when the edge (or scheduler) took the command (its clock)
--   applied_at  when the applier wrote the row (the applier's clock)
-- Rows expire 30 days after they were written (by the applier's clock, never an edge's, which
-- may be off): commands are only redelivered while uncommitted, so by then nothing asks again.
CREATE TABLE IF NOT EXISTS control_results
(
    command_id String,
    kind LowCardinality(String),
    status UInt16,
    body String,
    writes String,
    applied UInt8,
    taken_at DateTime64(3, 'UTC'),
    applied_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(applied)
ORDER BY command_id
TTL toDateTime(applied_at) + INTERVAL 30 DAY;
