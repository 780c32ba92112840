import { z } from 'zod'
import type { Store } from '../connectors/store/store.ts'
import { stringSet } from '../connectors/store/string-set.ts'
import type { CommandEnvelope, CommandOf, ControlArea, ControlResult } from '../control/control-area.ts'
import {
  maskSettings,
  parseTransportConfig,
  PLATFORM_CHOICES,
  platformMismatch,
  platformsOfChoice,
  PUSH_PLATFORMS,
  TRANSPORT_KINDS,
  type TransportConfig,
} from './transport-settings.ts'
import type { PushPlatform } from './transport.ts'

/**
 * Push transport configuration as control-plane records (docs/control-plane.md "Adding a kind of
 * record"): the payloads of `set-push-transport` and `remove-push-transport`, the state applying
 * them needs, the pure rule, and the reads of that state. The rows go to `push_transports`
 * (migration 014).
 */

const orgId = z.number().int().positive()
const appId = z.string().min(1).max(128)

export const pushTransportPayloads = {
  'set-push-transport': z.object({
    org_id: orgId,
    app_id: appId,
    platform: z.enum(PLATFORM_CHOICES),
    kind: z.enum(TRANSPORT_KINDS),
    /** Validated again when applied (transport-settings.ts); the edge sends them with defaults filled in. */
    settings: z.record(z.string(), z.unknown()),
  }),
  'remove-push-transport': z.object({ org_id: orgId, app_id: appId, platform: z.enum(PLATFORM_CHOICES) }),
} as const

export interface PushTransportRow {
  app_id: string
  platform: PushPlatform
  org_id: number
  kind: TransportConfig['kind']
  /** The settings' JSON (secrets included: the transports need them). */
  settings: string
  updated_at: number
  deleted: 0 | 1
  version: number
}

/** Of an app a command names: its org (undefined when the app does not exist) and its rows' versions. */
export interface PushTransportAppState {
  orgId: number | undefined
  rows: Partial<Record<PushPlatform, { deleted: 0 | 1; version: number }>>
}

/** A transport as the admin API shows it: settings masked, never a secret. */
export interface PushTransportView {
  platform: PushPlatform
  kind: TransportConfig['kind']
  settings: Record<string, unknown>
  updated_at: string
}

type PushTransportCommand = CommandOf<typeof pushTransportPayloads>

const nextVersion = (at: number, previous: number | undefined) => Math.max(at, (previous ?? 0) + 1)
const refused = (status: number, error: string): ControlResult => ({ status, body: { error } })

export const isPushTransportCommand = (c: CommandEnvelope): c is PushTransportCommand =>
  c.kind === 'set-push-transport' || c.kind === 'remove-push-transport'

/**
 * Apply one command to the state (updated in place: the caller's copy) and add its rows to
 * `writes`. Set: the app must exist in the command's org (else 404) and the kind must deliver to
 * the platforms (else 400); it answers 200 with the rows written, masked. Remove: 204, or 404
 * when the app has no transport set on those platforms.
 */
export function applyPushTransportCommand(
  state: Map<string, PushTransportAppState>,
  command: PushTransportCommand,
  writes: { push_transports: PushTransportRow[] },
): ControlResult {
  const { org_id, app_id, platform } = command.payload
  const app = state.get(app_id)
  if (!app || app.orgId !== org_id) return refused(404, `app ${app_id} not found`)
  const platforms = platformsOfChoice(platform)
  const rows = { ...app.rows }
  const { at } = command
  if (command.kind === 'remove-push-transport') {
    const present = platforms.filter((p) => rows[p]?.deleted === 0)
    if (present.length === 0) return refused(404, `no push transport set for ${platform} on app ${app_id}`)
    for (const p of present) {
      const version = nextVersion(at, rows[p]?.version)
      writes.push_transports.push({
        app_id,
        platform: p,
        org_id,
        kind: 'file',
        settings: '{}',
        updated_at: at,
        deleted: 1,
        version,
      })
      rows[p] = { deleted: 1, version }
    }
    state.set(app_id, { ...app, rows })
    return { status: 204, body: null }
  }
  const parsed = parseTransportConfig(command.payload.kind, command.payload.settings)
  if (!parsed.ok) return refused(400, parsed.errors.join('; '))
  const mismatch = platformMismatch(parsed.config.kind, platforms)
  if (mismatch) return refused(400, mismatch)
  const settings = JSON.stringify(parsed.config.settings)
  const views: PushTransportView[] = []
  for (const p of platforms) {
    const version = nextVersion(at, rows[p]?.version)
    writes.push_transports.push({
      app_id,
      platform: p,
      org_id,
      kind: parsed.config.kind,
      settings,
      updated_at: at,
      deleted: 0,
      version,
    })
    rows[p] = { deleted: 0, version }
    views.push(viewOf(p, parsed.config, at))
  }
  state.set(app_id, { ...app, rows })
  return { status: 200, body: { app_id, transports: views } }
}

