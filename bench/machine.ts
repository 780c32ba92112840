import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import os from 'node:os'

/**
 * Where the CPU went while a scenario ran: the Sluice process, the bench itself (load generator
 * and its children) and everything else on the machine (noise), from /proc (Linux; zeros
 * elsewhere). Clock ticks are USER_HZ, 100 per second on Linux.
 */
const TICKS = 100

export interface CpuSnapshot {
  at: number
  busy: number
  total: number
  bench: number
  sluice: number
}

function procTicks(pid: number | 'self', withChildren: boolean): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const n = (i: number) => Number(fields[i] ?? 0)
    return n(11) + n(12) + (withChildren ? n(13) + n(14) : 0)
  } catch {
    return 0
  }
}

export function cpuSnapshot(sluicePid?: number): CpuSnapshot {
  let busy = 0
  let total = 0
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? ''
    const v = line.trim().split(/\s+/).slice(1).map(Number)
    const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = v
    busy = user + nice + system + irq + softirq + steal
    total = busy + idle + iowait
  } catch {
    // not Linux
  }
  return {
    at: performance.now(),
    busy,
    total,
    // The bench process and its finished children (baselines); a running Sluice is counted apart.
    bench: procTicks('self', true),
    sluice: sluicePid ? procTicks(sluicePid, false) : 0,
  }
}

export interface CpuUse {
  /** Average cores used over the interval. */
  sluice: number
  bench: number
  other: number
  /** Share of the machine's CPU time that was busy. */
  busyShare: number
}

export function cpuUse(a: CpuSnapshot, b: CpuSnapshot): CpuUse {
  const seconds = Math.max(0.001, (b.at - a.at) / 1000)
  const cores = (ticks: number) => Math.max(0, ticks / TICKS / seconds)
  const sluice = cores(b.sluice - a.sluice)
  const bench = cores(b.bench - a.bench)
  const busy = cores(b.busy - a.busy)
  return {
    sluice,
    bench,
    other: Math.max(0, busy - sluice - bench),
    busyShare: b.total > a.total ? (b.busy - a.busy) / (b.total - a.total) : 0,
  }
}

export function machineInfo() {
  const cpus = os.cpus()
  return {
    cores: cpus.length,
    cpuModel: cpus[0]?.model ?? 'unknown',
    memoryGb: Math.round(os.totalmem() / 1073741824),
    node: process.version,
    platform: `${os.platform()} ${os.release()}`,
    loadAverage: os.loadavg().map((v) => Math.round(v * 100) / 100),
  }
}

export function gitInfo(cwd: string): { commit: string; dirty: boolean } {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd, encoding: 'utf8' }).trim()
    const status = execFileSync('git', ['status', '--porcelain'], { cwd, encoding: 'utf8' })
    return { commit, dirty: status.trim().length > 0 }
  } catch {
    return { commit: 'unknown', dirty: false }
  }
}

/**
 * Writes the page cache's dirty pages back (`sync`) before a timed HTTP step (the floor, the
 * edge): the steps before it leave up to ~1 GB unwritten (990 MB when the edge began, mostly the
 * engine baselines' parts), and without this the kernel wrote it back during the timed seconds,
 * on the same two cores.
 */
export function flushDirtyPages(): void {
  try {
    execFileSync('sync', { stdio: 'ignore', timeout: 60_000 })
  } catch {
    // no sync(1): the step runs as before
  }
}
