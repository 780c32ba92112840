import { afterEach, describe, expect, it } from 'vitest'
import { CpuPool, defaultPoolThreads } from '../../services/cpu-pool/pool.ts'
import type { CpuResult } from '../../pipelines/cpu/tasks.ts'
import { lines, SCHEMA_URL, uuid } from '../helpers/ingestion-scenario.ts'

// The real pool: piscina threads loading the task module through worker-entry.mjs.
describe('CpuPool', () => {
  let pool: CpuPool | undefined
  afterEach(async () => {
    await pool?.close()
    pool = undefined
  })

  it('runs every task asked for at once, past what its queue holds, in full', async () => {
    // One thread and a queue of one: the pool's gate holds the other 22 with their callers.
    pool = new CpuPool(1, 1)
    const bodies = Array.from({ length: 24 }, (_, i) => uploadOf(3 + (i % 5)))
    const running = bodies.map(({ body }) => pool!.run(serverUpload(body)))
    // The rest wait with their callers, not in the threads' queue.
    await new Promise((resolve) => setImmediate(resolve))
    expect(pool.queued).toBeLessThanOrEqual(1)
    const results = await Promise.all(running)
    expect(results.map((r) => eventsOf(r).uuid)).toEqual(bodies.map(({ uuids }) => uuids))
    expect(results.map((r) => eventsOf(r).apps)).toEqual(bodies.map(() => ['app-1']))
  })

  it('has half the cores as threads, at least one', () => {
    expect([1, 2, 3, 4, 8, 16].map(defaultPoolThreads)).toEqual([1, 1, 1, 2, 4, 8])
  })
})

function uploadOf(events: number): { body: Buffer; uuids: string[] } {
  const uuids = Array.from({ length: events }, () => uuid())
  const now = Date.now()
  const body = lines(
    uuids.map((id, i) => ({
      schema_url: SCHEMA_URL,
      app_uuid: 'app-1',
      customer_id: `c${i}`,
      event_name: 'opened',
      event_time: now,
      uuid: id,
    })),
  )
  return { body: Buffer.from(body), uuids }
}

function serverUpload(body: Buffer) {
  return {
    kind: 'server-upload' as const,
    body,
    encoding: 'identity' as const,
    receivedAt: Date.now(),
    pastWindowMs: 3_600_000,
    futureWindowMs: 3_600_000,
    maxInflatedBytes: 1024 * 1024,
    maxRejects: 10,
  }
}

function eventsOf(result: CpuResult) {
  if (result.kind !== 'server-upload') throw new Error(`expected a server upload, got ${result.kind}`)
  expect(result.rejected).toBe(0)
  return result.events
}
