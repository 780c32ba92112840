import type { Bus } from '../connectors/bus/bus.ts'
import type { Store } from '../connectors/store/store.ts'
import { stringSet } from '../connectors/store/string-set.ts'
import { DEVICE_DIMENSIONS, type DeviceDims } from './event-row.ts'

export const customerKey = (appId: string, customerId: string) => `${appId}\n${customerId}`

/** Each customer's last active device in an app, for (app, customer) pairs keyed by customerKey. */
export async function lookupDevices(
  store: Store,
  pairs: ReadonlyMap<string, { app: string; customer: string }>,
): Promise<Map<string, DeviceDims>> {
  const found = new Map<string, DeviceDims>()
  if (pairs.size === 0) return found
  const apps = new Set<string>()
  const customerIds = new Set<string>()
  for (const { app, customer } of pairs.values()) {
    apps.add(app)
    customerIds.add(customer)
  }
  const customers = stringSet('customers', [...customerIds])
  const rows = await store.query<DeviceDims & { app_id: string; customer_id: string }>(
    `SELECT app_id, customer_id, ${DEVICE_DIMENSIONS.join(', ')}
     FROM customer_devices FINAL
     WHERE app_id IN {apps:Array(String)} AND customer_id IN ${customers.sql}`,
    { apps: [...apps], customers: customers.value },
  )
  // Rows keep their app_id and customer_id: whoever serialises a device picks DEVICE_DIMENSIONS.
  for (const row of rows) {
    const key = customerKey(row.app_id, row.customer_id)
    if (pairs.has(key)) found.set(key, row)
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
