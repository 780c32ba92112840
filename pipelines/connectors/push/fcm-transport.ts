import { JWT } from 'google-auth-library'
import type { Clock } from '../../clock.ts'
import { buildFcmRequest } from '../../push/fcm-payload.ts'
import { retryAfterMs } from '../../push/retry-after.ts'
import type { FcmSettings } from '../../push/transport-settings.ts'
import type { DeliveryOutcome, PushDelivery, PushTransport } from '../../push/transport.ts'
import { mapLimit } from './map-limit.ts'

export const FCM_SCOPE = 'https://www.googleapis.com/auth/firebase.messaging'
export const FCM_URL = 'https://fcm.googleapis.com'
/** Where google-auth-library sends the service account's signed JWT for an access token. */
export const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token'

/** Where the transport sends instead of Google (a proxy, or a test's stand-ins). */
export interface FcmEndpoints {
  /** Default https://fcm.googleapis.com */
  baseUrl?: string
  /**
   * Default https://oauth2.googleapis.com/token. google-auth-library 10 signs for and posts to that
   * URL whatever the key file's `token_uri` says, so another URL is applied by rewriting the
   * library's own token request (an interceptor on its HTTP client); the JWT still names Google's
   * URL as its audience.
   */
  tokenUrl?: string
}

interface FcmErrorBody {
  error?: {
    code?: number
    status?: string
    message?: string
    details?: { '@type'?: string; errorCode?: string; fieldViolations?: { field?: string }[] }[]
  }
}

const FCM_ERROR_TYPE = 'type.googleapis.com/google.firebase.fcm.v1.FcmError'
const BAD_REQUEST_TYPE = 'type.googleapis.com/google.rpc.BadRequest'

/**
 * Deliveries to FCM HTTP v1, one POST each (the v1 API has no batch send), at most `concurrency`
 * in flight over fetch's kept-alive connections. The OAuth2 access token comes from
 * google-auth-library's JWT client (service-account assertion, scope firebase.messaging), which
 * caches it and renews it before it expires.
 *
 * Answers → outcomes (docs/push.md "Transports"):
 * - 200: sent.
 * - UNREGISTERED (404): failed, invalidToken.
 * - INVALID_ARGUMENT (400) about the token (FcmError detail without field violations, or a
 *   violation of `message.token`): failed, invalidToken. About the payload (a google.rpc.BadRequest
 *   naming another field): failed, the token kept.
 * - QUOTA_EXCEEDED (429), UNAVAILABLE (503), INTERNAL (500), other 5xx, a timeout or a network
 *   error: retry, no sooner than Retry-After.
 * - 401 other than THIRD_PARTY_AUTH_ERROR (the access token was refused): retry, with the token
 *   renewed first.
 * - Anything else (SENDER_ID_MISMATCH, THIRD_PARTY_AUTH_ERROR, 403, ...): failed.
 * An access token that cannot be had attempts nothing: send throws and the pipeline retries the
 * batch.
 */
export class FcmTransport implements PushTransport {
  readonly kind = 'fcm' as const
  private readonly jwt: JWT
  private readonly projectId: string
  private readonly baseUrl: string
  private readonly clock: Pick<Clock, 'now'>
  private readonly timeoutMs: number
  private readonly closing = new AbortController()

  constructor(
    private readonly settings: FcmSettings,
    options: { endpoints?: FcmEndpoints; requestTimeoutMs?: number; clock?: Pick<Clock, 'now'> } = {},
  ) {
    const account = settings.service_account
    this.projectId = settings.project_id ?? account.project_id
    this.baseUrl = (options.endpoints?.baseUrl ?? FCM_URL).replace(/\/+$/, '')
    this.clock = options.clock ?? Date
    this.timeoutMs = options.requestTimeoutMs ?? 10_000
    this.jwt = new JWT({
      email: account.client_email,
      key: account.private_key,
      ...(account.private_key_id !== undefined && { keyId: account.private_key_id }),
      scopes: [FCM_SCOPE],
    })
    const tokenUrl = options.endpoints?.tokenUrl
    if (tokenUrl && tokenUrl !== GOOGLE_TOKEN_URL)
      this.jwt.transporter.interceptors.request.add({
        resolved: async (request) => {
          if (request.url.href === GOOGLE_TOKEN_URL) request.url = new URL(tokenUrl)
          return request
        },
      })
  }

