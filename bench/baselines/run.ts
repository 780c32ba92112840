import { spawn, type ChildProcess } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { closedLoop, HttpClient } from '../http.ts'
import { cpuSnapshot, flushDirtyPages } from '../machine.ts'
import type { Progress } from '../progress.ts'
import { perSecond, summarize, Timeline, type LatencySummary } from '../stats.ts'

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url))

/** A child process running a TypeScript file through tsx (resolved from here, whatever the cwd). */
function spawnTs(file: string, args: string[] = []) {
  return spawn(process.execPath, ['--import', import.meta.resolve('tsx'), here(file), ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
}

/**
 * Sending before a timed HTTP run, not counted: the baselines' and the edge scenarios' alike, at
 * least WARM_UP_MS and WARM_UP_BYTES of bodies. A time alone is unfair: the floor, a few hundred
 * lines, is compiled and warm after the ~1,200 plain uploads it takes in 300 ms, while the edge,
 * its code paths many times larger, gets fewer uploads, and its JIT compilation runs on into the
 * timed seconds, on the CPU the per-CPU ratio counts. Why 2 s: timed in windows of 1,000 plain
 * uploads after 300 of warm-up, the edge's rate went 1,510, 1,680, 2,240, 3,120, then
 * 3,200–4,100/s from the fifth window on, V8's compiler threads falling from 200 to 0–30 µs per
 * upload; 64 MB alone (~900 plain bodies) ends in the first of those windows (measured at
 * `9df4044`).
 */
export const WARM_UP_MS = 2_000
export const WARM_UP_BYTES = 64 * 1024 * 1024
const WARM_UP_MAX_MS = 20_000

/** The warm-up: `next` in a closed loop until both bounds are passed (or WARM_UP_MAX_MS). */
export async function warmUp<J extends { body: Buffer }>(options: {
  concurrency: number
  next: () => J | undefined
  send: (job: J) => Promise<void>
}): Promise<void> {
  const started = performance.now()
  let bytes = 0
  await closedLoop({
    concurrency: options.concurrency,
    durationMs: WARM_UP_MAX_MS,
    next: () => {
      if (bytes >= WARM_UP_BYTES && performance.now() - started >= WARM_UP_MS) return undefined
      const job = options.next()
      bytes += job?.body.length ?? 0
      return job
    },
    send: options.send,
  })
}

export interface BareResult {
  kind: string
  /** bare (reads and discards) or floor (keeps a 202's promises). */
  server?: 'bare' | 'floor'
  requests: number
  bytes: number
  elapsedMs: number
  bytesPerSecond: number
  requestsPerSecond: number
  eventsPerSecond: number
  errors: number
  latencyMs: LatencySummary
  /** CPU seconds the server process used while timed (all its threads). */
  cpuSeconds?: number
}

/** What a baseline HTTP server is sent: bodies in turn, with the same headers. */
export interface BaselineLoad {
  kind: string
  bodies: readonly { body: Buffer; events: number }[]
  headers: Record<string, string>
  concurrency: number
}

/**
 * Baseline 1: a Node HTTP server in a child process, sent the scenarios' bodies by the same
 * client, concurrency and keep-alive: `bare` reads and discards them; `floor` keeps a 202's
 * promises (reads, inflates gzip to check it, appends to an lmdb log with the local log's
 * durability settings in `logDir`: bench/baselines/floor-server.ts). Started once, it can be
 * timed in several windows (the floor, interleaved with the edge scenario: run-scenarios.ts).
 */
export class BaselineServer {
  private next = 0

  private constructor(
    readonly server: 'bare' | 'floor',
    private readonly child: ChildProcess,
    private readonly client: HttpClient,
    private readonly load: BaselineLoad,
  ) {}

  static async start(server: 'bare' | 'floor', load: BaselineLoad, logDir?: string): Promise<BaselineServer> {
    const child =
      server === 'floor' ? spawnTs('./floor-server.ts', [logDir ?? '']) : spawnTs('./bare-server.ts')
    try {
      const port = await new Promise<number>((resolve, reject) => {
        let out = ''
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString()
          const m = /listening (\d+)/.exec(out)
          if (m) resolve(Number(m[1]))
        })
        child.once('exit', (code) => reject(new Error(`${server} server exited with ${code}`)))
      })
      return new BaselineServer(
        server,
        child,
        new HttpClient(`http://127.0.0.1:${port}`, load.concurrency),
        load,
      )
    } catch (err) {
      child.kill('SIGKILL')
      throw err
    }
  }

  get pid(): number {
    return this.child.pid ?? 0
  }

  /** The untimed warm-up the edge scenarios get too (warmUp). */
  async warmUp(): Promise<void> {
    flushDirtyPages()
    await warmUp({
      concurrency: this.load.concurrency,
      next: () => this.nextBody(),
      send: async (b) => void (await this.client.request('POST', '/v0/uploads', this.load.headers, b.body)),
    })
  }

  /**
   * One timed run of `durationMs`, closed loop; its latencies are pushed to `latencySink` too
   * (to combine windows: combineBareResults).
   */
  async timed(durationMs: number, progress: Progress, latencySink?: number[]): Promise<BareResult> {
    const latencies: number[] = []
    let requests = 0
    let bytes = 0
    let events = 0
    let errors = 0
    const timeline = new Timeline()
    progress.start(`baseline:${this.server}-http:${this.load.kind}`, () => {
      const rates = timeline.rates('bytes')
      const last = rates[rates.length - 2]?.[1] ?? 0
      return `${(last / 1048576).toFixed(1)} MB/s, ${requests} requests`
    })
    try {
      flushDirtyPages()
      const cpuBefore = cpuSnapshot(this.pid)
      const { elapsedMs } = await closedLoop({
        concurrency: this.load.concurrency,
        durationMs,
        next: () => this.nextBody(),
        send: async (b) => {
          const res = await this.client.request('POST', '/v0/uploads', this.load.headers, b.body)
          if (res.status === 202) {
            requests++
            bytes += b.body.length
            events += b.events
            latencies.push(res.ms)
            latencySink?.push(res.ms)
            timeline.add('bytes', b.body.length, res.at)
          } else errors++
        },
      })
      const cpuSeconds = (cpuSnapshot(this.pid).sluice - cpuBefore.sluice) / 100
      return bareResult(
        { kind: this.load.kind, server: this.server, cpuSeconds },
        { requests, bytes, events, elapsedMs, errors },
        latencies,
      )
    } finally {
      progress.stop()
    }
  }

  /** SIGSTOP (true) or SIGCONT (false): a stopped server takes no CPU while another is timed. */
  pause(stopped: boolean): void {
    if (this.child.exitCode === null && this.child.signalCode === null)
      this.child.kill(stopped ? 'SIGSTOP' : 'SIGCONT')
  }

  stop(): void {
    this.client.close()
    this.pause(false)
    this.child.kill('SIGTERM')
  }

  private nextBody() {
    return this.load.bodies[this.next++ % this.load.bodies.length]!
  }
}

