import type { Store } from '../connectors/store/store.ts'
import type { AudienceRow, AudienceState } from './audience-commands.ts'

/** The columns of `audiences` as rows, times in ms (64-bit integers arrive as strings). */
export const AUDIENCE_COLUMNS = `id, org_id, app_id, name, target_rules, target_rules_given,
  toUnixTimestamp64Milli(created_at) AS created_at, toUnixTimestamp64Milli(updated_at) AS updated_at,
  toUnixTimestamp64Milli(deleted_at) AS deleted_at, version`

export interface StoredAudienceRow {
  id: number | string
  org_id: number | string
  app_id: string
  name: string
  target_rules: string
  target_rules_given: string
  created_at: number | string
  updated_at: number | string
  deleted_at: number | string | null
  version: number | string
}

export function toAudienceRow(r: StoredAudienceRow): AudienceRow {
  return {
    id: Number(r.id),
    org_id: Number(r.org_id),
    app_id: r.app_id,
    name: r.name,
    target_rules: r.target_rules,
    target_rules_given: r.target_rules_given,
    created_at: Number(r.created_at),
    updated_at: Number(r.updated_at),
    deleted_at: r.deleted_at === null ? null : Number(r.deleted_at),
    version: Number(r.version),
  }
}

/**
 * What the control applier reads of audiences before a batch: the highest id ever allocated (over
 * every row: deleted audiences keep theirs, so no id is reused) and the rows the commands name.
 */
export async function readAudienceState(store: Store, ids: readonly number[]): Promise<AudienceState> {
  const [max, rows] = await Promise.all([
    store.query<{ id: number | string }>('SELECT max(id) AS id FROM audiences'),
    ids.length === 0
      ? []
      : store.query<StoredAudienceRow>(
          `SELECT ${AUDIENCE_COLUMNS} FROM audiences FINAL WHERE id IN {ids:Array(UInt64)}`,
          { ids },
        ),
  ])
  return {
    maxId: Number(max[0]?.id ?? 0),
    rows: new Map(rows.map((r) => [Number(r.id), toAudienceRow(r)])),
  }
}
