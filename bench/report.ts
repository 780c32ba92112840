import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { BareResult, ChdbResult } from './baselines/run.ts'
import type { SustainedResult } from './scenarios/sustained.ts'
import { meets, type Figure, type RunMeasures, type ScenarioReporter, type Target } from './figures.ts'
import type { CpuUse } from './machine.ts'
import type { FreshnessResult } from './scenarios/freshness.ts'
import type { OverloadResult } from './scenarios/overload.ts'
import type { ProfilesResult } from './scenarios/profiles.ts'
import type { SdkResult } from './scenarios/sdk.ts'
import type { EdgeResult, EndToEndResult } from './scenarios/uploads.ts'
import type { RoleCpu, ThreadCpu } from './sluice.ts'
import { ratesOfCounter, round, type LatencySummary } from './stats.ts'
import { STAGES } from './freshness-stages.ts'
import { barChart, lineChart, type BarGroup } from './svg.ts'

export interface BenchResults {
  version: 1
  run: {
    id: string
    startedAt: string
    finishedAt?: string
    wallMs?: number
    mode: 'embedded' | 'distributed'
    profile: 'quick' | 'full'
    seed: number
    git: { commit: string; dirty: boolean }
    machine: Record<string, unknown>
    /** Environment the benched Sluice was started with, beyond the defaults. */
    settings: Record<string, string>
    cpu?: CpuUse
    notes: string[]
  }
  generation?: {
    ms: number
    plainBodyBytes: number
    gzipBodyBytes: number
    gzipEvents: number
    gzipInflatedBytes: number
  }
  /** bare: informational; floor: the edge's baseline (absent in older results); chdb: every format. */
  baselines: { bare: BareResult[]; floor?: BareResult[]; chdb: ChdbResult[] }
  scenarios: {
    sdk?: SdkResult
    edge: EdgeResult[]
    e2e: EndToEndResult[]
    freshness?: FreshnessResult
    profiles?: ProfilesResult
    overload?: OverloadResult
    sustained?: SustainedResult
    /** The scenarios that run on their own (segmentation, push, ...): read by their ScenarioReporter. */
    [name: string]: unknown
  }
  /** Wall time of each step, ms. */
  durations: Record<string, number>
  /** Steps not run, and why (e.g. the quick run's time budget). */
  skipped?: Record<string, string>
  rss: [number, number][]
  errors: string[]
  figures: Figure[]
}

export const TARGETS = {
  edge_ratio: { op: '>=', value: 0.8 },
  e2e_ratio: { op: '>=', value: 1.0 },
  rss_max_mb: { op: '<=', value: 1024 },
  sustained_rate_ratio: { op: '>=', value: 0.8 },
} as const satisfies Record<string, Target>

/** chdb's own INSERT … FORMAT JSONEachRow of a kind of body (e2e_ratio's baseline). */
export function jsonBaseline(r: Pick<BenchResults, 'baselines'>, kind: string): ChdbResult | undefined {
  return r.baselines.chdb.find((b) => b.kind === kind && (b.format ?? 'JSONEachRow') === 'JSONEachRow')
}

/** The floor: chdb's own insert of the same rows in its cheapest binary format (RowBinary or Native). */
export function floorBaseline(r: Pick<BenchResults, 'baselines'>, kind: string): ChdbResult | undefined {
  let best: ChdbResult | undefined
  for (const b of r.baselines.chdb)
    if (b.kind === kind && b.format !== undefined && b.format !== 'JSONEachRow')
      if (!best || b.rowsPerSecond > best.rowsPerSecond) best = b
  return best
}

/** The edge's baseline: the floor server (keeps a 202's promises); the bare server in older results. */
export function edgeBaseline(r: Pick<BenchResults, 'baselines'>, kind: string): BareResult | undefined {
  return (r.baselines.floor ?? r.baselines.bare).find((b) => b.kind === kind)
}

/** CPU microseconds per event made queryable, by kind of thread (undefined when not measured). */
export function cpuPerEvent(
  u: Pick<EndToEndResult, 'threads' | 'stored'>,
): { total: number; main: number; cpu_pool: number; engine: number; node: number } | undefined {
  const t = u.threads
  if (!t || u.stored <= 0) return undefined
  const us = (seconds: number) => (seconds * 1e6) / u.stored
  return {
    total: us(t.main + t.cpu_pool + t.engine + t.node),
    main: us(t.main),
    cpu_pool: us(t.cpu_pool),
    engine: us(t.engine),
    node: us(t.node),
  }
}

/**
 * Distributed mode: CPU µs per event made queryable of each process (edge, worker, scheduler, and
 * the engine when the bench started the ClickHouse stand-in), from their /proc times.
 */
