import type { ProduceMessage } from '../connectors/bus/bus.ts'
import type { PushMessage as WireMessage } from '../../schemas/push.ts'
import type { PushMessage, PushPlatform } from './transport.ts'

// The edge's normalised message is the transport port's message: checked here, at compile time.
const _sameMessage: (m: WireMessage) => PushMessage = (m) => m

/** One install a batch delivers to: [install_uuid, customer_id, platform as the SDK said it, push token, message]. */
export type BatchTarget = [
  install: string,
  customer: string,
  platform: string,
  token: string,
  message: number,
]

/** Devices as columns: one array per field, the same length, position i is one device. */
export interface DeviceColumns {
  installs: string[]
  customers: string[]
  /** The platform as the SDK said it ("iOS", "Android", …). */
  platforms: string[]
  tokens: string[]
}

/** A batch's targets as columns; `message` indexes the batch's `messages`. */
export interface TargetColumns extends DeviceColumns {
  message: number[]
}

export const emptyTargets = (): TargetColumns => ({
  installs: [],
  customers: [],
  platforms: [],
  tokens: [],
  message: [],
})

/** The targets as one tuple each (tests, and reading a version-1 record). */
export function targetRows(t: TargetColumns): BatchTarget[] {
  return t.installs.map((install, i) => [
    install,
    t.customers[i]!,
    t.platforms[i]!,
    t.tokens[i]!,
    t.message[i]!,
  ])
}

/**
 * A batch of deliveries of one request, as the planner puts it on the push-deliveries topic and
 * the sender reads it. Internal to the push pipeline (not a public contract), versioned anyway so
 * a worker of another version dead-letters what it cannot read instead of misreading it.
 *
 * `messages` holds the messages this batch's targets use (`targets.message[i]` indexes it), and
 * `messageIndexes` their positions in the request, recorded in push_deliveries.message_index.
 * The targets travel as columns (version 2): one array per field instead of one array per
 * install, which costs less to encode, decode and hold (5,000 installs are 5 arrays, not 5,001),
 * and lets the file transport and the record read a batch's fields without an object per delivery.
 */
export interface DeliveryBatch {
  v: 2
  /** `${requestId}:${generation}:${page}`: the same on a replay of the planner. */
  batchId: string
  requestId: string
  generation: number
  appId: string
  orgId: number
  campaignKey: string | null
  campaignId: number
  creative: string
  plannedAt: number
  /** Its request's notBefore: the sender holds the batch until then (at most MAX_HOLD_MS). */
  notBefore?: number
  messages: PushMessage[]
  messageIndexes: number[]
  targets: TargetColumns
}

/**
 * The longest a sender holds a batch for its notBefore: campaign slots are handed over a couple
 * of seconds ahead (DISPATCH_AHEAD_MS), and a batch held longer would hold back every app whose
 * deliveries share its partition.
 */
export const MAX_HOLD_MS = 10_000

export const batchId = (requestId: string, generation: number, page: number) =>
  `${requestId}:${generation}:${page}`

/** Keyed by app: one sender owns an app's deliveries, so the per-app send rate holds exactly. */
export function encodeBatch(batch: DeliveryBatch): ProduceMessage {
  return {
    key: batch.appId,
    value: Buffer.from(JSON.stringify(batch)),
    headers: { v: '2', batch: batch.batchId },
  }
}

/**
 * The most bytes one batch record may take on the bus: Kafka refuses records over 1 MB by default
 * (message.max.bytes), and long push tokens, ids or per-customer messages can make a page of
 * 2,000 installs bigger than that.
 */
export const MAX_BATCH_RECORD_BYTES = 900 * 1024

/**
 * A batch as bus records: one, or, when it would pass `maxBytes`, its halves in turn (ids
 * `<batch>.0`, `<batch>.1`, then `<batch>.0.0` … ), each with the messages its targets use. The
 * same batch always splits the same way, so a replayed page gives the same records.
 */
export function encodeBatches(batch: DeliveryBatch, maxBytes = MAX_BATCH_RECORD_BYTES): ProduceMessage[] {
  const record = encodeBatch(batch)
  const n = batch.targets.installs.length
  if (record.value.length <= maxBytes || n <= 1) return [record]
  const half = Math.ceil(n / 2)
  return [
    [0, half],
    [half, n],
  ].flatMap(([from, to], i) => encodeBatches(narrowed(batch, `${batch.batchId}.${i}`, from!, to!), maxBytes))
}

