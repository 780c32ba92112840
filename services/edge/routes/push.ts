import { randomUUID } from 'node:crypto'
import { Hono, type Context } from 'hono'
import type { Bus } from '../../../pipelines/connectors/bus/bus.ts'
import type { Store } from '../../../pipelines/connectors/store/store.ts'
import { campaignReport } from '../../../pipelines/push/reports.ts'
import { lastUse } from '../../../pipelines/push/request-log.ts'
import type { PushPlatform, TransportResolver } from '../../../pipelines/push/transport.ts'
import {
  issueLines,
  validatePushRequest,
  type ValidRequest,
} from '../../../pipelines/push/validate-request.ts'
import {
  encodePushRequest,
  PUSH_LIMITS,
  QUEUED_MESSAGE,
  type PushRequestRecord,
  type TargetType,
} from '../../../schemas/push.ts'
import type { App, ControlStore } from '../../control/control-store.ts'
import {
  badRequest,
  forbidden,
  notFound,
  payloadTooLarge,
  SluiceError,
  tooManyRequests,
} from '../../shared/errors.ts'
import type { Metrics } from '../../shared/metrics.ts'
import type { EdgeEnv } from '../env.ts'
import { apiAuth } from '../middleware/api-auth.ts'
import { TokenBuckets } from '../middleware/rate-limit.ts'
import { CampaignKeyCap } from '../push/campaign-keys.ts'
import { RecentRequests } from '../push/recent-requests.ts'
import { readBoundedBody } from '../read-body.ts'
import { parseJsonBody } from '../json-request.ts'

/** Whether an audience may be the target of a push to an app of an org: undefined if so, else why not. */
export type AudienceCheck = (orgId: number, appId: string, audienceId: number) => Promise<string | undefined>

export interface PushRouteDeps {
  bus: Bus
  store: Store
  control: ControlStore
  /** The push-requests topic. */
  topic: string
  metrics: Metrics
  /** Which platforms an app can deliver to (the transports' configuration). */
  transports: Pick<TransportResolver, 'platformsOf'>
  audiences: AudienceCheck
  limits: {
    customerIdPerSecond: number
    broadcastPerMinute: number
    profilePerHour: number
    audienceIdPerMinute: number
    newCampaignKeysPerDay?: number
    maxBodyBytes?: number
  }
  now?: () => number
}

type Ctx = Context<EdgeEnv>

/**
 * The push endpoint: `POST /v2/push/:app_id` validates a request (every rule of the spec, with the
 * tolerance real clients need), checks what the key may do (the app, the audience, the platforms),
 * the rate per target type and the cap on new campaign keys, then puts the request on the
 * push-requests topic and answers 202 once it is durable. `GET /v2/push/:app_id/reports/:campaign_key`
 * answers a campaign key's roll-up.
 */