export function roleCpuPerEvent(
  u: Pick<EndToEndResult, 'roles' | 'stored'>,
): ({ total: number } & Partial<Record<keyof RoleCpu, number>>) | undefined {
  const roles = u.roles
  if (!roles || u.stored <= 0 || Object.keys(roles).length === 0) return undefined
  const out: { total: number } & Partial<Record<keyof RoleCpu, number>> = { total: 0 }
  for (const [role, seconds] of Object.entries(roles) as [keyof RoleCpu, number][]) {
    out[role] = (seconds * 1e6) / u.stored
    out.total += out[role]
  }
  return out
}

/** The scenarios' reporters, in the report's order (bench/cli.ts lists them). */
export type Reporters = readonly ScenarioReporter<unknown>[]

/**
 * The headline figures, from a run's results: the ingestion scenarios', then each reporter's.
 * Ratios take the lower of the plain and gzip bodies.
 */
export function buildFigures(r: Omit<BenchResults, 'figures'>, reporters: Reporters): Figure[] {
  const figures: Figure[] = []
  const why = (...steps: string[]) => steps.map((s) => r.skipped?.[s]).find(Boolean) ?? 'not measured'
  const fmtRatio = (v: number) => round(v, v < 0.1 ? 3 : 2)
  const ratio = (
    name: string,
    target: Target | undefined,
    values: number[],
    parts: string[],
    steps: string[],
    extra = '',
  ) => {
    const value = values.length > 0 ? Math.min(...values) : undefined
    const detail = [parts.length > 1 ? parts.join(', ') : '', extra].filter(Boolean).join('; ')
    figures.push({
      name,
      unit: '',
      ...(target ? { target, met: meets(value, target) } : {}),
      ...(value === undefined
        ? { skipped: why(...steps) }
        : { value: fmtRatio(value), ...(detail ? { detail } : {}) }),
    })
  }

  const edge: number[] = []
  const edgeParts: string[] = []
  const bareParts: string[] = []
  const edgeCpuParts: string[] = []
  for (const u of r.scenarios.edge) {
    const base = edgeBaseline(r, u.kind)
    if (!base || base.bytesPerSecond <= 0) continue
    const value = u.acceptedBytesPerSecond / base.bytesPerSecond
    edge.push(value)
    edgeParts.push(`${u.kind} ${fmtRatio(value)}`)
    const sluiceCpu = u.cpu.sluice * (u.sendMs / 1000)
    if (base.cpuSeconds && sluiceCpu > 0)
      edgeCpuParts.push(`${u.kind} ${fmtRatio(u.acceptedBytes / sluiceCpu / (base.bytes / base.cpuSeconds))}`)
    const bare = r.baselines.floor ? r.baselines.bare.find((b) => b.kind === u.kind) : undefined
    if (bare && bare.bytesPerSecond > 0)
      bareParts.push(`${u.kind} ${fmtRatio(u.acceptedBytesPerSecond / bare.bytesPerSecond)}`)
  }
  ratio(
    'edge_ratio',
    TARGETS.edge_ratio,
    edge,
    edgeParts,
    ['edge', 'baselines'],
    [
      edgeCpuParts.length > 0 ? `bytes per CPU second against the floor's: ${edgeCpuParts.join(', ')}` : '',
      bareParts.length > 0 ? `against a bare server that keeps no promise: ${bareParts.join(', ')}` : '',
    ]
      .filter(Boolean)
      .join('; '),
  )

  const e2e: number[] = []
  const e2eParts: string[] = []
  const floor: number[] = []
  const floorParts: string[] = []
  const cpuParts: string[] = []
  const cpuTotals: number[] = []
  const e2eCpuParts: string[] = []
  for (const u of r.scenarios.e2e) {
    const json = jsonBaseline(r, u.kind)
    if (json && json.rowsPerSecond > 0) {
      const value = u.queryableEventsPerSecond / json.rowsPerSecond
      e2e.push(value)
      e2eParts.push(`${u.kind} ${fmtRatio(value)}`)
      const spent = cpuPerEvent(u)
      if (spent && json.cpuSeconds)
        e2eCpuParts.push(`${u.kind} ${fmtRatio((json.cpuSeconds * 1e6) / json.rows / spent.total)}`)
    }
    const bin = floorBaseline(r, u.kind)
    if (bin && bin.rowsPerSecond > 0) {
      const value = u.queryableEventsPerSecond / bin.rowsPerSecond
      floor.push(value)
      floorParts.push(`${u.kind} ${fmtRatio(value)} (${bin.format})`)
    }
    const byRole = roleCpuPerEvent(u)
    const cpu = cpuPerEvent(u)
    if (byRole) {
      cpuTotals.push(byRole.total)
      const part = (role: keyof RoleCpu, label: string = role) =>
        byRole[role] === undefined ? [] : [`${label} ${byRole[role].toFixed(1)}`]
      cpuParts.push(
        `${u.kind} ${byRole.total.toFixed(1)}: ${[
          ...part('edge'),
          ...part('worker'),
          ...part('engine', 'engine (ClickHouse stand-in process)'),
          ...part('scheduler'),
        ].join(', ')}`,
      )
    } else if (cpu) {
      cpuTotals.push(cpu.total)
      cpuParts.push(
        `${u.kind} ${cpu.total.toFixed(1)}: main ${cpu.main.toFixed(1)}, cpu pool ${cpu.cpu_pool.toFixed(1)}, engine ${cpu.engine.toFixed(1)}, node ${cpu.node.toFixed(1)}`,
      )
    }
  }
  ratio(
    'e2e_ratio',
    TARGETS.e2e_ratio,
    e2e,
    e2eParts,
    ['plain', 'gzip', 'baselines'],
    e2eCpuParts.length > 0
      ? `events per CPU second against the engine's rows per CPU second: ${e2eCpuParts.join(', ')}`
      : '',
  )
  ratio(
    'e2e_floor_ratio',
    undefined,
    floor,
    floorParts.length === 1 ? [] : floorParts,
    ['plain', 'gzip', 'baselines'],
    floorParts.length === 1 ? floorParts[0]! : '',
  )
  figures.push(
    cpuTotals.length === 0
      ? { name: 'cpu_us_per_event', unit: 'us', skipped: why('plain', 'gzip') }
      : {
          name: 'cpu_us_per_event',
          unit: 'us',
          value: round(Math.max(...cpuTotals), 1),
          detail: cpuParts.join('; '),
        },
  )

  const p = r.scenarios.profiles
  if (!p || p.skipped !== undefined) {
    const reason = p?.skipped ?? why('profiles')
    figures.push({ name: 'profile_patch_per_s', unit: '/s', skipped: reason })
    figures.push({ name: 'profile_read_your_writes_p99_ms', unit: 'ms', skipped: reason })
  } else {
    figures.push({ name: 'profile_patch_per_s', unit: '/s', value: Math.round(p.patchesPerSecond) })
    const ryw = p.readYourWritesMs.p99
    figures.push(
      ryw === undefined
        ? { name: 'profile_read_your_writes_p99_ms', unit: 'ms', skipped: 'no sample became visible' }
        : {
            name: 'profile_read_your_writes_p99_ms',
            unit: 'ms',
            value: Math.round(ryw),
            detail: `${p.readYourWritesMs.count} samples${p.rywTimedOut > 0 ? `, ${p.rywTimedOut} timed out` : ''}`,
          },
    )
  }

  const o = r.scenarios.overload
  if (!o)
    figures.push({
      name: 'rss_max_mb',
      unit: 'MB',
      skipped: why('overload'),
      target: TARGETS.rss_max_mb,
      met: false,
    })
  else {
    const rss = o.rssMaxMb
    const missing = o.drainComplete
      ? `lost ${o.lost} of ${o.acceptedEvents} accepted events`
      : `${o.lost} of ${o.acceptedEvents} accepted events not stored: drain incomplete after ${Math.round(o.drainMs / 1000)} s (pending or lost)`
    figures.push({
      name: 'rss_max_mb',
      unit: 'MB',
      target: TARGETS.rss_max_mb,
      // Overload is only shown bounded if the edge got to shed load.
      met:
        meets(rss, TARGETS.rss_max_mb) &&
        o.drainComplete &&
        o.lost === 0 &&
        o.storedTwice === 0 &&
        o.shedShare > 0,
      detail: `anonymous ${fmtN(o.rssAnonMaxMb)} MB + file-backed ${fmtN(o.rssFileMaxMb)} MB at most; 429/503 ${(o.shedShare * 100).toFixed(1)}% of answers${o.firstShedAfterS === undefined ? ' (never shed)' : ` (from ${o.firstShedAfterS.toFixed(1)} s on)`}; ${missing}${o.storedTwice > 0 ? `; ${o.storedTwice} stored twice` : ''}`,
      ...(rss === undefined ? { skipped: 'RSS not readable (/proc)' } : { value: Math.round(rss) }),
    })
  }

  const sus = r.scenarios.sustained
  if (!sus)
    figures.push({
      name: 'sustained_rate_ratio',
      unit: '',
      skipped: r.skipped?.sustained ?? (r.run.profile === 'quick' ? 'full run only' : 'not measured'),
    })
  else {
    const value =
      sus.firstMinuteEventsPerSecond > 0 ? sus.lastMinuteEventsPerSecond / sus.firstMinuteEventsPerSecond : 0
    const rssOk = sus.rssMaxMb !== undefined && sus.rssMaxMb < 1024
    figures.push({
      name: 'sustained_rate_ratio',
      unit: '',
      value: round(value, 2),
      target: TARGETS.sustained_rate_ratio,
      met: meets(value, TARGETS.sustained_rate_ratio) && rssOk && sus.drainComplete,
      detail:
        `last minute ${fmtN(sus.lastMinuteEventsPerSecond)} ev/s against first minute ${fmtN(sus.firstMinuteEventsPerSecond)} ev/s; ` +
        `${fmtN(sus.stored)} events in ${fmtN(sus.queryableAfterS)} s${sus.drainComplete ? '' : ' (drain incomplete)'}; ` +
        `RSS max ${fmtN(sus.rssMaxMb)} MB (under 1024: ${rssOk ? 'yes' : 'no'})`,
    })
  }
  const quick = r.run.profile === 'quick'
  const measures: RunMeasures = cpuTotals.length > 0 ? { cpuUsPerEvent: Math.max(...cpuTotals) } : {}
  for (const reporter of reporters)
    figures.push(...reporter.figures(r.scenarios[reporter.name], why(reporter.name), quick, measures))
  return figures
}

