import { describe, expect, it } from 'vitest'
import { ConcurrencyLimit, WaitCancelled } from '../../services/shared/concurrency-limit.ts'

/** A task that runs until its `finish` is called, recording that it started. */
function gate(started: string[], name: string) {
  let finish!: () => void
  const done = new Promise<string>((resolve) => (finish = () => resolve(name)))
  return {
    task: () => {
      started.push(name)
      return done
    },
    finish: () => finish(),
  }
}

const flush = () => new Promise((resolve) => setImmediate(resolve))

describe('ConcurrencyLimit', () => {
  it('runs at most `limit` tasks at once, the others in arrival order as slots free up', async () => {
    const limit = new ConcurrencyLimit(2)
    const started: string[] = []
    const gates = ['a', 'b', 'c', 'd'].map((name) => gate(started, name))
    const signal = new AbortController().signal
    const results = gates.map((g) => limit.run(signal, g.task))
    await flush()
    expect(started).toEqual(['a', 'b'])
    expect(limit.pending).toBe(4)
    gates[1]?.finish()
    await flush()
    expect(started).toEqual(['a', 'b', 'c'])
    gates[0]?.finish()
    gates[2]?.finish()
    gates[3]?.finish()
    expect(await Promise.all(results)).toEqual(['a', 'b', 'c', 'd'])
    expect(limit.pending).toBe(0)
  })

  it('without a signal, keeps a task waiting until its turn and runs it', async () => {
    const limit = new ConcurrencyLimit(1)
    const started: string[] = []
    const gates = ['a', 'b', 'c'].map((name) => gate(started, name))
    const results = gates.map((g) => limit.run(undefined, g.task))
    await flush()
    expect(started).toEqual(['a'])
    expect(limit.pending).toBe(3)
    for (const g of gates) {
      g.finish()
      await flush()
    }
    expect(started).toEqual(['a', 'b', 'c'])
    expect(await Promise.all(results)).toEqual(['a', 'b', 'c'])
    expect(limit.pending).toBe(0)
  })

  it('drops a waiting task whose client has gone, without running it', async () => {
    const limit = new ConcurrencyLimit(1)
    const started: string[] = []
    const first = gate(started, 'first')
    const gone = new AbortController()
    const running = limit.run(new AbortController().signal, first.task)
    const abandoned = limit.run(gone.signal, gate(started, 'abandoned').task)
    const next = gate(started, 'next')
    const after = limit.run(new AbortController().signal, next.task)
    await flush()
    gone.abort()
    await expect(abandoned).rejects.toBeInstanceOf(WaitCancelled)
    expect(limit.pending).toBe(2)
    first.finish()
    await flush()
    next.finish()
    expect([await running, await after]).toEqual(['first', 'next'])
    expect(started).toEqual(['first', 'next'])
  })

  it('frees the slot of a task that fails', async () => {
    const limit = new ConcurrencyLimit(1)
    const signal = new AbortController().signal
    await expect(limit.run(signal, () => Promise.reject(new Error('engine error')))).rejects.toThrow(
      'engine error',
    )
    expect(await limit.run(signal, () => Promise.resolve('ok'))).toBe('ok')
    expect(limit.pending).toBe(0)
  })
})
