import { closedLoop, HttpClient, sleep } from '../http.ts'
import type { CpuUse } from '../machine.ts'
import { perSecond, summarize, type LatencySummary } from '../stats.ts'
import { countStatus, measureCpu, type BenchContext, type StatusCounts } from './context.ts'
import { pollDelay } from './freshness.ts'

export type ProfilesResult =
  | { name: 'profiles'; skipped: string }
  | {
      name: 'profiles'
      skipped?: undefined
      concurrency: number
      customers: number
      sendMs: number
      requests: number
      statuses: StatusCounts
      bySyntax: Record<string, number>
      patchesPerSecond: number
      patchLatencyMs: LatencySummary
      /** 202 of a PATCH to the first GET that shows it, per sampled write. */
      readYourWritesMs: LatencySummary
      rywTimedOut: number
      cpu: CpuUse
    }

/**
 * Profile PATCH traffic of both syntaxes (`{"attributes": …}` and `{"changes": […]}`), spread over
 * many customers (Sluice allows 15 writes per minute per customer), closed loop; meanwhile a few
 * samplers write a fresh value to a customer of their own and poll GET until it shows (every 20 ms
 * at first, then every 5 % of the time waited, at most 100 ms)
 * (read-your-writes). A 404 on the probe means the profile API is not there yet: skipped.
 */
export async function profiles(
  ctx: BenchContext,
  options: {
    bodies: readonly { body: string; syntax: 'attributes' | 'changes' }[]
    durationMs: number
    concurrency: number
    customers: number
    samplers?: number
    pollMs?: number
  },
): Promise<ProfilesResult> {
  const headers = { Authorization: ctx.tenant.auth, 'Content-Type': 'application/json' }
  const probe = await ctx.sut.http.request(
    'PATCH',
    '/v1/profiles/bench-probe',
    headers,
    JSON.stringify({ attributes: { probe: 1 } }),
  )
  if (probe.status === 404) return { name: 'profiles', skipped: 'profile API not available (404)' }
  if (probe.status !== 202)
    return {
      name: 'profiles',
      skipped: `profile API answered ${probe.status} to a valid PATCH: ${probe.body.slice(0, 200)}`,
    }

  const statuses: StatusCounts = {}
  const bySyntax: Record<string, number> = {}
  const latencies: number[] = []
  const ryw: number[] = []
  let rywTimedOut = 0
  let requests = 0
  let accepted = 0
  let i = 0
  const reader = new HttpClient(ctx.sut.url, (options.samplers ?? 3) * 2)
  ctx.progress.start('profiles', () => `${accepted} PATCH 202, ${ryw.length} read-your-writes samples`)
  const { value: sendMs, cpu } = await measureCpu(ctx, async () => {
    const started = performance.now()
    const deadline = started + options.durationMs
    const sampler = async (s: number) => {
      for (let n = 0; performance.now() < deadline; n++) {
        const customer = `ryw-${s}-${n}`
        const value = `v${s}-${n}-${Math.floor(performance.now())}`
        const body =
          n % 2 === 0
            ? JSON.stringify({ attributes: { ryw: value } })
            : JSON.stringify({ changes: [{ op: 'assign', attr: 'ryw', value }] })
        const res = await reader.request('PATCH', `/v1/profiles/${customer}`, headers, body)
        if (res.status !== 202) {
          await sleep(50)
          continue
        }
        const until = Math.min(res.at + 30_000, ctx.budgetEnd)
        let seen = false
        while (performance.now() < until) {
          const got = await reader.request('GET', `/v1/profiles/${customer}`, {
            Authorization: ctx.tenant.auth,
          })
          if (got.status === 200) {
            const profile = JSON.parse(got.body) as { attributes?: Record<string, unknown> }
            if (profile.attributes?.ryw === value) {
              ryw.push(got.at - res.at)
              seen = true
              break
            }
          }
          await sleep(pollDelay(options.pollMs ?? 20, performance.now() - res.at))
        }
        if (!seen) rywTimedOut++
      }
    }
    const samplers = Array.from({ length: options.samplers ?? 3 }, (_, s) => sampler(s))
    await closedLoop({
      concurrency: options.concurrency,
      durationMs: options.durationMs,
      next: () => i++,
      send: async (n) => {
        const item = options.bodies[n % options.bodies.length]!
        const customer = `pc-${n % options.customers}`
        const res = await ctx.sut.http.request('PATCH', `/v1/profiles/${customer}`, headers, item.body)
        requests++
        countStatus(statuses, res)
        if (res.status === 202) {
          accepted++
          bySyntax[item.syntax] = (bySyntax[item.syntax] ?? 0) + 1
          latencies.push(res.ms)
        } else if (res.status === 429 || res.status === 503) {
          await sleep(Math.min(200, (res.retryAfterS ?? 0.2) * 1000))
        }
      },
    })
    const elapsed = performance.now() - started
    ctx.progress.update(() => 'waiting for read-your-writes samples')
    await Promise.all(samplers)
    return elapsed
  })
  reader.close()
  ctx.progress.stop()
  return {
    name: 'profiles',
    concurrency: options.concurrency,
    customers: options.customers,
    sendMs,
    requests,
    statuses,
    bySyntax,
    patchesPerSecond: perSecond(accepted, sendMs),
    patchLatencyMs: summarize(latencies),
    readYourWritesMs: summarize(ryw),
    rywTimedOut,
    cpu,
  }
}
