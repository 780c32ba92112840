import { buildApnsPayload, isSilent } from './apns-payload.ts'
import type { PushDelivery, PushMessage } from './transport.ts'

/**
 * The FCM HTTP v1 request of one delivery (`POST /v1/projects/<project>/messages:send`, body
 * `{"message": ...}`), built by a pure function.
 *
 * Android (the usual case):
 * - `notification` {title?, body} from the alert; a string alert is the body (Android then shows
 *   the app's name as the title). `subtitle` has no Android field and is left out (the spec shows
 *   it on iOS only). A silent push (alert '') has no `notification`: a data-only message, which
 *   wakes the app instead of showing anything.
 * - `data` holds `android.extra` (ll_deep_link_url, ll_attachment_url, ll_actions, ...). FCM takes
 *   only string values there, so every other value is JSON-encoded: `ll_actions` arrives as the
 *   string `[{"title":"Open","deeplink":"app://x"}]`, a number 3 as "3", true as "true". The SDK
 *   parses ll_actions back from JSON.
 * - `android.priority` is always sent, HIGH for `priority: "high"` and NORMAL otherwise: FCM's own
 *   default is HIGH for notification messages, and the spec says the default behaves as normal.
 *
 * iOS through FCM (an app that sends to its iOS devices by FCM too): no `notification`, and
 * `apns.payload` is exactly the APNs body built by apns-payload.ts, with the matching
 * `apns-push-type` and `apns-priority` headers, so both iOS routes show the same notification.
 */
export interface FcmRequest {
  /** `/v1/projects/<project>/messages:send`, relative to the FCM base URL. */
  path: string
  body: { message: FcmMessage }
}

export interface FcmMessage {
  token: string
  notification?: { title?: string; body: string }
  data?: Record<string, string>
  android?: { priority: 'HIGH' | 'NORMAL' }
  apns?: { headers: Record<string, string>; payload: Record<string, unknown> }
}

export function buildFcmMessage(
  message: PushMessage,
  token: string,
  platform: 'ios' | 'android',
): FcmMessage {
  if (platform === 'ios') {
    const silent = isSilent(message)
    return {
      token,
      apns: {
        headers: { 'apns-push-type': silent ? 'background' : 'alert', 'apns-priority': silent ? '5' : '10' },
        payload: buildApnsPayload(message),
      },
    }
  }
  const out: FcmMessage = { token }
  const { alert } = message
  if (typeof alert === 'string') {
    if (alert !== '') out.notification = { body: alert }
  } else {
    out.notification = { title: alert.title, body: alert.body }
  }
  const data = dataStrings(message.android?.extra)
  if (data) out.data = data
  out.android = { priority: message.android?.priority === 'high' ? 'HIGH' : 'NORMAL' }
  return out
}

export function buildFcmRequest(
  delivery: Pick<PushDelivery, 'pushToken' | 'message' | 'platform'>,
  projectId: string,
): FcmRequest {
  return {
    path: `/v1/projects/${encodeURIComponent(projectId)}/messages:send`,
    body: { message: buildFcmMessage(delivery.message, delivery.pushToken, delivery.platform) },
  }
}

/** FCM data values are strings only: strings as they are, anything else as its JSON. */
export function dataStrings(extra: Record<string, unknown> | undefined): Record<string, string> | undefined {
  if (!extra) return undefined
  const entries = Object.entries(extra).filter(([, v]) => v !== undefined)
  if (entries.length === 0) return undefined
  return Object.fromEntries(entries.map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]))
}
