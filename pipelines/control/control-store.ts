import type { Store } from '../connectors/store/store.ts'
import {
  generateApiKey,
  generateAppKey,
  generateSecret,
  hashSecret,
  SCOPES,
  type Scope,
} from './credentials.ts'
import { Mutex } from './mutex.ts'
import { TtlCache, type TtlCacheOptions } from './ttl-cache.ts'

export interface Org {
  id: number
  name: string
  profiledb_id: number
}

export interface App {
  app_id: string
  org_id: number
  name: string
  profiledb_id: number
}

export interface ApiKeyRecord {
  api_key: string
  org_id: number
  secret_hash: string
  scopes: Scope[]
  revoked: boolean
}

export interface ProfileDb {
  id: number
  org_id: number
  /** Empty for the org-level profile db. */
  app_id: string
}

/**
 * No app id (at most 128 characters, see schemas/admin.ts) or API key (24) is longer: a longer one
 * is unknown without a look-up, and the cache never holds a client's kilobytes-long guesses.
 */
const MAX_ID_LENGTH = 128

export class AppIdTakenError extends Error {
  override name = 'AppIdTakenError'
}

/**
 * Orgs, apps, API keys and profile dbs: the control plane, kept in ClickHouse like everything else.
 * Reads that every request makes (keys, apps) go through a short, bounded TTL cache, which is also
 * what bounds how long a revoked key keeps working on an edge (SLUICE_KEY_CACHE_SECONDS).
 *
 * Integer ids are allocated as max+1 under an in-process lock: run admin writes through one
 * process at a time (the embedded process, or one edge in distributed mode).
 */
export class ControlStore {
  private readonly store: Store
  private readonly allocation = new Mutex()
  private readonly keyCache: TtlCache<ApiKeyRecord | undefined>
  private readonly appCache: TtlCache<App | undefined>

  constructor(store: Store, cacheTtlMs = 5000, cache: TtlCacheOptions = {}) {
    this.store = store
    this.keyCache = new TtlCache(cacheTtlMs, cache)
    this.appCache = new TtlCache(cacheTtlMs, cache)
  }

  createOrg(name: string): Promise<Org> {
    return this.allocation.run(async () => {
      const id = await this.nextId('orgs')
      const profiledb_id = await this.nextId('profile_dbs')
      const now = Date.now()
      await this.store.insert('profile_dbs', [{ id: profiledb_id, org_id: id, app_id: '', created_at: now }])
      await this.store.insert('orgs', [{ id, name, profiledb_id, created_at: now, version: now }])
      return { id, name, profiledb_id }
    })
  }

  async listOrgs(): Promise<Org[]> {
    const rows = await this.store.query<Org>('SELECT id, name, profiledb_id FROM orgs FINAL ORDER BY id')
    return rows.map(toOrg)
  }

  async getOrg(id: number): Promise<Org | undefined> {
    const rows = await this.store.query<Org>(
      'SELECT id, name, profiledb_id FROM orgs FINAL WHERE id = {id:UInt64}',
      { id },
    )
    return rows[0] ? toOrg(rows[0]) : undefined
  }

  createApp(orgId: number, name: string, appId?: string): Promise<App> {
    return this.allocation.run(async () => {
      const app_id = appId ?? generateAppKey()
      if (await this.loadApp(app_id)) throw new AppIdTakenError(`app_id ${app_id} already exists`)
      const profiledb_id = await this.nextId('profile_dbs')
      const now = Date.now()
      await this.store.insert('profile_dbs', [{ id: profiledb_id, org_id: orgId, app_id, created_at: now }])
      await this.store.insert('apps', [
        { app_id, org_id: orgId, name, profiledb_id, created_at: now, deleted: 0, version: now },
      ])
      this.appCache.delete(app_id)
      return { app_id, org_id: orgId, name, profiledb_id }
    })
  }

  async listApps(orgId: number): Promise<App[]> {
    const rows = await this.store.query<App>(
      `SELECT app_id, org_id, name, profiledb_id FROM apps FINAL
       WHERE org_id = {org:UInt64} AND deleted = 0 ORDER BY created_at, app_id`,
      { org: orgId },
    )
    return rows.map(toApp)
  }

  /** Cached: used on every request that names an app. */
  getApp(appId: string): Promise<App | undefined> {
    if (appId.length > MAX_ID_LENGTH) return Promise.resolve(undefined)
    return this.appCache.get(appId, () => this.loadApp(appId))
  }