/** `edge_ratio 0.91 (target >= 0.8: met)`. */
export function formatFigure(f: Figure): string {
  if (f.skipped !== undefined && f.value === undefined) return `${f.name} skipped: ${f.skipped}`
  const value = f.value === undefined ? 'n/a' : String(f.value)
  if (!f.target) return `${f.name} ${value} (no target${f.detail ? `; ${f.detail}` : ''})`
  const extra = f.name === 'rss_max_mb' ? ' with 0 lost' : ''
  const detail = f.detail ? `; ${f.detail}` : ''
  return `${f.name} ${value} (target ${f.target.op} ${f.target.value}${extra}: ${f.met ? 'met' : 'not met'}${detail})`
}

// --- Files ---------------------------------------------------------------------------------------

const fmtN = (v: number | undefined, digits = 0) =>
  v === undefined || !Number.isFinite(v)
    ? 'n/a'
    : v.toLocaleString('en-US', { maximumFractionDigits: digits })
const mb = (bytesPerSecond: number) => `${(bytesPerSecond / 1048576).toFixed(1)} MB/s`
const lat = (s: LatencySummary | undefined) =>
  s && s.count > 0 ? `${fmtN(s.p50, 1)} / ${fmtN(s.p90, 1)} / ${fmtN(s.p99, 1)} ms` : 'n/a'
