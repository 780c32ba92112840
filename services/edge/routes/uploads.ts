import { Hono } from 'hono'
import type { Bus } from '../../../pipelines/connectors/bus/bus.ts'
import type { Store } from '../../../pipelines/connectors/store/store.ts'
import type { ControlStore } from '../../control/control-store.ts'
import type { LoadShedder } from '../uploads/load-shedder.ts'
import { readReceipt } from '../uploads/receipts.ts'
import type { UploadBuffers } from '../uploads/upload-buffers.ts'
import type { UploadHeaders } from '../../../pipelines/events/upload-headers.ts'
import type { GzipCheck } from '../../../pipelines/events/gzip-check.ts'
import {
  isTransactionIdShaped,
  mintTransactionId,
  parseTransactionId,
  type TransactionInfo,
  type TransactionKey,
} from '../uploads/transaction-id.ts'
import { EVENT_SCHEMA_VERSIONS, eventJsonSchema } from '../../../schemas/events.ts'
import { badRequest, notFound, SluiceError, tooManyRequests, unavailable } from '../../shared/errors.ts'
import type { Metrics } from '../../shared/metrics.ts'
import type { DirectRoute } from '../direct-dispatch.ts'
import type { EdgeEnv, Principal } from '../env.ts'
import { apiAuth } from '../middleware/api-auth.ts'
import { rateLimit, TokenBuckets } from '../middleware/rate-limit.ts'
import {
  honoUploadRequest,
  readUploadBody,
  uploadEncoding,
  type UploadLimits,
  type UploadRequest,
} from '../upload-body.ts'

export interface UploadRouteDeps {
  bus: Bus
  store: Store
  control: ControlStore
  /** Topic names of the server-side and SDK upload bodies. */
  topics: { uploads: string; sdkUploads: string }
  shedder: LoadShedder
  metrics: Metrics
  transactionKey: TransactionKey
  /** Checks gzip bodies (createGzipCheck: one for the edge, holding its inflate memory). */
  checkGzip: GzipCheck
  /** Memory upload bodies are read into and given back to once stored; absent: a buffer each. */
  buffers?: UploadBuffers
  limits: UploadLimits & { ratePerKeyPerSecond: number; sdkRatePerAppPerSecond: number }
}

/**
 * Event ingestion: `POST /v0/uploads` (server-side, API key) and `POST /v1/sdk/apps/:app_key/uploads`
 * (SDK, app key). The edge stays thin: it checks what a 202 promises, then writes the whole body
 * as one record to the bus and answers once that record is durable. The server-side upload is
 * also a direct route (direct-dispatch.ts): the edge's HTTP server serves it before Hono's
 * dispatch, through the same `serverUpload` and the same rate limit.
 */
export function uploadRoutes(deps: UploadRouteDeps): { routes: Hono<EdgeEnv>; direct: DirectRoute } {
  const app = new Hono<EdgeEnv>()
  const buckets = new TokenBuckets(deps.limits.ratePerKeyPerSecond, 1000)
  const sdkBuckets = new TokenBuckets(deps.limits.sdkRatePerAppPerSecond, 1000)
  const uploadTopic = (name: string): UploadTopic => ({
    name,
    produced: deps.metrics.busProduced.child({ topic: name }),
  })
  const serverTopic = uploadTopic(deps.topics.uploads)
  const sdkTopic = uploadTopic(deps.topics.sdkUploads)

  // Not an async function: one frame fewer on the path every server-side upload takes. Callers
  // await it inside their try, so the rate limit's throw reaches them as a rejection would.
  const serverUpload = (request: UploadRequest, principal: Principal) => {
    const wait = buckets.take(principal.apiKey)
    if (wait > 0) throw tooManyRequests(wait)
    return accept(deps, request, serverTopic, {
      orgId: principal.orgId,
      apiKey: principal.apiKey,
      source: 'server',
    }).then(accepted)
  }

  // The same schema under both versions' names: v1 has v0's fields (DESIGN.md).
  for (const version of EVENT_SCHEMA_VERSIONS)
    app.get(`/schemas/events/${version}.json`, (c) =>
      c.json(eventJsonSchema(`/schemas/events/${version}.json`)),
    )

  // Clients of the original service post to {events_url}/{api_version}/uploads with events_url
  // ending in /events (v0 beta, v1 current); every spelling is one endpoint.
  for (const base of SERVER_UPLOAD_PATHS) {
    app.post(base, apiAuth(deps.control, 'events'), async (c) => {
      const answer = await serverUpload(honoUploadRequest(c), c.get('principal'))
      return c.json(answer.body, answer.status)
    })

    app.get(`${base}/:transaction_id`, apiAuth(deps.control, 'events'), async (c) => {
      const orgId = c.get('principal').orgId
      const tx = c.req.param('transaction_id')
      const info = issuedTransaction(deps, tx, orgId)
      return c.json(await readReceipt(deps.store, tx, info, { orgId }))
    })
  }

  // Per app key, before the app is looked up: a flood under an unknown key is limited too.
  app.use(
    '/v1/sdk/apps/:app_key/uploads',
    rateLimit(sdkBuckets, (c) => c.req.param('app_key') ?? ''),
  )
  app.post('/v1/sdk/apps/:app_key/uploads', async (c) => {
    const appKey = c.req.param('app_key')
    const target = await deps.control.getApp(appKey)
    if (!target) throw new SluiceError('unauthorized', 401, 'unknown app key')
    // Keyed by app: one consumer owns each app's device state, so its updates never race.
    const tx = await accept(deps, honoUploadRequest(c), sdkTopic, {
      orgId: target.org_id,
      apiKey: '',
      source: 'sdk',
      app: appKey,
    })
    return c.json({ transaction_id: tx }, 202)
  })

  app.get('/v1/sdk/apps/:app_key/uploads/:transaction_id', async (c) => {
    const appKey = c.req.param('app_key')
    const target = await deps.control.getApp(appKey)
    if (!target) throw new SluiceError('unauthorized', 401, 'unknown app key')
    const tx = c.req.param('transaction_id')
    const info = issuedTransaction(deps, tx, target.org_id)
    return c.json(await readReceipt(deps.store, tx, info, { orgId: target.org_id, appId: appKey }))
  })

  const direct: DirectRoute = {
    method: 'POST',
    paths: SERVER_UPLOAD_PATHS,
    // Plain bodies as real clients label them, by a look that costs nothing (accept() parses the
    // header fully either way). Gzip bodies gained nothing this way (slower in the bench at
    // `249935e`; with the gzip check inflating into reused memory, `2ae33ee`, within the noise:
    // docs/performance.md, "Edge"); they, other spellings of the type and refused types stay with
    // Hono, which answers them the same.
    takes: (request) =>
      request.header('content-type') === 'application/json' && !request.header('content-encoding'),
    scope: 'events',
    handle: serverUpload,
  }
  return { routes: app, direct }
}