export function viewOf(
  platform: PushPlatform,
  config: TransportConfig,
  updatedAt: number,
): PushTransportView {
  return {
    platform,
    kind: config.kind,
    settings: maskSettings(config),
    updated_at: new Date(updatedAt).toISOString(),
  }
}

/** The app ids these commands configure. */
export const pushTransportApps = (commands: readonly CommandEnvelope[]): string[] => [
  ...new Set(commands.filter(isPushTransportCommand).map((c) => c.payload.app_id)),
]

/** The state applying needs, for these apps: their org (live apps only) and transport rows. */
export async function readPushTransportState(
  store: Store,
  appIds: readonly string[],
): Promise<Map<string, PushTransportAppState>> {
  const state = new Map<string, PushTransportAppState>()
  if (appIds.length === 0) return state
  const set = stringSet('apps', [...appIds])
  const [apps, rows] = await Promise.all([
    store.query<{ app_id: string; org_id: number | string }>(
      `SELECT app_id, org_id FROM apps FINAL WHERE app_id IN ${set.sql} AND deleted = 0`,
      { apps: set.value },
    ),
    store.query<{ app_id: string; platform: string; deleted: number | string; version: number | string }>(
      `SELECT app_id, platform, deleted, version FROM push_transports FINAL WHERE app_id IN ${set.sql}`,
      { apps: set.value },
    ),
  ])
  for (const id of appIds) state.set(id, { orgId: undefined, rows: {} })
  for (const a of apps) state.get(a.app_id)!.orgId = Number(a.org_id)
  for (const r of rows) {
    const entry = state.get(r.app_id)
    if (entry && (r.platform === 'ios' || r.platform === 'android'))
      entry.rows[r.platform] = { deleted: Number(r.deleted) === 1 ? 1 : 0, version: Number(r.version) }
  }
  return state
}

/** An app's live transport rows, with their settings parsed (secrets included: for the resolver). */
export async function readPushTransports(
  store: Store,
  app: string,
): Promise<{ platform: PushPlatform; config: TransportConfig; version: number; updatedAt: number }[]> {
  const rows = await store.query<{
    platform: string
    kind: string
    settings: string
    version: number | string
    updated_at: number | string
  }>(
    `SELECT platform, kind, settings, version, toUnixTimestamp64Milli(updated_at) AS updated_at
     FROM push_transports FINAL WHERE app_id = {app:String} AND deleted = 0`,
    { app },
  )
  const out: { platform: PushPlatform; config: TransportConfig; version: number; updatedAt: number }[] = []
  for (const r of rows) {
    if (r.platform !== 'ios' && r.platform !== 'android') continue
    const parsed = parseTransportConfig(r.kind, JSON.parse(r.settings))
    // Rows were validated when applied; one that no longer parses (a newer version wrote it) is skipped.
    if (!parsed.ok) continue
    out.push({
      platform: r.platform,
      config: parsed.config,
      version: Number(r.version),
      updatedAt: Number(r.updated_at),
    })
  }
  // iOS first, then Android: the order every list of platforms has.
  return out.sort((a, b) => PUSH_PLATFORMS.indexOf(a.platform) - PUSH_PLATFORMS.indexOf(b.platform))
}

/** Push transports in the control plane (registered by services/control/control-plane.ts). */
export const pushTransportArea: ControlArea<
  'pushTransports',
  typeof pushTransportPayloads,
  ReadonlyMap<string, PushTransportAppState>,
  string[],
  { push_transports: PushTransportRow },
  Map<string, PushTransportAppState>
> = {
  name: 'pushTransports',
  payloads: pushTransportPayloads,
  tables: ['push_transports'],
  needs: pushTransportApps,
  read: readPushTransportState,
  copy: (state) => new Map(state ?? []),
  apply: applyPushTransportCommand,
}
