/**
 * The segmentation scenario's data and audience (pure: SQL text and parameters).
 *
 * The data is generated inside the engine by `INSERT … SELECT … FROM numbers(n)`, every value a
 * seeded hash of (seed, salt, row number): the same seed and sizes give the same rows, and 20M
 * events take seconds instead of the minutes a client-side generator and an INSERT of 20M JSON
 * rows would. Installs are uniform over the table; events and sessions fall on installs with a
 * skew (a few heavy users, many light ones), over the 60 days before the anchor time.
 *
 * The values in the SQL text are the scenario's own constants; everything that varies (seed,
 * sizes, app, times) is a query parameter.
 */

import { EVENT_ATTRIBUTES_SQL, EVENT_NAME_SQL, h, pick, u } from './generated-sql.ts'

export const SEGMENTATION_APP = 'bench-segmentation'
export const APP_PROFILEDB = 2
export const ORG_PROFILEDB = 1

const DAY_MS = 86_400_000
export const SPAN_MS = 60 * DAY_MS

/** A time in the 60 days before the anchor. */
const timeBefore = (salt: string, idx: string) =>
  `fromUnixTimestamp64Milli(toInt64({anchor:Int64} - (${h(salt, idx)} % ${SPAN_MS})), 'UTC')`

/** The install uuid of install number idx, in canonical 8-4-4-4-12 form. */
const installUuid = (idx: string) => {
  const hex = `lower(concat(hex(${h('ia', idx)}), hex(${h('ib', idx)})))`
  return `concat(substring(${hex}, 1, 8), '-', substring(${hex}, 9, 4), '-', substring(${hex}, 13, 4), '-', substring(${hex}, 17, 4), '-', substring(${hex}, 21, 12))`
}
/** 70 % of installs have a customer id. */
const customerOf = (idx: string) => `if(${h('c', idx)} % 10 < 7, concat('cust-', toString(${idx})), '')`
const COUNTRIES = ['us', 'gb', 'fr', 'de', 'br', 'in', 'jp', 'es'] as const
const countryOf = (idx: string) => pick('co', idx, COUNTRIES)
const platformOf = (idx: string) => `if(${h('p', idx)} % 2 = 0, 'iOS', 'Android')`
const appVersionOf = (idx: string) => pick('av', idx, ['1.0.0', '1.1.0', '2.0.0', '2.1.0'])
/** An install number skewed towards the low numbers (heavy users), in [0, installs). */
const skewedInstall = (salt: string, idx: string) =>
  `least(toUInt64(pow(${u(salt, idx)}, 1.6) * {installs:UInt64}), {installs:UInt64} - 1)`

export interface GenerationParams {
  seed: number
  installs: number
  events: number
  sessions: number
  /** The time the data is relative to (ms): events and sessions fall in the 60 days before it. */
  anchor: number
}

export function generationParams(p: GenerationParams): Record<string, unknown> {
  return {
    seed: p.seed,
    installs: p.installs,
    events: p.events,
    sessions: p.sessions,
    anchor: p.anchor,
    app: SEGMENTATION_APP,
    appDb: APP_PROFILEDB,
  }
}

/** The statements that fill devices, profiles, sessions and events, in order. */
export function generationStatements(): { table: string; sql: string }[] {
  const installIdx = 'number'
  const devices = `INSERT INTO devices (app_id, install_uuid, device_uuid, customer_id, last_active_at, app_version,
    os_version, platform, model, country, language, device_timezone, push_token, push_status, version)
  SELECT {app:String}, ${installUuid(installIdx)}, ${installUuid(installIdx)}, ${customerOf(installIdx)},
    ${timeBefore('la', installIdx)}, ${appVersionOf(installIdx)}, ${pick('os', installIdx, ['16.4', '17.1', '13', '14'])},
    ${platformOf(installIdx)}, ${pick('m', installIdx, ['iPhone15,2', 'iPhone14,5', 'SM-S911B', 'Pixel 8'])},
    ${countryOf(installIdx)}, ${pick('l', installIdx, ['en', 'fr', 'de', 'pt', 'ja', 'es'])},
    ${pick('tz', installIdx, ['America/New_York', 'Europe/London', 'Europe/Paris', 'Asia/Tokyo'])},
    if(${h('pt', installIdx)} % 10 < 6, concat('tok-', hex(${h('tk', installIdx)})), ''),
    if(${h('ps', installIdx)} % 10 = 0, 'Disabled', 'Enabled (Prominent)'), 1
  FROM numbers({installs:UInt64})`
  const profiles = `INSERT INTO profiles (profiledb_id, org_id, app_id, customer_id, attributes, attribute_types, email,
    deleted, updated_at, source_partition, source_offset, version)
  SELECT {appDb:UInt64}, 1, {app:String}, ${customerOf(installIdx)},
    concat('{"tier":"', ${pick('t', installIdx, ['gold', 'silver', 'bronze', 'none'])}, '","age":', toString(18 + ${h('age', installIdx)} % 60), '}'),
    map('tier', 'string', 'age', 'integer'), '', 0, fromUnixTimestamp64Milli({anchor:Int64}, 'UTC'), 0, 0, 1
  FROM numbers({installs:UInt64}) WHERE ${h('c', installIdx)} % 10 < 7`
  const sIdx = skewedInstall('si', 'number')
  const sessions = `INSERT INTO sessions (app_id, session_uuid, install_uuid, customer_id, started_at, app_ver, os_ver,
    platform, country)
  SELECT {app:String}, concat('s-', hex(${h('su', 'number')}), '-', toString(number)), ${installUuid('i')},
    ${customerOf('i')}, ${timeBefore('st', 'number')}, ${appVersionOf('i')}, '17.1', ${platformOf('i')}, ${countryOf('i')}
  FROM (SELECT number, ${sIdx} AS i FROM numbers({sessions:UInt64}))`
  const eIdx = skewedInstall('ei', 'number')
  const name = EVENT_NAME_SQL
  const attributes = EVENT_ATTRIBUTES_SQL
  const events = `INSERT INTO events (app_id, uuid, customer_id, event_name, event_time, received_at, attributes,
    ltv_change, install_uuid, device_uuid, session_uuid, country, language, app_version, os_version, platform,
    model, device_timezone, source, transaction_id)
  SELECT {app:String}, concat('e-', hex(${h('eu', 'number')}), '-', toString(number)), ${customerOf('i')}, n, t, t,
    ${attributes}, if(n = 'purchase', toInt64(${h('pr', 'number')} % 200) * 100, 0), ${installUuid('i')}, ${installUuid('i')},
    '', ${countryOf('i')}, 'en', ${appVersionOf('i')}, '17.1', ${platformOf('i')}, 'iPhone15,2', 'Europe/Paris', 'sdk', 'bench'
  FROM (
    SELECT number, ${eIdx} AS i, ${h('en', 'number')} % 100 AS r, ${name} AS n, ${timeBefore('et', 'number')} AS t
    FROM numbers({events:UInt64})
  )`
  return [
    { table: 'devices', sql: devices },
    { table: 'profiles', sql: profiles },
    { table: 'sessions', sql: sessions },
    { table: 'events', sql: events },
  ]
}

