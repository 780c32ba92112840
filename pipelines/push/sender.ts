import type { BusRecord, RecordBatch } from '../connectors/bus/bus.ts'
import type { Store } from '../connectors/store/store.ts'
import { describeFailure } from '../failures/classify-error.ts'
import { deadLetter, PermanentError, type StageReport } from '../failures/outcome.ts'
import { backoffDelay, realClock, type RetryClock, type RetryPolicy } from '../failures/retry.ts'
import { wellFormed } from '../text/unicode.ts'
import { decodeBatch, deliveryId, MAX_HOLD_MS, pushPlatform, type DeliveryBatch } from './delivery-batch.ts'
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
   * SLUICE_PUSH_BATCH_SIZE): what a crash can send twice, and the size of each insert.
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

/** Deliveries of one batch: the positions `at` of its targets. */
interface Part {
  batch: DeliveryBatch
  at: number[]
}

/**
 * What became of deliveries of one batch to one platform (the push platform, or the SDK's string
 * when push has none): one Result shared by all (a group the file transport wrote together, a
 * platform without transport) or one per position.
 */
interface Outcome {
  batch: DeliveryBatch
  platform: string
  at: number[]
  result: Result | Result[]
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

type Transport = NonNullable<Awaited<ReturnType<TransportResolver['transportFor']>>>

/**
 * The push sender: sends each delivery batch through the app's transport for each platform, at
 * the app's rate, and records every (request, install) once in push_deliveries.
 *
 * Exactly once in the record, at most once more on the wire: before sending, it reads which
 * installs of the bus batch's requests are recorded already and skips them; it sends in runs of
 * `recordEvery` deliveries and records each run (one insert) before it sends the next, so
 * everything is recorded before the bus commits. A crash resends on redelivery what was sent and
 * not yet recorded, at most `recordEvery` deliveries (they carry an idempotency key,
 * `deliveryId`, for receivers that drop repeats).
 *
 * Deliveries are positions in their batch's target columns all the way through: a transport with
 * `sendGroups` (the file transport) gets each (batch, platform)'s positions as they are, the
 * others a PushDelivery per delivery.
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
  // A run is a whole batch's worth: each insert into push_deliveries has a fixed cost (a part:
  // ~7 ms of engine CPU, then merges) that halving the runs doubled.
  const runSize = Math.max(1, recordEvery)
  // One transport call per run: the file transport syncs once per call, APNs and FCM spread a
  // call over their own connections (the webhook transport posts its own batches).
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
    const parts: Part[] = []
    for (const batch of batches) {
      const request = requestKey(batch.appId, batch.requestId, batch.generation)
      let installs = recorded.get(request)
      if (!installs) recorded.set(request, (installs = new Set<string>()))
      const at: number[] = []
      const targets = batch.targets.installs
      for (let i = 0; i < targets.length; i++) {
        const install = targets[i]!
        // Recorded before (a redelivery), or twice in this bus batch (a re-emitted page).
        if (installs.has(install)) continue
        installs.add(install)
        at.push(i)
      }
      if (at.length > 0) parts.push({ batch, at })
    }
    // Each run is recorded before the next is sent: a crash finds at most one run, a batch's
    // worth, sent and unrecorded. (Recording a run while sending the next, in runs of half a
    // batch, kept the same bound but doubled the inserts: more engine CPU than the overlap saved;
    // measured at `c77dd39`; docs/performance.md, "Push".)
    for (const run of runs(parts, runSize)) {
      await holdUntilDue(run)
      await record(await sendRun(run))
    }
    return report
  }

  /** A campaign slot handed over ahead of its start is sent at its start, not before. */
  async function holdUntilDue(run: readonly Part[]): Promise<void> {
    let due = 0
    for (const { batch } of run)
      if (batch.notBefore !== undefined && batch.notBefore > due) due = batch.notBefore
    const wait = Math.min(MAX_HOLD_MS, due - clock.now())
    if (wait > 0) await clock.sleep(wait)
  }

