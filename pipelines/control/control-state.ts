import type { Store } from '../connectors/store/store.ts'
import { stringSet } from '../connectors/store/string-set.ts'
import {
  CONTROL_TABLES,
  noWrites,
  type ControlState,
  type ControlWrites,
  type KeyRow,
  type StateNeeds,
} from './apply-command.ts'
import type { Scope } from '../../schemas/admin.ts'
import { readAudienceState } from '../audiences/audience-state.ts'
import { readCampaignState } from '../campaigns/campaign-state.ts'
import { readPushTransportState } from './push-transports.ts'
import { readAppSettingsState } from './app-settings.ts'
import { readExportState } from '../exports/export-control-state.ts'

/**
 * The control applier's reads and writes of the control tables (orgs, apps, api_keys, profile_dbs).
 * Only the single owner of the control topic calls these, so max(id) read here is not raced by
 * another writer: the next id is max + 1 for as long as this owner holds the partition.
 */
export async function readState(store: Store, needs: StateNeeds): Promise<ControlState> {
  const [maxIds, orgs, apps, keys, audiences, campaigns, pushTransports, exports, appSettings] =
    await Promise.all([
      store.query<{ orgs: number | string; dbs: number | string }>(
        'SELECT (SELECT max(id) FROM orgs) AS orgs, (SELECT max(id) FROM profile_dbs) AS dbs',
      ),
      needs.orgIds.length === 0
        ? []
        : store.query<{ id: number | string }>(
            'SELECT DISTINCT id FROM orgs WHERE id IN {ids:Array(UInt64)}',
            {
              ids: needs.orgIds,
            },
          ),
      needs.appIds.length === 0 ? [] : readApps(store, needs.appIds),
      needs.apiKeys.length === 0 ? [] : readKeys(store, needs.apiKeys),
      readAudienceState(store, needs.audienceIds),
      readCampaignState(store, needs.campaigns),
      readPushTransportState(store, needs.pushTransportApps),
      readExportState(store, needs.exports),
      readAppSettingsState(store, needs.appSettingsApps),
    ])
  return {
    maxIds: { orgs: Number(maxIds[0]?.orgs ?? 0), profile_dbs: Number(maxIds[0]?.dbs ?? 0) },
    orgs: new Set(orgs.map((r) => Number(r.id))),
    apps: new Map(
      apps.map((a) => [a.app_id, { deleted: Number(a.deleted) === 1 ? 1 : 0, version: Number(a.version) }]),
    ),
    keys: new Map(keys.map((k) => [k.api_key, k])),
    audiences,
    campaigns,
    pushTransports,
    appSettings,
    exports,
  }
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
export async function writeRows(store: Store, writes: ControlWrites): Promise<void> {
  await Promise.all(
    CONTROL_TABLES.filter((table) => writes[table].length > 0).map((table) =>
      store.insert(table, writes[table]),
    ),
  )
}

export function mergeWrites(all: readonly ControlWrites[]): ControlWrites {
  const merged = noWrites()
  for (const w of all) {
    merged.profile_dbs.push(...w.profile_dbs)
    merged.orgs.push(...w.orgs)
    merged.apps.push(...w.apps)
    merged.api_keys.push(...w.api_keys)
    merged.audiences.push(...w.audiences)
    merged.campaigns.push(...(w.campaigns ?? []))
    // Journals written before push transports existed have no such list.
    merged.push_transports.push(...(w.push_transports ?? []))
    // Journals written before app settings existed have none.
    merged.app_settings.push(...(w.app_settings ?? []))
    // Journals written before exports existed have no such lists.
    merged.export_jobs.push(...(w.export_jobs ?? []))
    merged.export_plans.push(...(w.export_plans ?? []))
  }
  return merged
}
