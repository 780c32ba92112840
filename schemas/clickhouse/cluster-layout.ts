/**
 * Where each table lives on a ClickHouse cluster (CLICKHOUSE_CLUSTER): the one piece of the cluster
 * schema the migrations' SQL does not say. The migrations' DDL is the single description of every
 * table; pipelines/connectors/store/cluster-ddl.ts turns it into cluster DDL with this layout.
 *
 * - `everywhere`: one replicated table that every node of the cluster holds whole (its Keeper path
 *   has no shard). For small, rarely written control state read on every API call and joined by
 *   the compilers' queries: each node answers it locally.
 * - `sharded`: a replicated `<table>_local` on each shard and a Distributed `<table>` in front of it,
 *   whose sharding key is `cityHash64(by…)`. Every row of one key of the table's ORDER BY (the
 *   identity a ReplacingMergeTree collapses, and FINAL reads) must land on one shard, so `by` is
 *   a part of that key or a value the key determines (`why` says which and what it keeps exact).
 *
 * A table not listed here is sharded by its whole ORDER BY key: always exact, though it may not
 * co-locate what its readers join. docs/scaling.md explains each choice.
 */
export type TablePlacement =
  { placement: 'everywhere'; why: string } | { placement: 'sharded'; by: readonly string[]; why: string }

const CONTROL = 'control state: few rows, written by the control applier, read by every API call'

export const CLUSTER_LAYOUT: Readonly<Record<string, TablePlacement>> = {
  schema_migrations: { placement: 'everywhere', why: 'every node must agree on what is applied' },
  orgs: { placement: 'everywhere', why: CONTROL },
  apps: { placement: 'everywhere', why: CONTROL },
  app_settings: { placement: 'everywhere', why: CONTROL },
  api_keys: { placement: 'everywhere', why: CONTROL },
  profile_dbs: { placement: 'everywhere', why: CONTROL },
  control_results: { placement: 'everywhere', why: CONTROL },
  push_transports: { placement: 'everywhere', why: CONTROL },
  audiences: { placement: 'everywhere', why: CONTROL },
  audience_counts: { placement: 'everywhere', why: 'one row per count of an audience: small' },
  export_jobs: { placement: 'everywhere', why: CONTROL },
  export_plans: { placement: 'everywhere', why: CONTROL },
  export_files: { placement: 'everywhere', why: 'one row per export file generation: small' },
  export_requests: { placement: 'everywhere', why: 'one row per export: small' },
  export_cursors: { placement: 'everywhere', why: 'one row per export: small' },
  campaigns: { placement: 'everywhere', why: CONTROL },
  campaign_occurrences: { placement: 'everywhere', why: 'one row per occurrence of a campaign: small' },
  audience_list_members: {
    placement: 'everywhere',
    why: 'static audiences: the audience compiler reads a list with IN beside devices of any shard (docs/imports.md)',
  },
  import_rows: {
    placement: 'everywhere',
    why: 'profile import rows staged for two days: the profile writer joins a round of them to the profiles of any shard in one INSERT … SELECT (docs/imports.md)',
  },
  import_raw: {
    placement: 'everywhere',
    why: 'profile import CSV lines of one round, typed into import_rows by one INSERT … SELECT on any node right after their insert (migration 032; dropped by 034: the lines are typed as the insert reads them)',
  },
  invalid_push_tokens: {
    placement: 'everywhere',
    why: 'dead tokens only, and every push fan-out joins it against devices of any shard',
  },
  table_retention: {
    placement: 'everywhere',
    why: 'one row per retained table: the TTL the migration step last set, read by every process at start',
  },

  events: {
    placement: 'sharded',
    by: ['app_id', 'uuid'],
    why: 'the dedupe key: an event and its entry in event_uuid_index land on the same shard, so the index view writes locally and a retried insert is dropped where its copy is',
  },
  event_uuids: { placement: 'sharded', by: ['app_id', 'uuid'], why: 'the dedupe key, as events' },
  event_uuid_index: { placement: 'sharded', by: ['app_id', 'uuid'], why: 'the dedupe key, as events' },
  upload_receipts: {
    placement: 'sharded',
    by: ['transaction_id'],
    why: 'its ORDER BY: versions of one receipt collapse on one shard',
  },
  rejected_lines: {
    placement: 'sharded',
    by: ['transaction_id'],
    why: 'one upload’s rejections together; the key (transaction_id, line) starts with it',
  },
  raw_log: {
    placement: 'sharded',
    by: ['app_id', 'install_uuid'],
    why: 'per install: a row uploaded twice has the same install, so its copies collapse on one shard, beside its device',
  },
  sessions: {
    placement: 'sharded',
    by: ['app_id', 'install_uuid'],
    why: 'per install: a session belongs to one install, so its versions collapse on one shard, beside its device',
  },
  devices: {
    placement: 'sharded',
    by: ['app_id', 'install_uuid'],
    why: 'per install attribution: the ORDER BY key itself',
  },
  customer_devices: {
    placement: 'sharded',
    by: ['app_id', 'customer_id'],
    why: 'per customer attribution: the ORDER BY key itself',
  },
  profiles: {
    placement: 'sharded',
    by: ['profiledb_id', 'customer_id'],
    why: 'per customer profile: the ORDER BY key itself, so FINAL is exact on each shard',
  },
  profile_changes: {
    placement: 'sharded',
    by: ['profiledb_id', 'customer_id'],
    why: 'a customer’s change log beside their profile; a change_id always has one customer',
  },
  dead_letters: {
    placement: 'sharded',
    by: ['stage', 'topic', 'source_partition', 'source_offset'],
    why: 'the ORDER BY key: a record dead-lettered twice replaces its row on one shard',
  },
  push_requests: {
    placement: 'sharded',
    by: ['app_id', 'request_id'],
    why: 'every generation and version of a request on one shard',
  },
  push_deliveries: {
    placement: 'sharded',
    by: ['app_id', 'install_uuid'],
    why: 'per install, beside its device; the key (app, request, generation, install) determines it',
  },
  campaign_sends: {
    placement: 'sharded',
    by: ['app_id', 'install_uuid'],
    why: 'per install, beside its device; a campaign has one app, so the key (campaign, occurrence, install) determines it',
  },
}
