import type { Store } from '../connectors/store/store.ts'
import { stringSet } from '../connectors/store/string-set.ts'
import type { ControlPlane, CoreNeeds, CoreState, KeyRow } from './apply-command.ts'
import type { Scope } from '../../schemas/admin.ts'

/** Rows to write, per table (the control plane's and its areas'). */
export type ControlWrites = Record<string, unknown[]>

/**
 * The control applier's reads and writes of the control tables (orgs, apps, api_keys, profile_dbs,
 * and each area's through the area). Only the single owner of the control topic calls these, so
 * max(id) read here is not raced by another writer: the next id is max + 1 for as long as this
 * owner holds the partition.
 */
export async function readState(
  store: Store,
  plane: ControlPlane,
  needs: CoreNeeds & Record<string, unknown>,
): Promise<CoreState & Record<string, unknown>> {
  const [[maxIds, orgs, apps, keys], areaStates] = await Promise.all([
    readCore(store, needs),
    Promise.all(plane.areas.map((area) => area.read(store, needs[area.name]))),
  ])
  const state: CoreState & Record<string, unknown> = {
    maxIds: { orgs: Number(maxIds[0]?.orgs ?? 0), profile_dbs: Number(maxIds[0]?.dbs ?? 0) },
    orgs: new Set(orgs.map((r) => Number(r.id))),
    apps: new Map(
      apps.map((a) => [a.app_id, { deleted: Number(a.deleted) === 1 ? 1 : 0, version: Number(a.version) }]),
    ),
    keys: new Map(keys.map((k) => [k.api_key, k])),
  }
  plane.areas.forEach((area, i) => (state[area.name] = areaStates[i] as unknown))
  return state
}

function readCore(store: Store, needs: CoreNeeds) {
  return Promise.all([
    store.query<{ orgs: number | string; dbs: number | string }>(
      'SELECT (SELECT max(id) FROM orgs) AS orgs, (SELECT max(id) FROM profile_dbs) AS dbs',
    ),
    needs.orgIds.length === 0
      ? []
      : store.query<{ id: number | string }>('SELECT DISTINCT id FROM orgs WHERE id IN {ids:Array(UInt64)}', {
          ids: needs.orgIds,
        }),
    needs.appIds.length === 0 ? [] : readApps(store, needs.appIds),
    needs.apiKeys.length === 0 ? [] : readKeys(store, needs.apiKeys),
  ])
}

async function readApps(store: Store, appIds: string[]) {
  const set = stringSet('apps', appIds)
  return store.query<{ app_id: string; deleted: number | string; version: number | string }>(
    `SELECT app_id, deleted, version FROM apps FINAL WHERE app_id IN ${set.sql}`,
    { apps: set.value },
  )
}

async function readKeys(store: Store, apiKeys: string[]): Promise<KeyRow[]> {
  const set = stringSet('keys', apiKeys)
  const rows = await store.query<{
    api_key: string
    org_id: number | string
    secret_hash: string
    scopes: Scope[]
    created_at: number | string
    revoked: number | string
    revoked_at: number | string | null
    version: number | string
  }>(
    `SELECT api_key, org_id, secret_hash, scopes, toUnixTimestamp64Milli(created_at) AS created_at, revoked,
            toUnixTimestamp64Milli(revoked_at) AS revoked_at, version
     FROM api_keys FINAL WHERE api_key IN ${set.sql}`,
    { keys: set.value },
  )
  return rows.map((r) => ({
    api_key: r.api_key,
    org_id: Number(r.org_id),
    secret_hash: r.secret_hash,
    scopes: r.scopes,
    created_at: Number(r.created_at),
    revoked: Number(r.revoked) === 1 ? 1 : 0,
    revoked_at: r.revoked_at === null ? null : Number(r.revoked_at),
    version: Number(r.version),
  }))
}

/**
 * One insert per table, all at once: no order is needed, since the rows are journaled before and
 * no edge answers before all are written. Rewriting rows already written (a journaled command
 * finished again after a crash) changes nothing: each table replaces rows by their key, and the
 * rows are the same, version included.
 */
export async function writeRows(store: Store, plane: ControlPlane, writes: ControlWrites): Promise<void> {
  await Promise.all(
    plane.tables
      .filter((table) => (writes[table]?.length ?? 0) > 0)
      .map((table) => store.insert(table, writes[table] as readonly object[])),
  )
}

export function mergeWrites(plane: ControlPlane, all: readonly ControlWrites[]): ControlWrites {
  const merged: ControlWrites = plane.noWrites()
  for (const w of all)
    for (const table of plane.tables)
      // A journal written before a table existed has no list for it.
      merged[table]!.push(...(w[table] ?? []))
  return merged
}
