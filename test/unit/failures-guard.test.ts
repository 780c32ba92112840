import { describe, expect, it } from 'vitest'
import type { BusRecord, RecordBatch } from '../../pipelines/connectors/bus/bus.ts'
import type { DeadLetter, DeadLetterSink } from '../../pipelines/failures/dead-letters.ts'
import { guardStage, OutageError, type GuardOptions } from '../../pipelines/failures/guarded-stage.ts'
import {
  deadLetter,
  PermanentError,
  retryLater,
  type Outcome,
  type StageHandler,
} from '../../pipelines/failures/outcome.ts'
import type { RetryClock } from '../../pipelines/failures/retry.ts'

const TOPIC = 'test.guard'

function batchOf(values: string[], firstOffset = 0): RecordBatch {
  const records: BusRecord[] = values.map((v, i) => ({
    topic: TOPIC,
    partition: 2,
    offset: String(firstOffset + i),
    key: `k${i}`,
    value: Buffer.from(v),
    headers: { h: 'v' },
    timestamp: 1_700_000_000_000,
  }))
  return { topic: TOPIC, partition: 2, records }
}

/** Time moves only when the guard sleeps: no real waiting. */
function fakeClock(): RetryClock & { slept: number[] } {
  let now = 5_000_000
  const slept: number[] = []
  return {
    slept,
    now: () => now,
    sleep: async (ms) => {
      slept.push(ms)
      now += ms
    },
    random: () => 0.5,
  }
}

class MemorySink implements DeadLetterSink {
  readonly letters: DeadLetter[] = []
  failWith: Error | undefined
  async add(letters: readonly DeadLetter[]) {
    if (this.failWith) throw this.failWith
    this.letters.push(...letters)
  }
}

/**
 * A stage that "stores" each record's value, in order, and fails the whole call whenever the
 * call holds a record for which `fails` returns an error.
 */
function recordingStage(fails: (value: string) => Error | undefined) {
  const stored: string[] = []
  const calls: string[][] = []
  const handler: StageHandler = async (batch) => {
    const values = batch.records.map((r) => r.value.toString())
    calls.push(values)
    for (const v of values) {
      const err = fails(v)
      if (err) throw err
    }
    stored.push(...values)
  }
  return { handler, stored, calls }
}

function guard(handler: StageHandler, sink: MemorySink, extra: Partial<GuardOptions> = {}) {
  const clock = fakeClock()
  const retries: number[] = []
  const dead: string[] = []
  const guarded = guardStage(handler, {
    stage: 'test-stage',
    deadLetters: sink,
    clock,
    onRetry: ({ attempt }) => retries.push(attempt),
    onDeadLetter: (letter, kind) => dead.push(`${letter.record.offset}:${kind}`),
    ...extra,
  })
  return { guarded, clock, retries, dead }
}

