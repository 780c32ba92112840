import type { Store } from '../../pipelines/connectors/store/store.ts'
import { type ControlResult } from '../../pipelines/control/commands.ts'
import { latestJobRuns, type JobRun } from '../../pipelines/control/control-results.ts'
import { effectiveScopes, SCOPES, type Scope } from '../../schemas/admin.ts'
import type { CommandSender } from './command-client.ts'
import { generateApiKey, generateAppKey, generateSecret, hashSecret } from './credentials.ts'
import { TtlCache, type TtlCacheOptions } from './ttl-cache.ts'
import { newCommand, type ControlCommand } from './control-plane.ts'

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

/** A control command the applier refused: its status (404, 409, ...) and message are the answer. */
export class ControlCommandError extends Error {
  override name = 'ControlCommandError'
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message)
  }
}

export class AppIdTakenError extends ControlCommandError {
  override name = 'AppIdTakenError'
  constructor(message: string) {
    super(409, message)
  }
}

/**
 * Orgs, apps, API keys and profile dbs: the control plane, kept in ClickHouse like everything else.
 * Reads that every request makes (keys, apps) go through a short, bounded TTL cache, which is also
 * what bounds how long a revoked key keeps working on an edge (SLUICE_KEY_CACHE_SECONDS).
 *
 * Writes are control commands (DESIGN.md, "The control plane holds across edges"): this edge hands
 * each one to `commands` (the control topic) and answers with what the single applier recorded,
 * so ids and uniqueness hold across any number of edges. A store built without `commands` only
 * reads (an edge's second cache in a test, say).
 */
/** How long past their TTL cached keys and apps answer while the store cannot be read. */
export const STALE_IF_STORE_DOWN_MS = 10 * 60_000

export class ControlStore {
  private readonly store: Store
  private readonly commands: CommandSender | undefined
  private readonly keyCache: TtlCache<ApiKeyRecord | undefined>
  private readonly appCache: TtlCache<App | undefined>

  constructor(store: Store, cacheTtlMs = 5000, cache: TtlCacheOptions = {}, commands?: CommandSender) {
    this.store = store
    this.commands = commands
    // Through a store outage, the keys and apps this edge knew keep working (the bus, not the
    // store, is what a 202 needs); a revocation made meanwhile takes effect once the store is back.
    const caches = { staleIfErrorMs: STALE_IF_STORE_DOWN_MS, ...cache }
    this.keyCache = new TtlCache(cacheTtlMs, caches)
    this.appCache = new TtlCache(cacheTtlMs, caches)
  }

  async createOrg(name: string): Promise<Org> {
    const body = await this.created(newCommand('create-org', { name }, Date.now()))
    return toOrg(body as Org)
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

  /** Throws AppIdTakenError when the app id is taken (by any edge, however close in time). */
  async createApp(orgId: number, name: string, appId?: string): Promise<App> {
    const app_id = appId ?? generateAppKey()
    try {
      const body = await this.created(newCommand('create-app', { org_id: orgId, name, app_id }, Date.now()))
      return toApp(body as App)
    } catch (err) {
      if (err instanceof ControlCommandError && err.status === 409) throw new AppIdTakenError(err.message)
      throw err
    } finally {
      this.appCache.delete(app_id)
    }
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
    // Drawn here: the secret never leaves this edge (the command carries its hash), and a replayed
    // command writes the same key.
    const api_key = generateApiKey()
    const api_secret = generateSecret()
    const payload = {
      org_id: orgId,
      api_key,
      secret_hash: hashSecret(api_key, api_secret),
      scopes: [...new Set(scopes)],
    }
    const body = (await this.created(newCommand('create-key', payload, Date.now()))) as { scopes: Scope[] }
    this.keyCache.delete(api_key)
    return { api_key, api_secret, scopes: body.scopes }
  }

  async listKeys(orgId: number): Promise<{ api_key: string; scopes: Scope[]; revoked: boolean }[]> {
    const rows = await this.store.query<Omit<ApiKeyRecord, 'revoked'> & { revoked: number }>(
      `SELECT api_key, scopes, revoked FROM api_keys FINAL WHERE org_id = {org:UInt64} ORDER BY created_at, api_key`,
      { org: orgId },
    )
    return rows.map((r) => ({
      api_key: r.api_key,
      scopes: effectiveScopes(r.scopes),
      revoked: Number(r.revoked) === 1,
    }))
  }

  /** Returns false when the key does not exist in that org (or is already revoked). */
  async revokeKey(orgId: number, apiKey: string): Promise<boolean> {
    if (apiKey.length > MAX_ID_LENGTH) return false
    const result = await this.submit(newCommand('revoke-key', { org_id: orgId, api_key: apiKey }, Date.now()))
    // This edge stops accepting the key at once; the others within their cache's TTL.
    this.keyCache.delete(apiKey)
    if (result.status === 404) return false
    expectStatus(result, 204)
    return true
  }

  /** The latest run of each scheduled job (when the scheduler and the control applier last worked). */
  listJobRuns(): Promise<JobRun[]> {
    return latestJobRuns(this.store)
  }

  /** getKey's answer if it is cached and fresh (undefined: call getKey). */
  cachedKey(apiKey: string): { value: ApiKeyRecord | undefined } | undefined {
    return this.keyCache.peek(apiKey)
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
      scopes: effectiveScopes(row.scopes),
      revoked: Number(row.revoked) === 1,
    }
  }

  /** Hand a command to the control plane and await its answer (also for siblings: push transports, ...). */
  submit(command: ControlCommand): Promise<ControlResult> {
    if (!this.commands) throw new Error('this ControlStore only reads: it was built without a command sender')
    return this.commands.submit(command)
  }

  /** The body of a 201; a refusal (404, 409, ...) as a ControlCommandError. */
  private async created(command: ControlCommand): Promise<unknown> {
    const result = await this.submit(command)
    expectStatus(result, 201)
    return result.body
  }
}

function expectStatus(result: ControlResult, status: number): void {
  if (result.status === status) return
  const error = (result.body as { error?: unknown } | null)?.error
  throw new ControlCommandError(
    result.status,
    typeof error === 'string' ? error : `control command answered ${result.status}`,
  )
}

const toOrg = (r: Org): Org => ({ id: Number(r.id), name: r.name, profiledb_id: Number(r.profiledb_id) })
const toApp = (r: App): App => ({
  app_id: r.app_id,
  org_id: Number(r.org_id),
  name: r.name,
  profiledb_id: Number(r.profiledb_id),
})
