import type { Store } from '../connectors/store/store.ts'

/**
 * Applies staged import rows (import_rows, one round of one import: blocks of one partition) in
 * the engine, row set at a time: the profiles' state is read once, by key, joined to the rows, and
 * the change log and the new profile versions are written with one INSERT … SELECT each. What the
 * profile writer does for a PATCH, expressed over columns (apply-changes.ts for one request):
 *
 * - the new attributes are the old ones in their order, less the row's deletes, with the row's
 *   assignments in place (new keys after); values kept as the engine writes JSON (both sides are
 *   parsed, so an unchanged value compares equal whatever escapes its text used);
 * - the change log row lists the attributes whose value or type changed and the deletes of
 *   attributes that existed; a row changing nothing writes no change row (but a profile version,
 *   as a PATCH does);
 * - a row whose profile already records this block's offset (or a later one) from this partition,
 *   received no earlier, was applied before a crash: skipped and counted applied (the writer's
 *   replay rule).
 *
 * Every row of the round has a distinct customer (the import processor starts a new round at a
 * customer's second row), so each row meets the state before the round.
 */
export interface StagedBlocks {
  import: string
  round: number
  db: number
  org: number
  app: string
  receivedAt: number
  partition: number
  /** The blocks, each with the offset of its record on the profile-changes topic. */
  blocks: { block: number; offset: string }[]
}

export interface StagedTally {
  block: number
  rows: number
  applied: number
  ignored: number
}

export async function applyStagedBlocks(
  store: Store,
  staged: StagedBlocks,
  appliedAt: number,
): Promise<StagedTally[]> {
  const params = {
    import: staged.import,
    round: staged.round,
    db: staged.db,
    org: staged.org,
    app: staged.app,
    at: staged.receivedAt,
    applied: appliedAt,
    partition: staged.partition,
    blocks: staged.blocks.map((b) => b.block),
    offsets: staged.blocks.map((b) => Number(b.offset)),
  }
  // The bulk of a first import: no customer of the round has a profile yet. Each row is then its
  // own new profile and its own change: written straight from import_rows, without reading and
  // joining the profiles' state three times (one owner per customer: no profile appears meanwhile).
  const [existing] = await store.query<{ n: string }>(
    `SELECT count() AS n FROM profiles WHERE profiledb_id = {db:UInt64}
       AND customer_id IN (SELECT customer_id FROM import_rows WHERE ${ROWS})`,
    params,
  )
  if (Number(existing?.n ?? 0) === 0) return applyNewProfiles(store, params)
  const tallies = await store.query<{
    block: number | string
    rows: string
    skipped: string
    changes: string
  }>(
    `SELECT block, count() AS rows, countIf(done) AS skipped, countIf(NOT done AND changed) AS changes
     FROM (${COMPUTED}) GROUP BY block`,
    params,
  )
  // The change log first, then the profiles (as the writer does: a profile version never exists
  // without its change row; a crash between them applies the rows again, and the change rows,
  // keyed by change_id, are replaced).
  await store.command(
    `INSERT INTO profile_changes (profiledb_id, org_id, app_id, customer_id, change_id, at, applied_at, seq,
                                  updates, deletes, profile_deleted, ignored)
     SELECT {db:UInt64}, {org:UInt64}, {app:String}, customer, concat('import:', {import:String}, ':', toString(line)),
            fromUnixTimestamp64Milli({at:Int64}, 'UTC'), fromUnixTimestamp64Milli({applied:Int64}, 'UTC'), seq,
            changes_json, deleted_keys, 0, '[]'
     FROM (${COMPUTED}) WHERE NOT done AND changed`,
    params,
  )
  await store.command(
    `INSERT INTO profiles (profiledb_id, org_id, app_id, customer_id, attributes, attribute_types, email, deleted,
                           updated_at, source_partition, source_offset, version)
     SELECT {db:UInt64}, {org:UInt64}, {app:String}, customer, new_attributes, new_types, new_email, 0,
            new_updated_at, {partition:UInt32}, seq, new_version
     FROM (${COMPUTED}) WHERE NOT done`,
    params,
  )
  return tallies.map((t) => ({
    block: Number(t.block),
    rows: Number(t.rows),
    applied: Number(t.skipped) + Number(t.changes),
    ignored: Number(t.rows) - Number(t.skipped) - Number(t.changes),
  }))
}

/** Rows of customers none of whom has a profile: the row is the profile, its assignments the change. */
async function applyNewProfiles(store: Store, params: Record<string, unknown>): Promise<StagedTally[]> {
  const tallies = await store.query<{ block: number | string; rows: string; changes: string }>(
    `SELECT block, count() AS rows, countIf(notEmpty(update_types)) AS changes
     FROM import_rows FINAL WHERE ${ROWS} GROUP BY block`,
    params,
  )
  await store.command(
    `INSERT INTO profile_changes (profiledb_id, org_id, app_id, customer_id, change_id, at, applied_at, seq,
                                  updates, deletes, profile_deleted, ignored)
     SELECT {db:UInt64}, {org:UInt64}, {app:String}, customer_id, concat('import:', {import:String}, ':', toString(line)),
            ${AT}, fromUnixTimestamp64Milli({applied:Int64}, 'UTC'), ${SEQ}, updates, CAST([], 'Array(String)'), 0, '[]'
     FROM import_rows FINAL WHERE ${ROWS} AND notEmpty(update_types)`,
    params,
  )
  await store.command(
    `INSERT INTO profiles (profiledb_id, org_id, app_id, customer_id, attributes, attribute_types, email, deleted,
                           updated_at, source_partition, source_offset, version)
     SELECT {db:UInt64}, {org:UInt64}, {app:String}, customer_id, updates, update_types, email, 0,
            ${AT}, {partition:UInt32}, ${SEQ}, 1
     FROM import_rows FINAL WHERE ${ROWS}`,
    params,
  )
  return tallies.map((t) => ({
    block: Number(t.block),
    rows: Number(t.rows),
    applied: Number(t.changes),
    ignored: Number(t.rows) - Number(t.changes),
  }))
}

