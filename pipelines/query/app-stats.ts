import { DateTime } from 'luxon'
import type { CappedReads } from '../connectors/store/capped-reads.ts'
import type { Store } from '../connectors/store/store.ts'

/** What the Apps API shows of apps (docs/query-api.md, "Apps API"), read from the stored data. */

export interface AppRecordRow {
  app_id: string
  name: string
  created_at: number
}

export interface AppStats {
  sessions: number
  closes: number
  users: number
  events: number
  data_points: number
  platforms: string[]
  client_libraries: string[]
  begin_date: string | null
  end_date: string | null
}

/** The org's live apps, oldest first (or the one named). */
export async function readOrgApps(store: Store, orgId: number, appId?: string): Promise<AppRecordRow[]> {
  const rows = await store.query<{ app_id: string; name: string; created_at: number | string }>(
    `SELECT app_id, name, toUnixTimestamp64Milli(created_at) AS created_at FROM apps FINAL
     WHERE org_id = {org:UInt64} AND deleted = 0 ${appId === undefined ? '' : 'AND app_id = {app:String}'}
     ORDER BY created_at, app_id`,
    { org: orgId, ...(appId !== undefined && { app: appId }) },
  )
  return rows.map((r) => ({ app_id: r.app_id, name: r.name, created_at: Number(r.created_at) }))
}

interface StatsRow {
  app_id: string
  events: number | string
  sessions: number | string
  closes: number | string
  users: number | string
  first_ms: number | string
  last_ms: number | string
  platforms: string[]
  libraries: string[]
}

const USER = `if(install_uuid != '', install_uuid, if(customer_id != '', concat('customer:', customer_id), ''))`

/**
 * One query for the stats of every app named: events and sessions (counts, first and last day,
 * platforms), distinct users over both (as the Query API's `users`), and, from the SDK's raw log
 * (kept 30 days), closes and client library versions. Days are in each app's time zone.
 */
export async function readAppStats(
  reads: CappedReads,
  apps: readonly { app_id: string; time_zone: string }[],
): Promise<Map<string, AppStats>> {
  const out = new Map<string, AppStats>()
  if (apps.length === 0) return out
  const rows = await reads.query<StatsRow>(
    `SELECT a.app_id AS app_id, e.events AS events, s.sessions AS sessions, r.closes AS closes, u.users AS users,
            least(if(e.events = 0, 9e15, e.first_ms), if(s.sessions = 0, 9e15, s.first_ms)) AS first_ms,
            greatest(e.last_ms, s.last_ms) AS last_ms,
            arraySort(arrayDistinct(arrayFilter(p -> p != '', arrayConcat(e.platforms, s.platforms)))) AS platforms,
            arraySort(arrayFilter(l -> l != '', r.libraries)) AS libraries
     FROM (SELECT arrayJoin({apps:Array(String)}) AS app_id) AS a
     LEFT JOIN (
       SELECT app_id, count() AS events, toUnixTimestamp64Milli(min(event_time)) AS first_ms,
              toUnixTimestamp64Milli(max(event_time)) AS last_ms, groupUniqArray(toString(platform)) AS platforms
       FROM events WHERE app_id IN {apps:Array(String)} GROUP BY app_id
     ) AS e ON e.app_id = a.app_id
     LEFT JOIN (
       SELECT app_id, count() AS sessions, toUnixTimestamp64Milli(min(started_at)) AS first_ms,
              toUnixTimestamp64Milli(max(started_at)) AS last_ms, groupUniqArray(toString(platform)) AS platforms
       FROM sessions FINAL WHERE app_id IN {apps:Array(String)} GROUP BY app_id
     ) AS s ON s.app_id = a.app_id
     LEFT JOIN (
       SELECT app_id, uniqExact(uid) AS users FROM (
         SELECT app_id, ${USER} AS uid FROM events WHERE app_id IN {apps:Array(String)}
         UNION ALL
         SELECT app_id, ${USER} AS uid FROM sessions FINAL WHERE app_id IN {apps:Array(String)}
       ) WHERE uid != '' GROUP BY app_id
     ) AS u ON u.app_id = a.app_id
     LEFT JOIN (
       SELECT app_id, countIf(type = 'c') AS closes,
              groupUniqArray(JSONExtractString(row, 'library_ver')) AS libraries
       FROM raw_log FINAL WHERE app_id IN {apps:Array(String)} GROUP BY app_id
     ) AS r ON r.app_id = a.app_id
     SETTINGS join_use_nulls = 0`,
    { apps: apps.map((a) => a.app_id) },
  )
  const zoneOf = new Map(apps.map((a) => [a.app_id, a.time_zone]))
  for (const r of rows) {
    const [events, sessions, closes] = [Number(r.events), Number(r.sessions), Number(r.closes)]
    const zone = zoneOf.get(r.app_id) ?? 'UTC'
    const any = events + sessions > 0
    const day = (ms: number) => DateTime.fromMillis(ms, { zone }).toISODate()
    out.set(r.app_id, {
      sessions,
      closes,
      users: Number(r.users),
      events,
      data_points: sessions + closes + events,
      platforms: r.platforms,
      client_libraries: r.libraries,
      begin_date: any ? day(Number(r.first_ms)) : null,
      end_date: any ? day(Number(r.last_ms)) : null,
    })
  }
  return out
}

/** Attributes with more distinct values than this are listed as high-cardinality too. */
export const HIGH_CARDINALITY_VALUES = 1000

export interface EventAttributes {
  event_name: string
  attributes: string[]
  high_cardinality_attributes: string[]
}

/** Each event name of the app with the attribute names its events carried, from `events`. */
export async function readEventAttributes(reads: CappedReads, appId: string): Promise<EventAttributes[]> {
  const rows = await reads.query<{ event_name: string; attributes: string[]; high: string[] }>(
    `SELECT event_name, arraySort(groupArrayIf(k, k != '')) AS attributes,
            arraySort(groupArrayIf(k, k != '' AND n > {high:UInt32})) AS high
     FROM (
       SELECT toString(event_name) AS event_name, k, uniq(attributes[k]) AS n
       FROM events LEFT ARRAY JOIN mapKeys(attributes) AS k
       WHERE app_id = {app:String}
       GROUP BY event_name, k
     )
     GROUP BY event_name ORDER BY event_name`,
    { app: appId, high: HIGH_CARDINALITY_VALUES },
  )
  return rows.map((r) => ({
    event_name: r.event_name,
    attributes: r.attributes,
    high_cardinality_attributes: r.high,
  }))
}
