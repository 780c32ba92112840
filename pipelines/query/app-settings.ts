import type { Store } from '../connectors/store/store.ts'

/** An app's settings the Apps and Query APIs read (schemas/clickhouse/022_app_settings.sql). */
export interface AppSettings {
  app_id: string
  time_zone: string
  icon_url: string
  custom_dimensions: Record<string, string>
}

export const defaultSettings = (appId: string): AppSettings => ({
  app_id: appId,
  time_zone: 'UTC',
  icon_url: '',
  custom_dimensions: {},
})

/** The settings of each app (defaults for an app without a row), in the order asked. */
export async function readAppSettings(store: Store, appIds: readonly string[]): Promise<AppSettings[]> {
  if (appIds.length === 0) return []
  const rows = await store.query<{
    app_id: string
    time_zone: string
    icon_url: string
    custom_dimensions: string
  }>(
    `SELECT app_id, time_zone, icon_url, custom_dimensions FROM app_settings FINAL
     WHERE app_id IN {apps:Array(String)}`,
    { apps: appIds },
  )
  const byApp = new Map(rows.map((r) => [r.app_id, r]))
  return appIds.map((id) => {
    const row = byApp.get(id)
    if (!row) return defaultSettings(id)
    return {
      app_id: id,
      time_zone: row.time_zone || 'UTC',
      icon_url: row.icon_url,
      custom_dimensions: parseLabels(row.custom_dimensions),
    }
  })
}

function parseLabels(text: string): Record<string, string> {
  try {
    const value: unknown = JSON.parse(text)
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return {}
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).filter(
        (e): e is [string, string] => typeof e[1] === 'string',
      ),
    )
  } catch {
    return {}
  }
}
