import { Worker } from 'node:worker_threads'
import { describe, expect, it } from 'vitest'
import { registerPoolThread, threadCpuSeconds } from '../../services/shared/thread-cpu.ts'

// A thread that reports its kernel id, burns 300 ms of its own CPU time when told to (measured,
// so a busy machine only makes it take longer), and says when it is done.
const BURNER = `
const { parentPort } = require('node:worker_threads')
const { readlinkSync, readFileSync } = require('node:fs')
const ran = () => Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]) / 1e6
parentPort.postMessage(Number(readlinkSync('/proc/thread-self').split('/').pop()))
parentPort.once('message', () => {
  const end = ran() + 300
  let x = 0
  while (ran() < end) for (let i = 0; i < 10000; i++) x += Math.sqrt(x + i)
  parentPort.postMessage(x)
})
`

describe('CPU time by kind of thread', () => {
  it("counts a registered thread's CPU as the pool's, not the main thread's or the engine's", async () => {
    const worker = new Worker(BURNER, { eval: true })
    try {
      const tid = await new Promise<number>((resolve) => worker.once('message', resolve))
      registerPoolThread(tid)
      const before = threadCpuSeconds()
      worker.postMessage('go')
      await new Promise((resolve) => worker.once('message', resolve))
      const after = threadCpuSeconds()
      const pool = after.cpu_pool - before.cpu_pool
      // 300 ms of CPU, counted in clock ticks of 10 ms.
      expect(pool).toBeGreaterThanOrEqual(0.27)
      expect(pool).toBeLessThanOrEqual(0.35)
      expect(after.main - before.main).toBeLessThan(0.1)
      expect(after.engine - before.engine).toBeLessThan(0.1)
    } finally {
      await worker.terminate()
    }
  })

  it('adds up to the CPU time of the whole process', () => {
    const seconds = threadCpuSeconds()
    const usage = process.cpuUsage()
    const total = seconds.main + seconds.cpu_pool + seconds.engine + seconds.node
    expect(total).toBeGreaterThan(0)
    expect(Math.abs(total - (usage.user + usage.system) / 1e6)).toBeLessThan(0.1)
  })
})
