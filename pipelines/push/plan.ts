import { PUSH_LIMITS, type PushRequestRecord } from '../../schemas/push.ts'
import {
  batchId,
  emptyTargets,
  type DeliveryBatch,
  type DeviceColumns,
  type TargetColumns,
} from './delivery-batch.ts'
import type { PushMessage } from './transport.ts'

/** The latest recorded use of a request id by an app (its push_requests row, FINAL). */
export interface RequestState {
  generation: number
  receivedAt: number
  status: 'planning' | 'planned'
  targeted: number
  unmatched: number
  pages: number
  cursor: string
}

export type PlanDecision =
  | { kind: 'skip'; reason: 'duplicate' | 'planned' }
  | { kind: 'plan'; generation: number; resume: RequestState | undefined }

/**
 * What the planner does with a request record, given the latest recorded use of its id (pure):
 * - planned, and this record came within 24 hours of that use: nothing (a client's retry, a
 *   campaign re-run, or the bus redelivering a record already planned);
 * - still planning (its owner died mid fan-out): resume after the recorded cursor;
 * - older than 24 hours: a new request under the same id, the next generation;
 * - never seen: generation 0.
 */
export function decidePlanning(latest: RequestState | undefined, record: PushRequestRecord): PlanDecision {
  if (!latest) return { kind: 'plan', generation: 0, resume: undefined }
  if (record.receivedAt - latest.receivedAt >= PUSH_LIMITS.dedupeWindowMs)
    return { kind: 'plan', generation: latest.generation + 1, resume: undefined }
  if (latest.status === 'planning') return { kind: 'plan', generation: latest.generation, resume: latest }
  return { kind: 'skip', reason: record.receivedAt === latest.receivedAt ? 'planned' : 'duplicate' }
}

/** A device a request reaches, as the target queries return it. */
export interface TargetDevice {
  install_uuid: string
  customer_id: string
  platform: string
  push_token: string
}

/** Devices of the customers of a customer_id request, with when each was last active. */
export interface CustomerDevice extends TargetDevice {
  last_active_at: number
}

/**
 * The targets of a customer_id request (pure): each message's customer gets its most recently
 * active device with an enabled push token, or all of them with `all_devices`. Sorted by install,
 * as every page is. A customer with no such device is counted as unmatched.
 */
export function customerTargets(
  record: PushRequestRecord,
  devices: readonly CustomerDevice[],
): { targets: { device: TargetDevice; message: number }[]; unmatched: number } {
  const byCustomer = new Map<string, CustomerDevice[]>()
  for (const d of devices) {
    const list = byCustomer.get(d.customer_id)
    if (list) list.push(d)
    else byCustomer.set(d.customer_id, [d])
  }
  const targets: { device: TargetDevice; message: number }[] = []
  const seen = new Set<string>()
  let unmatched = 0
  record.messages.forEach((message, index) => {
    const found = byCustomer.get(customerOf(message)) ?? []
    if (found.length === 0) {
      unmatched++
      return
    }
    const chosen = record.allDevices
      ? found
      : [
          found.reduce((a, b) =>
            b.last_active_at > a.last_active_at ||
            (b.last_active_at === a.last_active_at && b.install_uuid > a.install_uuid)
              ? b
              : a,
          ),
        ]
    for (const device of chosen) {
      // One delivery per (request, install), whatever the request asks.
      if (seen.has(device.install_uuid)) continue
      seen.add(device.install_uuid)
      targets.push({ device, message: index })
    }
  })
  targets.sort((a, b) => compareInstall(a.device.install_uuid, b.device.install_uuid))
  return { targets, unmatched }
}

/**
 * Installs compare as the store orders them: by UTF-8 bytes. UTF-16 order is the same unless a
 * string holds characters beyond the BMP, so only those pay for the byte comparison.
 */
export function compareInstall(a: string, b: string): number {
  if (ASTRAL.test(a) || ASTRAL.test(b)) return Buffer.compare(Buffer.from(a), Buffer.from(b))
  return a < b ? -1 : a > b ? 1 : 0
}

const ASTRAL = /[\uD800-\uDFFF]/

/**
 * One delivery batch (pure): the page's targets, with the messages they use. `page` numbers the
 * request's batches from 0, so a planner that resumes or replays names them the same.
 */
export function buildBatch(
  record: PushRequestRecord,
  generation: number,
  page: number,
  targets: readonly { device: TargetDevice; message: number }[],
  plannedAt: number,
): DeliveryBatch {
  const local = new Map<number, number>()
  const messages: PushMessage[] = []
  const messageIndexes: number[] = []
  const columns = emptyTargets()
  for (const { device, message } of targets) {
    let at = local.get(message)
    if (at === undefined) {
      at = messages.length
      local.set(message, at)
      messages.push(deliveredMessage(record.messages[message]!))
      messageIndexes.push(message)
    }
    columns.installs.push(device.install_uuid)
    columns.customers.push(device.customer_id)
    columns.platforms.push(device.platform)
    columns.tokens.push(device.push_token)
    columns.message.push(at)
  }
  return batchOf(record, generation, page, plannedAt, messages, messageIndexes, columns)
}

/**
 * One delivery batch of a paged request (broadcast, audience, profile, campaign slot: every
 * target gets the request's one message), devices [from, to) of a page read as columns.
 */
export function pageBatch(
  record: PushRequestRecord,
  generation: number,
  page: number,
  devices: DeviceColumns,
  from: number,
  to: number,
  plannedAt: number,
): DeliveryBatch {
  const columns: TargetColumns = {
    installs: devices.installs.slice(from, to),
    customers: devices.customers.slice(from, to),
    platforms: devices.platforms.slice(from, to),
    tokens: devices.tokens.slice(from, to),
    message: new Array<number>(to - from).fill(0),
  }
  return batchOf(record, generation, page, plannedAt, [deliveredMessage(record.messages[0]!)], [0], columns)
}

/** Page devices as columns (the member sources read rows). */
export function deviceColumns(devices: readonly TargetDevice[]): DeviceColumns {
  return {
    installs: devices.map((d) => d.install_uuid),
    customers: devices.map((d) => d.customer_id),
    platforms: devices.map((d) => d.platform),
    tokens: devices.map((d) => d.push_token),
  }
}

function batchOf(
  record: PushRequestRecord,
  generation: number,
  page: number,
  plannedAt: number,
  messages: PushMessage[],
  messageIndexes: number[],
  targets: TargetColumns,
): DeliveryBatch {
  return {
    v: 2,
    batchId: batchId(record.requestId, generation, page),
    requestId: record.requestId,
    generation,
    appId: record.appId,
    orgId: record.orgId,
    campaignKey: record.campaignKey,
    campaignId: record.campaignId ?? 0,
    creative: record.creative ?? '',
    plannedAt,
    ...(record.notBefore !== undefined && { notBefore: record.notBefore }),
    messages,
    messageIndexes,
    targets,
  }
}

/** A request's message without its target: what the transport gets. */
function deliveredMessage(m: PushRequestRecord['messages'][number]): PushMessage {
  const out: PushMessage = { alert: m.alert }
  if (m.ios) out.ios = m.ios
  if (m.android) out.android = m.android
  return out
}

/** Pages of `size` targets (the last may be shorter). */
export function pages<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}

/** The customer id a customer_id request's message targets. */
export const customerOf = (message: { target?: unknown }): string =>
  typeof message.target === 'string' ? message.target : JSON.stringify(message.target ?? null)
