import type { BusRecord, RecordBatch } from '../connectors/bus/bus.ts'
import type { Store } from '../connectors/store/store.ts'
import { describeFailure } from '../failures/classify-error.ts'
import { deadLetter, PermanentError, type StageReport } from '../failures/outcome.ts'
import { backoffDelay, realClock, type RetryClock, type RetryPolicy } from '../failures/retry.ts'
import { wellFormed } from '../text/unicode.ts'
import {
  decodeBatch,
  deliveryId,
  pushPlatform,
  type BatchTarget,
  type DeliveryBatch,
} from './delivery-batch.ts'
import { DeliveryRows, DELIVERY_ROW_BINARY } from './delivery-rows.ts'
import { compareInstall } from './plan.ts'
import type { SendRate } from './send-rate.ts'
import type { DeliveryOutcome, PushDelivery, PushPlatform, TransportResolver } from './transport.ts'

export interface SenderDeps {
  store: Store
  transports: TransportResolver
  rate: SendRate
  /** Bounds of retrying deliveries a transport answered `retry` (or a send that threw). */
  retry: RetryPolicy
  /** Deliveries per transport call (default: recordEvery; the webhook transport posts its own batches). */
  chunkSize?: number
  /**
   * The most deliveries sent and not yet recorded at any time (default 2000;
   * SLUICE_PUSH_BATCH_SIZE): what a crash can send twice.
   */
  recordEvery?: number
  clock?: RetryClock
  onDelivered?: (info: {
    appId: string
    platform: string
    transport: string
    sent: number
    failed: number
  }) => void
}

interface Work {
  batch: DeliveryBatch
  target: BatchTarget
}

interface Result {
  status: 'sent' | 'failed'
  error: string
  attempts: number
  transport: string
  firstAttemptAt: number
  finishedAt: number
  invalidToken?: boolean
}

/**
 * The push sender: sends each delivery batch through the app's transport for each platform, at
 * the app's rate, and records every (request, install) once in push_deliveries.
 *
 * Exactly once in the record, at most once more on the wire: before sending, it reads which
 * installs of the bus batch's requests are recorded already and skips them; it sends in runs of
 * half of `recordEvery` deliveries, records each run (one insert) while the next is sent, and
 * records everything before the bus commits. A crash resends on redelivery what was sent and not
 * yet recorded, at most `recordEvery` deliveries (they carry an idempotency key, `deliveryId`,
 * for receivers that drop repeats).
 *
 * Retries: deliveries the transport answered `retry` (and all of a send that threw) are tried
 * again with exponential backoff and full jitter, never sooner than the transport's retryAfterMs,
 * within `retry` (attempts and a deadline); then they are recorded as failed with the last error.
 * `failed` with invalidToken also writes the token to invalid_push_tokens, so no fan-out uses it
 * again. A device whose platform push does not serve, or whose platform has no transport, is
 * recorded as failed with the reason.
 */
