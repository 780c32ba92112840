import type { Bus } from '../connectors/bus/bus.ts'
import type { Store } from '../connectors/store/store.ts'
import { stringSet } from '../connectors/store/string-set.ts'
import type { DeviceDims } from './event-row.ts'

export const customerKey = (appId: string, customerId: string) => `${appId}\n${customerId}`

/** Each customer's last active device in an app, for the given (app, customer) pairs. */
export async function lookupDevices(
  store: Store,
  pairs: readonly { app: string; customer: string }[],
): Promise<Map<string, DeviceDims>> {
  const found = new Map<string, DeviceDims>()
  if (pairs.length === 0) return found
  const wanted = new Set(pairs.map((p) => customerKey(p.app, p.customer)))
  const customers = stringSet('customers', [...new Set(pairs.map((p) => p.customer))])
  const rows = await store.query<DeviceDims & { app_id: string; customer_id: string }>(
    `SELECT app_id, customer_id, install_uuid, device_uuid, session_uuid, country, language, app_version,
            os_version, platform, model, device_timezone
     FROM customer_devices FINAL
     WHERE app_id IN {apps:Array(String)} AND customer_id IN ${customers.sql}`,
    { apps: [...new Set(pairs.map((p) => p.app))], customers: customers.value },
  )
  for (const row of rows) {
    const key = customerKey(row.app_id, row.customer_id)
    if (!wanted.has(key)) continue
    found.set(key, {
      install_uuid: row.install_uuid,
      device_uuid: row.device_uuid,
      session_uuid: row.session_uuid,
      country: row.country,
      language: row.language,
      app_version: row.app_version,
      os_version: row.os_version,
      platform: row.platform,
      model: row.model,
      device_timezone: row.device_timezone,
    })
  }
  return found
}

/**
 * Wait until the SDK pipeline has no backlog, i.e. has applied every SDK upload accepted before
 * now, so that "this customer has no device" is decided on complete data: an app that uploads its
 * SDK sessions and then, a moment later, its server-side events must see them attributed.
 * Gives up after `timeoutMs` (the decision is then made on what is there).
 */
export async function waitForSdkBacklog(
  bus: Bus,
  group: string,
  topic: string,
  timeoutMs: number,
  intervalMs = 50,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const lag = await bus.lag(group, topic).catch(() => 0)
    if (lag === 0) return true
    if (Date.now() >= deadline) return false
    await new Promise((r) => setTimeout(r, intervalMs))
  }
}