const statusText = (s: Record<string, number>) =>
  Object.entries(s)
    .map(([k, v]) => `${k}×${v}`)
    .join(' ')
const threadText = (t: ThreadCpu | undefined) =>
  t
    ? `main ${t.main.toFixed(1)}, pool ${t.cpu_pool.toFixed(1)}, engine ${t.engine.toFixed(1)}, node ${t.node.toFixed(1)}`
    : 'n/a'
const cpuText = (c: CpuUse | undefined) =>
  c ? `sluice ${c.sluice.toFixed(2)}, bench ${c.bench.toFixed(2)}, other ${c.other.toFixed(2)}` : 'n/a'

export function markdownReport(r: BenchResults, reporters: Reporters): string {
  const out: string[] = []
  const m = r.run.machine
  out.push(`# Sluice bench — ${r.run.id}`, '')
  out.push(
    `Mode **${r.run.mode}**, profile **${r.run.profile}**, seed ${r.run.seed}, commit \`${r.run.git.commit}\`${r.run.git.dirty ? ' (dirty tree)' : ''}; ` +
      `${String(m.cores)} cores (${String(m.cpuModel)}), ${String(m.memoryGb)} GB, Node ${String(m.node)}; load average at start ${JSON.stringify(m.loadAverage)}; ` +
      `wall time ${fmtN((r.run.wallMs ?? 0) / 1000, 1)} s.`,
    '',
  )
  if (r.run.cpu)
    out.push(
      `CPU over the run (average cores): the bench and its children (Sluice, baselines) ${(r.run.cpu.bench + r.run.cpu.sluice).toFixed(2)}, ` +
        `other processes ${r.run.cpu.other.toFixed(2)} (noise from outside the bench); the machine was busy ${(r.run.cpu.busyShare * 100).toFixed(0)}% of the time. ` +
        'Per scenario, "sluice" is the benched process, "bench" the load generator, "other" the noise.',
      '',
    )
  out.push('## Figures', '', '| figure | value | target | met |', '|---|---|---|---|')
  for (const f of r.figures) {
    const value =
      f.value === undefined
        ? `skipped: ${f.skipped ?? ''}`
        : `${f.value}${f.unit && f.unit !== '/s' ? ` ${f.unit}` : ''}`
    const target = f.target ? `${f.target.op} ${f.target.value}` : '—'
    out.push(
      `| \`${f.name}\` | ${value}${f.detail ? ` (${f.detail})` : ''} | ${target} | ${f.target ? (f.met ? 'met' : 'not met') : '—'} |`,
    )
  }
  out.push('', '## Baselines (same bodies, same machine, same run)', '')
  out.push('| baseline | bodies | rate | events/s | latency p50/p90/p99 |', '|---|---|---|---|---|')
  const server = (b: BareResult, name: string) =>
    out.push(
      `| ${name}, ${b.kind} | ${b.requests} | ${mb(b.bytesPerSecond)} (${fmtN(b.requestsPerSecond)} req/s) | ${fmtN(b.eventsPerSecond)} | ${lat(b.latencyMs)} |`,
    )
  for (const b of r.baselines.floor ?? []) server(b, 'edge floor (read, inflate gzip, durable lmdb append)')
  for (const b of r.baselines.bare) server(b, 'bare Node HTTP server (reads, discards)')
  for (const b of r.baselines.chdb)
    out.push(
      `| chdb INSERT ${b.format ?? 'JSONEachRow'}, ${b.kind} | ${b.inserts} inserts | ${fmtN(b.rowsPerSecond)} rows/s | ${fmtN(b.rowsPerSecond)} | insert ${lat(b.insertMs)} |`,
    )
  out.push('', '## Scenarios', '')
  const s = r.scenarios
  if (s.sdk)
    out.push(
      `- **sdk-sessions**: ${s.sdk.bodies} bodies, ${fmtN(s.sdk.rows)} rows, ${fmtN(s.sdk.rowsPerSecond)} rows/s to receipts done (${statusText(s.sdk.statuses)})${s.sdk.complete ? '' : ' — incomplete'}.`,
    )
  out.push(
    '',
    '| edge scenario | accepted | rate | vs floor (edge_ratio) | vs bare | 202 latency p50/p90/p99 | answers | CPU (cores) | CPU by thread (s) |',
    '|---|---|---|---|---|---|---|---|---|',
  )
  const versus = (rate: number, base: { bytesPerSecond: number } | undefined) =>
    base && base.bytesPerSecond > 0 ? (rate / base.bytesPerSecond).toFixed(2) : 'n/a'
  for (const u of s.edge) {
    const floor = r.baselines.floor?.find((b) => b.kind === u.kind)
    const bare = r.baselines.bare.find((b) => b.kind === u.kind)
    out.push(
      `| ${u.name} (${u.concurrency} senders, ${fmtN(u.sendMs / 1000, 1)} s) | ${u.acceptedBodies} bodies | ${mb(u.acceptedBytesPerSecond)}, ${fmtN(u.acceptedEventsPerSecond)} ev/s | ${versus(u.acceptedBytesPerSecond, floor)} | ${versus(u.acceptedBytesPerSecond, bare)} | ${lat(u.acceptedLatencyMs)} | ${statusText(u.statuses)} | ${cpuText(u.cpu)} | ${threadText(u.threads)} |`,
    )
  }
  out.push(
    '',
    '| end-to-end scenario | accepted | queryable ev/s | vs JSONEachRow (e2e_ratio) | vs floor | stored / expected | CPU µs per event (main / pool / engine / node) | 202 latency p50/p90/p99 | answers | CPU (cores) |',
    '|---|---|---|---|---|---|---|---|---|---|',
  )
  const e2eRow = (u: EndToEndResult) => {
    const json = jsonBaseline(r, u.kind)
    const floor = floorBaseline(r, u.kind)
    const per = (b: ChdbResult | undefined) =>
      b && b.rowsPerSecond > 0 ? (u.queryableEventsPerSecond / b.rowsPerSecond).toFixed(2) : 'n/a'
    const cpu = cpuPerEvent(u)
    out.push(
      `| ${u.name} (${u.concurrency} senders, window ${fmtN(u.window)} events, ${fmtN(u.sendMs / 1000, 1)} s sending${u.exhausted ? ', supply used up' : ''}) | ${u.acceptedBodies} bodies, ${fmtN(u.acceptedLines)} lines, ${fmtN(u.acceptedEventsPerSecond)} ev/s | ${fmtN(u.queryableEventsPerSecond)} (all queryable after ${fmtN(u.queryableAfterS, 1)} s) | ${per(json)} | ${per(floor)}${floor ? ` (${floor.format})` : ''} | ${fmtN(u.stored)} / ${fmtN(u.expectedStored)}${u.drainComplete ? '' : ' (drain incomplete)'} | ${cpu ? `${cpu.total.toFixed(1)} (${cpu.main.toFixed(1)} / ${cpu.cpu_pool.toFixed(1)} / ${cpu.engine.toFixed(1)} / ${cpu.node.toFixed(1)})` : 'n/a'} | ${lat(u.acceptedLatencyMs)} | ${statusText(u.statuses)} | ${cpuText(u.cpu)} |`,
    )
  }
  for (const u of s.e2e) e2eRow(u)
  if (s.sustained) e2eRow(s.sustained)
  if (s.profiles) {
    const p = s.profiles
    if (p.skipped !== undefined) out.push('', `- **profiles**: skipped: ${p.skipped}.`)
    else
      out.push(
        '',
        `- **profiles**: ${fmtN(p.patchesPerSecond)} PATCH/s accepted (${JSON.stringify(p.bySyntax)}) over ${fmtN(p.customers)} customers, ${p.concurrency} senders, ${fmtN(p.sendMs / 1000, 1)} s; ` +
          `PATCH latency ${lat(p.patchLatencyMs)}; read-your-writes (202 → GET shows it) ${lat(p.readYourWritesMs)} over ${p.readYourWritesMs.count} samples${p.rywTimedOut ? `, ${p.rywTimedOut} timed out` : ''}; answers ${statusText(p.statuses)}; CPU ${cpuText(p.cpu)}.`,
      )
  }
  if (s.overload) {
    const o = s.overload
    out.push(
      '',
      `- **overload**: ${o.targetBodiesPerSecond.toFixed(1)} bodies/s asked (${fmtN(o.targetEventsPerSecond)} ev/s, 2× the max sustained rate) for ${fmtN(o.sendMs / 1000, 1)} s; answers ${statusText(o.statuses)} (429/503: ${(o.shedShare * 100).toFixed(1)}%)${o.skipped ? `, ${o.skipped} sends skipped (client saturated)` : ''}; ` +
        `${fmtN(o.acceptedEventsPerSecond)} ev/s accepted; RSS max ${fmtN(o.rssMaxMb)} MB (anonymous up to ${fmtN(o.rssAnonMaxMb)} MB, file-backed up to ${fmtN(o.rssFileMaxMb)} MB; VmHWM ${fmtN(o.rssHwmMb)} MB); drain ${o.drainComplete ? 'complete' : 'INCOMPLETE'} after ${fmtN(o.drainMs / 1000, 1)} s; ` +
        `${fmtN(o.acceptedEvents)} accepted events: ${notStored(o)}, ${o.storedTwice} stored twice, ${o.storedNotAcknowledged} stored without a 202; CPU ${cpuText(o.cpu)}.`,
    )
  }
  if (s.sustained) {
    const u = s.sustained
    out.push(
      '',
      `- **sustained**: ${fmtN(u.stored)} events in gzip bodies, made queryable in ${fmtN(u.queryableAfterS)} s (${fmtN(u.queryableEventsPerSecond)} ev/s on average); ` +
        `first minute ${fmtN(u.firstMinuteEventsPerSecond)} ev/s, last minute ${fmtN(u.lastMinuteEventsPerSecond)} ev/s; RSS max ${fmtN(u.rssMaxMb)} MB (chart: rate-sustained.svg).`,
    )
  }
  for (const reporter of reporters) {
    const result = s[reporter.name]
    if (result !== undefined) out.push('', reporter.summary(result))
  }
  out.push('', '## Step durations', '', '| step | seconds |', '|---|---|')
  for (const [k, v] of Object.entries(r.durations)) out.push(`| ${k} | ${(v / 1000).toFixed(1)} |`)
  if (r.run.notes.length > 0) out.push('', '## Notes', '', ...r.run.notes.map((n) => `- ${n}`))
  if (r.errors.length > 0) out.push('', '## Errors', '', ...r.errors.map((e) => `- ${e}`))
  out.push(
    '',
    '## Charts',
    '',
    '![edge rates](rate-edge.svg)',
    '![end-to-end rates](rate-e2e.svg)',
    '![overload](rate-overload.svg)',
    ...(r.scenarios.sustained ? ['![sustained](rate-sustained.svg)'] : []),
    '![RSS](rss.svg)',
    '![request latency](latency-requests.svg)',
    '![freshness latency](latency-freshness.svg)',
    '',
  )
  return out.join('\n')
}