/** A baseline server started, warmed up, timed once for `durationMs`, and stopped. */
export async function bareServerBaseline(
  options: BaselineLoad & {
    server: 'bare' | 'floor'
    durationMs: number
    progress: Progress
    logDir?: string
  },
): Promise<BareResult> {
  const server = await BaselineServer.start(options.server, options, options.logDir)
  try {
    await server.warmUp()
    return await server.timed(options.durationMs, options.progress)
  } finally {
    server.stop()
  }
}

/** Measurements of one server and body kind taken in parts, as one: sums, and `latencies` of them all. */
export function combineBareResults(parts: readonly BareResult[], latencies: readonly number[]): BareResult {
  const first = parts[0]
  if (!first) throw new RangeError('no measurement to combine')
  const sum = (f: (r: BareResult) => number) => parts.reduce((n, r) => n + f(r), 0)
  const cpu = parts.every((r) => r.cpuSeconds !== undefined) ? sum((r) => r.cpuSeconds!) : undefined
  return bareResult(
    { kind: first.kind, server: first.server, cpuSeconds: cpu },
    {
      requests: sum((r) => r.requests),
      bytes: sum((r) => r.bytes),
      events: sum((r) => (r.eventsPerSecond * r.elapsedMs) / 1000),
      elapsedMs: sum((r) => r.elapsedMs),
      errors: sum((r) => r.errors),
    },
    latencies,
  )
}

