import { randomBytes } from 'node:crypto'
import type { PushDelivery } from '../../push/transport.ts'
import { deliveryRecord } from './delivery-record.ts'
import { GrowingBuffer } from '../../text/growing-buffer.ts'

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
  const split = splitLine(sample, extra)
  if (!split) return undefined
  const { pieces, slots } = split
  return (d: Pick<PushDelivery, Varying>) => fill(pieces, slots, d)
}

/** The record's text cut at the markers: pieces[i], value of slots[i], …, the last piece. */
function splitLine(
  sample: PushDelivery,
  extra: Readonly<Record<string, unknown>>,
): { pieces: string[]; slots: Varying[] } | undefined {
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
  if (fill(pieces, slots, sample) !== expected) return undefined
  return { pieces, slots }
}

/**
 * The bytes of a delivery's line (the record's JSON text and a newline) for every delivery that
 * shares `sample`'s request, campaign key, app, platform, message and attempt, written straight
 * into a LineBuffer: the fixed pieces as UTF-8 bytes encoded once, each varying value written as
 * its JSON string. Byte for byte the UTF-8 of deliveryLineTemplate's line (and so of
 * JSON.stringify per delivery; test/unit/push-delivery-lines.test.ts), without a string per line
 * or the encoding of a whole batch's text afterwards. Undefined when deliveryLineTemplate is.
 */
export class DeliveryLineBytes {
  private constructor(
    private readonly pieces: readonly Buffer[],
    /** Per slot, which argument of `write` fills it: 0 delivery id, 1 install, 2 customer, 3 token. */
    private readonly args: readonly number[],
    private readonly fixedBytes: number,
  ) {}

  static of(
    sample: PushDelivery,
    extra: Readonly<Record<string, unknown>> = {},
  ): DeliveryLineBytes | undefined {
    const split = splitLine(sample, extra)
    if (!split) return undefined
    const pieces = split.pieces.map((p, i) => Buffer.from(i === split.pieces.length - 1 ? `${p}\n` : p))
    return new DeliveryLineBytes(
      pieces,
      split.slots.map((f) => VARYING.indexOf(f)),
      pieces.reduce((n, p) => n + p.length, 0),
    )
  }

  /**
   * One line: the fixed pieces around the JSON strings of these values, and a newline. The
   * delivery id is `deliveryIdPrefix + install` (deliveryId()), written without making the string.
   */
  write(out: LineBuffer, deliveryIdPrefix: string, install: string, customer: string, token: string): void {
    const { pieces, args } = this
    out.reserve(this.fixedBytes + 2 * args.length)
    out.append(pieces[0]!)
    for (let i = 0; i < args.length; i++) {
      const a = args[i]
      if (a === 0) out.jsonString(deliveryIdPrefix, install)
      else out.jsonString(a === 1 ? install : a === 2 ? customer : token)
      out.append(pieces[i + 1]!)
    }
  }
}

/** A growing buffer of lines' bytes. */
export class LineBuffer extends GrowingBuffer {
  /**
   * `s + more` as JSON.stringify writes it, in UTF-8. Ids and tokens are printable ASCII with
   * nothing to escape (the usual case): copied unit by unit between the quotes; anything else
   * goes through JSON.stringify.
   */
  jsonString(s: string, more = ''): void {
    const n = s.length
    const m = more.length
    this.reserve(n + m + 2)
    const buffer = this.buffer
    const start = this.at + 1
    let plain = true
    for (let i = 0; i < n; i++) {
      const c = s.charCodeAt(i)
      if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) {
        plain = false
        break
      }
      buffer[start + i] = c
    }
    if (plain)
      for (let i = 0; i < m; i++) {
        const c = more.charCodeAt(i)
        if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) {
          plain = false
          break
        }
        buffer[start + n + i] = c
      }
    if (plain) {
      buffer[this.at] = 0x22
      buffer[start + n + m] = 0x22
      this.at = start + n + m + 1
      return
    }
    const json = JSON.stringify(s + more)
    const bytes = Buffer.byteLength(json, 'utf8')
    this.reserve(bytes)
    this.at += this.buffer.write(json, this.at, 'utf8')
  }
}

function fill(pieces: readonly string[], slots: readonly Varying[], d: Pick<PushDelivery, Varying>): string {
  let line = pieces[0]!
  for (let i = 0; i < slots.length; i++) line += JSON.stringify(d[slots[i]!]) + pieces[i + 1]!
  return line
}
