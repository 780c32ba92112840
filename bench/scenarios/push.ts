import { runEngineChild } from '../engine-child.ts'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import type { BenchRun } from '../bench-run.ts'
import type { Progress } from '../progress.ts'
import type { Figure, ScenarioReporter } from '../figures.ts'
import { round, summarize, type LatencySummary } from '../stats.ts'

/** Installs of the broadcast: the issue's million, and a tenth of it for --quick. */
export const PUSH_SETS = { full: 1_000_000, quick: 100_000 } as const

export const PUSH_TARGETS = { ratio: { op: '>=', value: 0.5 } } as const

export type PushResult =
  | { name: 'push'; skipped: string }
  | {
      name: 'push'
      skipped?: undefined
      installs: number
      recorded: number
      complete: boolean
      deviceGenerationMs: number
      /** The broadcast's 202. */
      acceptMs: number
      /** 202 to the first line in the file transport's output. */
      timeToFirstDeliveryMs: number | null
      /** 202 to every install recorded in push_deliveries. */
      fanOutMs: number
      deliveriesPerSecond: number
      /** The same lines through a bare Node write stream (one fsync at the end). */
      bareLinesPerSecond: number
      ratio: number
      /** CPU time of the engine process (every thread) from the 202 to the last record, per delivery. */
      cpuUsPerDelivery: number
      /** That CPU by thread name (node-main: the JS main thread; node-other: libuv's pool and V8's helpers; ThreadPool: chdb's queries; MergeMutate: its merges). */
      cpuByThreadMs?: Record<string, number>
      fileBytes: number
      /** The process just before the broadcast (devices generated, the engine's allocator purged). */
      rssBeforeMb?: number
      rssMaxMb: number
      rssMb: number[]
      /** The edge's answer time (GET /v1/auth/check) during the fan-out. */
      edgeMs: LatencySummary
    }

/**
 * Push fan-out: one broadcast to every install of an app (1,000,000; 100,000 with --quick)
 * through the file transport, on an embedded Sluice of its own in a child process
 * (push-engine.ts): deliveries recorded per second from the 202 to the last, against writing the
 * same lines with a bare Node stream (target >= 0.5), the time to the first delivery, the RSS during
 * the fan-out and the edge's answer time meanwhile. The send rate is lifted
 * (SLUICE_PUSH_SEND_RATE_PER_APP=0): this measures the pipeline, not the limiter.
 */
export async function pushFanOut(options: {
  installs: number
  dataDir: string
  progress: Progress
}): Promise<PushResult> {
  try {
    const r = await runEngineChild<
      Omit<Extract<PushResult, { installs: number }>, 'name' | 'edgeMs'> & { edgeMs: number[] }
    >({
      script: './push-engine.ts',
      args: [options.dataDir, options.installs],
      label: `push (${options.installs.toLocaleString('en-US')} installs)`,
      what: 'push engine',
      progress: options.progress,
    })
    return { ...r, name: 'push', edgeMs: summarize(r.edgeMs) }
  } finally {
    rmSync(options.dataDir, { recursive: true, force: true })
  }
}

/** The bench step (embedded only: the file transport writes where the engine runs). */
export async function runPush(run: BenchRun): Promise<void> {
  const quick = run.options.profile.name === 'quick'
  if (run.options.distributed) {
    run.results.scenarios.push = { name: 'push', skipped: 'measured in embedded mode only' }
    return
  }
  if (!run.fits('push', quick ? 40_000 : 600_000)) return
  const installs = quick ? PUSH_SETS.quick : PUSH_SETS.full
  const r = await run.step('push', () =>
    pushFanOut({ installs, dataDir: join(run.workDir, 'push'), progress: run.progress }),
  )
  if (!r) return
  run.results.scenarios.push = r
  if (r.skipped === undefined)
    run.log(
      `    ${r.recorded}/${r.installs} deliveries in ${(r.fanOutMs / 1000).toFixed(1)} s: ${r.deliveriesPerSecond} /s ` +
        `(bare stream ${r.bareLinesPerSecond} lines/s); first after ${r.timeToFirstDeliveryMs} ms; ${r.cpuUsPerDelivery} us CPU per delivery; RSS max ${r.rssMaxMb} MB; ` +
        `edge p99 ${Math.round(r.edgeMs.p99 ?? NaN)} ms`,
    )
}