export function charts(r: BenchResults): Record<string, string> {
  const files: Record<string, string> = {}
  files['rate-edge.svg'] = lineChart({
    title: 'Edge scenarios: events accepted per second',
    xLabel: 'seconds since the scenario started',
    yLabel: 'events/s',
    series: r.scenarios.edge.map((u) => ({ name: `${u.name} accepted ev/s`, points: u.timeline.accepted })),
  })
  const series = r.scenarios.e2e.flatMap((u) => [
    { name: `${u.name} accepted ev/s`, points: u.timeline.accepted },
    { name: `${u.name} queryable ev/s`, points: ratesOfCounter(u.timeline.queryable) },
  ])
  files['rate-e2e.svg'] = lineChart({
    title: 'End-to-end scenarios: events accepted and made queryable per second',
    xLabel: 'seconds since the scenario started',
    yLabel: 'events/s',
    series,
  })
  const o = r.scenarios.overload
  files['rate-overload.svg'] = lineChart({
    title: 'Overload (2× max sustained): accepted, queryable (events/s) and shed answers/s × 100',
    xLabel: 'seconds since the scenario started',
    yLabel: 'per second',
    series: o
      ? [
          { name: 'accepted ev/s', points: o.timeline.accepted },
          { name: 'queryable ev/s', points: ratesOfCounter(o.timeline.queryable) },
          {
            name: '429/503 ×100 /s',
            points: o.timeline.shed.map(([t, v]): [number, number] => [t, v * 100]),
          },
        ]
      : [],
  })
  const sus = r.scenarios.sustained
  if (sus)
    files['rate-sustained.svg'] = lineChart({
      title: `Sustained: events made queryable per second over ${fmtN(sus.stored)} events (5 s averages)`,
      xLabel: 'seconds since the scenario started',
      yLabel: 'events/s',
      series: [
        { name: 'queryable ev/s', points: ratesOfCounter(everyNth(sus.timeline.queryable, 20)) },
        { name: 'accepted ev/s', points: sus.timeline.accepted },
      ],
    })
  files['rss.svg'] = lineChart({
    title: 'RSS of the Sluice process',
    xLabel: 'seconds since the run started',
    yLabel: 'MB',
    series: [{ name: 'VmRSS MB', points: r.rss }],
  })
  const groups: BarGroup[] = []
  const bar = (label: string, s: LatencySummary | undefined) => {
    if (s && s.count > 0) groups.push({ label, values: { p50: s.p50, p90: s.p90, p99: s.p99 } })
  }
  for (const b of r.baselines.bare) bar(`bare ${b.kind}`, b.latencyMs)
  for (const u of r.scenarios.edge) bar(`sluice edge ${u.kind}`, u.acceptedLatencyMs)
  if (r.scenarios.profiles && r.scenarios.profiles.skipped === undefined)
    bar('profile PATCH', r.scenarios.profiles.patchLatencyMs)
  if (o) bar('overload (all)', o.latencyMs)
  files['latency-requests.svg'] = barChart({
    title: 'Request latency percentiles (ms)',
    yLabel: 'ms',
    groups,
    series: ['p50', 'p90', 'p99'],
  })
  const fresh: BarGroup[] = []
  const f = r.scenarios.freshness
  if (f && f.freshnessMs.count > 0)
    fresh.push({
      label: '202 → queryable',
      values: { p50: f.freshnessMs.p50, p90: f.freshnessMs.p90, p99: f.freshnessMs.p99 },
    })
  const p = r.scenarios.profiles
  if (p && p.skipped === undefined && p.readYourWritesMs.count > 0)
    fresh.push({
      label: 'profile read-your-writes',
      values: { p50: p.readYourWritesMs.p50, p90: p.readYourWritesMs.p90, p99: p.readYourWritesMs.p99 },
    })
  files['latency-freshness.svg'] = barChart({
    title: 'Freshness percentiles (ms)',
    yLabel: 'ms',
    groups: fresh,
    series: ['p50', 'p90', 'p99'],
  })
  return files
}

