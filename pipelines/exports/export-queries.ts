import type { QueryParams } from '../connectors/store/store.ts'
import { HOUR_MS, IDENTIFIER_KEYS, type AudienceJobType } from './export-kinds.ts'

/**
 * The queries that produce export files (pure: SQL text and parameters). Each selects one String
 * column that already is a whole JSON line, read as `TabSeparatedRaw`: the engine writes the
 * bytes of the file and Node only gzips them, with no parse or stringify per row. A JSON text
 * never holds a raw tab or newline, so the raw format adds nothing but the line ends. Every value
 * travels as a query parameter; nothing from a request enters the SQL text.
 */
export interface ExportQuery {
  sql: string
  params: QueryParams
}

/** The format every export query is read in. */
export const LINE_FORMAT = 'TabSeparatedRaw'

/** Bytes an export query may hold in a hash table or a sort before it spills to disk. */
export const EXPORT_SPILL_BYTES = 32 * 1024 * 1024
/** The engine memory an export query may use at most: past it the query fails (and says so). */
export const EXPORT_MAX_MEMORY_BYTES = 1024 * 1024 * 1024

/**
 * Settings of every export query, so that writing a file takes the engine about the same memory
 * whatever its size (measured on 1,000,000 rows in embedded mode at `84c6462`; docs/performance.md,
 * "Exports"):
 * - `use_query_condition_cache = 0`: with the cache on, a filtered read hands over whole granules
 *   (8,192 raw-log rows, ~6.5 MB of JSON per block) whatever max_block_size says; without it,
 *   blocks of `max_block_size` rows. A log hour's query went from 77 MB to ~20 MB.
 * - `max_block_size = 1024`: ~0.8 MB per block of log lines.
 * - `max_threads = 1`: one read stream (each stream holds its own blocks); no slower on two cores.
 * - external GROUP BY and sort past 32 MB, sort-merge joins: the audience compiler's aggregation
 *   (uniqExact per install) and joins held ~400 MB for a million members; with these, ~60 MB.
 * - `max_memory_usage`: a guard; a query past it fails with the engine's MEMORY_LIMIT_EXCEEDED.
 */
export const EXPORT_SETTINGS: Readonly<Record<string, string | number>> = {
  max_threads: 1,
  max_block_size: 1024,
  use_query_condition_cache: 0,
  max_bytes_before_external_group_by: EXPORT_SPILL_BYTES,
  max_bytes_before_external_sort: EXPORT_SPILL_BYTES,
  join_algorithm: 'full_sorting_merge',
  max_memory_usage: EXPORT_MAX_MEMORY_BYTES,
}

/** ` SETTINGS …` of an export query: `own` (a subquery's settings, kept) then EXPORT_SETTINGS. */
export function exportSettingsClause(own = ''): string {
  const ours = Object.entries(EXPORT_SETTINGS).map(
    ([name, value]) => `${name} = ${typeof value === 'string' ? `'${value}'` : value}`,
  )
  return ` SETTINGS ${[...(own === '' ? [] : [own]), ...ours].join(', ')}`
}

const ms = (name: string) => `fromUnixTimestamp64Milli({${name}:Int64}, 'UTC')`

/** `"name":<JSON of expr>`, left out ('') when `present` is false. */
const field = (name: string, expr: string, present = `${expr} != ''`) =>
  `if(${present}, concat('${JSON.stringify(name)}:', toJSONString(${expr})), '')`

// Removes the top-level `"customer_id":"…"` member of a stored raw-log row (it is written back
// as customer_ids). Inside a JSON string every quote is escaped, so `,"customer_id":"` can only
// be the member itself; the value is a JSON string (escapes included).
const WITHOUT_CUSTOMER_ID = String.raw`replaceRegexpOne(row, ',"customer_id":"(?:[^"\\\\]|\\\\.)*"', '')`

