/**
 * Several producers on one local log: appends are written on lmdb's write thread under the
 * condition that the partition's tail is where the producer expects it (log-store.ts), so a
 * producer whose expectation is stale (another producer appended meanwhile) must retry at the new
 * tail, never overwrite a record or leave a gap.
 */
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { open } from 'lmdb'
import { describe, expect, it } from 'vitest'
import type { BusRecord } from '../../pipelines/connectors/bus/bus.ts'
import type { LocalLog } from '../../pipelines/connectors/bus/local-log/local-log.ts'
import { localLogTestbed } from '../helpers/local-log-testbed.ts'

const repoRoot = fileURLToPath(new URL('../../', import.meta.url))
const producerScript = fileURLToPath(new URL('../fixtures/local-log-producer.ts', import.meta.url))

const { tempDir, openLog, closeLog } = localLogTestbed('local-log-producers', { partitions: 1 })

/** Every record of partition 0 of `topic`, read by a fresh consumer group until it has `total`. */
async function readAll(log: LocalLog, topic: string, total: number): Promise<BusRecord[]> {
  const records: BusRecord[] = []
  const consumer = await log.consume({
    group: `reader-${Math.random().toString(36).slice(2)}`,
    topics: [topic],
    handler: async (batch) => void records.push(...batch.records),
  })
  const deadline = Date.now() + 20_000
  while (records.length < total) {
    if (Date.now() > deadline) throw new Error(`read ${records.length} of ${total} records`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  await consumer.stop()
  return records
}

function expectGapFree(records: BusRecord[], values: string[]): void {
  expect(records.map((r) => Number(r.offset))).toEqual(values.map((_, i) => i))
  expect(records.map((r) => r.value.toString()).sort()).toEqual([...values].sort())
}

function lines(child: ReturnType<typeof spawn>): AsyncIterator<string> {
  return createInterface({ input: child.stdout! })[Symbol.asyncIterator]()
}

describe('local log with several producers', () => {
  it('two producers with their own expected tails, appending in the same turns, get distinct gap-free offsets', async () => {
    const dir = await tempDir()
    const a = openLog(dir)
    await a.ensureTopics([{ topic: 'shared', partitions: 1 }])
    // A second LocalLog on the same directory in this process: its appends go to the same write
    // transactions as a's, each with its own idea of the tail, so every turn races.
    const b = openLog(dir)
    const values: string[] = []
    const produce = (log: LocalLog, name: string, round: number) => {
      const messages = [0, 1].map((i) => `${name}-${round}-${i}`)
      values.push(...messages)
      return log.produce(
        'shared',
        messages.map((value) => ({ value: Buffer.from(value) })),
      )
    }
    for (let round = 0; round < 30; round++)
      await Promise.all([produce(a, 'a', round), produce(b, 'b', round)])

    const records = await readAll(a, 'shared', values.length)
    expectGapFree(records, values)
    // Both see the same tail, and the next append of each lands after it.
    await b.produce('shared', [{ value: Buffer.from('b-last') }])
    await a.produce('shared', [{ value: Buffer.from('a-last') }])
    const all = await readAll(b, 'shared', values.length + 2)
    expectGapFree(all, [...values, 'b-last', 'a-last'])
    expect(all.slice(-2).map((r) => r.value.toString())).toEqual(['b-last', 'a-last'])
  })

  it('a producer in another process racing this one: every record stored once, offsets gap-free', async () => {
    const dir = await tempDir()
    const log = openLog(dir)
    await log.produce('raced', [{ value: Buffer.from('first'), partition: 0 }])
    const count = 300
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', producerScript, dir, 'raced', 'child', String(count), '8'],
      { cwd: repoRoot, stdio: ['pipe', 'pipe', 'inherit'] },
    )
    const out = lines(child)
    expect(JSON.parse((await out.next()).value as string)).toEqual({ ready: true })
    child.stdin.write('go\n')
    const mine: string[] = []
    let next = 0
    const lane = async () => {
      while (next < count) {
        const batch = [`parent-${next++}`, `parent-${next++}`]
        mine.push(...batch)
        await log.produce(
          'raced',
          batch.map((value) => ({ value: Buffer.from(value), partition: 0 })),
        )
      }
    }
    await Promise.all(Array.from({ length: 8 }, lane))
    expect(JSON.parse((await out.next()).value as string)).toEqual({ done: count })

    const childValues = Array.from({ length: count }, (_, i) => `child-${i}`)
    const records = await readAll(log, 'raced', 1 + mine.length + count)
    expectGapFree(records, ['first', ...mine, ...childValues])
    // Each producer's own records keep their order per produce call, and this process's next
    // append lands after everything the other process wrote.
    await log.produce('raced', [{ value: Buffer.from('after'), partition: 0 }])
    const all = await readAll(log, 'raced', records.length + 1)
    expect(all.at(-1)?.value.toString()).toBe('after')
    expect(Number(all.at(-1)?.offset)).toBe(records.length)
  }, 60_000)

  it('continues from the stored next offset in a log written before partitions had a tail entry', async () => {
    const dir = await tempDir()
    const log = openLog(dir)
    await log.produce(
      'old',
      ['r0', 'r1', 'r2'].map((value) => ({ value: Buffer.from(value) })),
    )
    await closeLog(log)
    // What a log of an earlier version looks like: records and `next`, no `tails`.
    const env = open({ path: dir, maxDbs: 4 })
    const tails = env.openDB({ name: 'tails', encoding: 'msgpack', useVersions: true })
    await tails.remove(['old', 0])
    expect(tails.get(['old', 0])).toBeUndefined()
    await env.close()

    const reopened = openLog(dir)
    await reopened.produce('old', [{ value: Buffer.from('r3') }])
    const records = await readAll(reopened, 'old', 4)
    expectGapFree(records, ['r0', 'r1', 'r2', 'r3'])
  })
})