export function pushSender(deps: SenderDeps) {
  const clock = deps.clock ?? realClock
  const recordEvery = deps.recordEvery ?? 2000
  const runSize = Math.max(1, Math.ceil(recordEvery / 2))
  // One transport call per run: the file transport syncs once per call, APNs and FCM spread a
  // call over their own connections.
  const chunkSize = deps.chunkSize ?? runSize

  return async (bus: RecordBatch): Promise<StageReport> => {
    const report: StageReport = { outcomes: [] }
    const batches: DeliveryBatch[] = []
    for (const record of bus.records) {
      const decoded = decodeBatch(record.value)
      if (decoded.ok) batches.push(decoded.batch)
      else report.outcomes.push({ record, outcome: undecodable(record, decoded.reason) })
    }
    if (batches.length === 0) return report

    const recorded = await recordedInstalls(deps.store, batches)
    const work: Work[] = []
    for (const batch of batches) {
      const request = requestKey(batch.appId, batch.requestId, batch.generation)
      let installs = recorded.get(request)
      if (!installs) recorded.set(request, (installs = new Set<string>()))
      for (const target of batch.targets) {
        // Recorded before (a redelivery), or twice in this bus batch (a re-emitted page).
        if (installs.has(target[0])) continue
        installs.add(target[0])
        work.push({ batch, target })
      }
    }
    // Runs of half a batch: a run is recorded while the next one is sent (the transport's work on
    // this thread, the insert on the engine's), and no run is sent before the one two back is
    // recorded. So a crash finds at most two runs sent and unrecorded: one batch's worth.
    let recording: Promise<void> | undefined
    try {
      for (let i = 0; i < work.length; i += runSize) {
        const results = await sendRun(work.slice(i, i + runSize))
        await recording
        recording = record(results)
        // Awaited before the next record or on the way out; never left unobserved meanwhile.
        recording.catch(() => undefined)
      }
    } finally {
      await recording?.catch(() => undefined)
    }
    await recording
    return report
  }

  /** Send one run through the apps' transports, by platform; the outcome of each delivery. */
  async function sendRun(work: readonly Work[]): Promise<Map<Work, Result>> {
    const results = new Map<Work, Result>()
    const groups: { appId: string; platform: PushPlatform; work: Work[] }[] = []
    const byApp = new Map<string, Partial<Record<PushPlatform, Work[]>>>()
    const now = clock.now()
    for (const w of work) {
      const platform = platformOf(w.target[2])
      if (!platform) {
        results.set(w, failedNow(now, `unsupported platform ${JSON.stringify(w.target[2])}`))
        continue
      }
      let app = byApp.get(w.batch.appId)
      if (!app) byApp.set(w.batch.appId, (app = {}))
      let items = app[platform]
      if (!items) {
        items = app[platform] = []
        groups.push({ appId: w.batch.appId, platform, work: items })
      }
      items.push(w)
    }
    for (const { appId, platform, work: items } of groups) {
      const transport = await deps.transports.transportFor(appId, platform)
      if (!transport) {
        for (const w of items)
          results.set(w, failedNow(clock.now(), `no transport configured for ${platform}`))
        continue
      }
      for (let i = 0; i < items.length; i += chunkSize) {
        const chunk = items.slice(i, i + chunkSize)
        const outcomes = await sendWithRetries(chunk, platform, transport)
        chunk.forEach((w, j) => results.set(w, outcomes[j]!))
      }
    }
    return results
  }

  async function sendWithRetries(
    work: readonly Work[],
    platform: PushPlatform,
    transport: NonNullable<Awaited<ReturnType<TransportResolver['transportFor']>>>,
  ): Promise<Result[]> {
    const appId = work[0]!.batch.appId
    const deliveries = work.map(({ batch, target }): PushDelivery => ({
      deliveryId: deliveryId(batch.requestId, batch.generation, target[0]),
      requestId: batch.requestId,
      campaignKey: batch.campaignKey,
      appId: batch.appId,
      installUuid: target[0],
      customerId: target[1],
      platform,
      pushToken: target[3],
      message: batch.messages[target[4]]!,
      attempt: 1,
    }))
    const results = new Array<Result | undefined>(work.length)
    const firstAttemptAt = clock.now()
    let pending = deliveries.map((_, i) => i)
    for (let attempt = 1; ; attempt++) {
      await deps.rate.acquire(appId, pending.length)
      let outcomes: DeliveryOutcome[]
      try {
        // The first try sends the deliveries as built; a retry, copies with its attempt number.
        const sending =
          attempt === 1 && pending.length === deliveries.length
            ? deliveries
            : pending.map((i) => ({ ...deliveries[i]!, attempt }))
        outcomes = await transport.send(sending)
        if (outcomes.length !== pending.length)
          throw new Error(
            `the ${transport.kind} transport answered ${outcomes.length} outcomes for ${pending.length} deliveries`,
          )
      } catch (err) {
        const error = describeFailure(err, 1000)
        outcomes = pending.map(() => ({ status: 'retry', error }))
      }
      const again: number[] = []
      let retryAfterMs = 0
      const finishedAt = clock.now()
      const base = { attempts: attempt, transport: transport.kind, firstAttemptAt, finishedAt }
      // One result for every delivery sent on this try: record() serialises its columns once.
      const sent: Result = { ...base, status: 'sent', error: '' }
      outcomes.forEach((outcome, j) => {
        const i = pending[j]!
        if (outcome.status === 'sent') results[i] = sent
        else if (outcome.status === 'failed')
          results[i] = {
            ...base,
            status: 'failed',
            error: outcome.error,
            ...(outcome.invalidToken && { invalidToken: true }),
          }
        else {
          again.push(i)
          retryAfterMs = Math.max(retryAfterMs, outcome.retryAfterMs ?? 0)
          results[i] = {
            ...base,
            status: 'failed',
            error: `${outcome.error} (gave up after ${attempt} attempts)`,
          }
        }
      })
      if (again.length === 0) break
      const wait = Math.max(
        retryAfterMs,
        backoffDelay(attempt, deps.retry, () => clock.random()),
      )
      if (attempt >= deps.retry.attempts || clock.now() + wait - firstAttemptAt > deps.retry.deadlineMs) break
      await clock.sleep(wait)
      pending = again
    }
    return results.map((r) => r!)
  }

  async function record(results: Map<Work, Result>): Promise<void> {
    if (results.size === 0) return
    const rows = new DeliveryRows(results.size * 160)
    const invalid: object[] = []
    const counts = new Map<string, Count>()
    // Only the install and the customer differ between most rows of a run, so the columns before
    // them are encoded once per batch and those after once per (batch, result, platform, message).
    const heads = new Map<DeliveryBatch, Buffer>()
    const tails = new Map<DeliveryBatch, Map<Result, Map<string, Tail>>>()
    for (const [{ batch, target }, r] of results) {
      const platform = platformOf(target[2]) ?? target[2]
      let head = heads.get(batch)
      if (head === undefined) {
        head = DeliveryRows.head({
          appId: batch.appId,
          requestId: batch.requestId,
          generation: batch.generation,
          campaignKey: batch.campaignKey ?? '',
          campaignId: batch.campaignId,
          creative: batch.creative,
        })
        heads.set(batch, head)
      }
      let byResult = tails.get(batch)
      if (!byResult) tails.set(batch, (byResult = new Map<Result, Map<string, Tail>>()))
      let byKey = byResult.get(r)
      if (!byKey) byResult.set(r, (byKey = new Map<string, Tail>()))
      const tailKey = `${platform}\n${target[4]}`
      let tail = byKey.get(tailKey)
      if (tail === undefined) {
        const countKey = `${batch.appId}\n${platform}\n${r.transport}`
        let count = counts.get(countKey)
        if (!count)
          counts.set(
            countKey,
            (count = { appId: batch.appId, platform, transport: r.transport, sent: 0, failed: 0 }),
          )
        const bytes = DeliveryRows.tail({
          platform,
          transport: r.transport,
          status: r.status,
          error: wellFormed(r.error).slice(0, 2000),
          attempts: r.attempts,
          messageIndex: batch.messageIndexes[target[4]] ?? 0,
          batchId: batch.batchId,
          plannedAt: batch.plannedAt,
          firstAttemptAt: r.firstAttemptAt,
          finishedAt: r.finishedAt,
          version: r.finishedAt,
        })
        byKey.set(tailKey, (tail = { bytes, count }))
      }
      rows.row(head, target[0], target[1], tail.bytes)
      tail.count[r.status]++
      if (r.invalidToken)
        invalid.push({
          app_id: batch.appId,
          push_token: target[3],
          install_uuid: target[0],
          transport: r.transport,
          reason: wellFormed(r.error).slice(0, 2000),
          invalidated_at: r.finishedAt,
        })
    }
    // Tokens first: a crash between the two inserts leaves the token dead and the delivery
    // unrecorded, which the redelivery resends (to a dead token, answered failed again).
    if (invalid.length > 0) await deps.store.insert('invalid_push_tokens', invalid)
    await deps.store.insert('push_deliveries', rows.bytes(), { rowBinary: DELIVERY_ROW_BINARY })
    for (const c of counts.values()) deps.onDelivered?.(c)
  }
}

