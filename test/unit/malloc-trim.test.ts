import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { loadMallocTrim, startMallocTrimmer, type MallocTrim } from '../../services/shared/malloc-trim.ts'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

describe('malloc_trim through koffi', () => {
  it('gives the pages freed in the middle of the heap back to the kernel', async () => {
    const trim = await loadMallocTrim()
    // The machines Sluice is built and tested on run glibc; elsewhere the loader answers undefined.
    expect(trim).toBeTypeOf('function')
    // 64 KB blocks come from malloc's heaps (below its mmap threshold); keeping every 32nd alive
    // pins the heap's top, so glibc keeps the freed ones resident until trimmed.
    let blocks: Buffer[] = Array.from({ length: 3200 }, (_, i) => Buffer.alloc(64 * 1024, i & 0xff))
    const kept = blocks.filter((_, i) => i % 32 === 31)
    blocks = []
    gc()
    await new Promise((resolve) => setTimeout(resolve, 50)) // V8 frees backing stores off-thread
    const before = process.memoryUsage.rss()
    expect(await trim!()).toBe(true)
    const released = before - process.memoryUsage.rss()
    expect(released).toBeGreaterThan(64 * 1024 * 1024)
    expect(kept.every((block, i) => block[0] === ((i * 32 + 31) & 0xff))).toBe(true)
  })
})

describe('startMallocTrimmer', () => {
  afterEach(() => vi.useRealTimers())

  it('trims once per interval, never two at once, and goes on after a failure', async () => {
    vi.useFakeTimers()
    const pending: ((released: boolean) => void)[] = []
    let calls = 0
    const trim: MallocTrim = () => {
      calls++
      if (calls === 2) return Promise.reject(new Error('no libc'))
      return new Promise((resolve) => pending.push(resolve))
    }
    const errors: unknown[] = []
    const trimmer = startMallocTrimmer(trim, 1000, (err) => errors.push(err))
    await vi.advanceTimersByTimeAsync(999)
    expect(calls).toBe(0)
    await vi.advanceTimersByTimeAsync(1)
    expect(calls).toBe(1)
    // The first trim is still running: the next two ticks start nothing.
    await vi.advanceTimersByTimeAsync(2000)
    expect(calls).toBe(1)
    pending.shift()!(true)
    await vi.advanceTimersByTimeAsync(1000)
    expect(calls).toBe(2)
    expect(errors).toEqual([new Error('no libc')])
    await vi.advanceTimersByTimeAsync(1000)
    expect(calls).toBe(3)
    let stopped = false
    const stopping = trimmer.stop().then(() => (stopped = true))
    await vi.advanceTimersByTimeAsync(0)
    expect(stopped).toBe(false) // waits for the trim under way
    pending.shift()!(false)
    await stopping
    await vi.advanceTimersByTimeAsync(5000)
    expect(calls).toBe(3)
  })
})