/** push_deliveries_per_s, push_ratio (target >= 0.5), push_cpu_us_per_delivery, push_first_delivery_ms, push_rss_max_mb, push_edge_p99_ms. */
export function pushFigures(r: PushResult | undefined, skipped: string): Figure[] {
  const names = [
    'push_deliveries_per_s',
    'push_ratio',
    'push_cpu_us_per_delivery',
    'push_first_delivery_ms',
    'push_rss_max_mb',
    'push_edge_p99_ms',
  ]
  if (!r || r.skipped !== undefined)
    return names.map((name) => ({ name, unit: '', skipped: r?.skipped ?? skipped }))
  const of = `${r.recorded.toLocaleString('en-US')} of ${r.installs.toLocaleString('en-US')} installs${r.complete ? '' : ' (INCOMPLETE)'}`
  return [
    {
      name: 'push_deliveries_per_s',
      unit: '/s',
      value: r.deliveriesPerSecond,
      detail: `${of} recorded ${(r.fanOutMs / 1000).toFixed(1)} s after the 202, through the file transport`,
    },
    {
      name: 'push_ratio',
      unit: '',
      value: round(r.ratio, r.ratio < 0.1 ? 3 : 2),
      target: PUSH_TARGETS.ratio,
      met: r.complete && r.ratio >= PUSH_TARGETS.ratio.value,
      detail: `against the same lines through a bare Node write stream, ${r.bareLinesPerSecond} lines/s`,
    },
    {
      name: 'push_cpu_us_per_delivery',
      unit: 'us',
      value: r.cpuUsPerDelivery,
      detail: `CPU time of the engine process (every thread) from the 202 to the last record, per delivery${cpuSplit(r)}`,
    },
    {
      name: 'push_first_delivery_ms',
      unit: 'ms',
      ...(r.timeToFirstDeliveryMs === null ? { skipped: 'no delivery' } : { value: r.timeToFirstDeliveryMs }),
      detail: 'from the 202 to the first line in the file',
    },
    {
      name: 'push_rss_max_mb',
      unit: 'MB',
      value: r.rssMaxMb,
      detail: `the embedded process during the fan-out${r.rssBeforeMb === undefined ? '' : ` (${r.rssBeforeMb} MB just before the broadcast)`}`,
    },
    {
      name: 'push_edge_p99_ms',
      unit: 'ms',
      ...(r.edgeMs.p99 === undefined ? { skipped: 'no sample' } : { value: Math.round(r.edgeMs.p99) }),
      detail: `GET /v1/auth/check during the fan-out, p50 ${Math.round(r.edgeMs.p50 ?? NaN)} ms (${r.edgeMs.count} samples)`,
    },
  ]
}

/** The scenario's line in report.md. */
export function pushLine(r: PushResult): string {
  if (r.skipped !== undefined) return `- **push**: skipped (${r.skipped}).`
  return (
    `- **push** (broadcast to ${r.installs.toLocaleString('en-US')} installs, file transport): ${r.recorded.toLocaleString('en-US')} recorded in ${(r.fanOutMs / 1000).toFixed(1)} s, ` +
    `${r.deliveriesPerSecond} deliveries/s against ${r.bareLinesPerSecond} lines/s of a bare write stream (ratio ${round(r.ratio, 3)}, ${r.cpuUsPerDelivery} us CPU per delivery); ` +
    `first delivery ${r.timeToFirstDeliveryMs} ms after the 202; ${(r.fileBytes / 1048576).toFixed(0)} MB written; RSS max ${r.rssMaxMb} MB; ` +
    `edge answers p50 ${Math.round(r.edgeMs.p50 ?? NaN)} / p99 ${Math.round(r.edgeMs.p99 ?? NaN)} ms meanwhile.`
  )
}

/** `: main JS 5.6, …` — the CPU per delivery by kind of thread, in µs. */
function cpuSplit(r: Extract<PushResult, { installs: number }>): string {
  const t = r.cpuByThreadMs
  if (!t || r.recorded === 0) return ''
  const us = (ms: number) => round((ms * 1000) / r.recorded, 1)
  const known = ['node-main', 'node-other', 'ThreadPool', 'MergeMutate']
  const rest = Object.entries(t)
    .filter(([name]) => !known.includes(name))
    .reduce((n, [, ms]) => n + ms, 0)
  return (
    `: JS main thread ${us(t['node-main'] ?? 0)}, libuv pool and V8 helpers ${us(t['node-other'] ?? 0)}, ` +
    `chdb queries ${us(t.ThreadPool ?? 0)}, merges ${us(t.MergeMutate ?? 0)}, other ${us(rest)} (threads sampled at 10 ms)`
  )
}

/** How the report reads this scenario's result (bench/figures.ts). */
export const pushReporter: ScenarioReporter<PushResult> = {
  name: 'push',
  figures: pushFigures,
  summary: pushLine,
}
