import { createHash } from 'node:crypto'
import type { PushDelivery, PushMessage } from './transport.ts'

/**
 * The APNs request of one delivery (Apple's provider API: `POST /3/device/<token>` over HTTP/2),
 * built by a pure function so the bytes Apple receives are tested without a network.
 *
 * - An alert (string or {title, subtitle, body}) is an `alert` push at priority 10. `aps` carries
 *   the alert, sound, badge, category, `content-available: 1` (default on) and
 *   `mutable-content: 1` (default off).
 * - A silent push (alert '') is a `background` push at priority 5, as Apple requires for
 *   background updates, and its `aps` holds only `content-available: 1`: Apple's background
 *   notifications may carry nothing else there (no alert, sound or badge), so those options are
 *   dropped. `content_available: false` on a silent push leaves `aps` empty.
 * - `ios.extra` keys go beside `aps` (ll_deep_link_url, ll_attachment_url, ...); a key named
 *   `aps` is ignored, the SDK's own dictionary is never overwritten.
 * - `apns-id` is a UUID derived from the delivery id, so a resend of a delivery carries the same
 *   one; `apns-collapse-id` is the request id (hashed when over Apple's 64 bytes), so a delivery
 *   sent twice to one device (a crash mid-batch) shows once.
 */
export interface ApnsRequest {
  /** `/3/device/<token>` */
  path: string
  headers: ApnsHeaders
  body: ApnsBody
}

export interface ApnsHeaders {
  'apns-topic': string
  'apns-push-type': 'alert' | 'background'
  'apns-priority': '10' | '5'
  'apns-id': string
  'apns-collapse-id': string
  /** Seconds since the epoch after which APNs stops trying; absent: the header is not sent. */
  'apns-expiration'?: string
}

export interface Aps {
  alert?: string | { title: string; subtitle?: string; body: string }
  sound?: string
  badge?: number
  category?: string
  'content-available'?: 1
  'mutable-content'?: 1
}

export type ApnsBody = { aps: Aps } & Record<string, unknown>

export interface ApnsRequestOptions {
  /** The app's bundle id: the `apns-topic`. */
  topic: string
  /** Absolute expiry in seconds since the epoch (the caller adds the configured lifetime to now). */
  expiresAt?: number
}

const MAX_COLLAPSE_ID_BYTES = 64

export function isSilent(message: PushMessage): boolean {
  return message.alert === ''
}

export function buildApnsPayload(message: PushMessage): ApnsBody {
  const ios = message.ios ?? {}
  const aps: Aps = {}
  if (isSilent(message)) {
    if (ios.content_available !== false) aps['content-available'] = 1
  } else {
    const { alert } = message
    aps.alert =
      typeof alert === 'string'
        ? alert
        : {
            title: alert.title,
            ...(alert.subtitle !== undefined && { subtitle: alert.subtitle }),
            body: alert.body,
          }
    if (ios.sound !== undefined) aps.sound = ios.sound
    if (ios.badge !== undefined) aps.badge = ios.badge
    if (ios.category !== undefined) aps.category = ios.category
    if (ios.content_available !== false) aps['content-available'] = 1
    if (ios.mutable_content === true) aps['mutable-content'] = 1
  }
  const body: ApnsBody = { aps }
  for (const [key, value] of Object.entries(ios.extra ?? {})) if (key !== 'aps') body[key] = value
  return body
}

export function buildApnsRequest(
  delivery: Pick<PushDelivery, 'deliveryId' | 'requestId' | 'pushToken' | 'message'>,
  options: ApnsRequestOptions,
): ApnsRequest {
  const silent = isSilent(delivery.message)
  const headers: ApnsHeaders = {
    'apns-topic': options.topic,
    'apns-push-type': silent ? 'background' : 'alert',
    'apns-priority': silent ? '5' : '10',
    'apns-id': uuidFrom(delivery.deliveryId),
    'apns-collapse-id': collapseId(delivery.requestId),
  }
  if (options.expiresAt !== undefined) headers['apns-expiration'] = String(Math.floor(options.expiresAt))
  return {
    path: `/3/device/${encodeURIComponent(delivery.pushToken)}`,
    headers,
    body: buildApnsPayload(delivery.message),
  }
}

/** A UUID (version 8 layout: custom) from a stable hash of the value: the same id on every resend. */
export function uuidFrom(value: string): string {
  const hex = createHash('sha256').update(value).digest('hex')
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16)
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`
}

function collapseId(requestId: string): string {
  if (Buffer.byteLength(requestId) <= MAX_COLLAPSE_ID_BYTES) return requestId
  return createHash('sha256').update(requestId).digest('hex')
}