// Request ids are an app's own: two apps of one partition may use the same one.
const requestKey = (appId: string, requestId: string, generation: number) =>
  `${appId}\n${requestId}\n${generation}`

interface Count {
  appId: string
  platform: string
  transport: string
  sent: number
  failed: number
}

/** The columns of a row after the customer, and the count its rows go to. */
interface Tail {
  bytes: Buffer
  count: Count
}

/** pushPlatform, remembered: a batch names the same few platform strings thousands of times. */
const platforms = new Map<string, PushPlatform | undefined>()
function platformOf(platform: string): PushPlatform | undefined {
  if (platforms.has(platform)) return platforms.get(platform)
  const p = pushPlatform(platform)
  // Bounded: SDKs log a handful of platform names; anything else is looked up each time.
  if (platforms.size < 256) platforms.set(platform, p)
  return p
}

const failedNow = (at: number, error: string): Result => ({
  status: 'failed',
  error,
  attempts: 0,
  transport: '',
  firstAttemptAt: at,
  finishedAt: at,
})

const undecodable = (record: BusRecord, reason: string) =>
  deadLetter(new PermanentError(`undecodable delivery batch at offset ${record.offset}: ${reason}`))

/**
 * Which installs of these batches' requests are recorded already, by requestKey: one
 * range read per (app, request, generation) over the table's key (pages are in install order).
 */
