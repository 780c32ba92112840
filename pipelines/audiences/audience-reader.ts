import type { Store } from '../connectors/store/store.ts'
import type { AudienceRow } from './audience-commands.ts'
import { AUDIENCE_COLUMNS, toAudienceRow, type StoredAudienceRow } from './audience-state.ts'

/** Reads of audiences and their counts (the edge's GETs, the counter's look-ups). */

/** The last computed counts of an audience; times in ms. */
export interface AudienceCounts {
  audience_id: number
  user_count: number
  has_push: number
  seen_last_thirty: number
  calculated_at: number
  /** The latest request the computation answered. */
  requested_at: number
  /** The audience version whose rules were counted. */
  audience_version: number
}

/** Current rows of these audiences (deleted ones included: the caller decides). */
export async function readAudienceRows(store: Store, ids: readonly number[]): Promise<AudienceRow[]> {
  if (ids.length === 0) return []
  const rows = await store.query<StoredAudienceRow>(
    `SELECT ${AUDIENCE_COLUMNS} FROM audiences FINAL WHERE id IN {ids:Array(UInt64)}`,
    { ids: [...ids] },
  )
  return rows.map(toAudienceRow)
}

/** The live (not deleted) audiences of an app, oldest first. Scoped by org and app. */
export async function listLiveAudiences(store: Store, orgId: number, appId: string): Promise<AudienceRow[]> {
  const rows = await store.query<StoredAudienceRow>(
    `SELECT ${AUDIENCE_COLUMNS} FROM audiences FINAL
     WHERE org_id = {org:UInt64} AND app_id = {app:String} AND deleted_at IS NULL ORDER BY id`,
    { org: orgId, app: appId },
  )
  return rows.map(toAudienceRow)
}

/** One live audience of this org and app; undefined for an unknown, deleted or other app's one. */
export async function readLiveAudience(
  store: Store,
  orgId: number,
  appId: string,
  id: number,
): Promise<AudienceRow | undefined> {
  const rows = await store.query<StoredAudienceRow>(
    `SELECT ${AUDIENCE_COLUMNS} FROM audiences FINAL
     WHERE id = {id:UInt64} AND org_id = {org:UInt64} AND app_id = {app:String} AND deleted_at IS NULL`,
    { id, org: orgId, app: appId },
  )
  return rows[0] ? toAudienceRow(rows[0]) : undefined
}

/** The last counts of these audiences (absent: never computed). */
export async function readCounts(store: Store, ids: readonly number[]): Promise<Map<number, AudienceCounts>> {
  if (ids.length === 0) return new Map()
  const rows = await store.query<Record<keyof AudienceCounts, number | string>>(
    `SELECT audience_id, user_count, has_push, seen_last_thirty,
            toUnixTimestamp64Milli(calculated_at) AS calculated_at,
            toUnixTimestamp64Milli(requested_at) AS requested_at, audience_version
     FROM audience_counts FINAL WHERE audience_id IN {ids:Array(UInt64)}`,
    { ids: [...ids] },
  )
  return new Map(
    rows.map((r) => [
      Number(r.audience_id),
      {
        audience_id: Number(r.audience_id),
        user_count: Number(r.user_count),
        has_push: Number(r.has_push),
        seen_last_thirty: Number(r.seen_last_thirty),
        calculated_at: Number(r.calculated_at),
        requested_at: Number(r.requested_at),
        audience_version: Number(r.audience_version),
      },
    ]),
  )
}
