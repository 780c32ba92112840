// Entry of each piscina thread: the project is TypeScript run through tsx, and worker threads do
// not inherit the main thread's loader, so each registers it before loading the task module.
import { readlinkSync } from 'node:fs'
import { BroadcastChannel } from 'node:worker_threads'
import { register } from 'tsx/esm/api'

register()
// Tell the pool which kernel thread this is, so its CPU time is counted as the pool's
// (services/shared/thread-cpu.ts). Linux only; elsewhere nothing is counted by thread.
try {
  const tid = Number(readlinkSync('/proc/thread-self').split('/').pop())
  const channel = new BroadcastChannel('sluice:cpu-pool-threads') // pool.ts listens
  channel.postMessage(tid)
  channel.close()
} catch {
  // no /proc
}
const tasks = await import('../../pipelines/cpu/tasks.ts')
export default tasks.default
