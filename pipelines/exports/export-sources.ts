import type { Store } from '../connectors/store/store.ts'

/**
 * The audiences an export may name (migration 012's table; none before it exists): live ones,
 * with their org, app and name.
 */
export interface AudienceSource {
  id: number
  org_id: number
  app_id: string
  name: string
  target_rules: string
  version: number
  updated_at: number
}

async function audiencesTableExists(store: Store): Promise<boolean> {
  const [row] = await store.query<{ n: number | string }>(
    "SELECT count() AS n FROM system.tables WHERE database = currentDatabase() AND name = 'audiences'",
  )
  return Number(row?.n ?? 0) > 0
}

export async function readAudiences(store: Store, ids: readonly number[]): Promise<Map<number, AudienceSource>> {
  if (ids.length === 0 || !(await audiencesTableExists(store))) return new Map()
  const rows = await store.query<{
    id: number | string
    org_id: number | string
    app_id: string
    name: string
    target_rules: string
    version: number | string
    updated_at: number | string
  }>(
    `SELECT id, org_id, app_id, name, target_rules, version, toUnixTimestamp64Milli(updated_at) AS updated_at
     FROM audiences FINAL WHERE id IN {ids:Array(UInt64)} AND deleted_at IS NULL`,
    { ids: [...ids] },
  )
  return new Map(
    rows.map((r) => [
      Number(r.id),
      {
        id: Number(r.id),
        org_id: Number(r.org_id),
        app_id: r.app_id,
        name: r.name,
        target_rules: r.target_rules,
        version: Number(r.version),
        updated_at: Number(r.updated_at),
      },
    ]),
  )
}

export async function liveAudienceIds(store: Store, ids: readonly number[]): Promise<Set<number>> {
  return new Set((await readAudiences(store, ids)).keys())
}
