import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { distributedEnv } from '../helpers/distributed-env.ts'
import { postSdkTo, sdkReceiptDone, sessionRow } from '../helpers/ingestion-scenario.ts'
import { createTenant, startSluice, type SluiceChild } from '../helpers/sluice-process.ts'
import { tempDir } from '../helpers/temp.ts'
import { waitFor } from '../helpers/wait-for.ts'
import type { InProcessSluice } from '../helpers/sluice-inprocess.ts'

const TOKEN = 'ops-endpoints-admin-token-1'

/** A metric's value in a Prometheus text exposition, or undefined. */
function metric(text: string, name: string, labels: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels))
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1))
}

// Real `sluice edge`, `sluice worker` and `sluice scheduler` processes (issue 12 §3): the two
// without an edge answer health, readiness and metrics on a port of their own.
describe('health, readiness and metrics in every role', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>
  const children: SluiceChild[] = []
  let edge: SluiceChild
  let worker: SluiceChild
  let scheduler: SluiceChild
  let prefix: string

  beforeAll(async () => {
    dir = await tempDir('ops')
    const env = { ...distributedEnv('ops'), SLUICE_DATA_DIR: dir.path, SLUICE_ADMIN_TOKEN: TOKEN }
    prefix = env.SLUICE_TOPIC_PREFIX
    ;[edge, worker, scheduler] = await Promise.all([
      startSluice(env, ['edge']),
      startSluice(env, ['worker']),
      startSluice(env, ['scheduler']),
    ])
    children.push(edge, worker, scheduler)
  }, 90_000)
  afterAll(async () => {
    for (const child of children) await child.stop().catch(() => undefined)
    await dir.cleanup()
  })

  it('the worker and the scheduler each serve /healthz and /readyz', async () => {
    expect(edge.opsUrl).toBeUndefined()
    for (const child of [worker, scheduler]) {
      expect(child.opsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
      const health = await fetch(`${child.opsUrl}/healthz`)
      expect(await health.json()).toEqual({ status: 'ok' })
      const ready = await fetch(`${child.opsUrl}/readyz`)
      expect(ready.status).toBe(200)
      expect(await ready.json()).toEqual({ status: 'ready', draining: false, checks: { store: true } })
    }
  })

  it("the worker's /metrics shows its stages' work and its consumers' lag", async () => {
    const { auth } = await createTenant(edge.url, TOKEN, 'ops-app')
    expect(auth).toMatch(/^Basic /)
    const sluice = { url: edge.url } as InProcessSluice
    const tx = await postSdkTo(edge.url, 'ops-app', [
      sessionRow({ install: 'i-ops', customer: 'ops', at: Date.now() - 1000, country: 'nl', model: 'm' }),
    ])
    await sdkReceiptDone(sluice, 'ops-app', tx)
    const text = await waitFor(
      async () => (await fetch(`${worker.opsUrl}/metrics`)).text(),
      (t) => (metric(t, 'sluice_stage_records_total', 'stage="sdk-builder"') ?? 0) >= 1,
      { what: "the sdk-builder's processed records in the worker's metrics", timeoutMs: 20_000 },
    )
    expect(metric(text, 'sluice_stage_duration_seconds_count', 'stage="sdk-builder"')).toBeGreaterThanOrEqual(
      1,
    )
    // Every stage samples its group's lag where it consumes.
    for (const topic of ['uploads', 'sdk-uploads', 'events'])
      expect(metric(text, 'sluice_consumer_lag_records', `topic="${prefix}${topic}"`)).toBeGreaterThanOrEqual(
        0,
      )
    // The split of the process's CPU by kind of thread: the worker's pool validated the SDK body,
    // and its event loop ran the stage.
    expect(metric(text, 'sluice_thread_cpu_seconds', 'thread="main"')).toBeGreaterThan(0)
    expect(metric(text, 'sluice_thread_cpu_seconds', 'thread="cpu_pool"')).toBeGreaterThan(0)
    expect(metric(text, 'sluice_thread_cpu_seconds', 'thread="node"')).toBeGreaterThanOrEqual(0)
    // The scheduler serves its (process-level) metrics too.
    const schedulerMetrics = await (await fetch(`${scheduler.opsUrl}/metrics`)).text()
    expect(schedulerMetrics).toContain('process_cpu_user_seconds_total')
  })
})