/** Every nth sample, and the last: a smoother rate from a counter sampled every 250 ms. */
function everyNth<T>(samples: readonly T[], n: number): T[] {
  const out = samples.filter((_, i) => i % n === 0)
  const last = samples[samples.length - 1]
  if (last !== undefined && out[out.length - 1] !== last) out.push(last)
  return out
}

export function writeResults(dir: string, r: BenchResults, reporters: Reporters): void {
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, 'results.json'), JSON.stringify(r, null, 2) + '\n')
  writeFileSync(join(dir, 'report.md'), markdownReport(r, reporters))
  for (const [name, svg] of Object.entries(charts(r))) writeFileSync(join(dir, name), svg)
}

// --- Compare -------------------------------------------------------------------------------------

export function loadResults(dirOrFile: string): BenchResults {
  const file = dirOrFile.endsWith('.json') ? dirOrFile : join(dirOrFile, 'results.json')
  return JSON.parse(readFileSync(file, 'utf8')) as BenchResults
}

/** Rows of numbers worth comparing between two runs: [label, value]. */
function comparable(r: BenchResults): [string, number | undefined][] {
  const rows: [string, number | undefined][] = []
  for (const f of r.figures) rows.push([f.name, f.value])
  for (const b of r.baselines.floor ?? [])
    rows.push([`baseline floor ${b.kind} MB/s`, b.bytesPerSecond / 1048576])
  for (const b of r.baselines.bare) rows.push([`baseline bare ${b.kind} MB/s`, b.bytesPerSecond / 1048576])
  for (const b of r.baselines.chdb)
    rows.push([
      `baseline chdb ${b.kind}${b.format && b.format !== 'JSONEachRow' ? ` ${b.format}` : ''} rows/s`,
      b.rowsPerSecond,
    ])
  for (const u of r.scenarios.edge) {
    rows.push([`${u.name} accepted MB/s`, u.acceptedBytesPerSecond / 1048576])
    rows.push([`${u.name} 202 p99 ms`, u.acceptedLatencyMs.p99])
  }
  for (const u of r.scenarios.e2e) {
    rows.push([`${u.name} queryable ev/s`, u.queryableEventsPerSecond])
    const cpu = cpuPerEvent(u)
    if (cpu) {
      rows.push([`${u.name} CPU us/event main`, cpu.main])
      rows.push([`${u.name} CPU us/event cpu pool`, cpu.cpu_pool])
      rows.push([`${u.name} CPU us/event engine`, cpu.engine])
    }
  }
  if (r.scenarios.freshness) {
    const f = r.scenarios.freshness
    rows.push(['freshness p50 ms', f.freshnessMs.p50])
    rows.push(['freshness p90 ms', f.freshnessMs.p90])
    rows.push(['freshness max ms', f.freshnessMs.max])
    for (const stage of STAGES)
      if (f.stages) {
        rows.push([`freshness ${stage} p50 ms`, f.stages.stages[stage].p50])
        rows.push([`freshness ${stage} p99 ms`, f.stages.stages[stage].p99])
      }
  }
  if (r.scenarios.sdk) rows.push(['sdk rows/s', r.scenarios.sdk.rowsPerSecond])
  if (r.scenarios.overload) rows.push(['overload shed share %', r.scenarios.overload.shedShare * 100])
  if (r.run.cpu) rows.push(['noise: other CPU (cores)', r.run.cpu.other])
  if (r.run.wallMs !== undefined) rows.push(['wall time s', r.run.wallMs / 1000])
  return rows
}