/** The batch with only targets [from, to) and the messages they use. */
function narrowed(batch: DeliveryBatch, batchId: string, from: number, to: number): DeliveryBatch {
  const local = new Map<number, number>()
  const messages: DeliveryBatch['messages'] = []
  const messageIndexes: number[] = []
  const t = batch.targets
  const message = t.message.slice(from, to).map((m) => {
    let at = local.get(m)
    if (at === undefined) {
      at = messages.length
      local.set(m, at)
      messages.push(batch.messages[m]!)
      messageIndexes.push(batch.messageIndexes[m]!)
    }
    return at
  })
  const targets: TargetColumns = {
    installs: t.installs.slice(from, to),
    customers: t.customers.slice(from, to),
    platforms: t.platforms.slice(from, to),
    tokens: t.tokens.slice(from, to),
    message,
  }
  return { ...batch, batchId, messages, messageIndexes, targets }
}

/**
 * A batch record, version 2 (columns), or version 1 (one array per target, as workers before
 * version 2 wrote it: records of an upgrade's moment are still sent).
 */
export function decodeBatch(
  value: Buffer,
): { ok: true; batch: DeliveryBatch } | { ok: false; reason: string } {
  let parsed: unknown
  try {
    parsed = JSON.parse(value.toString('utf8'))
  } catch {
    return { ok: false, reason: 'delivery batch is not JSON' }
  }
  const b = parsed as
    (Omit<Partial<DeliveryBatch>, 'v' | 'targets'> & { v?: unknown; targets?: unknown }) | null
  if (!b || typeof b !== 'object' || (b.v !== 1 && b.v !== 2))
    return { ok: false, reason: 'not a version-1 or version-2 delivery batch' }
  if (
    typeof b.batchId !== 'string' ||
    typeof b.requestId !== 'string' ||
    typeof b.appId !== 'string' ||
    !Number.isSafeInteger(b.generation) ||
    !Array.isArray(b.messages) ||
    !Array.isArray(b.messageIndexes) ||
    (b.notBefore !== undefined && !Number.isSafeInteger(b.notBefore)) ||
    (b.v === 1
      ? !Array.isArray(b.targets)
      : !b.targets || typeof b.targets !== 'object' || Array.isArray(b.targets))
  )
    return { ok: false, reason: 'delivery batch lacks its request, app, messages or targets' }
  const targets =
    b.v === 1 ? columnsOfRows(b.targets as unknown[]) : checkedColumns(b.targets as TargetColumns)
  if (!targets) return { ok: false, reason: 'delivery batch holds a malformed target' }
  const messages = b.messages
  for (let i = 0; i < targets.message.length; i++)
    if (messages[targets.message[i]!] === undefined)
      return { ok: false, reason: 'delivery batch holds a malformed target' }
  return { ok: true, batch: { ...(b as DeliveryBatch), v: 2, targets } }
}

function checkedColumns(t: Partial<TargetColumns>): TargetColumns | undefined {
  const { installs, customers, platforms, tokens, message } = t
  if (
    !Array.isArray(installs) ||
    !Array.isArray(customers) ||
    !Array.isArray(platforms) ||
    !Array.isArray(tokens) ||
    !Array.isArray(message)
  )
    return undefined
  const n = installs.length
  if (customers.length !== n || platforms.length !== n || tokens.length !== n || message.length !== n)
    return undefined
  for (let i = 0; i < n; i++)
    if (
      typeof installs[i] !== 'string' ||
      typeof customers[i] !== 'string' ||
      typeof platforms[i] !== 'string' ||
      typeof tokens[i] !== 'string' ||
      typeof message[i] !== 'number'
    )
      return undefined
  return { installs, customers, platforms, tokens, message }
}

function columnsOfRows(rows: unknown[]): TargetColumns | undefined {
  const out = emptyTargets()
  for (const t of rows) {
    if (
      !Array.isArray(t) ||
      t.length !== 5 ||
      typeof t[0] !== 'string' ||
      typeof t[1] !== 'string' ||
      typeof t[2] !== 'string' ||
      typeof t[3] !== 'string' ||
      typeof t[4] !== 'number'
    )
      return undefined
    out.installs.push(t[0])
    out.customers.push(t[1])
    out.platforms.push(t[2])
    out.tokens.push(t[3])
    out.message.push(t[4])
  }
  return out
}

/** The platform of a device as the SDK logged it ("iOS", "Android", …), or undefined when push has none. */
export function pushPlatform(platform: string): PushPlatform | undefined {
  const p = platform.trim().toLowerCase()
  if (p === 'ios' || p === 'ipados' || p === 'iphone os') return 'ios'
  if (p === 'android') return 'android'
  return undefined
}

/**
 * The delivery id a receiver drops repeats by (the port's `${requestId}:${installUuid}`); a request
 * id used again after its 24-hour window is a new request, told apart by its generation.
 */
export const deliveryId = (requestId: string, generation: number, install: string) =>
  generation === 0 ? `${requestId}:${install}` : `${requestId}~${generation}:${install}`