async function recordedInstalls(
  store: Store,
  batches: readonly DeliveryBatch[],
): Promise<Map<string, Set<string>>> {
  const ranges = new Map<
    string,
    { app: string; request: string; generation: number; lo: string; hi: string }
  >()
  for (const b of batches) {
    if (b.targets.length === 0) continue
    const key = `${b.appId}\n${b.requestId}\n${b.generation}`
    const range = ranges.get(key) ?? {
      app: b.appId,
      request: b.requestId,
      generation: b.generation,
      lo: '',
      hi: '',
    }
    for (const [install] of b.targets) {
      if (range.lo === '' || compareInstall(install, range.lo) < 0) range.lo = install
      if (compareInstall(install, range.hi) > 0) range.hi = install
    }
    ranges.set(key, range)
  }
  const found = new Map<string, Set<string>>()
  if (ranges.size === 0) return found
  const clauses: string[] = []
  const params: Record<string, unknown> = {}
  ;[...ranges.values()].forEach((r, i) => {
    clauses.push(
      `(app_id = {a${i}:String} AND request_id = {r${i}:String} AND generation = {g${i}:UInt32} AND install_uuid >= {lo${i}:String} AND install_uuid <= {hi${i}:String})`,
    )
    Object.assign(params, {
      [`a${i}`]: r.app,
      [`r${i}`]: r.request,
      [`g${i}`]: r.generation,
      [`lo${i}`]: r.lo,
      [`hi${i}`]: r.hi,
    })
  })
  const rows = await store.query<{
    app_id: string
    request_id: string
    generation: number | string
    install_uuid: string
  }>(
    `SELECT app_id, request_id, generation, install_uuid FROM push_deliveries WHERE ${clauses.join(' OR ')}`,
    params,
  )
  for (const r of rows) {
    const request = requestKey(r.app_id, r.request_id, Number(r.generation))
    let installs = found.get(request)
    if (!installs) found.set(request, (installs = new Set<string>()))
    installs.add(r.install_uuid)
  }
  return found
}