  /** Send one run through the apps' transports, by platform; what became of each delivery. */
  async function sendRun(run: readonly Part[]): Promise<Outcome[]> {
    const outcomes: Outcome[] = []
    // Per (batch, platform): the positions going there, in order.
    const groups: { batch: DeliveryBatch; platform: PushPlatform; at: number[] }[] = []
    const now = clock.now()
    for (const { batch, at } of run) {
      const byPlatform = new Map<string, number[]>()
      const platforms = batch.targets.platforms
      for (const p of at) {
        const sdk = platforms[p]!
        const key = platformOf(sdk) ?? sdk
        let list = byPlatform.get(key)
        if (!list) byPlatform.set(key, (list = []))
        list.push(p)
      }
      for (const [key, list] of byPlatform) {
        const platform = platformOf(key)
        if (platform) groups.push({ batch, platform, at: list })
        else
          outcomes.push({
            batch,
            platform: key,
            at: list,
            result: failedNow(now, `unsupported platform ${JSON.stringify(key)}`),
          })
      }
    }
    // The transports, per (app, platform), in the order the groups came.
    const byTransport = new Map<Transport, { batch: DeliveryBatch; platform: PushPlatform; at: number[] }[]>()
    const perDelivery: { transport: Transport; groups: typeof groups }[] = []
    for (const g of groups) {
      const transport = await deps.transports.transportFor(g.batch.appId, g.platform)
      if (!transport) {
        outcomes.push({
          ...g,
          result: failedNow(clock.now(), `no transport configured for ${g.platform}`),
        })
        continue
      }
      let list = byTransport.get(transport)
      if (!list) {
        byTransport.set(transport, (list = []))
        perDelivery.push({ transport, groups: list })
      }
      list.push(g)
    }
    for (const { transport, groups: list } of perDelivery) {
      if (transport.sendGroups) outcomes.push(...(await sendGroups(transport, list)))
      else {
        // A PushDelivery per delivery, in chunks of chunkSize per (app, platform).
        const byAppPlatform = new Map<string, typeof list>()
        for (const g of list) {
          const key = `${g.batch.appId}\n${g.platform}`
          const same = byAppPlatform.get(key)
          if (same) same.push(g)
          else byAppPlatform.set(key, [g])
        }
        for (const same of byAppPlatform.values()) {
          const flat = same.flatMap((g) => g.at.map((p) => ({ g, p })))
          for (let i = 0; i < flat.length; i += chunkSize) {
            const chunk = flat.slice(i, i + chunkSize)
            const results = await sendWithRetries(
              chunk.map(({ g, p }) => deliveryAt(g.batch, p, g.platform)),
              transport,
            )
            chunk.forEach(({ g, p }, j) =>
              outcomes.push({ batch: g.batch, platform: g.platform, at: [p], result: results[j]! }),
            )
          }
        }
      }
    }
    return outcomes
  }

  /**
   * The first try of a transport with sendGroups: each group's outcome shared by its deliveries;
   * a group answered `retry` (or all, when the call threw) goes on through sendWithRetries.
   */
  async function sendGroups(
    transport: Transport,
    groups: readonly { batch: DeliveryBatch; platform: PushPlatform; at: number[] }[],
  ): Promise<Outcome[]> {
    const byApp = new Map<string, number>()
    for (const g of groups) byApp.set(g.batch.appId, (byApp.get(g.batch.appId) ?? 0) + g.at.length)
    for (const [appId, n] of byApp) await deps.rate.acquire(appId, n)
    const firstAttemptAt = clock.now()
    const answers = await answersOrRetry(transport.kind, groups.length, 'groups', () =>
      transport.sendGroups!(
        groups.map(({ batch, platform, at }) => ({
          requestId: batch.requestId,
          deliveryIdPrefix: deliveryId(batch.requestId, batch.generation, ''),
          campaignKey: batch.campaignKey,
          appId: batch.appId,
          platform,
          attempt: 1,
          messages: batch.messages,
          installs: batch.targets.installs,
          customers: batch.targets.customers,
          tokens: batch.targets.tokens,
          message: batch.targets.message,
          at,
        })),
      ),
    )
    const finishedAt = clock.now()
    const base = { attempts: 1, transport: transport.kind, firstAttemptAt, finishedAt }
    const sent: Result = { ...base, status: 'sent', error: '' }
    const out: Outcome[] = []
    for (let k = 0; k < groups.length; k++) {
      const g = groups[k]!
      const answer = answers[k]!
      if (answer.status === 'sent') out.push({ ...g, result: sent })
      else if (answer.status === 'failed')
        out.push({
          ...g,
          result: {
            ...base,
            status: 'failed',
            error: answer.error,
            ...(answer.invalidToken && { invalidToken: true }),
          },
        })
      else {
        const results = await sendWithRetries(
          g.at.map((p) => deliveryAt(g.batch, p, g.platform)),
          transport,
          { attempt: 1, firstAttemptAt, outcome: answer },
        )
        out.push({ ...g, result: results })
      }
    }
    return out
  }

