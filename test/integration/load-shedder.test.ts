import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { LocalLog } from '../../pipelines/connectors/bus/local-log/local-log.ts'
import { LoadShedder } from '../../services/edge/uploads/load-shedder.ts'
import { waitFor } from '../helpers/wait-for.ts'

const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

async function openLog(): Promise<LocalLog> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-shedder-'))
  const log = LocalLog.open({ path: dir, partitions: 2, retention: { intervalMs: 0 } })
  cleanups.push(
    () => rm(dir, { recursive: true, force: true }),
    () => log.close(),
  )
  return log
}

describe('load shedding on the backlog of the local log', () => {
  it('tells how long the oldest uncommitted record has waited, per group, over every partition', async () => {
    const log = await openLog()
    await log.ensureTopics([{ topic: 'up', partitions: 2 }])
    expect(await log.backlogAgeMs('g', 'up')).toBe(0)
    const before = Date.now()
    await log.produce('up', [{ partition: 1, value: Buffer.from('a') }])
    await new Promise((r) => setTimeout(r, 50))
    await log.produce('up', [{ partition: 0, value: Buffer.from('b') }])
    const age = await log.backlogAgeMs('g', 'up')
    // The record on partition 1, the older one, sets the age.
    expect(age).toBeGreaterThanOrEqual(50)
    expect(age).toBeLessThanOrEqual(Date.now() - before)
    // Once consumed and committed, nothing waits.
    const consumer = await log.consume({ group: 'g', topics: ['up'], handler: async () => {} })
    cleanups.push(() => consumer.stop())
    await waitFor(
      () => log.backlogAgeMs('g', 'up'),
      (ms) => ms === 0,
      { what: 'the backlog consumed' },
    )
  })

  it('sheds once the oldest record has waited longer than allowed, whatever the record count', async () => {
    const log = await openLog()
    await log.ensureTopics([{ topic: 'up', partitions: 2 }])
    const shedder = (maxBacklogMs: number) =>
      new LoadShedder({
        bus: log,
        watched: [{ group: 'g', topic: 'up' }],
        maxLag: 1000,
        maxBacklogMs,
        maxInFlightBytes: 1 << 20,
      })
    const patient = shedder(60_000)
    const strict = shedder(100)
    await log.produce('up', [{ key: 'k', value: Buffer.from('one body') }])
    // (No "not yet" check on the strict one: on a loaded machine the record may be 100 ms old by
    // the first sample. The patient one shows that a young backlog does not shed.)
    await new Promise((r) => setTimeout(r, 150))
    await patient.sample()
    await strict.sample()
    // One record is far below maxLag; its age alone sheds.
    expect(patient.refusal(10)).toBeUndefined()
    expect(strict.refusal(10)).toMatch(/^ingestion is behind \(up backlog \d+\.\d s old\); retry later$/)
    // Off (0): records only.
    const off = shedder(0)
    await off.sample()
    expect(off.refusal(10)).toBeUndefined()
  })
})
