/**
 * The query scenario's data and queries (pure: SQL text and parameters).
 *
 * The data is generated inside the engine, as the segmentation scenario's is (`INSERT … SELECT …
 * FROM numbers(n)`, every value a seeded hash of (seed, salt, row number)), over the 90 days before
 * the anchor time and `apps` apps: installs (each of one app, with its device's country, language,
 * version and platform), sessions on installs with a skew, each with a start and a close in the raw
 * SDK log, and events inside those sessions. The inserts go into `events` and `sessions`, so the
 * rollups fill through their views as they do from the writers.
 *
 * Each query shape is given twice: as the Query API parameters an analyst's script sends, and as the
 * SQL the analyst would write by hand against the raw tables for the same answer.
 */

import { EVENT_ATTRIBUTES_SQL, EVENT_NAME_SQL, h, pick, u } from './generated-sql.ts'

export const QUERY_APPS_PREFIX = 'bench-query-'
/** The app every shape asks about (app 0: its installs are the heavier ones of the skew). */
export const QUERY_APP = `${QUERY_APPS_PREFIX}0`
const DAY_MS = 86_400_000
export const QUERY_SPAN_MS = 90 * DAY_MS
/** The raw log keeps 30 days: only the sessions of the last 29 have their log rows generated. */
const RAW_LOG_MS = 29 * DAY_MS
/** Sessions last 10 s … 30 min; their events fall within the first 10 minutes. */
const SESSION_MAX_MS = 1_800_000

const installUuid = (idx: string) => {
  const hex = `lower(concat(hex(${h('ia', idx)}), hex(${h('ib', idx)})))`
  return `concat(substring(${hex}, 1, 8), '-', substring(${hex}, 9, 4), '-', substring(${hex}, 13, 4), '-', substring(${hex}, 17, 4), '-', substring(${hex}, 21, 12))`
}
const appOf = (i: string) => `concat('${QUERY_APPS_PREFIX}', toString(${i} % {apps:UInt64}))`
const skewedInstall = (salt: string, idx: string) =>
  `least(toUInt64(pow(${u(salt, idx)}, 1.6) * {installs:UInt64}), {installs:UInt64} - 1)`
/** Session s: its install, start and uuid (the events of a session derive them the same way). */
const sessionInstall = (s: string) => skewedInstall('si', s)
const sessionStart = (s: string) =>
  `fromUnixTimestamp64Milli(toInt64({anchor:Int64} - ${SESSION_MAX_MS} - (${h('st', s)} % ${QUERY_SPAN_MS - SESSION_MAX_MS})), 'UTC')`
const sessionUuid = (s: string) => `concat('s-', hex(${h('su', s)}), '-', toString(${s}))`
const device = (i: string) => ({
  country: pick('co', i, ['us', 'gb', 'fr', 'de', 'br', 'in', 'jp', 'es']),
  language: pick('l', i, ['en', 'fr', 'de', 'pt', 'ja', 'es']),
  appVersion: pick('av', i, ['1.0.0', '1.1.0', '2.0.0', '2.1.0']),
  platform: `if(${h('p', i)} % 2 = 0, 'iOS', 'Android')`,
})

export interface QueryGeneration {
  seed: number
  apps: number
  installs: number
  sessions: number
  events: number
  /** The time the data is relative to (ms): everything falls in the 90 days before it. */
  anchor: number
}

export const queryGenerationParams = (g: QueryGeneration): Record<string, unknown> => ({ ...g })

/** The statements that fill sessions, the raw log and events, in order. */
export function queryGenerationStatements(): { table: string; sql: string }[] {
  const d = device('i')
  const sessions = `INSERT INTO sessions (app_id, session_uuid, install_uuid, customer_id, started_at, app_ver, os_ver,
    platform, country)
  SELECT ${appOf('i')}, ${sessionUuid('s')}, ${installUuid('i')}, concat('cust-', toString(i)), ${sessionStart('s')},
    ${d.appVersion}, '17.1', ${d.platform}, ${d.country}
  FROM (SELECT number AS s, ${sessionInstall('number')} AS i FROM numbers({sessions:UInt64}))`
  const rawLog = `INSERT INTO raw_log (app_id, type, uuid, at, install_uuid, device_uuid, session_uuid, customer_id,
    app_ver, platform, country, language, transaction_id, received_at)
  SELECT ${appOf('i')}, type, concat(type, '-', toString(s)),
    if(type = 's', start, start + toIntervalMillisecond(10000 + ${h('len', 's')} % ${SESSION_MAX_MS - 10_000})),
    ${installUuid('i')}, ${installUuid('i')}, ${sessionUuid('s')}, concat('cust-', toString(i)),
    ${d.appVersion}, ${d.platform}, ${d.country}, ${d.language}, 'bench', start
  FROM (SELECT number AS s, ${sessionInstall('number')} AS i, ${sessionStart('number')} AS start FROM numbers({sessions:UInt64}))
  ARRAY JOIN ['s', 'c'] AS type
  WHERE start >= fromUnixTimestamp64Milli(toInt64({anchor:Int64} - ${RAW_LOG_MS}), 'UTC')`
  const name = EVENT_NAME_SQL
  const attributes = EVENT_ATTRIBUTES_SQL
  const events = `INSERT INTO events (app_id, uuid, customer_id, event_name, event_time, received_at, attributes,
    ltv_change, install_uuid, device_uuid, session_uuid, country, language, app_version, os_version, platform,
    model, device_timezone, source, transaction_id)
  SELECT ${appOf('i')}, concat('e-', hex(${h('eu', 'number')}), '-', toString(number)), concat('cust-', toString(i)), n, t, t,
    ${attributes}, if(n = 'purchase', toInt64(${h('pr', 'number')} % 200) * 100, 0), ${installUuid('i')}, ${installUuid('i')},
    ${sessionUuid('s')}, ${d.country}, ${d.language}, ${d.appVersion}, '17.1', ${d.platform}, 'iPhone15,2', 'Europe/Paris',
    'sdk', 'bench'
  FROM (
    SELECT number, s, ${sessionInstall('s')} AS i, ${h('en', 'number')} % 100 AS r, ${name} AS n,
      ${sessionStart('s')} + toIntervalMillisecond(${h('eo', 'number')} % 600000) AS t
    FROM (SELECT number, ${h('es', 'number')} % {sessions:UInt64} AS s FROM numbers({events:UInt64}))
  )`
  return [
    { table: 'sessions', sql: sessions },
    { table: 'raw_log', sql: rawLog },
    { table: 'events', sql: events },
  ]
}

