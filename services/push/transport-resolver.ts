import { readFileSync } from 'node:fs'
import { createTransport, type TransportEndpoints } from '../../pipelines/connectors/push/create-transport.ts'
import { FileTransport } from '../../pipelines/connectors/push/file-transport.ts'
import type { Store } from '../../pipelines/connectors/store/store.ts'
import { readPushTransports } from '../../pipelines/push/transport-commands.ts'
import { PUSH_PLATFORMS } from '../../pipelines/push/transport-settings.ts'
import type { PushPlatform, PushTransport, TransportResolver } from '../../pipelines/push/transport.ts'
import type { Config } from '../config.ts'
import type { Runtime } from '../runtime.ts'
import { TtlCache } from '../control/ttl-cache.ts'

type AppRows = Awaited<ReturnType<typeof readPushTransports>>

/**
 * Which transport delivers an app's pushes to a platform, from the control plane's
 * `push_transports` rows (read through a short cache, so a change reaches every process within
 * the cache's TTL):
 * - an app that set no transport delivers to both platforms through the file transport;
 * - once it set one, only the platforms it set deliver: the others resolve to undefined (the push
 *   endpoint answers 403 naming the platform).
 * One transport per app and platform is kept open (APNs' HTTP/2 connection, FCM's access token)
 * and reused while the row's version is unchanged; when the configuration changes or goes away the
 * old one is closed. The file transport is one for the whole process.
 */
export class ControlTransportResolver implements TransportResolver {
  private readonly rows: TtlCache<AppRows>
  private readonly live = new Map<string, { version: number; transport: PushTransport }>()
  private readonly file: FileTransport
  private closed = false

  constructor(
    private readonly deps: {
      store: Store
      dataDir: string
      endpoints?: TransportEndpoints
      /** How long an app's configuration is served from memory (0: read every time). */
      cacheTtlMs: number
    },
  ) {
    this.rows = new TtlCache(deps.cacheTtlMs)
    this.file = new FileTransport({ dataDir: deps.dataDir })
  }

  async transportFor(appId: string, platform: PushPlatform): Promise<PushTransport | undefined> {
    if (this.closed) throw new Error('transport resolver closed')
    const rows = await this.rowsOf(appId)
    const key = `${platform}:${appId}`
    const row = rows.find((r) => r.platform === platform)
    const current = this.live.get(key)
    if (!row || row.config.kind === 'file') {
      if (current) this.retire(key, current.transport)
      return rows.length === 0 || row ? this.file : undefined
    }
    if (current?.version === row.version) return current.transport
    if (current) this.retire(key, current.transport)
    const transport = createTransport(row.config, { file: this.file, endpoints: this.deps.endpoints ?? {} })
    this.live.set(key, { version: row.version, transport })
    return transport
  }

  async platformsOf(appId: string): Promise<PushPlatform[]> {
    const rows = await this.rowsOf(appId)
    return rows.length === 0
      ? [...PUSH_PLATFORMS]
      : PUSH_PLATFORMS.filter((p) => rows.some((r) => r.platform === p))
  }

  /** Forget the cached configuration of an app (this process just changed it). */
  invalidate(appId: string): void {
    this.rows.delete(appId)
  }

  async close(): Promise<void> {
    this.closed = true
    const open = [...this.live.values()].map((l) => l.transport)
    this.live.clear()
    await Promise.all([...open, this.file].map((t) => t.close().catch(() => undefined)))
  }

  private rowsOf(appId: string): Promise<AppRows> {
    return this.rows.get(appId, () => readPushTransports(this.deps.store, appId))
  }

  /** A replaced transport closes in the background: a send still using it may finish or be told to retry. */
  private retire(key: string, transport: PushTransport): void {
    this.live.delete(key)
    void transport.close().catch(() => undefined)
  }
}

/**
 * The resolver of a Sluice process, from its runtime: the store, the data directory (file
 * transport) and the configuration (SLUICE_APNS_URL, SLUICE_FCM_URL, ...; the control read cache's
 * SLUICE_KEY_CACHE_SECONDS as the time a configuration change takes to reach this process).
 */
export function createTransportResolver(
  runtime: Pick<Runtime, 'store' | 'dataDir' | 'config'>,
): ControlTransportResolver {
  return new ControlTransportResolver({
    store: runtime.store,
    dataDir: runtime.dataDir,
    cacheTtlMs: runtime.config.SLUICE_KEY_CACHE_SECONDS * 1000,
    endpoints: transportEndpoints(runtime.config),
  })
}

export function transportEndpoints(config: Config): TransportEndpoints {
  const endpoints: TransportEndpoints = {
    requestTimeoutMs: config.SLUICE_PUSH_REQUEST_TIMEOUT_MS,
    fcm: { baseUrl: config.SLUICE_FCM_URL, tokenUrl: config.SLUICE_FCM_TOKEN_URL },
  }
  if (config.SLUICE_APNS_URL) {
    const url = new URL(config.SLUICE_APNS_URL)
    endpoints.apns = {
      host: url.hostname,
      port: url.port === '' ? 443 : Number(url.port),
      // Read once at start-up, like the edge's own certificate.
      ...(config.SLUICE_APNS_CA_FILE && { ca: [readFileSync(config.SLUICE_APNS_CA_FILE)] }),
    }
  }
  return endpoints
}
