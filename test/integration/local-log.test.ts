import { spawn } from 'node:child_process'
import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import {
  partitionForKey,
  type BusRecord,
  type ConsumeOptions,
  type Consumer,
  type RecordBatch,
} from '../../pipelines/connectors/bus/bus.ts'
import { LocalLog } from '../../pipelines/connectors/bus/local-log/local-log.ts'
import { localLogTestbed } from '../helpers/local-log-testbed.ts'

const repoRoot = fileURLToPath(new URL('../../', import.meta.url))
const childScript = fileURLToPath(new URL('../fixtures/local-log-child.ts', import.meta.url))

const { tempDir, openLog, closeLog } = localLogTestbed('local-log', { partitions: 2 })

async function waitFor(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

interface Collector {
  consumer: Consumer
  batches: RecordBatch[]
  records: BusRecord[]
}

async function collect(
  log: LocalLog,
  group: string,
  topics: string[],
  options: Partial<ConsumeOptions> = {},
): Promise<Collector> {
  const batches: RecordBatch[] = []
  const records: BusRecord[] = []
  const consumer = await log.consume({
    group,
    topics,
    handler: async (batch) => {
      batches.push(batch)
      records.push(...batch.records)
    },
    ...options,
  })
  return { consumer, batches, records }
}

function byPartition(records: BusRecord[]): Map<number, BusRecord[]> {
  const out = new Map<number, BusRecord[]>()
  for (const record of records) out.set(record.partition, [...(out.get(record.partition) ?? []), record])
  return out
}

function offsets(records: BusRecord[]): number[] {
  return records.map((record) => Number(record.offset))
}

function range(from: number, to: number): number[] {
  return Array.from({ length: Math.max(0, to - from) }, (_, i) => from + i)
}

function text(record: BusRecord): string {
  return record.value.toString()
}

function nextOffsets(log: LocalLog, topic: string): number[] {
  const stats = log.stats().topics.find((t) => t.topic === topic)
  return stats?.partitions.map((p) => p.nextOffset) ?? []
}

function storedRecords(log: LocalLog, topic: string): number {
  return log.stats().topics.find((t) => t.topic === topic)?.records ?? 0
}

describe('LocalLog', () => {
  it('delivers values, keys and headers in offset order per partition, keyed by murmur2', async () => {
    const log = openLog(await tempDir())
    await log.ensureTopics([{ topic: 'orders', partitions: 3 }])
    const expected = new Map<
      number,
      { key: string | null; value: string; headers: Record<string, string> }[]
    >()
    let roundRobin = 0
    for (let call = 0; call < 3; call++) {
      const messages = range(call * 10, call * 10 + 10).map((i) => ({
        key: i % 4 === 3 ? undefined : `user-${i % 5}`,
        value: Buffer.from(`value-${i}`),
        headers: i % 2 === 0 ? { n: String(i), kind: 'even' } : undefined,
      }))
      for (const m of messages) {
        const partition = partitionForKey(m.key, 3, m.key === undefined ? roundRobin++ : 0)
        const list = expected.get(partition) ?? []
        list.push({ key: m.key ?? null, value: m.value.toString(), headers: m.headers ?? {} })
        expected.set(partition, list)
      }
      await log.produce('orders', messages)
    }

    const { records } = await collect(log, 'reader', ['orders'])
    await waitFor('30 records', () => records.length === 30)

    const got = byPartition(records)
    for (const [partition, want] of expected) {
      const list = got.get(partition) ?? []
      expect(offsets(list)).toEqual(range(0, want.length))
      expect(list.map((r) => ({ key: r.key, value: text(r), headers: r.headers }))).toEqual(want)
      for (const r of list) {
        expect(r.topic).toBe('orders')
        expect(typeof r.timestamp).toBe('number')
      }
    }
    const partitionsOfKey = new Map<string, Set<number>>()
    for (const r of records.filter((r) => r.key !== null)) {
      partitionsOfKey.set(r.key!, (partitionsOfKey.get(r.key!) ?? new Set()).add(r.partition))
    }
    expect(partitionsOfKey.size).toBe(5)
    for (const partitions of partitionsOfKey.values()) expect(partitions.size).toBe(1)
    expect(nextOffsets(log, 'orders')).toEqual([0, 1, 2].map((p) => expected.get(p)?.length ?? 0))
  })

  it('creates unknown topics on produce with the default partition count', async () => {
    const log = openLog(await tempDir(), { partitions: 4 })
    // Subscribed before the topic exists: its partitions are picked up once produce creates it.
    const early = await collect(log, 'early', ['auto'])
    await log.produce(
      'auto',
      range(0, 8).map((i) => ({ value: Buffer.from(`r${i}`) })),
    )
    expect(nextOffsets(log, 'auto')).toEqual([2, 2, 2, 2])
    await waitFor('early subscriber', () => early.records.length === 8)
    expect(early.records.map(text).sort()).toEqual(range(0, 8).map((i) => `r${i}`))
    // ensureTopics keeps an existing topic's partition count, like Kafka's createTopics.
    await log.ensureTopics([{ topic: 'auto', partitions: 8 }])
    expect(nextOffsets(log, 'auto')).toHaveLength(4)
    await closeLog(log)
    await expect(log.produce('auto', [{ value: Buffer.from('late') }])).rejects.toThrow(/closed/)
  })

  it('respects maxBatchRecords and maxBatchBytes, always handing at least one record', async () => {
    const log = openLog(await tempDir())
    await log.ensureTopics([{ topic: 'sized', partitions: 1 }])
    const sizes = [1000, 1000, 1000, 5000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000]
    await log.produce(
      'sized',
      sizes.map((size, i) => ({ value: Buffer.alloc(size, i) })),
    )

    const byCount = await collect(log, 'by-count', ['sized'], { maxBatchRecords: 5 })
    const byBytes = await collect(log, 'by-bytes', ['sized'], { maxBatchBytes: 2500 })
    await waitFor('all records', () => byCount.records.length === 12 && byBytes.records.length === 12)

    expect(byCount.batches.every((b) => b.records.length <= 5)).toBe(true)
    for (const batch of byBytes.batches) {
      const bytes = batch.records.reduce((sum, r) => sum + r.value.length, 0)
      expect(bytes <= 2500 || batch.records.length === 1).toBe(true)
    }
    expect(byBytes.batches.some((b) => b.records.length === 1 && b.records[0]!.value.length === 5000)).toBe(
      true,
    )
    expect(offsets(byBytes.records)).toEqual(range(0, 12))
    expect(byBytes.records.map((r) => r.value.length)).toEqual(sizes)
  })

  it('lets a handler look at the records after its batch, which are then delivered in order', async () => {
    const log = openLog(await tempDir())
    await log.ensureTopics([{ topic: 'ahead', partitions: 1 }])
    await log.produce(
      'ahead',
      range(0, 7).map((i) => ({ value: Buffer.from(`r${i}`) })),
    )
    const seen: { batch: number[]; ahead: number[]; small: number[]; from: number[] }[] = []
    const delivered: BusRecord[][] = []
    const lookedAt: BusRecord[] = []
    const consumer = await log.consume({
      group: 'looks-ahead',
      topics: ['ahead'],
      maxBatchRecords: 3,
      handler: async (batch) => {
        delivered.push(batch.records)
        const ahead = batch.ahead?.(1 << 20) ?? []
        lookedAt.push(...ahead)
        seen.push({
          batch: offsets(batch.records),
          ahead: offsets(ahead),
          // At least one record, as for a batch, however few bytes are asked for.
          small: offsets(batch.ahead?.(1) ?? []),
          // From a later offset, within the next batch's record limit.
          from: offsets(batch.ahead?.(1 << 20, String(Number(batch.records.at(-1)!.offset) + 3)) ?? []),
        })
      },
    })
    await waitFor('every record', () => seen.flatMap((s) => s.batch).length === 7)
    await consumer.stop()
    expect(seen).toEqual([
      { batch: [0, 1, 2], ahead: [3, 4, 5], small: [3], from: [5] },
      { batch: [3, 4, 5], ahead: [6], small: [6], from: [] },
      { batch: [6], ahead: [], small: [], from: [] },
    ])
    // A record looked at ahead is delivered as it was read, not read and copied again.
    expect(delivered[1]![0]).toBe(lookedAt[0])
    expect(delivered[2]![0]).toBe(lookedAt[3])
  })

  it('gives 200 concurrent producers gap-free offsets and delivers every record once', async () => {
    const log = openLog(await tempDir(), { partitions: 4 })
    const calls = range(0, 200).map((call) =>
      range(0, 1 + (call % 3)).map((i) => ({
        key: call % 2 === 0 ? `key-${call % 7}` : undefined,
        value: Buffer.from(`${call}:${i}`),
      })),
    )
    await Promise.all(calls.map((messages) => log.produce('busy', messages)))
    const total = calls.reduce((sum, messages) => sum + messages.length, 0)
    expect(nextOffsets(log, 'busy').reduce((a, b) => a + b, 0)).toBe(total)

    const { records } = await collect(log, 'counter', ['busy'], { maxBatchRecords: 37 })
    await waitFor('all records delivered and committed', async () => (await log.lag('counter', 'busy')) === 0)

    const ids = records.map(text)
    expect(new Set(ids).size).toBe(total)
    expect(ids).toHaveLength(total)
    expect(new Set(ids)).toEqual(new Set(calls.flat().map((m) => m.value.toString())))
    for (const [partition, list] of byPartition(records)) {
      expect(offsets(list)).toEqual(range(0, nextOffsets(log, 'busy')[partition]!))
    }
    // Messages of one produce call keep their order within a partition.
    for (const list of byPartition(records).values()) {
      const seen = new Map<string, number>()
      for (const [call, i] of list.map((r) => text(r).split(':'))) {
        expect(Number(i)).toBeGreaterThan(seen.get(call!) ?? -1)
        seen.set(call!, Number(i))
      }
    }
  })

  it('stores every byte of large records produced in one turn (each encoded into a reused buffer)', async () => {
    const log = openLog(await tempDir(), { partitions: 2 })
    // Bodies from 70 KB to 400 KB (past the encoder's first 256 KB buffer), each of its own bytes.
    const sizes = [70_000, 300_000, 75_000, 410_000, 1, 120_000, 90_000, 260_000]
    const messages = sizes.map((size, call) => ({
      key: `k\u00e9-${call}`,
      value: Buffer.alloc(size, call + 1).fill(String(call), 0, Math.min(size, 8)),
      headers: { tx: `tx-${call}`, enc: call % 2 === 0 ? 'gzip' : 'identity' },
    }))
    await Promise.all(messages.map((message) => log.produce('large', [message])))
    const { records } = await collect(log, 'reader', ['large'])
    await waitFor('every record delivered', () => records.length === messages.length)
    const byTx = new Map(records.map((r) => [r.headers.tx, r]))
    messages.forEach((message, call) => {
      const record = byTx.get(`tx-${call}`)
      expect(record?.key).toBe(message.key)
      expect(record?.headers).toEqual(message.headers)
      expect(record?.value.length).toBe(message.value.length)
      expect(record?.value.equals(message.value)).toBe(true)
    })
  })

  it('redelivers a failed batch, resumes after the commit on restart, and isolates groups', async () => {
    const dir = await tempDir()
    const first = openLog(dir, { retryBackoff: { initialMs: 20 } })
    await first.ensureTopics([{ topic: 'jobs', partitions: 1 }])
    await first.produce(
      'jobs',
      range(0, 10).map((i) => ({ key: 'k', value: Buffer.from(`job-${i}`) })),
    )

    const calls: string[][] = []
    const errors: { err: unknown; offsets: string[] }[] = []
    const consumer = await first.consume({
      group: 'workers',
      topics: ['jobs'],
      maxBatchRecords: 4,
      handler: async (batch) => {
        calls.push(batch.records.map(text))
        if (calls.length === 1) throw new Error('flaky sink')
      },
      onError: (err, batch) => errors.push({ err, offsets: batch.records.map((r) => r.offset) }),
    })
    await expect(
      first.consume({ group: 'workers', topics: ['jobs'], handler: async () => {} }),
    ).rejects.toThrow(/already has a consumer/)
    await waitFor('workers to catch up', async () => (await first.lag('workers', 'jobs')) === 0)
    await consumer.stop()

    expect(calls[0]).toEqual(['job-0', 'job-1', 'job-2', 'job-3'])
    expect(calls[1]).toEqual(calls[0])
    expect(calls.slice(1).flat()).toEqual(range(0, 10).map((i) => `job-${i}`))
    expect(errors).toHaveLength(1)
    expect((errors[0]!.err as Error).message).toBe('flaky sink')
    expect(errors[0]!.offsets).toEqual(['0', '1', '2', '3'])
    await closeLog(first)

    const second = openLog(dir)
    await second.produce(
      'jobs',
      range(10, 15).map((i) => ({ key: 'k', value: Buffer.from(`job-${i}`) })),
    )
    const resumed = await collect(second, 'workers', ['jobs'])
    const fresh = await collect(second, 'auditors', ['jobs'])
    await waitFor('both groups to catch up', () => resumed.records.length >= 5 && fresh.records.length >= 15)
    await waitFor('commits', async () => (await second.lag('workers', 'jobs')) === 0)
    expect(offsets(resumed.records)).toEqual(range(10, 15))
    expect(resumed.records.map(text)).toEqual(range(10, 15).map((i) => `job-${i}`))
    expect(offsets(fresh.records)).toEqual(range(0, 15))
  })

  it('stop() waits for the batch in flight and commits it', async () => {
    const log = openLog(await tempDir())
    await log.ensureTopics([{ topic: 'slow', partitions: 1 }])
    await log.produce(
      'slow',
      range(0, 3).map((i) => ({ value: Buffer.from(`s${i}`) })),
    )
    let release!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    let started = false
    const consumer = await log.consume({
      group: 'slowpoke',
      topics: ['slow'],
      handler: async () => {
        started = true
        await released
      },
    })
    await waitFor('handler to start', () => started)
    let stopped = false
    const stopping = consumer.stop().then(() => (stopped = true))
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve))
    expect(stopped).toBe(false)
    release()
    await stopping
    expect(await log.lag('slowpoke', 'slow')).toBe(0)
  })

  it('reports lag before and after consumption', async () => {
    const log = openLog(await tempDir())
    await log.ensureTopics([{ topic: 'lagged', partitions: 2 }])
    expect(await log.lag('g', 'lagged')).toBe(0)
    expect(await log.lag('g', 'no-such-topic')).toBe(0)
    await log.produce(
      'lagged',
      range(0, 7).map((i) => ({ key: `k${i}`, value: Buffer.from(`l${i}`) })),
    )
    expect(await log.lag('g', 'lagged')).toBe(7)

    const { consumer } = await collect(log, 'g', ['lagged'])
    await waitFor('lag 0', async () => (await log.lag('g', 'lagged')) === 0)
    await consumer.stop()
    await log.produce(
      'lagged',
      range(7, 10).map((i) => ({ key: `k${i}`, value: Buffer.from(`l${i}`) })),
    )
    expect(await log.lag('g', 'lagged')).toBe(3)
    expect(await log.lag('other', 'lagged')).toBe(10)
  })

  it('deletes records every group has committed past, and keeps records no group consumed', async () => {
    const log = openLog(await tempDir())
    await log.ensureTopics([{ topic: 'ret', partitions: 2 }])
    await log.produce(
      'ret',
      range(0, 40).map((i) => ({ value: Buffer.from(`r${i}`) })),
    )
    await log.produce(
      'keep',
      range(0, 10).map((i) => ({ value: Buffer.from(`k${i}`) })),
    )

    // A group that has joined but not committed pins the log.
    const failing = await log.consume({
      group: 'laggard',
      topics: ['ret'],
      handler: async () => Promise.reject(new Error('down')),
      onError: () => undefined,
    })
    const fast = await collect(log, 'fast', ['ret'])
    await waitFor('fast to catch up', async () => (await log.lag('fast', 'ret')) === 0)
    expect(await log.runRetention()).toBe(0)
    expect(storedRecords(log, 'ret')).toBe(40)
    await failing.stop()

    const laggard = await collect(log, 'laggard', ['ret'])
    await waitFor('laggard to catch up', async () => (await log.lag('laggard', 'ret')) === 0)
    expect(laggard.records).toHaveLength(40)
    expect(await log.runRetention()).toBe(40)
    expect(storedRecords(log, 'ret')).toBe(0)
    expect(storedRecords(log, 'keep')).toBe(10)
    expect(log.stats().records).toBe(10)
    const ret = log.stats().topics.find((t) => t.topic === 'ret')!
    expect(ret.partitions.map((p) => [p.firstOffset, p.nextOffset])).toEqual([
      [20, 20],
      [20, 20],
    ])

    // Offsets continue after a fully trimmed partition.
    await log.produce(
      'ret',
      range(0, 4).map((i) => ({ value: Buffer.from(`again${i}`) })),
    )
    await waitFor('new records', () => fast.records.length === 44)
    expect(offsets(fast.records.slice(40)).sort((a, b) => a - b)).toEqual([20, 20, 21, 21])
    expect(fast.records.slice(40).map(text).sort()).toEqual(['again0', 'again1', 'again2', 'again3'])
  })

  it('sweeps in the background and honours a minimum age', async () => {
    const swept = openLog(await tempDir(), { retention: { intervalMs: 30 } })
    const aged = openLog(await tempDir(), { retention: { intervalMs: 0, minAgeMs: 60_000 } })
    for (const log of [swept, aged]) {
      await log.produce(
        't',
        range(0, 20).map((i) => ({ value: Buffer.alloc(2000, i) })),
      )
      await collect(log, 'g', ['t'])
      await waitFor('consumed', async () => (await log.lag('g', 't')) === 0)
    }
    await waitFor('background sweep', () => storedRecords(swept, 't') === 0)
    expect(await aged.runRetention()).toBe(0)
    expect(storedRecords(aged, 't')).toBe(20)
  })

  it('keeps one memory map of the file while it grows, and reuses the space retention frees', async () => {
    const dir = await tempDir()
    const log = openLog(dir)
    const consumed = await collect(log, 'g', ['grow'])
    // 40 rounds of 1 MB: the file passes many doublings of a map that starts small.
    for (let round = 0; round < 40; round++) {
      await log.produce(
        'grow',
        range(0, 4).map((i) => ({ value: Buffer.alloc(256 * 1024, round * 4 + i) })),
      )
      await waitFor('consumed', () => consumed.records.length === (round + 1) * 4)
      await waitFor('committed', async () => (await log.lag('g', 'grow')) === 0)
      await log.runRetention()
    }
    expect(consumed.records.map((r) => r.value[0]).sort((a, b) => a! - b!)).toEqual(range(0, 160))
    const maps = readFileSync('/proc/self/smaps', 'utf8')
      .split('\n')
      .filter((line) => line.endsWith(join(dir, 'data.mdb')))
    // lmdb-js keeps every outgrown mapping (and its resident pages) until close without a map size.
    expect(maps).toHaveLength(1)
    // Freed pages are reused: the file holds about one round, not the 40 MB written.
    expect(statSync(join(dir, 'data.mdb')).size).toBeLessThan(8 * 1024 * 1024)
  })

  it('after kill -9, keeps every acknowledged record and redelivers exactly what was not committed', async () => {
    const dir = await tempDir()
    const child = spawn(process.execPath, ['--import', 'tsx', childScript, dir, 'crash', 'sink', '40', '8'], {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    let stderr = ''
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    const acked = new Set<string>()
    const stuck = new Map<number, number>()
    let consuming = false
    let tailAcks = 0
    createInterface({ input: child.stdout }).on('line', (line) => {
      const event = JSON.parse(line) as {
        acked?: string
        stuck?: number
        offset?: string
        consuming?: boolean
      }
      if (event.acked !== undefined) acked.add(event.acked)
      if (event.acked?.startsWith('tail-')) tailAcks++
      if (event.stuck !== undefined) stuck.set(event.stuck, Number(event.offset))
      if (event.consuming) consuming = true
    })
    try {
      await waitFor(
        'the child to commit part of each partition and keep producing',
        () => consuming && stuck.size === 2 && tailAcks >= 30,
        20_000,
      )
    } catch (err) {
      child.kill('SIGKILL')
      throw new Error(`${String(err)}; child stderr: ${stderr}`)
    }
    child.kill('SIGKILL')
    await exited

    const log = openLog(dir)
    const next = nextOffsets(log, 'crash')
    const total = next.reduce((a, b) => a + b, 0)
    const audit = await collect(log, 'audit', ['crash'])
    await waitFor('the audit group to read everything', () => audit.records.length === total)
    const stored = new Set(audit.records.map(text))
    expect(stored.size).toBe(total)
    expect([...acked].filter((id) => !stored.has(id))).toEqual([])
    for (const [partition, list] of byPartition(audit.records)) {
      expect(offsets(list)).toEqual(range(0, next[partition]!))
      for (const r of list) expect(r.headers).toEqual({ id: text(r) })
    }

    const redelivered = await collect(log, 'sink', ['crash'])
    await waitFor('the group to catch up', async () => (await log.lag('sink', 'crash')) === 0)
    const auditByPartition = byPartition(audit.records)
    for (const [partition, committed] of stuck) {
      const list = byPartition(redelivered.records).get(partition) ?? []
      expect(offsets(list)).toEqual(range(committed, next[partition]!))
      expect(list.map(text)).toEqual(auditByPartition.get(partition)!.slice(committed).map(text))
    }
  }, 40_000)
})