export interface QueryShape {
  name: string
  /** What a script sends to /v1/query. */
  params: Record<string, string>
  /** The analyst's SQL on the raw tables. Parameters: app (String), from (ms, Int64), and `extra`. */
  sql: string
  extra?: Record<string, unknown>
}

const from = `fromUnixTimestamp64Milli({from:Int64}, 'UTC')`
const COMMERCE = ['view_item', 'add_to_cart', 'purchase']
const ENGAGEMENT = ['screen_view', 'search', 'share']
const list = (xs: string[]) => xs.map((x) => `'${x}'`).join(', ')

/**
 * The six shapes. `days` windows count back from the data's anchor; the time zone is UTC. The
 * metric condition's threshold is a tenth of an average day's events of the app and name, so
 * that some rows pass and some do not at either size.
 */
export function queryShapes(threshold: number): QueryShape[] {
  return [
    {
      name: 'users_by_day',
      params: { app_id: QUERY_APP, metrics: 'users', dimensions: 'day', days: '30' },
      sql: `SELECT toString(toDate(t)) AS day, uniqExact(u) AS users FROM (
    SELECT event_time AS t, install_uuid AS u FROM events WHERE app_id = {app:String} AND event_time >= ${from}
    UNION ALL
    SELECT started_at AS t, install_uuid AS u FROM sessions WHERE app_id = {app:String} AND started_at >= ${from}
  ) GROUP BY day ORDER BY day`,
    },
    {
      name: 'occurrences_by_event',
      params: { app_id: QUERY_APP, metrics: 'occurrences', dimensions: 'event_name', days: '90' },
      sql: `SELECT toString(event_name) AS name, count() AS occurrences FROM events
  WHERE app_id = {app:String} AND event_time >= ${from} GROUP BY name ORDER BY name`,
    },
    {
      name: 'sessions_by_week',
      params: {
        app_id: QUERY_APP,
        metrics: 'sessions,average_session_length',
        dimensions: 'week',
        days: '28',
      },
      sql: `SELECT week, count() AS sessions, avgIf(l.length, l.found = 1) AS average_session_length FROM (
    SELECT DISTINCT toString(toMonday(t)) AS week, s FROM (
      SELECT event_time AS t, session_uuid AS s FROM events
      WHERE app_id = {app:String} AND event_time >= ${from} AND session_uuid != ''
      UNION ALL
      SELECT started_at AS t, session_uuid AS s FROM sessions WHERE app_id = {app:String} AND started_at >= ${from}
    )
  ) AS w
  LEFT JOIN (
    SELECT session_uuid, 1 AS found, (toUnixTimestamp64Milli(max(at)) - toUnixTimestamp64Milli(minIf(at, type = 's'))) / 1000 AS length
    FROM raw_log WHERE app_id = {app:String} GROUP BY session_uuid HAVING countIf(type = 's') > 0
  ) AS l ON l.session_uuid = w.s
  GROUP BY week ORDER BY week`,
    },
    {
      name: 'attribute_not_in',
      params: {
        app_id: QUERY_APP,
        metrics: 'occurrences,users',
        dimensions: 'a:category',
        conditions: JSON.stringify({ 'a:category': ['not_in', 'hats', null] }),
        days: '30',
      },
      sql: `SELECT attributes['category'] AS category, count() AS occurrences, uniqExact(install_uuid) AS users
  FROM events WHERE app_id = {app:String} AND event_time >= ${from} AND attributes['category'] NOT IN ('', 'hats')
  GROUP BY category ORDER BY category`,
    },
    {
      name: 'in_groups',
      params: {
        app_id: QUERY_APP,
        metrics: 'occurrences,users',
        dimensions: 'event_name',
        conditions: JSON.stringify({
          event_name: ['in_groups', { Commerce: COMMERCE, Engagement: ENGAGEMENT }],
        }),
        days: '30',
      },
      sql: `SELECT if(event_name IN (${list(COMMERCE)}), 'Commerce', 'Engagement') AS grp,
    count() AS occurrences, uniqExact(install_uuid) AS users
  FROM events WHERE app_id = {app:String} AND event_time >= ${from} AND event_name IN (${list([...COMMERCE, ...ENGAGEMENT])})
  GROUP BY grp ORDER BY grp`,
    },
    {
      name: 'metric_condition',
      params: {
        app_id: QUERY_APP,
        metrics: 'occurrences',
        dimensions: 'day,event_name',
        conditions: JSON.stringify({ occurrences: ['>', threshold] }),
        days: '30',
      },
      sql: `SELECT toString(toDate(event_time)) AS day, toString(event_name) AS name, count() AS occurrences
  FROM events WHERE app_id = {app:String} AND event_time >= ${from}
  GROUP BY day, name HAVING occurrences > {threshold:UInt64} ORDER BY day, name`,
      extra: { threshold },
    },
  ]
}
