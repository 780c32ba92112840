import { IANAZone } from 'luxon'
import { z } from 'zod'
import type { Store } from '../connectors/store/store.ts'
import { stringSet } from '../connectors/store/string-set.ts'
import type { CommandEnvelope, CommandOf, ControlArea, ControlResult } from '../control/control-area.ts'
import { appSettingsFields } from '../../schemas/app-settings.ts'

/**
 * An app's settings for the Apps and Query APIs (time zone, icon, custom dimension labels) as
 * control-plane records (docs/control-plane.md "Adding a kind of record"): the payload of
 * `set-app-settings`, the state applying it needs, the pure rule and its read. Rows go to
 * `app_settings` (migration 022). A command changes the fields it names and keeps the others.
 */

export const appSettingsPayloads = {
  'set-app-settings': appSettingsFields.extend({
    org_id: z.number().int().positive(),
    app_id: z.string().min(1).max(128),
  }),
} as const

export interface AppSettingsRow {
  app_id: string
  org_id: number
  time_zone: string
  icon_url: string
  /** JSON object of the labels. */
  custom_dimensions: string
  updated_at: number
  version: number
}

/** Of an app a command names: its org (undefined when it does not exist) and its settings row. */
export interface AppSettingsState {
  orgId: number | undefined
  row: AppSettingsRow | undefined
}

type AppSettingsCommand = CommandOf<typeof appSettingsPayloads>

export const isAppSettingsCommand = (c: CommandEnvelope): c is AppSettingsCommand =>
  c.kind === 'set-app-settings'

export const appSettingsApps = (commands: readonly CommandEnvelope[]) => [
  ...new Set(commands.filter(isAppSettingsCommand).map((c) => c.payload.app_id)),
]

/** The answer's shape: what the admin API shows. */
export function settingsView(
  row: Pick<AppSettingsRow, 'app_id' | 'time_zone' | 'icon_url' | 'custom_dimensions'>,
) {
  return {
    app_id: row.app_id,
    time_zone: row.time_zone,
    icon_url: row.icon_url,
    custom_dimensions: JSON.parse(row.custom_dimensions) as Record<string, string>,
  }
}

/**
 * Apply one command (state updated in place). 404 when the app is not in the command's org; 400
 * for a time zone that is not an IANA zone; else 200 with the settings as they now stand.
 */
export function applyAppSettingsCommand(
  state: Map<string, AppSettingsState>,
  command: AppSettingsCommand,
  writes: { app_settings: AppSettingsRow[] },
): ControlResult {
  const { org_id, app_id, time_zone, icon_url, custom_dimensions } = command.payload
  const app = state.get(app_id)
  if (!app || app.orgId !== org_id) return { status: 404, body: { error: `app ${app_id} not found` } }
  if (time_zone !== undefined && !IANAZone.isValidZone(time_zone))
    return { status: 400, body: { error: `time_zone ${JSON.stringify(time_zone)} is not an IANA time zone` } }
  const previous = app.row
  const labels = previous ? (JSON.parse(previous.custom_dimensions) as Record<string, string>) : {}
  for (const [key, label] of Object.entries(custom_dimensions ?? {})) {
    if (label === null) delete labels[key]
    else labels[key] = label
  }
  const row: AppSettingsRow = {
    app_id,
    org_id,
    time_zone: time_zone ?? previous?.time_zone ?? 'UTC',
    icon_url: icon_url ?? previous?.icon_url ?? '',
    custom_dimensions: JSON.stringify(labels),
    updated_at: command.at,
    version: Math.max(command.at, (previous?.version ?? 0) + 1),
  }
  writes.app_settings.push(row)
  state.set(app_id, { orgId: app.orgId, row })
  return { status: 200, body: settingsView(row) }
}

export async function readAppSettingsState(
  store: Store,
  appIds: readonly string[],
): Promise<Map<string, AppSettingsState>> {
  const state = new Map<string, AppSettingsState>()
  if (appIds.length === 0) return state
  const set = stringSet('apps', [...appIds])
  const [apps, rows] = await Promise.all([
    store.query<{ app_id: string; org_id: number | string }>(
      `SELECT app_id, org_id FROM apps FINAL WHERE app_id IN ${set.sql} AND deleted = 0`,
      { apps: set.value },
    ),
    store.query<
      Omit<AppSettingsRow, 'org_id' | 'version' | 'updated_at'> & {
        org_id: number | string
        version: number | string
        updated_at: number | string
      }
    >(
      `SELECT app_id, org_id, time_zone, icon_url, custom_dimensions,
              toUnixTimestamp64Milli(updated_at) AS updated_at, version
       FROM app_settings FINAL WHERE app_id IN ${set.sql}`,
      { apps: set.value },
    ),
  ])
  for (const id of appIds) state.set(id, { orgId: undefined, row: undefined })
  for (const a of apps) state.get(a.app_id)!.orgId = Number(a.org_id)
  for (const r of rows) {
    const entry = state.get(r.app_id)
    if (entry)
      entry.row = {
        ...r,
        org_id: Number(r.org_id),
        updated_at: Number(r.updated_at),
        version: Number(r.version),
      }
  }
  return state
}

/** App settings in the control plane (registered by services/control/control-plane.ts). */
export const appSettingsArea: ControlArea<
  'appSettings',
  typeof appSettingsPayloads,
  ReadonlyMap<string, AppSettingsState>,
  string[],
  { app_settings: AppSettingsRow },
  Map<string, AppSettingsState>
> = {
  name: 'appSettings',
  payloads: appSettingsPayloads,
  tables: ['app_settings'],
  needs: appSettingsApps,
  read: readAppSettingsState,
  copy: (state) => new Map(state ?? []),
  apply: applyAppSettingsCommand,
}
