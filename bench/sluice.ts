import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { createClient, type ClickHouseClient } from '@clickhouse/client'
import { NODE_MEMORY_FLAGS, withProcessMemorySettings } from '../services/shared/process-memory.ts'
import { basic, HttpClient } from './http.ts'

const BIN = fileURLToPath(new URL('../bin/sluice.js', import.meta.url))
/** The banner line of a process serving the API, and that of one without (a worker, a scheduler). */
const API_LINE = /API:\s+(http:\/\/\S+)/
const RUNNING_LINE = /^sluice \S+ running \(/m

export interface RssReading {
  rssMb: number
  hwmMb: number
  /** Anonymous memory (heaps, buffers) and file-backed pages (e.g. lmdb's memory map) of the RSS. */
  anonMb: number
  fileMb: number
}

/** Memory of a process from /proc/<pid>/status, in MB (Linux only; undefined elsewhere). */
export function readRss(pid: number): RssReading | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    const mb = (name: string) =>
      Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) / 1024
    const rss = mb('VmRSS')
    if (!Number.isFinite(rss)) return undefined
    const or = (v: number, d: number) => (Number.isFinite(v) ? v : d)
    return {
      rssMb: rss,
      hwmMb: or(mb('VmHWM'), rss),
      anonMb: or(mb('RssAnon'), rss),
      fileMb: or(mb('RssFile'), 0),
    }
  } catch {
    return undefined
  }
}

/** Samples a process's RSS every `everyMs`: [seconds since the run started, MB]. */
export class RssSampler {
  readonly samples: [number, number][] = []
  /** [seconds, anon MB, file MB], alongside `samples`. */
  readonly parts: [number, number, number][] = []
  private readonly timer: NodeJS.Timeout
  private readonly pid: number
  private readonly t0: number

  constructor(pid: number, t0: number, everyMs = 250) {
    this.pid = pid
    this.t0 = t0
    this.timer = setInterval(() => this.sample(), everyMs)
    this.timer.unref()
    this.sample()
  }

  sample(): number | undefined {
    const m = readRss(this.pid)
    if (m) {
      const t = (performance.now() - this.t0) / 1000
      this.samples.push([t, m.rssMb])
      this.parts.push([t, m.anonMb, m.fileMb])
    }
    return m?.rssMb
  }

  /** Highest sampled RSS between two times (seconds since the run started). */
  maxBetween(from: number, to: number): number | undefined {
    let max: number | undefined
    for (const [t, mb] of this.samples) if (t >= from && t <= to && (max === undefined || mb > max)) max = mb
    return max
  }

  /** Highest anonymous and file-backed parts between two times. */
  partsBetween(from: number, to: number): { anonMb?: number; fileMb?: number } {
    let anonMb: number | undefined
    let fileMb: number | undefined
    for (const [t, a, f] of this.parts) {
      if (t < from || t > to) continue
      if (anonMb === undefined || a > anonMb) anonMb = a
      if (fileMb === undefined || f > fileMb) fileMb = f
    }
    return { anonMb, fileMb }
  }

  hwmMb(): number | undefined {
    return readRss(this.pid)?.hwmMb
  }

  stop(): void {
    clearInterval(this.timer)
  }
}

/** CPU seconds by kind of thread of the Sluice process (services/shared/thread-cpu.ts). */
export interface ThreadCpu {
  main: number
  cpu_pool: number
  engine: number
  node: number
}

export interface Tenant {
  orgId: number
  apps: string[]
  apiKey: string
  apiSecret: string
  auth: string
}

/**
 * The Sluice under test: `node bin/sluice.js start` as a child process (embedded, or against
 * Kafka + ClickHouse when their variables are set), its banner parsed for the API and SQL port.
 */
/** A process of the Sluice under test: `start` (every role), or one role in distributed mode. */
export type SluiceRole = 'start' | 'edge' | 'worker' | 'scheduler'

/** CPU seconds each process has used (utime + stime, /proc/<pid>/stat), by role; `engine`: the ClickHouse stand-in. */
export type RoleCpu = Partial<Record<SluiceRole | 'engine', number>>

/** CPU seconds (user + system) a process has used so far; undefined when /proc cannot tell. */
export function processCpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS
  } catch {
    return undefined
  }
}

/** USER_HZ: /proc's clock ticks per second on Linux. */
const CLOCK_TICKS = 100

export class SluiceUnderTest {
  /** The process serving the API: `start`, or the edge in distributed mode. */
  readonly child: ChildProcess
  /** Every process, by role (the edge's is `child`). */
  readonly roles: ReadonlyMap<SluiceRole, ChildProcess>
  /** The ClickHouse stand-in's process (ENGINE_PID), whose CPU is the engine's in distributed mode. */
  readonly enginePid: number | undefined
  readonly url: string
  readonly sqlUrl: string | undefined
  readonly adminToken: string
  readonly mode: 'embedded' | 'distributed'
  readonly database: string
  private readonly sql: ClickHouseClient
  private readonly outputTail: string[]
  private readonly exited: Promise<number | null>
  readonly http: HttpClient