function accepted(tx: string) {
  return { status: 202 as const, body: { transaction_id: tx } }
}

/** Paths of the server-side upload endpoint (one endpoint; receipts under each as `<path>/:id`). */
export const SERVER_UPLOAD_PATHS = [
  '/v0/uploads',
  '/v1/uploads',
  '/events/v0/uploads',
  '/events/v1/uploads',
] as const

/** The transaction `tx` this deployment issued to `orgId`: 400 if it is malformed, 404 if unknown. */
function issuedTransaction(deps: UploadRouteDeps, tx: string, orgId: number): TransactionInfo {
  if (!isTransactionIdShaped(tx))
    throw badRequest(
      'transaction_id is malformed: send it exactly as the 202 gave it (43 characters, case-sensitive)',
    )
  const info = parseTransactionId(deps.transactionKey, tx)
  if (!info || info.orgId !== orgId) throw notFound('unknown transaction_id')
  return info
}

/** A topic uploads are written to, and its produced-records counter (resolved once, not per upload). */
interface UploadTopic {
  name: string
  produced: { inc(): void }
}

/**
 * What every upload goes through once its sender is known: check what a 202 promises, then write
 * the body as one durable bus record (keyed by the app for SDK uploads, by the transaction
 * otherwise) and return its transaction id.
 */
async function accept(
  deps: UploadRouteDeps,
  request: UploadRequest,
  topic: UploadTopic,
  sender: { orgId: number; apiKey: string; source: 'server' | 'sdk'; app?: string },
): Promise<string> {
  const encoding = uploadEncoding(request)
  const declared = request.header('content-length')
  const refusal = deps.shedder.refusal(Number(declared ?? 0))
  if (refusal) throw unavailable(2, refusal)
  // The body counts as in flight from before it is read until it is durable (or refused): what
  // the edge holds in memory at once is bounded while bodies arrive and are inflated, not only
  // while they wait for the log. A body of unknown length counts as the largest allowed.
  const length = declared === undefined ? NaN : Number(declared)
  const holding =
    Number.isFinite(length) && length >= 0 ? Math.min(length, deps.limits.maxBytes) : deps.limits.maxBytes
  deps.shedder.hold(holding)
  let body: Buffer | undefined
  try {
    body = await readUploadBody(request, encoding, deps.limits, deps.checkGzip, deps.buffers)
    const receivedAt = Date.now()
    const tx = mintTransactionId(deps.transactionKey, sender.orgId, receivedAt)
    const headers: UploadHeaders = {
      tx,
      org: String(sender.orgId),
      key: sender.apiKey,
      recv: String(receivedAt),
      enc: encoding,
      src: sender.source,
    }
    if (sender.app !== undefined) headers.app = sender.app
    try {
      await deps.bus.produce(topic.name, [
        { key: sender.app ?? tx, value: body, headers: headers as unknown as Record<string, string> },
      ])
    } catch (err) {
      throw busUnavailable(err)
    }
    topic.produced.inc()
    return tx
  } finally {
    deps.shedder.release(holding)
    // Stored or refused by the bus: nothing reads the body any more. A body refused before it
    // reached the bus is left to the GC (a refusal's path need not be fast).
    if (body) deps.buffers?.give(body)
  }
}

/**
 * The bus refused the record: nothing was promised yet, so the client retries (the worker dedupes
 * a copy that did land).
 */
function busUnavailable(cause: unknown): SluiceError {
  return new SluiceError('bus_unavailable', 503, 'could not store the upload durably; retry', {
    retriable: true,
    headers: { 'Retry-After': '1' },
    cause,
  })
}