describe('guardStage', () => {
  it('a record that always throws is dead-lettered with stage and error; the others are processed; the batch resolves', async () => {
    const sink = new MemorySink()
    const stage = recordingStage((v) => (v === 'poison' ? new Error(`cannot handle ${v}`) : undefined))
    const { guarded, retries, dead } = guard(stage.handler, sink)

    await expect(guarded(batchOf(['a', 'b', 'poison', 'c']))).resolves.toBeUndefined()

    expect(stage.stored).toEqual(['a', 'b', 'c'])
    expect(sink.letters).toHaveLength(1)
    const [letter] = sink.letters
    expect(letter).toMatchObject({
      stage: 'test-stage',
      error: 'Error: cannot handle poison',
      attempts: 3,
      record: { topic: TOPIC, partition: 2, offset: '2', key: 'k2', headers: { h: 'v' } },
    })
    expect(letter!.record.value.toString()).toBe('poison')
    expect(dead).toEqual(['2:unknown'])
    // The batch: 3 attempts (2 retries); then alone, the poison: 3 attempts (2 retries).
    expect(retries).toEqual([1, 2, 1, 2])
    expect(stage.calls).toEqual([
      ['a', 'b', 'poison', 'c'],
      ['a', 'b', 'poison', 'c'],
      ['a', 'b', 'poison', 'c'],
      ['a'],
      ['b'],
      ['poison'],
      ['poison'],
      ['poison'],
      ['c'],
    ])
  })

  it('a permanent error is not retried: the batch is split at once, the record dead-lettered after one attempt', async () => {
    const sink = new MemorySink()
    const parseError = new Error('Code: 27. DB::Exception: Cannot parse input')
    const stage = recordingStage((v) => (v === 'bad' ? parseError : undefined))
    const { guarded, retries, clock } = guard(stage.handler, sink)

    await guarded(batchOf(['x', 'bad', 'y']))

    expect(stage.stored).toEqual(['x', 'y'])
    expect(sink.letters.map((l) => [l.record.offset, l.attempts, l.error])).toEqual([
      ['1', 1, 'Error: Code: 27. DB::Exception: Cannot parse input'],
    ])
    expect(retries).toEqual([])
    expect(clock.slept).toEqual([])
  })

  it('records the stage reports as dead-letter are kept without a retry; the batch is not re-run', async () => {
    const sink = new MemorySink()
    const calls: number[] = []
    const handler: StageHandler = async (batch) => {
      calls.push(batch.records.length)
      return {
        outcomes: batch.records
          .filter((r) => r.value.toString() === 'undecodable')
          .map((record) => ({ record, outcome: deadLetter(new PermanentError('does not decode')) })),
      }
    }
    const { guarded, dead } = guard(handler, sink)
    await guarded(batchOf(['ok', 'undecodable', 'ok']))
    expect(calls).toEqual([3])
    expect(sink.letters.map((l) => [l.record.offset, l.error, l.attempts])).toEqual([
      ['1', 'PermanentError: does not decode', 1],
    ])
    expect(dead).toEqual(['1:permanent'])
  })

  it('records the stage reports as retry are retried alone, and dead-lettered if they keep failing', async () => {
    const sink = new MemorySink()
    let flaky = 0
    const handler: StageHandler = async (batch) => {
      const outcomes: { record: BusRecord; outcome: Outcome }[] = []
      for (const record of batch.records) {
        const v = record.value.toString()
        if (v === 'flaky' && flaky++ < 1) outcomes.push({ record, outcome: retryLater(new Error('not yet')) })
        if (v === 'stuck') outcomes.push({ record, outcome: retryLater(new Error('never')) })
      }
      return { outcomes }
    }
    const { guarded } = guard(handler, sink)
    await guarded(batchOf(['flaky', 'fine', 'stuck']))
    expect(sink.letters.map((l) => [l.record.offset, l.error])).toEqual([['2', 'Error: never']])
  })

  it('an outage is not dead-lettered: the guard throws and the bus redelivers', async () => {
    const sink = new MemorySink()
    const down = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })
    const stage = recordingStage(() => down)
    const { guarded } = guard(stage.handler, sink)
    const error = await guarded(batchOf(['a', 'b'])).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OutageError)
    expect((error as OutageError).cause).toBe(down)
    expect(sink.letters).toEqual([])
    // Only the batch was retried (within its bounds), never record by record.
    expect(stage.calls).toEqual([
      ['a', 'b'],
      ['a', 'b'],
      ['a', 'b'],
    ])
  })

  it('an unknown failure while the store does not answer is an outage: nothing is dead-lettered', async () => {
    const sink = new MemorySink()
    const stage = recordingStage((v) => (v === 'p' ? new Error('odd') : undefined))
    const { guarded } = guard(stage.handler, sink, { healthy: async () => false })
    await expect(guarded(batchOf(['a', 'p']))).rejects.toBeInstanceOf(OutageError)
    expect(sink.letters).toEqual([])
  })

  it('when the dead-letter store fails, the guard throws so the batch is redelivered: nothing is dropped', async () => {
    const sink = new MemorySink()
    sink.failWith = new Error('dead_letters insert failed')
    const stage = recordingStage((v) => (v === 'p' ? new PermanentError('bad') : undefined))
    const { guarded } = guard(stage.handler, sink)
    const error = await guarded(batchOf(['a', 'p'])).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OutageError)
    expect((error as OutageError).cause).toBe(sink.failWith)
    // Once the store is back, the redelivered batch keeps the record.
    sink.failWith = undefined
    await guarded(batchOf(['a', 'p']))
    expect(sink.letters.map((l) => l.record.offset)).toEqual(['1'])
  })

  it('past the isolation budget, each remaining record gets one attempt', async () => {
    const sink = new MemorySink()
    const stage = recordingStage((v) => (v.startsWith('p') ? new Error(`bad ${v}`) : undefined))
    const { guarded } = guard(stage.handler, sink, {
      batchPolicy: { attempts: 1, deadlineMs: 0, baseDelayMs: 1, maxDelayMs: 1 },
      recordPolicy: { attempts: 3, deadlineMs: 10_000, baseDelayMs: 400, maxDelayMs: 400 },
      isolationBudgetMs: 500,
    })
    await guarded(batchOf(['p1', 'p2', 'p3', 'ok']))
    // p1 waits 200 twice (400 of the 500 ms); p2 may wait once more (the 100 ms left do not fit a 200 ms wait).
    expect(sink.letters.map((l) => [l.record.value.toString(), l.attempts])).toEqual([
      ['p1', 3],
      ['p2', 1],
      ['p3', 1],
    ])
    expect(stage.stored).toEqual(['ok'])
  })

  it('a batch that succeeds is handled once and commits as is', async () => {
    const sink = new MemorySink()
    const stage = recordingStage(() => undefined)
    const { guarded, retries } = guard(stage.handler, sink)
    await guarded(batchOf(['a', 'b']))
    expect(stage.calls).toEqual([['a', 'b']])
    expect(sink.letters).toEqual([])
    expect(retries).toEqual([])
  })
})