/** The bus offset of a row's block record: the profile's source_offset, the change's seq. */
const SEQ = `{offsets:Array(UInt64)}[indexOf({blocks:Array(UInt32)}, block)]`

const ROWS = `import_id = {import:String} AND round = {round:UInt64} AND block IN {blocks:Array(UInt32)}`

/** Each staged row beside the profile it meets (`present` = 0 and empty columns where there is none). */
const JOINED = `
SELECT
  r.block AS block, r.line AS line, r.customer_id AS customer, r.updates AS updates, r.update_types AS update_types,
  r.deletes AS dels, r.email AS row_email, p.present = 1 AS present, p.attributes AS old_attributes,
  p.attribute_types AS old_types, p.email AS old_email, p.version AS old_version, p.updated_at AS old_updated_at,
  {offsets:Array(UInt64)}[indexOf({blocks:Array(UInt32)}, r.block)] AS seq,
  present AND p.source_partition = {partition:UInt32} AND p.source_offset >= seq
    AND p.updated_at >= fromUnixTimestamp64Milli({at:Int64}, 'UTC') AS done
FROM (SELECT block, line, customer_id, updates, update_types, deletes, email FROM import_rows FINAL WHERE ${ROWS}) AS r
LEFT JOIN (
  SELECT customer_id, attributes, attribute_types, email, source_partition, source_offset, updated_at, version,
         1 AS present
  FROM profiles FINAL
  WHERE profiledb_id = {db:UInt64} AND customer_id IN (SELECT customer_id FROM import_rows WHERE ${ROWS})
) AS p ON r.customer_id = p.customer_id`

const AT = `fromUnixTimestamp64Milli({at:Int64}, 'UTC')`

/**
 * One row per staged row: its state before, and what applying it gives. A new profile (the bulk
 * of a first import) is the row itself, with nothing to merge or compare; a profile that exists
 * is merged in the engine: both documents parsed, so equal values compare equal whatever escapes
 * their text used, and a value is unchanged when its JSON and its type are.
 */
const COMPUTED = `
SELECT block, line, customer, seq, done, updates AS new_attributes, update_types AS new_types, updates AS changes_json,
       CAST([], 'Array(String)') AS deleted_keys, notEmpty(update_types) AS changed, row_email AS new_email,
       1 AS new_version, ${AT} AS new_updated_at
FROM (${JOINED}) WHERE NOT present
UNION ALL
SELECT block, line, customer, seq, done, new_attributes, new_types, changes_json, deleted_keys,
       changes_json != '{}' OR notEmpty(deleted_keys) AS changed, new_email, new_version, new_updated_at
FROM (
  SELECT *,
    arrayMap(t -> t.1, JSONExtractKeysAndValuesRaw(old_attributes)) AS old_keys,
    arrayMap(t -> t.2, JSONExtractKeysAndValuesRaw(old_attributes)) AS old_values,
    arrayMap(t -> t.1, JSONExtractKeysAndValuesRaw(updates)) AS upd_keys,
    arrayMap(t -> t.2, JSONExtractKeysAndValuesRaw(updates)) AS upd_values,
    arrayFilter(k -> NOT has(dels, k), old_keys) AS kept_keys,
    arrayConcat(kept_keys, arrayFilter(k -> NOT has(kept_keys, k), upd_keys)) AS new_keys,
    concat('{', arrayStringConcat(arrayMap(
      k -> concat(toJSONString(k), ':', if(has(upd_keys, k), upd_values[indexOf(upd_keys, k)], old_values[indexOf(old_keys, k)])),
      new_keys), ','), '}') AS new_attributes,
    mapUpdate(mapFilter((k, v) -> NOT has(dels, k), old_types), update_types) AS new_types,
    arrayFilter((k, v) -> NOT (has(old_keys, k) AND old_values[indexOf(old_keys, k)] = v AND old_types[k] = update_types[k]),
                upd_keys, upd_values) AS changed_keys,
    concat('{', arrayStringConcat(arrayMap(k -> concat(toJSONString(k), ':', upd_values[indexOf(upd_keys, k)]), changed_keys), ','), '}')
      AS changes_json,
    arrayFilter(k -> has(old_keys, k), dels) AS deleted_keys,
    multiIf(mapContains(update_types, '$email'), row_email, has(dels, '$email'), '', old_email) AS new_email,
    old_version + 1 AS new_version,
    greatest(old_updated_at, ${AT}) AS new_updated_at
  FROM (${JOINED}) WHERE present
)`
