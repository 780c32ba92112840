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

/**
 * A batch of deliveries of one request, as the planner puts it on the push-deliveries topic and
 * the sender reads it. Internal to the push pipeline (not a public contract), versioned anyway so
 * a worker of another version dead-letters what it cannot read instead of misreading it.
 *
 * `messages` holds the messages this batch's targets use (a target's last field indexes it), and
 * `messageIndexes` their positions in the request, recorded in push_deliveries.message_index.
 */
export interface DeliveryBatch {
  v: 1
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
  messages: PushMessage[]
  messageIndexes: number[]
  targets: BatchTarget[]
}

export const batchId = (requestId: string, generation: number, page: number) =>
  `${requestId}:${generation}:${page}`

/** Keyed by app: one sender owns an app's deliveries, so the per-app send rate holds exactly. */
export function encodeBatch(batch: DeliveryBatch): ProduceMessage {
  return {
    key: batch.appId,
    value: Buffer.from(JSON.stringify(batch)),
    headers: { v: '1', batch: batch.batchId },
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
  if (record.value.length <= maxBytes || batch.targets.length <= 1) return [record]
  const half = Math.ceil(batch.targets.length / 2)
  return [batch.targets.slice(0, half), batch.targets.slice(half)].flatMap((targets, i) =>
    encodeBatches(narrowed(batch, `${batch.batchId}.${i}`, targets), maxBytes),
  )
}

/** The batch with only these targets and the messages they use. */
function narrowed(batch: DeliveryBatch, batchId: string, targets: readonly BatchTarget[]): DeliveryBatch {
  const local = new Map<number, number>()
  const messages: DeliveryBatch['messages'] = []
  const messageIndexes: number[] = []
  const rows = targets.map((t): BatchTarget => {
    let at = local.get(t[4])
    if (at === undefined) {
      at = messages.length
      local.set(t[4], at)
      messages.push(batch.messages[t[4]]!)
      messageIndexes.push(batch.messageIndexes[t[4]]!)
    }
    return [t[0], t[1], t[2], t[3], at]
  })
  return { ...batch, batchId, messages, messageIndexes, targets: rows }
}

export function decodeBatch(
  value: Buffer,
): { ok: true; batch: DeliveryBatch } | { ok: false; reason: string } {
  let parsed: unknown
  try {
    parsed = JSON.parse(value.toString('utf8'))
  } catch {
    return { ok: false, reason: 'delivery batch is not JSON' }
  }
  const b = parsed as Partial<DeliveryBatch> | null
  if (!b || typeof b !== 'object' || b.v !== 1) return { ok: false, reason: 'not a version-1 delivery batch' }
  if (
    typeof b.batchId !== 'string' ||
    typeof b.requestId !== 'string' ||
    typeof b.appId !== 'string' ||
    !Number.isSafeInteger(b.generation) ||
    !Array.isArray(b.messages) ||
    !Array.isArray(b.messageIndexes) ||
    !Array.isArray(b.targets)
  )
    return { ok: false, reason: 'delivery batch lacks its request, app, messages or targets' }
  for (const t of b.targets) {
    if (
      !Array.isArray(t) ||
      t.length !== 5 ||
      typeof t[0] !== 'string' ||
      typeof t[3] !== 'string' ||
      typeof t[4] !== 'number' ||
      b.messages[t[4]] === undefined
    )
      return { ok: false, reason: 'delivery batch holds a malformed target' }
  }
  return { ok: true, batch: b as DeliveryBatch }
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
