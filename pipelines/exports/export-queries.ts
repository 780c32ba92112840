import type { QueryParams } from '../connectors/store/store.ts'
import { HOUR_MS } from './export-kinds.ts'

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
 * `customer_ids` added. FINAL: a row uploaded twice is written once. In the table's order, so
 * the engine reads it in order instead of sorting the hour.
 */
export function logHourQuery(appId: string, hourStart: number): ExportQuery {
  const customer = `JSONExtractString(row, 'customer_id')`
  return {
    sql: `SELECT concat(
        '{"app":', toJSONString(app_id),
        ',"at":', toJSONString(formatDateTime(at, '%Y-%m-%dT%H:%i:%SZ')),
        ',"customer_ids":', if(${customer} = '', '{}', concat('{"customer_id":', toJSONString(${customer}), '}')),
        ',', substring(${WITHOUT_CUSTOMER_ID}, 2))
      FROM raw_log FINAL
      WHERE app_id = {app:String} AND at >= ${ms('from')} AND at < ${ms('to')}
      ORDER BY toStartOfHour(at), type, uuid`,
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
    field('_ll.birthdate', `formatDateTime(assumeNotNull(first_session), '%Y-%m-%d')`, 'first_session IS NOT NULL'),
    field('_ll.last_session_date', `formatDateTime(assumeNotNull(last_session), '%Y-%m-%d')`, 'last_session IS NOT NULL'),
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
      WHERE live = 1 OR (seen = 1 AND (stored = 0 OR last_active_ms > updated_ms))`,
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
      ORDER BY at, seq`,
    params: { db: profiledbId, from, to },
  }
}

/** The engine's clock, in ms: the as_of of a file. */
export const ENGINE_NOW = 'SELECT toUnixTimestamp64Milli(now64(3)) AS now'

/**
 * Whether any row an export reads was inserted after `asOf`: the minmax indexes on inserted_at
 * skip every granule older than it, so asking costs little however large the tables are.
 */
export function newerThanQuery(
  what: { kind: 'log'; appId: string; hourStart: number } | { kind: 'profile'; profiledbId: number; appIds: readonly string[] } | { kind: 'changes'; profiledbId: number },
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
    case 'profile':
      return {
        sql: `SELECT ${any(`SELECT 1 FROM profiles WHERE profiledb_id = {db:UInt64} AND ${after}`)}
                   + ${any(`SELECT 1 FROM customer_devices WHERE app_id IN {apps:Array(String)} AND ${after}`)} AS n`,
        params: { db: what.profiledbId, apps: [...what.appIds], asOf },
      }
  }
}
