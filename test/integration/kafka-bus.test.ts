import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { createInterface } from 'node:readline'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  partitionForKey,
  type BusRecord,
  type ProduceMessage,
  type RecordBatch,
} from '../../pipelines/connectors/bus/bus.ts'
import { KafkaBus, type KafkaBusOptions } from '../../pipelines/connectors/bus/kafka/kafka-bus.ts'
import { kafkaForTests, MOCK_LEADER_SYNC_DELAY_MS, type TestKafka } from '../helpers/kafka-mock.ts'

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url))
const BUS_MODULE = pathToFileURL(
  fileURLToPath(new URL('../../pipelines/connectors/bus/kafka/kafka-bus.ts', import.meta.url)),
).href
const PARTITIONS = 4 // what ensureTopics asks for, and what the mock cluster auto-creates anyway

let kafka: TestKafka
let bus: KafkaBus
let busOptions: KafkaBusOptions

const uniq = (prefix: string): string =>
  `${prefix}-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`

async function waitFor(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (await check()) return
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** One key per partition, so records produced with them reach every partition. */
function keysCoveringPartitions(partitions: number): string[] {
  const keys = new Array<string | undefined>(partitions).fill(undefined)
  for (let i = 0; keys.includes(undefined); i++) {
    const key = `k${i}`
    const p = partitionForKey(key, partitions, 0)
    keys[p] ??= key
  }
  return keys as string[]
}

function spread(prefix: string, count: number, keys: string[]): ProduceMessage[] {
  return Array.from({ length: count }, (_, i) => ({
    key: keys[i % keys.length]!,
    value: Buffer.from(`${prefix}-${i}`),
  }))
}

const values = (records: BusRecord[]): string[] => records.map((r) => r.value.toString()).sort()
const valuesOf = (messages: ProduceMessage[]): string[] => messages.map((m) => m.value.toString()).sort()

beforeAll(async () => {
  kafka = await kafkaForTests()
  const mock = kafka.source === 'kcat-mock'
  console.info(`kafka-bus tests: Kafka from ${kafka.source} (${kafka.brokers.join(',')})`)
  busOptions = {
    brokers: kafka.brokers,
    clientId: 'sluice-test',
    defaultPartitions: PARTITIONS,
    // The mock takes any session timeout and waits sessionTimeout - 1 s in every rebalance; real
    // brokers refuse anything under group.min.session.timeout.ms (6 s by default).
    sessionTimeoutMs: mock ? 3_000 : 6_000,
    rebalanceTimeoutMs: mock ? 3_000 : 10_000,
    heartbeatIntervalMs: 500,
    // What Sluice is started with on the mock (KAFKA_LEADER_SYNC_DELAY_MS): the leader's SyncGroup
    // after the others' (assigner.ts).
    leaderSyncDelayMs: mock ? MOCK_LEADER_SYNC_DELAY_MS : 0,
    maxWaitTimeMs: 200,
    retryBackoffMs: 100,
  }
  bus = new KafkaBus(busOptions)
})

afterAll(async () => {
  await bus?.close()
  await kafka?.stop()
})

describe('KafkaBus', () => {
  it('round trip: values, keys, headers and per-partition order; same key, same partition', async () => {
    const topic = uniq('roundtrip')
    const group = uniq('g')
    await bus.ensureTopics([{ topic, partitions: PARTITIONS }])
    const keys = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot']
    const sent: ProduceMessage[] = []
    for (let seq = 0; seq < 5; seq++) {
      for (const key of keys) {
        sent.push({
          key,
          value: Buffer.from(`${key}-${seq}`),
          headers: { seq: String(seq), key, 'x-ü': 'ünïcode' },
        })
      }
    }
    sent.push(
      { value: Buffer.from('keyless-0') },
      { value: Buffer.from('keyless-1'), headers: { only: 'one' } },
    )
    const before = Date.now()
    // Two calls: order per key must also hold across produce() calls made one after the other.
    await bus.produce(topic, sent.slice(0, 13))
    await bus.produce(topic, sent.slice(13))

    const got: BusRecord[] = []
    const batches: RecordBatch[] = []
    const consumer = await bus.consume({
      group,
      topics: [topic],
      maxBatchRecords: 4,
      handler: async (batch) => {
        batches.push(batch)
        got.push(...batch.records)
      },
    })
    await waitFor('all records', () => got.length >= sent.length)
    await consumer.stop()

    expect(got).toHaveLength(sent.length)
    expect(values(got)).toEqual(valuesOf(sent))
    const byValue = new Map(got.map((r) => [r.value.toString(), r]))
    for (const m of sent) {
      const r = byValue.get(m.value.toString())!
      expect(r.topic).toBe(topic)
      expect(r.key).toBe(m.key ?? null)
      expect(r.headers).toEqual(m.headers ?? {})
      expect(r.timestamp).toBeGreaterThanOrEqual(before - 60_000)
      expect(r.timestamp).toBeLessThanOrEqual(Date.now() + 60_000)
    }

    for (const b of batches) {
      expect(b.topic).toBe(topic)
      expect(b.records.length).toBeGreaterThan(0)
      expect(b.records.length).toBeLessThanOrEqual(4)
      for (const r of b.records) expect(r.partition).toBe(b.partition)
      const offsets = b.records.map((r) => BigInt(r.offset))
      for (let i = 1; i < offsets.length; i++) expect(offsets[i]! > offsets[i - 1]!).toBe(true)
    }

    // Each partition delivered exactly its offsets 0..n-1, in order.
    const perPartition = new Map<number, string[]>()
    for (const r of got) perPartition.set(r.partition, [...(perPartition.get(r.partition) ?? []), r.offset])
    for (const offsets of perPartition.values()) {
      expect(offsets).toEqual(offsets.map((_, i) => String(i)))
    }

    const partitions = await bus.partitionCount(topic)
    expect(partitions).toBe(PARTITIONS)
    for (const key of keys) {
      const ofKey = got.filter((r) => r.key === key)
      expect(ofKey.map((r) => r.value.toString())).toEqual([0, 1, 2, 3, 4].map((seq) => `${key}-${seq}`))
      expect(new Set(ofKey.map((r) => r.partition))).toEqual(new Set([partitionForKey(key, partitions, 0)]))
    }
  })

  it('commits only after the handler resolved; a throwing batch is redelivered', async () => {
    const topic = uniq('commit')
    const group = uniq('g')
    await bus.ensureTopics([{ topic, partitions: PARTITIONS }])
    const keys = keysCoveringPartitions(PARTITIONS)
    const first = spread('first', 12, keys)
    await bus.produce(topic, first)

    const failedOnce = new Set<string>()
    const deliveries = new Map<string, number>()
    const processed: BusRecord[] = []
    const errors: RecordBatch[] = []
    const errorMessages: string[] = []
    const redelivered = new Set<string>()
    let openRetries!: () => void
    const retriesOpen = new Promise<void>((resolve) => (openRetries = resolve))
    const a = await bus.consume({
      group,
      topics: [topic],
      handler: async (batch) => {
        for (const v of values(batch.records)) deliveries.set(v, (deliveries.get(v) ?? 0) + 1)
        const id = `${batch.partition}:${batch.records[0]!.offset}`
        if (!failedOnce.has(id)) {
          failedOnce.add(id)
          throw new Error(`first delivery of ${id} fails`)
        }
        redelivered.add(id)
        await retriesOpen
        processed.push(...batch.records)
      },
      onError: (err, batch) => {
        errorMessages.push(String(err))
        errors.push(batch)
      },
    })
    // Every partition's first batch failed and came back (held here): nothing may be committed yet.
    try {
      await waitFor('a redelivery on every partition', () => redelivered.size >= PARTITIONS)
      expect([...redelivered].sort()).toEqual([...failedOnce].sort())
      expect(await bus.lag(group, topic)).toBe(first.length)
    } finally {
      openRetries() // also on failure, or close() would wait for the held handlers forever
    }
    await waitFor('first records processed', () => processed.length >= first.length)
    await waitFor('group A committed', async () => (await bus.lag(group, topic)) === 0)
    await a.stop()

    expect(values(processed)).toEqual(valuesOf(first)) // each exactly once
    expect(errors.length).toBe(failedOnce.size)
    for (const m of errorMessages) expect(m).toContain('first delivery of')
    expect(errors.length).toBeGreaterThanOrEqual(PARTITIONS) // every partition had records
    for (const failed of errors) {
      for (const r of failed.records) expect(deliveries.get(r.value.toString())).toBeGreaterThanOrEqual(2)
    }

    // While nobody consumes, new records arrive; a new member of the same group gets only those,
    // and a new group gets everything.
    const second = spread('second', 8, keys)
    await bus.produce(topic, second)
    expect(await bus.lag(group, topic)).toBe(second.length)

    const gotB: BusRecord[] = []
    const gotC: BusRecord[] = []
    const [b, c] = await Promise.all([
      bus.consume({ group, topics: [topic], handler: async (batch) => void gotB.push(...batch.records) }),
      bus.consume({
        group: uniq('g2'),
        topics: [topic],
        handler: async (batch) => void gotC.push(...batch.records),
      }),
    ])
    await waitFor('new records in the same group', () => gotB.length >= second.length)
    await waitFor('everything in a new group', () => gotC.length >= first.length + second.length)
    await waitFor('group B committed', async () => (await bus.lag(group, topic)) === 0)
    await Promise.all([b.stop(), c.stop()])

    // Every partition got new records after the committed ones, so a redelivered old record would
    // have arrived before them.
    expect(values(gotB)).toEqual(valuesOf(second))
    expect(values(gotC)).toEqual(valuesOf([...first, ...second]))
  })

  it('redelivers what a consumer that died before committing had received', async () => {
    const topic = uniq('crash')
    const group = uniq('g')
    await bus.ensureTopics([{ topic, partitions: PARTITIONS }])
    const sent = spread('crash', 10, keysCoveringPartitions(PARTITIONS))
    await bus.produce(topic, sent)

    // A real process that receives the records, never finishes its handler, and is SIGKILLed.
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', CRASH_CHILD], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
      env: {
        ...process.env,
        BUS_MODULE,
        BUS_OPTIONS: JSON.stringify(busOptions),
        BUS_GROUP: group,
        BUS_TOPIC: topic,
      },
    })
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    const childGot: string[] = []
    createInterface({ input: child.stdout }).on('line', (line) => {
      const msg = JSON.parse(line) as { values?: string[] }
      if (msg.values) childGot.push(...msg.values)
    })
    try {
      await waitFor('the child to receive every record', () => childGot.length >= sent.length)
    } finally {
      child.kill('SIGKILL')
      await exited
    }
    expect(childGot.sort()).toEqual(valuesOf(sent))
    expect(await bus.lag(group, topic)).toBe(sent.length)

    const got: BusRecord[] = []
    const consumer = await bus.consume({
      group,
      topics: [topic],
      handler: async (batch) => void got.push(...batch.records),
    })
    await waitFor('redelivery to the next member', () => got.length >= sent.length)
    await waitFor('commit', async () => (await bus.lag(group, topic)) === 0)
    await consumer.stop()
    expect(values(got)).toEqual(valuesOf(sent))
  })

  it('a group of more members than partitions settles, and its members share every record once', async () => {
    const topic = uniq('crowd')
    const group = uniq('g')
    await bus.ensureTopics([{ topic, partitions: PARTITIONS }])
    // One member more than there are partitions: one of them gets none. librdkafka's mock completes
    // a rebalance only once the leader has given every member an assignment, empty or not.
    const got = new Map<number, BusRecord[]>()
    const members = await Promise.all(
      Array.from({ length: PARTITIONS + 1 }, (_, member) =>
        bus.consume({
          group,
          topics: [topic],
          handler: async (batch) => void got.set(member, [...(got.get(member) ?? []), ...batch.records]),
        }),
      ),
    )
    try {
      const sent = spread('crowd', 20, keysCoveringPartitions(PARTITIONS))
      await bus.produce(topic, sent)
      await waitFor('every record handled', () => [...got.values()].flat().length >= sent.length)
      await waitFor('commit', async () => (await bus.lag(group, topic)) === 0)
      expect(values([...got.values()].flat())).toEqual(valuesOf(sent))
      // Every partition is one member's: its records all reached one member.
      const owners = new Map<number, Set<number>>()
      for (const [member, records] of got)
        for (const r of records) owners.set(r.partition, (owners.get(r.partition) ?? new Set()).add(member))
      expect([...owners.keys()].sort()).toEqual(Array.from({ length: PARTITIONS }, (_, p) => p))
      expect([...owners.values()].every((m) => m.size === 1)).toBe(true)
      expect(got.size).toBeLessThanOrEqual(PARTITIONS)
    } finally {
      await Promise.all(members.map((m) => m.stop()))
    }
  })

  it('lag counts produced records until their batch is committed; stop() commits the batch in flight', async () => {
    const topic = uniq('lag')
    const group = uniq('g')
    await bus.ensureTopics([{ topic, partitions: PARTITIONS }])
    const sent = spread('lag', 10, keysCoveringPartitions(PARTITIONS))
    await bus.produce(topic, sent)
    expect(await bus.lag(group, topic)).toBe(10)

    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    const entered: BusRecord[] = []
    const done: BusRecord[] = []
    const consumer = await bus.consume({
      group,
      topics: [topic],
      handler: async (batch) => {
        entered.push(...batch.records)
        await gate
        done.push(...batch.records)
      },
    })
    let stopped: Promise<void> | undefined
    try {
      await waitFor('every partition in a handler', () => entered.length >= sent.length)
      expect(await bus.lag(group, topic)).toBe(10) // received is not committed
      stopped = consumer.stop()
    } finally {
      release()
    }
    await stopped
    expect(values(done)).toEqual(valuesOf(sent))
    expect(await bus.lag(group, topic)).toBe(0)

    await bus.produce(topic, spread('later', 3, ['x', 'y', 'z']))
    expect(await bus.lag(group, topic)).toBe(3)
    expect(await bus.lag(uniq('never-consumed'), topic)).toBe(13)
  })
})

const CRASH_CHILD = `
const { KafkaBus } = await import(process.env.BUS_MODULE)
const bus = new KafkaBus({ ...JSON.parse(process.env.BUS_OPTIONS), clientId: 'sluice-test-crash' })
await bus.consume({
  group: process.env.BUS_GROUP,
  topics: [process.env.BUS_TOPIC],
  handler: async (batch) => {
    process.stdout.write(JSON.stringify({ values: batch.records.map((r) => r.value.toString()) }) + '\\n')
    await new Promise(() => {})
  },
})
`
