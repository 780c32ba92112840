import { createHash, createHmac } from 'node:crypto'
import type { Clock } from '../../clock.ts'
import type { WebhookSettings } from '../../push/transport-settings.ts'
import type { DeliveryOutcome, PushDelivery, PushTransport } from '../../push/transport.ts'
import { retryAfterMs } from '../../push/retry-after.ts'
import { deliveryRecord } from './delivery-record.ts'

export const SIGNATURE_HEADER = 'X-Sluice-Signature'
export const IDEMPOTENCY_HEADER = 'Idempotency-Key'

/** `sha256=<hex HMAC-SHA256 of the body bytes, keyed by the app's webhook secret>` */
export const signBody = (secret: string, body: string | Buffer) =>
  `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`

/**
 * The same key for the same deliveries, whatever their order: the sha256 of their sorted ids.
 * A batch resent after a crash or a retry carries the key of its first try, so the receiver
 * drops it; a batch of other deliveries never shares it.
 */
export const idempotencyKey = (deliveryIds: readonly string[]) =>
  createHash('sha256')
    .update([...deliveryIds].sort().join('\n'))
    .digest('hex')

/**
 * Deliveries POSTed in batches to the app's URL: body `{"deliveries": [...]}` (delivery-record.ts),
 * signed (X-Sluice-Signature) and keyed (Idempotency-Key). One try per batch: the pipeline retries
 * with backoff. A 2xx is sent; 408, 429, 5xx, a timeout or a network error is retry (no sooner
 * than Retry-After); any other answer is failed, since sending the same bytes again would be
 * answered alike.
 */
export class WebhookTransport implements PushTransport {
  readonly kind = 'webhook' as const
  private readonly closing = new AbortController()

  constructor(
    private readonly settings: WebhookSettings,
    private readonly clock: Pick<Clock, 'now'> = Date,
  ) {}

  async send(deliveries: readonly PushDelivery[]): Promise<DeliveryOutcome[]> {
    const batches: PushDelivery[][] = []
    for (let i = 0; i < deliveries.length; i += this.settings.batch_size)
      batches.push(deliveries.slice(i, i + this.settings.batch_size))
    const results = await Promise.all(batches.map((batch) => this.post(batch)))
    return batches.flatMap((batch, i) => batch.map(() => results[i]!))
  }

  async close(): Promise<void> {
    this.closing.abort(new Error('webhook transport closed'))
  }

  private async post(batch: readonly PushDelivery[]): Promise<DeliveryOutcome> {
    const body = JSON.stringify({ deliveries: batch.map(deliveryRecord) })
    let response: Response
    try {
      response = await fetch(this.settings.url, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          'User-Agent': 'sluice-push',
          [SIGNATURE_HEADER]: signBody(this.settings.secret, body),
          [IDEMPOTENCY_HEADER]: idempotencyKey(batch.map((d) => d.deliveryId)),
        },
        body,
        redirect: 'manual',
        signal: AbortSignal.any([AbortSignal.timeout(this.settings.timeout_ms), this.closing.signal]),
      })
      // The body is not used, but reading it frees the connection for the next batch.
      await response.arrayBuffer().catch(() => undefined)
    } catch (err) {
      const timedOut = (err as Error).name === 'TimeoutError'
      return {
        status: 'retry',
        error: timedOut
          ? `webhook timed out after ${this.settings.timeout_ms} ms`
          : `webhook request failed: ${describe(err)}`,
      }
    }
    if (response.ok) return { status: 'sent' }
    const error = `webhook answered ${response.status}`
    if (response.status === 408 || response.status === 429 || response.status >= 500) {
      const wait = retryAfterMs(response.headers.get('retry-after'), this.clock.now())
      return wait === undefined ? { status: 'retry', error } : { status: 'retry', error, retryAfterMs: wait }
    }
    return { status: 'failed', error }
  }
}

/** The cause's message too: fetch says only "fetch failed", its cause says why (ECONNREFUSED, ...). */
function describe(err: unknown): string {
  const e = err as Error & { cause?: { code?: string; message?: string } }
  const cause = e.cause?.code ?? e.cause?.message
  return cause ? `${e.message} (${cause})` : e.message
}
