import { Notification, type ResponseFailure } from '@parse/node-apn'
import type { Clock } from '../../clock.ts'
import { buildApnsRequest } from '../../push/apns-payload.ts'
import { retryAfterMs } from '../../push/retry-after.ts'
import type { ApnsSettings } from '../../push/transport-settings.ts'
import type { DeliveryOutcome, PushDelivery, PushTransport } from '../../push/transport.ts'
import { createApnsProvider, type ApnsProvider } from './apns-provider.ts'
import { mapLimit } from './map-limit.ts'

export const APNS_HOSTS = { production: 'api.push.apple.com', sandbox: 'api.sandbox.push.apple.com' } as const

/** Where the transport connects instead of Apple (a proxy, or a test's stand-in), and whom it trusts there. */
export interface ApnsEndpoint {
  host: string
  port: number
  /** PEM certificates to trust besides the system's (a stand-in's self-signed one). */
  ca?: Buffer[]
}

/** APNs reasons that mean the token itself is dead: never send to it again (Apple: "don't retry"). */
const DEAD_TOKEN_REASONS = new Set(['BadDeviceToken', 'Unregistered', 'ExpiredToken'])

/**
 * iOS deliveries to Apple's provider API through @parse/node-apn: one HTTP/2 connection per app
 * configuration, token (.p8) auth, each delivery one stream, at most `concurrency` in flight.
 * The library's own retries are off (connectionRetryLimit 0): the pipeline retries with backoff.
 *
 * Answers → outcomes (docs/push.md "Transports"):
 * - 200: sent.
 * - 410 (Unregistered, ExpiredToken) and 400 BadDeviceToken: failed, invalidToken.
 * - 429, 500, 503, 403 ExpiredProviderToken (the library signs a new token), a timeout or a
 *   broken connection: retry, no sooner than Retry-After when the answer has one.
 * - Any other 4xx (BadTopic, DeviceTokenNotForTopic, PayloadTooLarge, InvalidProviderToken, ...):
 *   failed; sending the same request again would be refused alike. DeviceTokenNotForTopic keeps
 *   the token: it usually means a wrong topic in the app's settings, not a dead device.
 */
export class ApnsTransport implements PushTransport {
  readonly kind = 'apns' as const
  private readonly apns: ApnsProvider
  private readonly clock: Pick<Clock, 'now'>

  constructor(
    private readonly settings: ApnsSettings,
    options: { endpoint?: ApnsEndpoint; requestTimeoutMs?: number; clock?: Pick<Clock, 'now'> } = {},
  ) {
    this.clock = options.clock ?? Date
    const endpoint = options.endpoint
    this.apns = createApnsProvider({
      token: { key: settings.key, keyId: settings.key_id, teamId: settings.team_id },
      production: settings.environment === 'production',
      address: endpoint?.host ?? APNS_HOSTS[settings.environment],
      port: endpoint?.port ?? 443,
      ...(endpoint?.ca && { ca: endpoint.ca }),
      connectionRetryLimit: 0,
      requestTimeout: options.requestTimeoutMs ?? 10_000,
    })
  }

  async send(deliveries: readonly PushDelivery[]): Promise<DeliveryOutcome[]> {
    const now = this.clock.now()
    const expiresAt =
      this.settings.expiration_seconds === undefined
        ? undefined
        : Math.floor(now / 1000) + this.settings.expiration_seconds
    return mapLimit(deliveries, this.settings.concurrency, (d) => this.sendOne(d, expiresAt))
  }

  async close(): Promise<void> {
    await this.apns.provider.shutdown()
  }

  private async sendOne(delivery: PushDelivery, expiresAt: number | undefined): Promise<DeliveryOutcome> {
    const request = buildApnsRequest(delivery, {
      topic: this.settings.topic,
      ...(expiresAt !== undefined && { expiresAt }),
    })
    const note = new Notification()
    note.rawPayload = request.body
    note.topic = request.headers['apns-topic']
    note.pushType = request.headers['apns-push-type']
    note.priority = Number(request.headers['apns-priority'])
    note.id = request.headers['apns-id']
    note.collapseId = request.headers['apns-collapse-id']
    if (request.headers['apns-expiration'] !== undefined)
      note.expiry = Number(request.headers['apns-expiration'])
    let result: Awaited<ReturnType<ApnsProvider['provider']['send']>>
    try {
      result = await this.apns.provider.send(note, delivery.pushToken)
    } catch (err) {
      return { status: 'retry', error: `APNs: ${(err as Error).message}` }
    }
    const retryAfter = this.apns.takeRetryAfter(request.headers['apns-id'])
    if (result.sent.length > 0) return { status: 'sent' }
    const failure = result.failed[0]
    return failure
      ? this.outcomeOf(failure, retryAfter)
      : { status: 'retry', error: 'APNs: no answer for the delivery' }
  }

  private outcomeOf(failure: ResponseFailure, retryAfter: string | undefined): DeliveryOutcome {
    const status = typeof failure.status === 'number' ? failure.status : Number(failure.status)
    const reason = failure.response?.reason ?? failure.error?.message ?? 'no reason given'
    if (!Number.isInteger(status) || status === 0)
      return { status: 'retry', error: `APNs: ${failure.error?.message ?? 'request failed'}` }
    const error = `APNs ${status} ${reason}`
    if (status === 410 || (status === 400 && DEAD_TOKEN_REASONS.has(reason)))
      return { status: 'failed', error, invalidToken: true }
    if (status === 429 || status >= 500 || (status === 403 && reason === 'ExpiredProviderToken')) {
      const wait = retryAfterMs(retryAfter, this.clock.now())
      return wait === undefined ? { status: 'retry', error } : { status: 'retry', error, retryAfterMs: wait }
    }
    return { status: 'failed', error }
  }
}
