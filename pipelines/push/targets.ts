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
 * install order (the order of the table's key, so each page is a range read), as columns.
 *
 * Each column comes back as one string, its values joined by newlines, which the engine writes and
 * JSON.parse reads as one string each, split here into the values (about a fifth of the engine's
 * and JavaScript's time for 40,000 JSON strings a page of 10,000; measured at `4402f01`,
 * docs/performance.md, "Push"). A value holding a newline (a customer id may) makes its column
 * split into more values than the page has rows: the page is then read again as arrays.
 */
export async function broadcastPage(
  store: Store,
  appId: string,
  after: string,
  limit: number,
): Promise<DeviceColumns> {
  const params = { app: appId, after, limit, disabled: [...DISABLED_PUSH_STATUS_PREFIXES] }
  const [row] = await store.query<{ n: number | string; i: string; c: string; p: string; t: string }>(
    `SELECT count() AS n, arrayStringConcat(groupArray(install_uuid), '\n') AS i,
            arrayStringConcat(groupArray(customer_id), '\n') AS c,
            arrayStringConcat(groupArray(toString(platform)), '\n') AS p,
            arrayStringConcat(groupArray(push_token), '\n') AS t
     FROM (${pageQuery})`,
    params,
  )
  const n = Number(row?.n ?? 0)
  if (!row || n === 0) return { installs: [], customers: [], platforms: [], tokens: [] }
  const columns = {
    installs: row.i.split('\n'),
    customers: row.c.split('\n'),
    platforms: row.p.split('\n'),
    tokens: row.t.split('\n'),
  }
  if (
    columns.installs.length === n &&
    columns.customers.length === n &&
    columns.platforms.length === n &&
    columns.tokens.length === n
  )
    return columns
  const [arrays] = await store.query<{ i: string[]; c: string[]; p: string[]; t: string[] }>(
    `SELECT groupArray(install_uuid) AS i, groupArray(customer_id) AS c, groupArray(toString(platform)) AS p,
            groupArray(push_token) AS t FROM (${pageQuery})`,
    params,
  )
  return {
    installs: arrays?.i ?? [],
    customers: arrays?.c ?? [],
    platforms: arrays?.p ?? [],
    tokens: arrays?.t ?? [],
  }
}

const pageQuery = `SELECT install_uuid, customer_id, platform, push_token
  FROM devices FINAL
  WHERE app_id = {app:String} AND install_uuid > {after:String} AND ${ENABLED_PUSH}
  ORDER BY install_uuid
  LIMIT {limit:UInt32}`

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