  async createKey(
    orgId: number,
    scopes: readonly Scope[] = SCOPES,
  ): Promise<{ api_key: string; api_secret: string; scopes: Scope[] }> {
    const api_key = generateApiKey()
    const api_secret = generateSecret()
    const now = Date.now()
    const unique = [...new Set(scopes)]
    await this.store.insert('api_keys', [
      {
        api_key,
        org_id: orgId,
        secret_hash: hashSecret(api_key, api_secret),
        scopes: unique,
        created_at: now,
        revoked: 0,
        revoked_at: null,
        version: now,
      },
    ])
    this.keyCache.delete(api_key)
    return { api_key, api_secret, scopes: unique }
  }

  async listKeys(orgId: number): Promise<{ api_key: string; scopes: Scope[]; revoked: boolean }[]> {
    const rows = await this.store.query<Omit<ApiKeyRecord, 'revoked'> & { revoked: number }>(
      `SELECT api_key, scopes, revoked FROM api_keys FINAL WHERE org_id = {org:UInt64} ORDER BY created_at, api_key`,
      { org: orgId },
    )
    return rows.map((r) => ({ api_key: r.api_key, scopes: r.scopes, revoked: Number(r.revoked) === 1 }))
  }

  /** Returns false when the key does not exist in that org (or is already revoked). */
  async revokeKey(orgId: number, apiKey: string): Promise<boolean> {
    const existing = await this.loadKey(apiKey)
    if (!existing || existing.org_id !== orgId || existing.revoked) return false
    const now = Date.now()
    // A version above the row's own, even if this clock lags the one that created it.
    const version = Math.max(now, (await this.keyVersion(apiKey)) + 1)
    await this.store.insert('api_keys', [
      {
        api_key: apiKey,
        org_id: orgId,
        secret_hash: existing.secret_hash,
        scopes: existing.scopes,
        created_at: now,
        revoked: 1,
        revoked_at: now,
        version,
      },
    ])
    this.keyCache.delete(apiKey)
    return true
  }

  /** Cached for at most the TTL, which bounds how long a revoked key still works. */
  getKey(apiKey: string): Promise<ApiKeyRecord | undefined> {
    if (apiKey.length > MAX_ID_LENGTH) return Promise.resolve(undefined)
    return this.keyCache.get(apiKey, () => this.loadKey(apiKey))
  }

  async getProfileDb(id: number): Promise<ProfileDb | undefined> {
    const rows = await this.store.query<ProfileDb>(
      'SELECT id, org_id, app_id FROM profile_dbs FINAL WHERE id = {id:UInt64}',
      { id },
    )
    const row = rows[0]
    return row ? { id: Number(row.id), org_id: Number(row.org_id), app_id: row.app_id } : undefined
  }

  private async loadApp(appId: string): Promise<App | undefined> {
    const rows = await this.store.query<App>(
      'SELECT app_id, org_id, name, profiledb_id FROM apps FINAL WHERE app_id = {app:String} AND deleted = 0',
      { app: appId },
    )
    return rows[0] ? toApp(rows[0]) : undefined
  }

  private async loadKey(apiKey: string): Promise<ApiKeyRecord | undefined> {
    const rows = await this.store.query<Omit<ApiKeyRecord, 'revoked'> & { revoked: number }>(
      'SELECT api_key, org_id, secret_hash, scopes, revoked FROM api_keys FINAL WHERE api_key = {key:String}',
      { key: apiKey },
    )
    const row = rows[0]
    if (!row) return undefined
    return {
      api_key: row.api_key,
      org_id: Number(row.org_id),
      secret_hash: row.secret_hash,
      scopes: row.scopes,
      revoked: Number(row.revoked) === 1,
    }
  }

  private async keyVersion(apiKey: string): Promise<number> {
    const rows = await this.store.query<{ v: string }>(
      'SELECT max(version) AS v FROM api_keys WHERE api_key = {key:String}',
      { key: apiKey },
    )
    return Number(rows[0]?.v ?? 0)
  }

  private async nextId(table: 'orgs' | 'profile_dbs'): Promise<number> {
    const rows = await this.store.query<{ next: string }>(`SELECT max(id) + 1 AS next FROM ${table}`)
    return Number(rows[0]?.next ?? 1)
  }
}

const toOrg = (r: Org): Org => ({ id: Number(r.id), name: r.name, profiledb_id: Number(r.profiledb_id) })
const toApp = (r: App): App => ({
  app_id: r.app_id,
  org_id: Number(r.org_id),
  name: r.name,
  profiledb_id: Number(r.profiledb_id),
})
