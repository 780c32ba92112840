import { spawn } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { closedLoop, HttpClient } from '../http.ts'
import type { Progress } from '../progress.ts'
import { perSecond, summarize, Timeline, type LatencySummary } from '../stats.ts'

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url))

/** A child process running a TypeScript file through tsx (resolved from here, whatever the cwd). */
function spawnTs(file: string, args: string[] = []) {
  return spawn(process.execPath, ['--import', import.meta.resolve('tsx'), here(file), ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
}

export interface BareResult {
  kind: string
  requests: number
  bytes: number
  elapsedMs: number
  bytesPerSecond: number
  requestsPerSecond: number
  eventsPerSecond: number
  errors: number
  latencyMs: LatencySummary
}

/**
 * Baseline 1: the same bodies, the same client, concurrency and keep-alive, against a bare Node
 * HTTP server (child process) that reads and discards them.
 */
export async function bareServerBaseline(options: {
  kind: string
  bodies: readonly { body: Buffer; events: number }[]
  headers: Record<string, string>
  concurrency: number
  durationMs: number
  progress: Progress
  /** Inflate gzip bodies before answering (the ceiling of an edge that validates gzip). */
  inflate?: boolean
}): Promise<BareResult> {
  const child = spawnTs('./bare-server.ts', options.inflate ? ['inflate'] : [])
  try {
    const port = await new Promise<number>((resolve, reject) => {
      let out = ''
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString()
        const m = /listening (\d+)/.exec(out)
        if (m) resolve(Number(m[1]))
      })
      child.once('exit', (code) => reject(new Error(`bare server exited with ${code}`)))
    })
    const client = new HttpClient(`http://127.0.0.1:${port}`, options.concurrency)
    const latencies: number[] = []
    let requests = 0
    let bytes = 0
    let events = 0
    let errors = 0
    let i = 0
    const timeline = new Timeline()
    options.progress.start(`baseline:bare-http:${options.kind}`, () => {
      const rates = timeline.rates('bytes')
      const last = rates[rates.length - 2]?.[1] ?? 0
      return `${(last / 1048576).toFixed(1)} MB/s, ${requests} requests`
    })
    // Warm-up (excluded): open the sockets, JIT the paths.
    await closedLoop({
      concurrency: options.concurrency,
      durationMs: 300,
      next: () => options.bodies[i++ % options.bodies.length],
      send: async (b) => void (await client.request('POST', '/v0/uploads', options.headers, b.body)),
    })
    const { elapsedMs } = await closedLoop({
      concurrency: options.concurrency,
      durationMs: options.durationMs,
      next: () => options.bodies[i++ % options.bodies.length],
      send: async (b) => {
        const res = await client.request('POST', '/v0/uploads', options.headers, b.body)
        if (res.status === 202) {
          requests++
          bytes += b.body.length
          events += b.events
          latencies.push(res.ms)
          timeline.add('bytes', b.body.length, res.at)
        } else errors++
      },
    })
    options.progress.stop()
    client.close()
    return {
      kind: options.kind,
      requests,
      bytes,
      elapsedMs,
      bytesPerSecond: perSecond(bytes, elapsedMs),
      requestsPerSecond: perSecond(requests, elapsedMs),
      eventsPerSecond: perSecond(events, elapsedMs),
      errors,
      latencyMs: summarize(latencies),
    }
  } finally {
    options.progress.stop()
    child.kill('SIGTERM')
  }
}

export interface ChdbResult {
  kind: string
  rows: number
  bytes: number
  inserts: number
  elapsedMs: number
  rowsPerSecond: number
  insertMs: LatencySummary
}

/**
 * Baseline 2: the same events, as rows of the `events` table, inserted by chdb itself
 * (`INSERT … FORMAT JSONEachRow`, one INSERT per uploaded body) in a child process.
 */
export async function chdbInsertBaseline(options: {
  kind: string
  blocks: readonly Buffer[]
  workDir: string
  ddlFile: string
  minDurationMs: number
  progress: Progress
}): Promise<ChdbResult> {
  const blocksDir = join(options.workDir, `blocks-${options.kind}`)
  mkdirSync(blocksDir, { recursive: true })
  options.blocks.forEach((b, i) => writeFileSync(join(blocksDir, `${String(i).padStart(6, '0')}.jsonl`), b))
  const dataDir = join(options.workDir, `chdb-${options.kind}`)
  const child = spawnTs('./chdb-insert.ts', [
    dataDir,
    options.ddlFile,
    blocksDir,
    String(options.minDurationMs),
  ])
  options.progress.start(`baseline:chdb-insert:${options.kind}`, () => `${options.blocks.length} blocks`)
  try {
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr.on('data', (d: Buffer) => (err += d.toString()))
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
    const line = out.trim().split('\n').pop() ?? ''
    if (code !== 0 || !line.startsWith('{')) throw new Error(`chdb baseline failed (${code}): ${err || out}`)
    const r = JSON.parse(line) as {
      rows: number
      bytes: number
      inserts: number
      ms: number
      insertMs: number[]
    }
    return {
      kind: options.kind,
      rows: r.rows,
      bytes: r.bytes,
      inserts: r.inserts,
      elapsedMs: r.ms,
      rowsPerSecond: perSecond(r.rows, r.ms),
      insertMs: summarize(r.insertMs),
    }
  } finally {
    options.progress.stop()
    if (child.exitCode === null) child.kill('SIGKILL')
  }
}