function bareResult(
  who: { kind: string; server: BareResult['server']; cpuSeconds: number | undefined },
  counts: { requests: number; bytes: number; events: number; elapsedMs: number; errors: number },
  latencies: readonly number[],
): BareResult {
  const { requests, bytes, events, elapsedMs, errors } = counts
  return {
    kind: who.kind,
    ...(who.server ? { server: who.server } : {}),
    ...(who.cpuSeconds === undefined ? {} : { cpuSeconds: who.cpuSeconds }),
    requests,
    bytes,
    elapsedMs,
    bytesPerSecond: perSecond(bytes, elapsedMs),
    requestsPerSecond: perSecond(requests, elapsedMs),
    eventsPerSecond: perSecond(events, elapsedMs),
    errors,
    latencyMs: summarize(latencies),
  }
}

export interface ChdbResult {
  kind: string
  /** Input format of the INSERT: JSONEachRow (e2e_ratio), RowBinary or Native (the floor). Absent in older results: JSONEachRow. */
  format?: string
  rows: number
  bytes: number
  inserts: number
  elapsedMs: number
  rowsPerSecond: number
  insertMs: LatencySummary
  /** CPU seconds of the inserting process (the engine's threads included) while timed. */
  cpuSeconds?: number
}

/** The formats chdb's own insert is measured in: JSONEachRow, then the binary ones of the floor. */
export const CHDB_BASELINE_FORMATS = ['JSONEachRow', 'RowBinary', 'Native'] as const

/**
 * Baseline 2: the same events, as rows of the `events` table, inserted by chdb itself (one INSERT
 * per uploaded body) in a child process: `INSERT … FORMAT JSONEachRow`, then the same rows in
 * RowBinary and Native (the floor). One result per format.
 */
export async function chdbInsertBaseline(options: {
  kind: string
  blocks: readonly Buffer[]
  workDir: string
  ddlFile: string
  minDurationMs: number
  progress: Progress
  formats?: readonly string[]
}): Promise<ChdbResult[]> {
  const blocksDir = join(options.workDir, `blocks-${options.kind}`)
  mkdirSync(blocksDir, { recursive: true })
  options.blocks.forEach((b, i) => writeFileSync(join(blocksDir, `${String(i).padStart(6, '0')}.jsonl`), b))
  const dataDir = join(options.workDir, `chdb-${options.kind}`)
  const formats = options.formats ?? CHDB_BASELINE_FORMATS
  const child = spawnTs('./chdb-insert.ts', [
    dataDir,
    options.ddlFile,
    blocksDir,
    String(options.minDurationMs),
    formats.join(','),
  ])
  let out = ''
  options.progress.start(`baseline:chdb-insert:${options.kind}`, () => {
    const done = out.split('\n').filter((l) => l.startsWith('{')).length
    return `${options.blocks.length} blocks, ${formats[Math.min(done, formats.length - 1)]}`
  })
  try {
    let err = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr.on('data', (d: Buffer) => (err += d.toString()))
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
    const lines = out
      .trim()
      .split('\n')
      .filter((l) => l.startsWith('{'))
    if (code !== 0 || lines.length !== formats.length)
      throw new Error(`chdb baseline failed (${code}): ${err || out}`)
    return lines.map((line) => {
      const r = JSON.parse(line) as {
        format: string
        rows: number
        bytes: number
        inserts: number
        ms: number
        insertMs: number[]
        cpuMs: number
      }
      return {
        kind: options.kind,
        format: r.format,
        rows: r.rows,
        bytes: r.bytes,
        inserts: r.inserts,
        elapsedMs: r.ms,
        rowsPerSecond: perSecond(r.rows, r.ms),
        insertMs: summarize(r.insertMs),
        cpuSeconds: r.cpuMs / 1000,
      }
    })
  } finally {
    options.progress.stop()
    if (child.exitCode === null) child.kill('SIGKILL')
  }
}
