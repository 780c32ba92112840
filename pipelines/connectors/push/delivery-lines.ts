import { randomBytes } from 'node:crypto'
import type { PushDelivery } from '../../push/transport.ts'
import { deliveryRecord } from './delivery-record.ts'

/** The fields of a delivery that differ between the devices one message of one request goes to. */
const VARYING = ['deliveryId', 'installUuid', 'customerId', 'pushToken'] as const
type Varying = (typeof VARYING)[number]

/**
 * Markers standing for the varying fields while the shared record is serialised once. A random
 * part per process makes them unguessable, and the template is refused (undefined) unless each
 * marker was found exactly where the record holds it, so a message that happens to contain one
 * gets the per-delivery path, never a wrong line.
 */
const NONCE = randomBytes(12).toString('hex')
export const DELIVERY_LINE_MARKERS: Readonly<Record<Varying, string>> = {
  deliveryId: `\u0000sluice-delivery-id-${NONCE}\u0000`,
  installUuid: `\u0000sluice-install-${NONCE}\u0000`,
  customerId: `\u0000sluice-customer-${NONCE}\u0000`,
  pushToken: `\u0000sluice-token-${NONCE}\u0000`,
}
const BY_MARKER = new Map<string, Varying>(VARYING.map((f) => [JSON.stringify(DELIVERY_LINE_MARKERS[f]), f]))
const MARKERS = new RegExp(
  [...BY_MARKER.keys()].map((m) => m.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&')).join('|'),
  'g',
)

/** The JSON line of one delivery, built from the template's fixed pieces around its own values. */
export type DeliveryLine = (d: Pick<PushDelivery, Varying>) => string

/**
 * A builder of the JSON text of `{...deliveryRecord(d), ...extra}` for every delivery that shares
 * `sample`'s request, campaign key, app, platform, message and attempt: byte for byte what
 * JSON.stringify gives per delivery (test/unit/push-delivery-lines.test.ts checks it on generated
 * messages and ids), for a few string concatenations instead of building the APNs/FCM payload
 * and serialising the whole record each time. A broadcast's deliveries differ only in their ids
 * and token, so the file transport builds one template per batch and platform.
 *
 * Undefined when the record does not serialise to fixed pieces around the markers (a message
 * that contains one): the caller then serialises per delivery.
 */
export function deliveryLineTemplate(
  sample: PushDelivery,
  extra: Readonly<Record<string, unknown>> = {},
): DeliveryLine | undefined {
  const marked: PushDelivery = { ...sample }
  for (const f of VARYING) marked[f] = DELIVERY_LINE_MARKERS[f]
  const text = JSON.stringify({ ...deliveryRecord(marked), ...extra })
  const pieces: string[] = []
  const slots: Varying[] = []
  let from = 0
  for (const match of text.matchAll(MARKERS)) {
    pieces.push(text.slice(from, match.index))
    slots.push(BY_MARKER.get(match[0])!)
    from = match.index + match[0].length
  }
  pieces.push(text.slice(from))
  // Each field where the record puts it, and nowhere else: the token appears twice on Android
  // (the line's push_token and the FCM payload's token), the others once.
  const expected = JSON.stringify({ ...deliveryRecord(sample), ...extra })
  const check = (d: Pick<PushDelivery, Varying>) => fill(pieces, slots, d)
  if (check(sample) !== expected) return undefined
  return check
}

function fill(pieces: readonly string[], slots: readonly Varying[], d: Pick<PushDelivery, Varying>): string {
  let line = pieces[0]!
  for (let i = 0; i < slots.length; i++) line += JSON.stringify(d[slots[i]!]) + pieces[i + 1]!
  return line
}
