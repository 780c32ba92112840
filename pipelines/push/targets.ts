import { DISABLED_PUSH_STATUS_PREFIXES } from '../../schemas/audiences.ts'
import type { Store } from '../connectors/store/store.ts'
import type { DeviceColumns } from './delivery-batch.ts'
import type { CustomerDevice } from './plan.ts'

/**
 * "An enabled push token" (migration 011): a token, a status that is not a disabled one (the
 * audiences' has_push rule, DISABLED_PUSH_STATUS_PREFIXES), and not reported dead by a transport.
 * Over `devices` (FINAL) of the app in {app:String}.
 */
const ENABLED_PUSH = `push_token != ''
  AND NOT arrayExists(p -> startsWith(lower(push_status), p), {disabled:Array(String)})
  AND push_token NOT IN (SELECT push_token FROM invalid_push_tokens WHERE app_id = {app:String})`

/**
 * One page of a broadcast: the app's installs with an enabled push token, after `after` in
 * install order (the order of the table's key, so each page is a range read). The page comes back
 * as one row of four arrays, one per column: one JSON.parse of four flat string arrays, the shape
 * the delivery batches carry, instead of an array (or an object) per install.
 */
export async function broadcastPage(
  store: Store,
  appId: string,
  after: string,
  limit: number,
): Promise<DeviceColumns> {
  const [row] = await store.query<{ i: string[]; c: string[]; p: string[]; t: string[] }>(
    `SELECT groupArray(install_uuid) AS i, groupArray(customer_id) AS c, groupArray(toString(platform)) AS p,
            groupArray(push_token) AS t FROM (
       SELECT install_uuid, customer_id, platform, push_token
       FROM devices FINAL
       WHERE app_id = {app:String} AND install_uuid > {after:String} AND ${ENABLED_PUSH}
       ORDER BY install_uuid
       LIMIT {limit:UInt32})`,
    { app: appId, after, limit, disabled: [...DISABLED_PUSH_STATUS_PREFIXES] },
  )
  return { installs: row?.i ?? [], customers: row?.c ?? [], platforms: row?.p ?? [], tokens: row?.t ?? [] }
}

/** Every device with an enabled push token of these customers in the app, with when it was last active. */
export async function customerDevices(
  store: Store,
  appId: string,
  customers: readonly string[],
): Promise<CustomerDevice[]> {
  if (customers.length === 0) return []
  const rows = await store.query<CustomerDevice & { last_active_at: number | string }>(
    `SELECT install_uuid, customer_id, platform, push_token, toUnixTimestamp64Milli(last_active_at) AS last_active_at
     FROM devices FINAL
     WHERE app_id = {app:String} AND customer_id IN {customers:Array(String)} AND ${ENABLED_PUSH}`,
    { app: appId, customers, disabled: [...DISABLED_PUSH_STATUS_PREFIXES] },
  )
  return rows.map((r) => ({ ...r, last_active_at: Number(r.last_active_at) }))
}