  /**
   * Deliveries through `send`, tried again while answered `retry`, within the retry policy. `after`:
   * a first try already made (by sendGroups) and answered `retry` for all of them.
   */
  async function sendWithRetries(
    deliveries: readonly PushDelivery[],
    transport: Transport,
    after?: {
      attempt: number
      firstAttemptAt: number
      outcome: Extract<DeliveryOutcome, { status: 'retry' }>
    },
  ): Promise<Result[]> {
    const appId = deliveries[0]!.appId
    const results = new Array<Result | undefined>(deliveries.length)
    const firstAttemptAt = after?.firstAttemptAt ?? clock.now()
    let pending = deliveries.map((_, i) => i)
    let attempt = 1
    if (after) {
      const finishedAt = clock.now()
      for (const i of pending)
        results[i] = {
          attempts: after.attempt,
          transport: transport.kind,
          firstAttemptAt,
          finishedAt,
          status: 'failed',
          error: `${after.outcome.error} (gave up after ${after.attempt} attempts)`,
        }
      const wait = Math.max(
        after.outcome.retryAfterMs ?? 0,
        backoffDelay(after.attempt, deps.retry, () => clock.random()),
      )
      if (after.attempt >= deps.retry.attempts || clock.now() + wait - firstAttemptAt > deps.retry.deadlineMs)
        return results.map((r) => r!)
      await clock.sleep(wait)
      attempt = after.attempt + 1
    }
    for (; ; attempt++) {
      await deps.rate.acquire(appId, pending.length)
      // The first try sends the deliveries as built; a retry, copies with its attempt number.
      const sending =
        attempt === 1 && pending.length === deliveries.length
          ? deliveries
          : pending.map((i) => ({ ...deliveries[i]!, attempt }))
      const outcomes = await answersOrRetry(transport.kind, pending.length, 'deliveries', () =>
        transport.send(sending),
      )
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

  async function record(outcomes: readonly Outcome[]): Promise<void> {
    if (outcomes.length === 0) return
    let total = 0
    for (const o of outcomes) total += o.at.length
    const rows = new DeliveryRows(total * 160)
    const invalid: object[] = []
    const counts = new Map<string, Count>()
    // Only the install and the customer differ between most rows of a run, so the columns before
    // them are encoded once per batch and those after once per (batch, result, platform, message).
    const heads = new Map<DeliveryBatch, Buffer>()
    // Per batch, result and platform (an outcome's platform is one), the tails by message.
    const tails = new Map<DeliveryBatch, Map<Result, Map<string, (Tail | undefined)[]>>>()
    for (const { batch, platform, at, result } of outcomes) {
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
      if (!byResult) tails.set(batch, (byResult = new Map<Result, Map<string, (Tail | undefined)[]>>()))
      const tailsOf = (r: Result): (Tail | undefined)[] => {
        let byPlatform = byResult.get(r)
        if (!byPlatform) byResult.set(r, (byPlatform = new Map<string, (Tail | undefined)[]>()))
        let byMessage = byPlatform.get(platform)
        if (!byMessage) byPlatform.set(platform, (byMessage = []))
        return byMessage
      }
      const shared = Array.isArray(result) ? undefined : tailsOf(result)
      const { installs, customers, tokens, message } = batch.targets
      for (let k = 0; k < at.length; k++) {
        const p = at[k]!
        const r = Array.isArray(result) ? result[k]! : result
        const byMessage = shared ?? tailsOf(r)
        const m = message[p]!
        let tail = byMessage[m]
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
            messageIndex: batch.messageIndexes[m] ?? 0,
            batchId: batch.batchId,
            plannedAt: batch.plannedAt,
            firstAttemptAt: r.firstAttemptAt,
            finishedAt: r.finishedAt,
            version: r.finishedAt,
          })
          byMessage[m] = tail = { bytes, count }
        }
        rows.row(head, installs[p]!, customers[p]!, tail.bytes)
        tail.count[r.status]++
        if (r.invalidToken)
          invalid.push({
            app_id: batch.appId,
            push_token: tokens[p]!,
            install_uuid: installs[p]!,
            transport: r.transport,
            reason: wellFormed(r.error).slice(0, 2000),
            invalidated_at: r.finishedAt,
          })
      }
    }
    // Tokens first: a crash between the two inserts leaves the token dead and the delivery
    // unrecorded, which the redelivery resends (to a dead token, answered failed again).
    if (invalid.length > 0) await deps.store.insert('invalid_push_tokens', invalid)
    await deps.store.insert('push_deliveries', rows.bytes(), { rowBinary: DELIVERY_ROW_BINARY })
    for (const c of counts.values()) deps.onDelivered?.(c)
  }
}