/**
 * One hour of an app's raw log: every session start, event and close, each the stored row (every
 * log field the SDK sent, defaults for the others) with `app`, `at` (UTC, seconds, ISO 8601) and
 * `customer_ids` added. FINAL: a row uploaded twice is written once. No ORDER BY: keeping the
 * table's order cost the embedded engine about 100 MB more resident memory on a 1M-row hour
 * (measured), and a log file needs no order.
 */
export function logHourQuery(appId: string, hourStart: number): ExportQuery {
  // As sent (migration 017; computed from `row` for rows stored before it).
  const customer = 'sent_customer_id'
  return {
    sql: `SELECT concat(
        '{"app":', toJSONString(app_id),
        ',"at":', toJSONString(formatDateTime(at, '%Y-%m-%dT%H:%i:%SZ')),
        ',"customer_ids":', if(${customer} = '', '{}', concat('{"customer_id":', toJSONString(${customer}), '}')),
        ',', substring(${WITHOUT_CUSTOMER_ID}, 2))
      FROM raw_log FINAL
      WHERE app_id = {app:String} AND at >= ${ms('from')} AND at < ${ms('to')}${exportSettingsClause()}`,
    params: { app: appId, from: hourStart, to: hourStart + HOUR_MS },
  }
}

/**
 * Every profile of a profile db, as a GET would find them: stored profiles that are not deleted,
 * and customers the SDK has seen in the db's apps (an auto-profile), unless deleted since. A row
 * is `_ll.raw_customer_id`, the profile's attributes as the API returns them, and the
 * auto-profile as `_ll.` attributes (those Sluice knows and that do not change with the clock).
 */
export function profileFullQuery(profiledbId: number, appIds: readonly string[]): ExportQuery {
  const pushEnabled = `if(push_status != '', NOT match(push_status, '(?i)^\\\\s*disabled'), push_token != '')`
  const fields = [
    `concat('"_ll.raw_customer_id":', toJSONString(customer_id))`,
    `if(live = 1 AND length(attributes) > 2, substring(attributes, 2, length(attributes) - 2), '')`,
    field('_ll.app_version', 'app_version', `seen = 1 AND app_version != ''`),
    field('_ll.os_version', 'os_version', `seen = 1 AND os_version != ''`),
    field('_ll.country', 'country', `seen = 1 AND country != ''`),
    field('_ll.language', 'language', `seen = 1 AND language != ''`),
    field('_ll.device_timezone', 'device_timezone', `seen = 1 AND device_timezone != ''`),
    field('_ll.user_type', 'user_type', `seen = 1 AND user_type != ''`),
    field(
      '_ll.birthdate',
      `formatDateTime(assumeNotNull(first_session), '%Y-%m-%d')`,
      'first_session IS NOT NULL',
    ),
    field(
      '_ll.last_session_date',
      `formatDateTime(assumeNotNull(last_session), '%Y-%m-%d')`,
      'last_session IS NOT NULL',
    ),
    `if(seen = 1, concat('"_ll.push_enabled":', if(${pushEnabled}, 'true', 'false')), '')`,
  ]
  return {
    sql: `SELECT concat('{', arrayStringConcat(arrayFilter(x -> x != '', [${fields.join(',\n        ')}]), ','), '}')
      FROM
      (
        SELECT customer_id, attributes, deleted, toUnixTimestamp64Milli(updated_at) AS updated_ms,
               1 AS stored, if(deleted = 0, 1, 0) AS live
        FROM profiles FINAL WHERE profiledb_id = {db:UInt64}
      ) AS p
      FULL OUTER JOIN
      (
        SELECT customer_id, toUnixTimestamp64Milli(max(last_active_at)) AS last_active_ms,
               argMax(app_version, last_active_at) AS app_version, argMax(os_version, last_active_at) AS os_version,
               argMax(country, last_active_at) AS country, argMax(language, last_active_at) AS language,
               argMax(device_timezone, last_active_at) AS device_timezone,
               argMax(user_type, last_active_at) AS user_type, argMax(push_status, last_active_at) AS push_status,
               argMax(push_token, last_active_at) AS push_token,
               min(first_session_at) AS first_session, max(last_session_at) AS last_session, 1 AS seen
        FROM customer_devices FINAL WHERE app_id IN {apps:Array(String)}
        GROUP BY customer_id
      ) AS f USING (customer_id)
      WHERE live = 1 OR (seen = 1 AND (stored = 0 OR last_active_ms > updated_ms))${exportSettingsClause()}`,
    params: { db: profiledbId, apps: [...appIds] },
  }
}

