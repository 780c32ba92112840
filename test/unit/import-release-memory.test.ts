import { afterEach, describe, expect, it, vi } from 'vitest'
import { releasingMemory } from '../../pipelines/imports/release-memory.ts'

describe('memory released while an import runs', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  it('releases every interval while the work runs, one release at a time, none after it ends', async () => {
    vi.useFakeTimers()
    const events: string[] = []
    let releasing = 0
    let most = 0
    const release = async () => {
      releasing++
      most = Math.max(most, releasing)
      events.push(`release@${Date.now()}`)
      // A purge takes time: the next is timed from its end, never started beside it.
      await new Promise((r) => setTimeout(r, 40))
      releasing--
    }
    let finish!: (v: string) => void
    const work = new Promise<string>((r) => (finish = r))
    const start = Date.now()
    const done = releasingMemory(() => work, release, 100)
    await vi.advanceTimersByTimeAsync(430)
    // Released at 100, 240 (100 after the first ended at 140) and 380.
    expect(events).toEqual([100, 240, 380].map((t) => `release@${start + t}`))
    finish('applied')
    await vi.advanceTimersByTimeAsync(0)
    // The release under way (380-420) ends before the work is reported done, and none follows.
    await vi.advanceTimersByTimeAsync(1000)
    await expect(done).resolves.toBe('applied')
    expect(events).toHaveLength(3)
    expect(most).toBe(1)
  })

  it('waits for a release under way before the work is reported ended, and passes a failure on', async () => {
    vi.useFakeTimers()
    const order: string[] = []
    const release = async () => {
      order.push('release started')
      await new Promise((r) => setTimeout(r, 50))
      order.push('release ended')
    }
    const done = releasingMemory(
      async () => {
        await new Promise((r) => setTimeout(r, 120))
        order.push('work failed')
        throw new Error('store down')
      },
      release,
      100,
    ).catch((err: Error) => {
      order.push(`reported: ${err.message}`)
    })
    await vi.advanceTimersByTimeAsync(500)
    await done
    expect(order).toEqual(['release started', 'work failed', 'release ended', 'reported: store down'])
  })

  it('keeps releasing when a release fails, and runs the work alone when releasing is off', async () => {
    vi.useFakeTimers()
    let calls = 0
    const failing = async () => {
      calls++
      throw new Error('purge refused')
    }
    let finish!: () => void
    const done = releasingMemory(() => new Promise<void>((r) => (finish = r)), failing, 50)
    await vi.advanceTimersByTimeAsync(220)
    expect(calls).toBe(4)
    finish()
    await done
    await vi.advanceTimersByTimeAsync(500)
    expect(calls).toBe(4)

    let offCalls = 0
    const off = async () => {
      offCalls++
    }
    const result = releasingMemory(
      async () => {
        await new Promise((r) => setTimeout(r, 300))
        return 7
      },
      off,
      0,
    )
    await vi.advanceTimersByTimeAsync(400)
    await expect(result).resolves.toBe(7)
    expect(offCalls).toBe(0)
  })
})