/** A side-by-side table of two runs (A = before, B = after), with the change in %. */
export function compareReport(a: BenchResults, b: BenchResults, labels: [string, string]): string {
  const ra = new Map(comparable(a))
  const rb = new Map(comparable(b))
  const names = [...new Set([...ra.keys(), ...rb.keys()])]
  const cell = (v: number | undefined) => (v === undefined ? 'n/a' : fmtN(v, Math.abs(v) < 10 ? 2 : 0))
  const rows: string[][] = [['figure', `A ${labels[0]}`, `B ${labels[1]}`, 'change']]
  for (const n of names) {
    const va = ra.get(n)
    const vb = rb.get(n)
    const change =
      va !== undefined && vb !== undefined && va !== 0
        ? `${vb >= va ? '+' : ''}${(((vb - va) / Math.abs(va)) * 100).toFixed(1)}%`
        : ''
    rows.push([n, cell(va), cell(vb), change])
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)))
  const line = (r: string[]) =>
    r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ')
  const head = [
    `A: ${labels[0]}  commit ${a.run.git.commit}${a.run.git.dirty ? '+dirty' : ''}, ${a.run.mode}/${a.run.profile}, ${a.run.startedAt}`,
    `B: ${labels[1]}  commit ${b.run.git.commit}${b.run.git.dirty ? '+dirty' : ''}, ${b.run.mode}/${b.run.profile}, ${b.run.startedAt}`,
    '',
  ]
  if (a.run.profile !== b.run.profile || a.run.mode !== b.run.mode || a.run.seed !== b.run.seed)
    head.push('warning: the runs differ in profile, mode or seed; compare with care', '')
  return (
    [...head, line(rows[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join(
      '\n',
    ) + '\n'
  )
}

/**
 * The accepted events missing from the store: lost once the drain completed; while it had not, they
 * may still be on the bus (the drain's time ran out first), which the count alone cannot tell.
 */
export function notStored(o: { lost: number; drainComplete: boolean }): string {
  return o.drainComplete ? `${o.lost} lost` : `${o.lost} not stored when the drain ended (on the bus or lost)`
}
