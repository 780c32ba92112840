import type { Store } from '../../pipelines/connectors/store/store.ts'
import {
  readPushTransports,
  viewOf,
  type PushTransportView,
} from '../../pipelines/push/transport-commands.ts'
import {
  PUSH_PLATFORMS,
  type PlatformChoice,
  type TransportConfig,
} from '../../pipelines/push/transport-settings.ts'
import { ControlCommandError, type App, type ControlStore } from '../control/control-store.ts'
import { newCommand } from '../control/control-plane.ts'

/** The file transport an app delivers through while it has set none. */
export interface DefaultTransportView {
  platform: PushTransportView['platform']
  kind: 'file'
  settings: Record<string, never>
  default: true
}

/** An app's transports as the admin API lists them. */
export interface AppTransports {
  app_id: string
  transports: (PushTransportView | DefaultTransportView)[]
}

/**
 * The edge's side of push transport configuration: writes are control commands (applied by the
 * control plane, pipelines/push/transport-commands.ts), reads go to the store. Nothing returned
 * holds a secret: settings come back masked.
 */
export class PushTransportConfigs {
  constructor(
    private readonly store: Store,
    private readonly control: ControlStore,
  ) {}

  /** Set (create or replace) the app's transport on the platform(s); refusals as ControlCommandError. */
  async set(app: App, platform: PlatformChoice, config: TransportConfig): Promise<AppTransports> {
    const result = await this.control.submit(
      newCommand(
        'set-push-transport',
        { org_id: app.org_id, app_id: app.app_id, platform, kind: config.kind, settings: config.settings },
        Date.now(),
      ),
    )
    if (result.status !== 200) throw refusal(result.status, result.body)
    return result.body as AppTransports
  }

  /** False when the app had no transport set on the platform(s). */
  async remove(app: App, platform: PlatformChoice): Promise<boolean> {
    const result = await this.control.submit(
      newCommand('remove-push-transport', { org_id: app.org_id, app_id: app.app_id, platform }, Date.now()),
    )
    if (result.status === 404) return false
    if (result.status !== 204) throw refusal(result.status, result.body)
    return true
  }

  async list(appId: string): Promise<AppTransports> {
    const rows = await readPushTransports(this.store, appId)
    if (rows.length === 0)
      return {
        app_id: appId,
        transports: PUSH_PLATFORMS.map((platform) => ({
          platform,
          kind: 'file',
          settings: {},
          default: true,
        })),
      }
    return { app_id: appId, transports: rows.map((r) => viewOf(r.platform, r.config, r.updatedAt)) }
  }
}

function refusal(status: number, body: unknown): ControlCommandError {
  const error = (body as { error?: unknown } | null)?.error
  return new ControlCommandError(
    status,
    typeof error === 'string' ? error : `control command answered ${status}`,
  )
}