/**
 * The changes of a profile db inserted after `from` and up to `to` (engine insert times), as the
 * spec's change rows: `profile` (`_ll.raw_customer_id`, `profiledb_id`), `updates` when any,
 * `deletes.attributes` when any (a deleted profile lists every attribute it had). Rows that only
 * recorded refused changes are left out. In the order the edge accepted them.
 */
export function profileChangesQuery(profiledbId: number, from: number, to: number): ExportQuery {
  return {
    sql: `SELECT concat(
        '{"profile":{"_ll.raw_customer_id":', toJSONString(customer_id), ',"profiledb_id":', toString(profiledb_id), '}',
        if(updates NOT IN ('', '{}'), concat(',"updates":', updates), ''),
        if(notEmpty(deletes), concat(',"deletes":{"attributes":', toJSONString(deletes), '}'), ''),
        '}')
      FROM profile_changes FINAL
      WHERE profiledb_id = {db:UInt64} AND inserted_at > ${ms('from')} AND inserted_at <= ${ms('to')}
        AND (updates NOT IN ('', '{}') OR notEmpty(deletes))
      ORDER BY at, seq${exportSettingsClause()}`,
    params: { db: profiledbId, from, to },
  }
}

/**
 * The member query of the audience compiler (pipelines/audiences/compile-rules.ts) as a
 * subquery: its trailing SETTINGS clause (which may only end a whole query) and its ORDER BY
 * (an export needs no order, and sorting a million members costs memory) are taken off.
 */
export function membersSubquery(compiledSql: string): { body: string; settings: string } {
  const at = compiledSql.lastIndexOf(' SETTINGS ')
  let body = at === -1 ? compiledSql : compiledSql.slice(0, at)
  const settings = at === -1 ? '' : compiledSql.slice(at + ' SETTINGS '.length)
  body = body.replace(/ ORDER BY install_uuid\s*$/, '')
  return { body, settings }
}

/** Advertising ids that name no one: iOS gives zeros when the user limited ad tracking. */
const NO_AD_ID = "('', '00000000-0000-0000-0000-000000000000')"

/**
 * One identifier per row, each once (`{"IDFA": …}`, `{"GAID": …}`, `{"EMAIL": …}`,
 * `{"CUSTOMER_ID": …}`), of the audience's member installs:
 *   idfa, gaid   the advertising id the install's SDK last reported, of iOS installs (idfa) or
 *                Android installs (gaid), unless the user limited ad tracking or the id is zeros
 *   email        the `$email` of the member's customer in the org's profile db
 *   customer_id  the member's customer id (installs without one are left out)
 */
