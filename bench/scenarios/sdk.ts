import { closedLoop, sleep } from '../http.ts'
import { perSecond } from '../stats.ts'
import { countStatus, remaining, type BenchContext, type StatusCounts } from './context.ts'

export interface SdkResult {
  name: 'sdk-sessions'
  bodies: number
  rows: number
  statuses: StatusCounts
  /** From the first send until every receipt is done. */
  elapsedMs: number
  rowsPerSecond: number
  complete: boolean
}

/**
 * SDK sessions first, so the customers have devices in every app: one session start, a few
 * events and a close per customer, posted to `/v1/sdk/apps/:app/uploads`; done when every
 * receipt is `done`.
 */
export async function sdkSessions(
  ctx: BenchContext,
  bodies: readonly { app: string; body: Buffer; rows: number }[],
  options: { maxMs: number },
): Promise<SdkResult> {
  const statuses: StatusCounts = {}
  const receipts: { app: string; tx: string }[] = []
  let rows = 0
  let i = 0
  const started = performance.now()
  ctx.progress.start(
    'sdk-sessions',
    () => `${receipts.length}/${bodies.length} bodies accepted, ${rows} rows`,
  )
  await closedLoop({
    concurrency: 4,
    durationMs: options.maxMs,
    next: () => bodies[i++],
    send: async (b) => {
      for (let attempt = 0; attempt < 50; attempt++) {
        const res = await ctx.sut.http.request(
          'POST',
          `/v1/sdk/apps/${b.app}/uploads`,
          { 'Content-Type': 'application/json' },
          b.body,
        )
        countStatus(statuses, res)
        if (res.status === 202) {
          receipts.push({
            app: b.app,
            tx: (JSON.parse(res.body) as { transaction_id: string }).transaction_id,
          })
          rows += b.rows
          return
        }
        if (res.status !== 429 && res.status !== 503 && res.status !== 'error')
          throw new Error(`SDK upload answered ${res.status}: ${res.body.slice(0, 200)}`)
        await sleep(200)
      }
    },
  })
  // Receipts complete in order within an app (one partition per app): poll each app's oldest.
  const queues = new Map<string, string[]>()
  for (const r of receipts) queues.set(r.app, [...(queues.get(r.app) ?? []), r.tx])
  const pendingCount = () => [...queues.values()].reduce((n, q) => n + q.length, 0)
  const deadline = performance.now() + Math.min(options.maxMs, remaining(ctx))
  ctx.progress.update(() => `waiting for ${pendingCount()} SDK receipts`)
  while (pendingCount() > 0 && performance.now() < deadline) {
    for (const [app, queue] of queues) {
      while (queue.length > 0) {
        const res = await ctx.sut.http.request('GET', `/v1/sdk/apps/${app}/uploads/${queue[0]}`)
        if (res.status !== 200 || (JSON.parse(res.body) as { state: string }).state !== 'done') break
        queue.shift()
      }
    }
    if (pendingCount() > 0) await sleep(100)
  }
  const pending = pendingCount()
  ctx.progress.stop()
  const elapsedMs = performance.now() - started
  return {
    name: 'sdk-sessions',
    bodies: bodies.length,
    rows,
    statuses,
    elapsedMs,
    rowsPerSecond: perSecond(rows, elapsedMs),
    complete: pending === 0 && receipts.length === bodies.length,
  }
}
