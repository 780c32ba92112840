import { pbkdf2 } from 'node:crypto'
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'

/**
 * Where this process's CPU time goes, by kind of thread, from Linux's /proc (zeros elsewhere):
 * - `main`: the event loop (the edge, the stages' per-batch work, the store's callers);
 * - `cpu_pool`: the CPU pool's threads (services/cpu-pool/), which register themselves;
 * - `node`: the threads Node started with apart from libuv's pool (V8's platform threads: GC,
 *   compilers; the module loader), noted by bin/sluice.js before Sluice loads (noteNodeThreads);
 * - `engine`: everything else, i.e. chdb's own threads (queries, merges) and libuv's pool, on which
 *   chdb runs each call (it also runs the edge's gzip checks and file writes: a few percent).
 *   It is the process's total minus the other three, so the CPU of threads that have exited is
 *   counted too.
 * The bench reads these (as `sluice_thread_cpu_seconds` at /metrics) to split the CPU cost of an
 * event; an operator sees the same split.
 */
export type ThreadKind = 'main' | 'cpu_pool' | 'engine' | 'node'

export const THREAD_KINDS: readonly ThreadKind[] = ['main', 'cpu_pool', 'engine', 'node']

const TICKS_PER_SECOND = 100

const poolThreads = new Set<number>()
const nodeThreads = new Set<number>()
/** Last ticks seen per thread, so a registered thread that exits keeps what it used. */
const lastTicks = new Map<number, number>()

/** This thread's kernel id (Linux), or undefined. */
export function currentThreadId(): number | undefined {
  try {
    const id = Number(readlinkSync('/proc/thread-self').split('/').pop())
    return Number.isInteger(id) ? id : undefined
  } catch {
    return undefined
  }
}

/** The ids of this process's threads now (empty when /proc is not there). */
export function listThreadIds(): number[] {
  try {
    return readdirSync('/proc/self/task').map(Number)
  } catch {
    return []
  }
}

export function registerPoolThread(tid: number): void {
  poolThreads.add(tid)
}

/**
 * Notes Node's own threads, before anything else runs (bin/sluice.js): the threads there are now,
 * less libuv's pool, which chdb's calls will run on. libuv's threads are told apart by giving them
 * work: as many short hashes as the pool has threads, queued at once, so each idle thread takes
 * one (about 10 ms of CPU in all, once).
 */
export async function noteNodeThreads(): Promise<void> {
  const threads = listThreadIds().filter((tid) => tid !== process.pid)
  const before = new Map(threads.map((tid) => [tid, runNanoseconds(tid)]))
  const size = Number(process.env.UV_THREADPOOL_SIZE) || 4
  await Promise.all(
    Array.from(
      { length: size },
      (_, i) => new Promise((done) => pbkdf2('probe', String(i), 20_000, 32, 'sha256', done)),
    ),
  )
  for (const tid of threads) {
    // A thread that hashed ran for a millisecond or more; V8's threads stayed idle meanwhile.
    if (runNanoseconds(tid) - (before.get(tid) ?? 0) < 500_000) nodeThreads.add(tid)
  }
}

/** CPU seconds used since the process started, by kind of thread. */
export function threadCpuSeconds(): Record<ThreadKind, number> {
  const total = ticksOf('/proc/self/stat') ?? 0
  const ticks: Record<ThreadKind, number> = { main: 0, cpu_pool: 0, engine: 0, node: 0 }
  // A thread that cannot be read (it has exited, perhaps between two reads) keeps the ticks last
  // seen, so the sums only grow, as a Prometheus counter must; the CPU it used after that last
  // read is counted as the engine's (the total less the rest).
  for (const tid of [process.pid, ...poolThreads, ...nodeThreads]) {
    const seen = ticksOf(`/proc/self/task/${tid}/stat`)
    if (seen !== undefined) lastTicks.set(tid, Math.max(seen, lastTicks.get(tid) ?? 0))
  }
  for (const [tid, t] of lastTicks) ticks[kindOf(tid)] += t
  ticks.engine = Math.max(0, total - ticks.main - ticks.cpu_pool - ticks.node)
  return {
    main: ticks.main / TICKS_PER_SECOND,
    cpu_pool: ticks.cpu_pool / TICKS_PER_SECOND,
    engine: ticks.engine / TICKS_PER_SECOND,
    node: ticks.node / TICKS_PER_SECOND,
  }
}

function kindOf(tid: number): ThreadKind {
  if (tid === process.pid) return 'main'
  if (poolThreads.has(tid)) return 'cpu_pool'
  if (nodeThreads.has(tid)) return 'node'
  return 'engine'
}

/** Nanoseconds a thread of this process has run (schedstat), 0 when unreadable. */
function runNanoseconds(tid: number): number {
  try {
    return Number(readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ')[0])
  } catch {
    return 0
  }
}

/** utime + stime of a /proc stat file, in clock ticks (undefined when unreadable). */
function ticksOf(path: string): number | undefined {
  try {
    const stat = readFileSync(path, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const ticks = Number(fields[11]) + Number(fields[12])
    return Number.isFinite(ticks) ? ticks : undefined
  } catch {
    return undefined
  }
}