export function audienceIdentifierQuery(
  members: { sql: string; params: QueryParams },
  jobType: AudienceJobType,
  ctx: { appId: string; orgProfiledbId: number },
): ExportQuery {
  const { body, settings } = membersSubquery(members.sql)
  const key = JSON.stringify(IDENTIFIER_KEYS[jobType])
  // Each identifier once: GROUP BY rather than DISTINCT, because an aggregation spills to disk
  // past EXPORT_SPILL_BYTES and DISTINCT does not (DISTINCT held ~300 MB for a million ids).
  const line = (expr: string) => `concat('{${key}:', toJSONString(${expr}), '}') AS line`
  const tail = exportSettingsClause(settings)
  const params = { ...members.params, x_app: ctx.appId, x_db: ctx.orgProfiledbId }
  if (jobType === 'idfa' || jobType === 'gaid') {
    const platform =
      jobType === 'idfa'
        ? "(lower(a.platform) IN ('ios', 'ipados', 'iphone os', 'tvos') OR startsWith(lower(a.platform), 'ios'))"
        : "startsWith(lower(a.platform), 'android')"
    return {
      sql: `SELECT ${line('a.advertising_id')}
        FROM (${body}) AS m
        INNER JOIN (SELECT install_uuid, platform, advertising_id, limit_advertising
                    FROM devices FINAL WHERE app_id = {x_app:String}) AS a ON a.install_uuid = m.install_uuid
        WHERE a.advertising_id NOT IN ${NO_AD_ID} AND a.limit_advertising = 0 AND ${platform}
        GROUP BY a.advertising_id${tail}`,
      params,
    }
  }
  if (jobType === 'customer_id')
    return {
      sql: `SELECT ${line('m.customer_id')} FROM (${body}) AS m WHERE m.customer_id != ''
        GROUP BY m.customer_id${tail}`,
      params,
    }
  return {
    sql: `SELECT ${line('p.email')}
      FROM (${body}) AS m
      INNER JOIN (SELECT customer_id, JSONExtractString(attributes, '$email') AS email
                  FROM profiles FINAL WHERE profiledb_id = {x_db:UInt64} AND deleted = 0) AS p
        ON p.customer_id = m.customer_id
      WHERE m.customer_id != '' AND p.email != ''
      GROUP BY p.email${tail}`,
    params,
  }
}

/** The engine's clock, in ms: the as_of of a file. */
export const ENGINE_NOW = 'SELECT toUnixTimestamp64Milli(now64(3)) AS now'

/**
 * Whether any row an export reads was inserted after `asOf`: the minmax indexes on inserted_at
 * skip every granule older than it, so asking costs little however large the tables are.
 */
export function newerThanQuery(
  what:
    | { kind: 'log'; appId: string; hourStart: number }
    | { kind: 'profile'; profiledbId: number; appIds: readonly string[] }
    | { kind: 'changes'; profiledbId: number }
    | { kind: 'audience'; appId: string; profiledbIds: readonly number[] },
  asOf: number,
): ExportQuery {
  const after = `inserted_at > ${ms('asOf')}`
  const any = (sql: string) => `(SELECT count() FROM (${sql} LIMIT 1))`
  switch (what.kind) {
    case 'log':
      return {
        sql: `SELECT ${any(`SELECT 1 FROM raw_log WHERE app_id = {app:String} AND at >= ${ms('from')} AND at < ${ms('to')} AND ${after}`)} AS n`,
        params: { app: what.appId, from: what.hourStart, to: what.hourStart + HOUR_MS, asOf },
      }
    case 'changes':
      return {
        sql: `SELECT ${any(`SELECT 1 FROM profile_changes WHERE profiledb_id = {db:UInt64} AND ${after}`)} AS n`,
        params: { db: what.profiledbId, asOf },
      }
    case 'audience':
      // Server-side events carry the edge's receipt time; SDK data updates devices.
      return {
        sql: `SELECT ${any(`SELECT 1 FROM devices WHERE app_id = {app:String} AND ${after}`)}
                   + ${any(`SELECT 1 FROM events WHERE app_id = {app:String} AND received_at > ${ms('asOf')}`)}
                   + ${any(`SELECT 1 FROM profiles WHERE profiledb_id IN {dbs:Array(UInt64)} AND ${after}`)} AS n`,
        params: { app: what.appId, dbs: [...what.profiledbIds], asOf },
      }
    case 'profile':
      return {
        sql: `SELECT ${any(`SELECT 1 FROM profiles WHERE profiledb_id = {db:UInt64} AND ${after}`)}
                   + ${any(`SELECT 1 FROM customer_devices WHERE app_id IN {apps:Array(String)} AND ${after}`)} AS n`,
        params: { db: what.profiledbId, apps: [...what.appIds], asOf },
      }
  }
}