/** The parts in runs of at most `size` deliveries, in order. */
/**
 * A transport call's outcomes, one per item sent: a call that throws, or answers another number of
 * outcomes, is a `retry` of every item (with the reason), never a lost or misattributed outcome.
 */
async function answersOrRetry(
  kind: string,
  count: number,
  items: 'groups' | 'deliveries',
  call: () => Promise<DeliveryOutcome[]>,
): Promise<DeliveryOutcome[]> {
  try {
    const answers = await call()
    if (answers.length !== count)
      throw new Error(`the ${kind} transport answered ${answers.length} outcomes for ${count} ${items}`)
    return answers
  } catch (err) {
    const error = describeFailure(err, 1000)
    return Array.from({ length: count }, () => ({ status: 'retry', error }))
  }
}

function* runs(parts: readonly Part[], size: number): Generator<Part[]> {
  let run: Part[] = []
  let n = 0
  for (const { batch, at } of parts) {
    for (let from = 0; from < at.length;) {
      const take = Math.min(size - n, at.length - from)
      run.push({ batch, at: from === 0 && take === at.length ? at : at.slice(from, from + take) })
      n += take
      from += take
      if (n === size) {
        yield run
        run = []
        n = 0
      }
    }
  }
  if (run.length > 0) yield run
}

/** The delivery at position `p` of a batch, as a transport's `send` gets it. */
function deliveryAt(batch: DeliveryBatch, p: number, platform: PushPlatform): PushDelivery {
  const t = batch.targets
  return {
    deliveryId: deliveryId(batch.requestId, batch.generation, t.installs[p]!),
    requestId: batch.requestId,
    campaignKey: batch.campaignKey,
    appId: batch.appId,
    installUuid: t.installs[p]!,
    customerId: t.customers[p]!,
    platform,
    pushToken: t.tokens[p]!,
    message: batch.messages[t.message[p]!]!,
    attempt: 1,
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
    if (b.targets.installs.length === 0) continue
    const key = `${b.appId}\n${b.requestId}\n${b.generation}`
    const range = ranges.get(key) ?? {
      app: b.appId,
      request: b.requestId,
      generation: b.generation,
      lo: '',
      hi: '',
    }
    for (const install of b.targets.installs) {
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