  private constructor(fields: {
    child: ChildProcess
    roles: ReadonlyMap<SluiceRole, ChildProcess>
    enginePid: number | undefined
    url: string
    sqlUrl: string | undefined
    adminToken: string
    mode: 'embedded' | 'distributed'
    database: string
    sql: ClickHouseClient
    outputTail: string[]
    exited: Promise<number | null>
  }) {
    this.child = fields.child
    this.roles = fields.roles
    this.enginePid = fields.enginePid
    this.url = fields.url
    this.sqlUrl = fields.sqlUrl
    this.adminToken = fields.adminToken
    this.mode = fields.mode
    this.database = fields.database
    this.sql = fields.sql
    this.outputTail = fields.outputTail
    this.exited = fields.exited
    // As many sockets as the scenarios have senders (16), as the baselines' client has.
    this.http = new HttpClient(fields.url, 16)
  }

  /**
   * Embedded: `sluice start`. Distributed: `sluice edge`, then `sluice worker` and `sluice
   * scheduler`, each a process of its own as a deployment runs them (one after the other, so their
   * migrations at start do not race), so the CPU of each role is its process's.
   */
  static async start(options: {
    env: Record<string, string>
    distributed: boolean
    adminToken: string
    timeoutMs?: number
    /** Node flags of the Sluice processes (e.g. --cpu-prof). */
    nodeArgs?: string[]
    /** The ClickHouse stand-in's process, when the bench started it (distributed mode). */
    enginePid?: number
  }): Promise<SluiceUnderTest> {
    // Started as users start it: with the memory settings bin/sluice.js sets (docs/memory.md).
    const env = {
      ...withProcessMemorySettings(process.env),
      PORT: '0',
      HOST: '127.0.0.1',
      SLUICE_SQL_PORT: '0',
      SLUICE_OPS_PORT: '0',
      SLUICE_LOG_LEVEL: 'warn',
      SLUICE_ADMIN_TOKEN: options.adminToken,
      ...options.env,
    }
    const tail: string[] = []
    const roles = new Map<SluiceRole, ChildProcess>()
    const exits: Promise<number | null>[] = []
    const spawnRole = async (
      role: SluiceRole,
      ready: RegExp,
    ): Promise<{ child: ChildProcess; banner: string }> => {
      const child = spawn(process.execPath, [...NODE_MEMORY_FLAGS, ...(options.nodeArgs ?? []), BIN, role], {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      roles.set(role, child)
      const prefix = role === 'start' ? '' : `[${role}] `
      let banner = ''
      const keep = (d: Buffer) => {
        const text = d.toString()
        if (banner.length < 8192) banner += text
        for (const line of text.split('\n')) if (line.trim()) tail.push(prefix + line)
        if (tail.length > 200) tail.splice(0, tail.length - 200)
      }
      child.stdout.on('data', keep)
      child.stderr.on('data', keep)
      exits.push(new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code))))
      await new Promise<void>((resolve, reject) => {
        const timeoutMs = options.timeoutMs ?? 90_000
        const timer = setTimeout(
          () => reject(new Error(`sluice ${role} did not start in ${timeoutMs} ms:\n${tail.join('\n')}`)),
          timeoutMs,
        )
        const check = () => {
          if (ready.test(banner)) {
            clearTimeout(timer)
            resolve()
          }
        }
        child.stdout.on('data', check)
        child.once('exit', (code) => {
          clearTimeout(timer)
          reject(new Error(`sluice ${role} exited with ${code} before starting:\n${tail.join('\n')}`))
        })
      })
      return { child, banner }
    }
    let main: { child: ChildProcess; banner: string }
    try {
      main = await spawnRole(options.distributed ? 'edge' : 'start', API_LINE)
      if (options.distributed) {
        await spawnRole('worker', RUNNING_LINE)
        await spawnRole('scheduler', RUNNING_LINE)
      }
    } catch (err) {
      for (const child of roles.values())
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
      await Promise.all(exits)
      throw err
    }
    const { child, banner } = main
    const url = API_LINE.exec(banner)?.[1] ?? ''
    const sqlUrl = /SQL port:\s+(http:\/\/\S+)/.exec(banner)?.[1]
    const database = options.env.CLICKHOUSE_DATABASE ?? process.env.CLICKHOUSE_DATABASE ?? 'sluice'
    const sql = options.distributed
      ? createClient({
          url: options.env.CLICKHOUSE_URL ?? process.env.CLICKHOUSE_URL ?? '',
          username: process.env.CLICKHOUSE_USER ?? 'default',
          password: process.env.CLICKHOUSE_PASSWORD ?? '',
          database,
        })
      : createClient({
          url: sqlUrl ?? '',
          username: 'admin',
          password: options.adminToken,
          database,
        })
    return new SluiceUnderTest({
      child,
      roles,
      enginePid: options.enginePid,
      url,
      sqlUrl,
      adminToken: options.adminToken,
      mode: options.distributed ? 'distributed' : 'embedded',
      database,
      sql,
      outputTail: tail,
      exited: Promise.all(exits).then((codes) => codes.find((c) => c !== 0) ?? codes[0] ?? null),
    })
  }

  get pid(): number {
    return this.child.pid ?? 0
  }

  /** Every process of it still runs. */
  get alive(): boolean {
    return [...this.roles.values()].every((c) => c.exitCode === null && c.signalCode === null)
  }

  /** CPU seconds used so far by each process (and the engine's, when the bench started it). */
  roleCpu(): RoleCpu {
    const cpu: RoleCpu = {}
    for (const [role, child] of this.roles) {
      const seconds = child.pid ? processCpuSeconds(child.pid) : undefined
      if (seconds !== undefined) cpu[role] = seconds
    }
    const engine = this.enginePid ? processCpuSeconds(this.enginePid) : undefined
    if (engine !== undefined) cpu.engine = engine
    return cpu
  }

  output(): string {
    return this.outputTail.join('\n')
  }

  /** One org, its apps and an API key with every scope, through the admin API. */
  async tenant(name: string, apps: string[]): Promise<Tenant> {
    const admin = { Authorization: `Bearer ${this.adminToken}`, 'Content-Type': 'application/json' }
    const json = async (method: string, path: string, body: unknown) => {
      const res = await this.http.request(method, `/admin/v1${path}`, admin, JSON.stringify(body))
      if (res.status !== 201) throw new Error(`${method} ${path}: ${res.status} ${res.body}`)
      return JSON.parse(res.body) as Record<string, unknown>
    }
    const org = await json('POST', '/orgs', { name })
    const orgId = Number(org.id)
    for (const app of apps) await json('POST', `/orgs/${orgId}/apps`, { name: app, app_id: app })
    const key = await json('POST', `/orgs/${orgId}/keys`, {})
    const apiKey = String(key.api_key)
    const apiSecret = String(key.api_secret)
    return { orgId, apps, apiKey, apiSecret, auth: basic(apiKey, apiSecret) }
  }

  async query<T>(query: string, params?: Record<string, unknown>): Promise<T[]> {
    const result = await this.sql.query({
      query,
      format: 'JSONEachRow',
      ...(params ? { query_params: params } : {}),
    })
    return result.json<T>()
  }

  /** A statement without a result (distributed mode: the ClickHouse server's own client). */
  async command(query: string): Promise<void> {
    await this.sql.command({ query })
  }

  async text(query: string): Promise<string> {
    const result = await this.sql.query({ query, format: 'TabSeparated' })
    return result.text()
  }

  /** Server-side events stored for an app (what is queryable). */
  async countEvents(app: string): Promise<number> {
    const rows = await this.query<{ n: string | number }>(
      `SELECT count() AS n FROM ${this.database}.events WHERE app_id = ${quote(app)} AND source = 'server'`,
    )
    return Number(rows[0]?.n ?? 0)
  }

  /** Bus lag per topic, from the edge's Prometheus metrics (sampled by its load shedder). */
  async busLag(): Promise<Record<string, number>> {
    const res = await this.http.request('GET', '/metrics')
    const lag: Record<string, number> = {}
    if (res.status !== 200) return lag
    for (const m of res.body.matchAll(/^sluice_bus_lag_records\{topic="([^"]+)"\}\s+(\S+)/gm))
      lag[m[1]!] = Number(m[2])
    return lag
  }

  /**
   * CPU seconds the Sluice process has used, by kind of thread (`sluice_thread_cpu_seconds` at
   * /metrics: main, cpu_pool, engine, node); undefined when not exposed (/proc missing).
   */
  async threadCpu(): Promise<ThreadCpu | undefined> {
    const res = await this.http.request('GET', '/metrics').catch(() => undefined)
    if (!res || res.status !== 200) return undefined
    const cpu: ThreadCpu = { main: 0, cpu_pool: 0, engine: 0, node: 0 }
    let found = false
    for (const m of res.body.matchAll(/^sluice_thread_cpu_seconds\{thread="(\w+)"\}\s+(\S+)/gm)) {
      const kind = m[1] as keyof ThreadCpu
      if (kind in cpu) {
        cpu[kind] = Number(m[2])
        found = true
      }
    }
    return found ? cpu : undefined
  }

  /** SIGKILL: for a Sluice whose backlog is of no interest. */
  async kill(): Promise<void> {
    this.http.close()
    await this.sql.close().catch(() => undefined)
    for (const child of this.roles.values())
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    await this.exited
  }

  async stop(timeoutMs = 30_000): Promise<number | null> {
    this.http.close()
    await this.sql.close().catch(() => undefined)
    const running = [...this.roles.values()].filter((c) => c.exitCode === null && c.signalCode === null)
    // Each drains on its own: a graceful stop finishes and commits the batches in flight.
    for (const child of running) child.kill('SIGTERM')
    const timer = setTimeout(() => {
      for (const child of running) child.kill('SIGKILL')
    }, timeoutMs)
    const code = await this.exited
    clearTimeout(timer)
    return code
  }
}

/** A ClickHouse string literal. */
export const quote = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`
