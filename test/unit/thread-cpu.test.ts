import { Worker } from 'node:worker_threads'
import { describe, expect, it } from 'vitest'
import { registerPoolThread, threadCpuSeconds } from '../../services/shared/thread-cpu.ts'

// A thread that reports its kernel id, burns 300 ms of its own CPU time when told to, and says when
// it is done. Measured in the kernel's own ticks of the thread (utime + stime of its stat), so a busy
// machine only makes it take longer.
const BURNER = `
const { parentPort } = require('node:worker_threads')
const { readlinkSync, readFileSync } = require('node:fs')
const ticks = () => {
  const stat = readFileSync('/proc/thread-self/stat', 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return Number(fields[11]) + Number(fields[12])
}
parentPort.postMessage(Number(readlinkSync('/proc/thread-self').split('/').pop()))
// \`on\`, not \`once\`: the listener keeps the thread alive until the test has read its CPU (a thread
// that exits first takes its /proc entry with it).
parentPort.on('message', () => {
  const end = ticks() + 30
  let x = 0
  while (ticks() < end) for (let i = 0; i < 10000; i++) x += Math.sqrt(x + i)
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
      // If this ever fails again under load, the message says what each read saw.
      const seen = JSON.stringify({ tid, before, after })
      // 300 ms of CPU, counted in clock ticks of 10 ms (the burn stops within a tick or two of it).
      expect(pool, seen).toBeGreaterThanOrEqual(0.29)
      expect(pool, seen).toBeLessThanOrEqual(0.4)
      expect(after.main - before.main, seen).toBeLessThan(0.1)
      expect(after.engine - before.engine, seen).toBeLessThan(0.1)
      // Once the thread has exited, what it used stays counted as the pool's.
      await worker.terminate()
      expect(threadCpuSeconds().cpu_pool).toBeGreaterThanOrEqual(after.cpu_pool)
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