export function pushRoutes(deps: PushRouteDeps) {
  const app = new Hono<EdgeEnv>()
  const now = deps.now ?? Date.now
  const { limits } = deps
  const buckets: Record<TargetType, { buckets: TokenBuckets; what: string }> = {
    customer_id: {
      buckets: new TokenBuckets(limits.customerIdPerSecond, 1000),
      what: `${limits.customerIdPerSecond} customer_id requests per second`,
    },
    broadcast: {
      buckets: new TokenBuckets(limits.broadcastPerMinute, 60_000),
      what: `${limits.broadcastPerMinute} broadcast requests per minute`,
    },
    profile: {
      buckets: new TokenBuckets(limits.profilePerHour, 3_600_000),
      what: `${limits.profilePerHour} profile requests per hour`,
    },
    audience_id: {
      buckets: new TokenBuckets(limits.audienceIdPerMinute, 60_000),
      what: `${limits.audienceIdPerMinute} audience_id requests per minute`,
    },
  }
  const keyCap = limits.newCampaignKeysPerDay ?? PUSH_LIMITS.newCampaignKeysPerDay
  const campaignKeys = new CampaignKeyCap(deps.store, keyCap, PUSH_LIMITS.dedupeWindowMs)
  const recent = new RecentRequests(PUSH_LIMITS.dedupeWindowMs)
  const maxBodyBytes = limits.maxBodyBytes ?? PUSH_LIMITS.maxBodyBytes

  // An unknown app answers like another org's app: a key never learns which app ids exist.
  const appOf = async (c: Ctx): Promise<App> => {
    const appId = c.req.param('app_id') ?? ''
    const found = await deps.control.getApp(appId)
    if (!found || found.org_id !== c.get('principal').orgId)
      throw forbidden(`app ${appId} does not belong to this organization`)
    return found
  }

  /** A request id the app used within 24 hours: answered 202 again, nothing sent twice. */
  const isRepeat = async (appId: string, requestId: string | undefined, at: number) => {
    if (requestId === undefined) return false
    if (recent.seen(appId, requestId, at)) return true
    const last = await lastUse(deps.store, appId, requestId)
    return last !== undefined && at - last < PUSH_LIMITS.dedupeWindowMs
  }

  // Every answer of the endpoint, errors included, as the original service sent them: one Python
  // client of it takes any other Content-Type for an HTML error page.
  app.use('/v2/push/*', async (c, next) => {
    await next()
    if (c.res.headers.get('Content-Type') === 'application/json')
      c.res.headers.set('Content-Type', 'application/json; charset=utf-8')
  })

  const queued = (c: Ctx, requestId: string) =>
    c.json({ message: QUEUED_MESSAGE, request_id: requestId }, 202)

  app.post('/v2/push/:app_id', apiAuth(deps.control, 'push'), async (c) => {
    const principal = c.get('principal')
    const target = await appOf(c)
    const body = parseJsonBody(
      await readBoundedBody(c.req.raw, maxBodyBytes),
      'request body is empty: send a JSON push request',
    )
    const result = validatePushRequest(body)
    if (!result.ok) {
      const lines = issueLines(result.issues)
      throw badRequest(lines.join('; '), { errors: lines })
    }
    const request = result.request
    const receivedAt = now()
    // A retry this edge took already: no second record, no rate-limit token.
    if (request.requestId !== undefined && recent.seen(target.app_id, request.requestId, receivedAt))
      return queued(c, request.requestId)
    await authorise(deps, principal.orgId, target.app_id, request)

    const limit = buckets[request.targetType]
    const refuse = async (retryAfterSeconds: number, message: string) => {
      // A retry taken by another edge, or before a restart, is no new request: not refused.
      if (await isRepeat(target.app_id, request.requestId, receivedAt)) return queued(c, request.requestId!)
      throw tooManyRequests(retryAfterSeconds, message)
    }
    const rateMessage = `rate limit of ${limit.what} for app ${target.app_id} exceeded; retry later`
    const wait = limit.buckets.wait(target.app_id)
    if (wait > 0) return refuse(wait, rateMessage)
    let release = () => {}
    if (request.campaignKey !== null) {
      const admitted = await campaignKeys.admit(target.app_id, request.campaignKey, receivedAt)
      if (!admitted.ok)
        return refuse(
          admitted.retryAfterSeconds,
          `campaign_key ${JSON.stringify(request.campaignKey)} would be a new campaign key, and app ${target.app_id} ` +
            `used ${keyCap} new campaign keys in the last 24 hours (the limit); reuse a key, omit it, or retry later`,
        )
      release = admitted.release
    }
    const taken = limit.buckets.take(target.app_id)
    if (taken > 0) {
      release()
      return refuse(taken, rateMessage)
    }

    const record: PushRequestRecord = {
      v: 1,
      requestId: request.requestId ?? randomUUID(),
      appId: target.app_id,
      orgId: principal.orgId,
      receivedAt,
      campaignKey: request.campaignKey,
      targetType: request.targetType,
      allDevices: request.allDevices,
      messages: request.messages,
      origin: 'api',
    }
    const encoded = encodePushRequest(record)
    // Kafka refuses records over 1 MB by default; the normalised record can outgrow its body.
    if (encoded.value.length > PUSH_LIMITS.maxRecordBytes) {
      release()
      throw payloadTooLarge(
        `the request is ${Math.ceil(encoded.value.length / 1024)} KB once normalised, over ${PUSH_LIMITS.maxRecordBytes / 1024} KB: send fewer messages per request`,
      )
    }
    try {
      await deps.bus.produce(deps.topic, [encoded])
    } catch (err) {
      release()
      // Nothing was promised yet: the client retries.
      throw new SluiceError('bus_unavailable', 503, 'could not queue the push request durably; retry', {
        retriable: true,
        headers: { 'Retry-After': '1' },
        cause: err,
      })
    }
    deps.metrics.busProduced.inc({ topic: deps.topic })
    recent.remember(target.app_id, record.requestId, receivedAt)
    return queued(c, record.requestId)
  })

  app.get('/v2/push/:app_id/reports/:campaign_key', apiAuth(deps.control, 'push'), async (c) => {
    const target = await appOf(c)
    const key = c.req.param('campaign_key')
    const report = await campaignReport(deps.store, target.app_id, key)
    if (!report)
      throw notFound(`no push request of app ${target.app_id} carried campaign_key ${JSON.stringify(key)}`)
    return c.json(report)
  })

  return app
}

/**
 * 403s: an audience that is unknown or not the app's, and a platform the app cannot deliver to
 * (none configured at all, or one whose options a message sets).
 */
async function authorise(deps: PushRouteDeps, orgId: number, appId: string, request: ValidRequest) {
  if (request.targetType === 'audience_id') {
    for (const id of new Set(request.messages.map((m) => Number(m.target)))) {
      const refusal = await deps.audiences(orgId, appId, id)
      if (refusal) throw forbidden(refusal)
    }
  }
  const platforms = new Set<PushPlatform>(await deps.transports.platformsOf(appId))
  if (platforms.size === 0)
    throw forbidden(
      `app ${appId} has no push transport configured for ios or android; configure one (sluice admin push-transport set)`,
    )
  // A message meant for platforms none of which can be delivered to (its options name only those)
  // is refused. One that also names a platform the app serves goes ahead: real clients send both
  // option blocks whatever the app's platforms, and its other devices are recorded as failed.
  for (const [i, m] of request.messages.entries()) {
    const named = (['ios', 'android'] as const).filter((p) => m[p] !== undefined)
    if (named.length > 0 && !named.some((p) => platforms.has(p)))
      throw forbidden(
        `app ${appId} has no push transport configured for ${named.join(' or ')}, the only platform messages[${i}] sets options for; configure one (sluice admin push-transport set)`,
      )
  }
}