/** The benched audience: two behavior rules with filters and a profile criterion. */
export const THREE_RULES = {
  behavior_profile_operator: 'and',
  targeting_type: 'install_id',
  behavior: {
    days: 30,
    behavior_rule_operator: 'and',
    rules: [
      {
        rule_type: 'event',
        event_name: 'purchase',
        count: 1,
        count_operator: 'at_least',
        conditions: {
          operator: 'and',
          filters: [{ dimension_name: 'category', operator: 'is one of', values: ['shoes', 'bags'] }],
        },
      },
      {
        rule_type: 'event',
        event_name: 'view_item',
        count: 3,
        count_operator: 'at_least',
        conditions: {
          operator: 'and',
          filters: [{ dimension_name: 'country', operator: 'is one of', values: ['us', 'gb', 'de'] }],
        },
      },
    ],
  },
  profile: {
    operator: 'and',
    criteria: [{ key: 'tier', scope: 'app', operator: 'is one of', values: ['gold', 'silver'] }],
  },
}

/**
 * The same three rules as a person would write them by hand for this data: the app's installs,
 * the events of the two names in the window grouped once per install with a HAVING per rule, the
 * app profiles with the tier, and the installs seen in 30 days. Parameters: app, appDb, from,
 * to, seenFrom (DateTime64 ms).
 */
export const HAND_WRITTEN_SQL = `
SELECT count() AS user_count,
       countIf(d.push_token != '' AND NOT (startsWith(lower(d.push_status), 'disabled')
               OR startsWith(lower(d.push_status), 'denied') OR startsWith(lower(d.push_status), 'opted out')
               OR startsWith(lower(d.push_status), 'opted-out') OR startsWith(lower(d.push_status), 'opted_out'))
               AND d.push_token NOT IN (SELECT push_token FROM invalid_push_tokens WHERE app_id = {app:String})) AS has_push,
       countIf(s.seen = 1) AS seen_last_thirty
FROM (SELECT install_uuid, customer_id, push_token, push_status FROM devices FINAL WHERE app_id = {app:String}) AS d
INNER JOIN (
  SELECT install_uuid FROM events
  WHERE app_id = {app:String} AND event_name IN ('purchase', 'view_item')
    AND event_time >= fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND event_time <= fromUnixTimestamp64Milli({to:Int64}, 'UTC')
  GROUP BY install_uuid
  HAVING countIf(event_name = 'purchase' AND attributes['category'] IN ('shoes', 'bags')) >= 1
     AND countIf(event_name = 'view_item' AND country IN ('us', 'gb', 'de')) >= 3
) AS e ON e.install_uuid = d.install_uuid
INNER JOIN (
  SELECT customer_id FROM profiles FINAL
  WHERE profiledb_id = {appDb:UInt64} AND deleted = 0 AND JSONExtractString(attributes, 'tier') IN ('gold', 'silver')
) AS p ON p.customer_id = d.customer_id
LEFT JOIN (
  SELECT install_uuid, 1 AS seen FROM sessions
  WHERE app_id = {app:String} AND started_at >= fromUnixTimestamp64Milli({seenFrom:Int64}, 'UTC')
    AND started_at <= fromUnixTimestamp64Milli({to:Int64}, 'UTC')
  GROUP BY install_uuid
) AS s ON s.install_uuid = d.install_uuid
WHERE d.customer_id != ''`

export function handWrittenParams(now: number): Record<string, unknown> {
  return {
    app: SEGMENTATION_APP,
    appDb: APP_PROFILEDB,
    from: now - 30 * DAY_MS,
    to: now,
    seenFrom: now - 30 * DAY_MS,
  }
}