  async send(deliveries: readonly PushDelivery[]): Promise<DeliveryOutcome[]> {
    if (deliveries.length === 0) return []
    let token = await this.accessToken()
    let renewed = false
    return mapLimit(deliveries, this.settings.concurrency, async (d) => {
      const first = await this.sendOne(d, token)
      if (first.status !== 'unauthenticated') return first.outcome
      // The token was refused (revoked, or expired early): renew it once for the whole batch.
      if (!renewed) {
        renewed = true
        this.jwt.credentials = { ...this.jwt.credentials, expiry_date: 1 }
        token = await this.accessToken().catch(() => token)
      }
      return (await this.sendOne(d, token)).outcome
    })
  }

  async close(): Promise<void> {
    this.closing.abort(new Error('fcm transport closed'))
  }

  private async accessToken(): Promise<string> {
    try {
      const { token } = await this.jwt.getAccessToken()
      if (!token) throw new Error('no access token in the answer')
      return token
    } catch (err) {
      // The library's message names the failure (invalid_grant, ...); never the key.
      throw new Error(
        `FCM: no access token for ${this.settings.service_account.client_email}: ${(err as Error).message}`,
      )
    }
  }

  private async sendOne(
    delivery: PushDelivery,
    token: string,
  ): Promise<
    { status: 'done'; outcome: DeliveryOutcome } | { status: 'unauthenticated'; outcome: DeliveryOutcome }
  > {
    const request = buildFcmRequest(delivery, this.projectId)
    let response: Response
    let text: string
    try {
      response = await fetch(`${this.baseUrl}${request.path}`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json; charset=utf-8' },
        body: JSON.stringify(request.body),
        signal: AbortSignal.any([AbortSignal.timeout(this.timeoutMs), this.closing.signal]),
      })
      text = await response.text()
    } catch (err) {
      const timedOut = (err as Error).name === 'TimeoutError'
      const error = timedOut
        ? `FCM timed out after ${this.timeoutMs} ms`
        : `FCM request failed: ${(err as Error).message}`
      return { status: 'done', outcome: { status: 'retry', error } }
    }
    if (response.ok) return { status: 'done', outcome: { status: 'sent' } }
    const body = parse(text)
    const details = body.error?.details ?? []
    const fcmCode = details.find((d) => d['@type'] === FCM_ERROR_TYPE)?.errorCode
    const code = fcmCode ?? body.error?.status ?? 'UNKNOWN'
    const error = `FCM ${response.status} ${code}${body.error?.message ? `: ${body.error.message}` : ''}`
    const wait = retryAfterMs(response.headers.get('retry-after'), this.clock.now())
    const retry: DeliveryOutcome =
      wait === undefined ? { status: 'retry', error } : { status: 'retry', error, retryAfterMs: wait }
    if (code === 'UNREGISTERED') return done({ status: 'failed', error, invalidToken: true })
    if (code === 'INVALID_ARGUMENT') {
      const violations = details
        .filter((d) => d['@type'] === BAD_REQUEST_TYPE)
        .flatMap((d) => d.fieldViolations ?? [])
      const aboutToken =
        violations.length === 0
          ? fcmCode === 'INVALID_ARGUMENT'
          : violations.every((v) => v.field === 'message.token')
      return done(aboutToken ? { status: 'failed', error, invalidToken: true } : { status: 'failed', error })
    }
    if (response.status === 401 && code !== 'THIRD_PARTY_AUTH_ERROR')
      return { status: 'unauthenticated', outcome: retry }
    if (
      response.status === 429 ||
      response.status >= 500 ||
      code === 'QUOTA_EXCEEDED' ||
      code === 'UNAVAILABLE'
    )
      return done(retry)
    return done({ status: 'failed', error })
  }
}

const done = (outcome: DeliveryOutcome) => ({ status: 'done' as const, outcome })

function parse(text: string): FcmErrorBody {
  try {
    const value = JSON.parse(text) as unknown
    return typeof value === 'object' && value !== null ? value : {}
  } catch {
    return {}
  }
}
