import { randomBytes } from 'node:crypto'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import type { BenchRun } from '../bench-run.ts'
import { chromiumMissing, launchChromium } from '../chromium.ts'
import type { Figure, ScenarioReporter } from '../figures.ts'
import { SluiceUnderTest } from '../sluice.ts'
import { round, summarize, type LatencySummary } from '../stats.ts'
import { DASHBOARD_PAGES, measurePages, pagePaths, seedDashboard } from './dashboard-pages.ts'

/**
 * Fresh loads of each page, at most, and the time the loads may take (rounds that would end past
 * it are not started): the full run's and --quick's.
 */
export const DASHBOARD_RUNS = {
  full: { runs: 15, maxMs: 300_000 },
  quick: { runs: 5, maxMs: 45_000 },
} as const

/** The targets: first load at most 1 s on loopback, at most 250 KB of JavaScript compressed. */
export const DASHBOARD_TARGETS = {
  loadMs: { op: '<=', value: 1000 },
  jsKb: { op: '<=', value: 250 },
  ratio: { op: '<=', value: 1 },
} as const

/**
 * The benched Sluice's settings: the analytics page spends four Query API requests of the key's
 * quota per load, so the default 60 a minute per key would refuse the page's repeated loads.
 */
const SETTINGS = {
  SLUICE_QUERY_RATE_PER_KEY_PER_MIN: '1000000',
  SLUICE_QUERY_RATE_PER_KEY_PER_HOUR: '1000000',
  SLUICE_QUERY_RATE_PER_KEY_PER_DAY: '1000000',
}

export interface DashboardPageResult {
  page: string
  path: string
  /** Navigation start to the end of the load event, each load in a fresh browser context. */
  loadMs: LatencySummary
  /** Navigation start to the first byte of the page: the edge's part (its API calls included). */
  firstByteMs: LatencySummary
  /** The most compressed script bytes one load fetched, and how many scripts. */
  jsBytes: number
  scripts: number
}

export type DashboardResult =
  | { name: 'dashboard'; skipped: string }
  | {
      name: 'dashboard'
      skipped?: undefined
      /** Rounds of loads made (every page once a round). */
      runs: number
      chromium: string
      /** 1-minute load average before and after the loads: the machine is shared. */
      loadAverage: [number, number]
      /** SDK rows stored before the pages were loaded. */
      rows: number
      pages: DashboardPageResult[]
    }

/**
 * First load of every dashboard page in Chromium: an embedded Sluice of its own (`sluice start`,
 * a data directory under the run's), an org, app and key with one SDK body of sessions and events,
 * an audience and a draft push campaign; then each page loaded up to `runs` times, each time in a fresh
 * browser context (dashboard-pages.ts).
 */
async function dashboardScenario(
  run: BenchRun,
  limits: { runs: number; maxMs: number },
): Promise<DashboardResult> {
  const sut = await SluiceUnderTest.start({
    distributed: false,
    adminToken: randomBytes(24).toString('hex'),
    env: {
      SLUICE_DATA_DIR: join(run.workDir, 'dashboard'),
      KAFKA_BROKERS: '',
      CLICKHOUSE_URL: '',
      ...SETTINGS,
    },
  })
  try {
    run.progress.start('dashboard', () => 'seeding')
    const seed = await seedDashboard(sut, run.options.seed)
    run.progress.stop()
    const browser = await launchChromium()
    try {
      const before = loadavg()[0] ?? NaN
      const loads = await measurePages(browser, sut, seed, limits, run.progress)
      const paths = pagePaths(seed)
      return {
        name: 'dashboard',
        runs: loads.sign_in.length,
        chromium: browser.version(),
        loadAverage: [round(before, 1), round(loadavg()[0] ?? NaN, 1)],
        rows: seed.rows,
        pages: DASHBOARD_PAGES.map((page) => ({
          page,
          path: paths[page],
          loadMs: summarize(loads[page].map((l) => l.loadMs)),
          firstByteMs: summarize(loads[page].map((l) => l.firstByteMs)),
          jsBytes: Math.max(...loads[page].map((l) => l.jsBytes)),
          scripts: Math.max(...loads[page].map((l) => l.scripts)),
        })),
      }
    } finally {
      await browser.close()
    }
  } finally {
    run.progress.stop()
    await sut.stop()
  }
}

/** The bench step (before the baselines, like the other areas: it runs a Sluice of its own). */
export async function runDashboard(run: BenchRun): Promise<void> {
  const quick = run.options.profile.name === 'quick'
  if (run.options.distributed) {
    run.results.scenarios.dashboard = {
      name: 'dashboard',
      skipped: 'measured in embedded mode only (the pages are the edge’s in both modes)',
    }
    return
  }
  const missing = chromiumMissing()
  if (missing) {
    run.results.scenarios.dashboard = { name: 'dashboard', skipped: missing }
    run.log(`  dashboard: skipped (${missing})`)
    return
  }
  if (!run.fits('dashboard', quick ? 60_000 : 400_000)) return
  const r = await run.step('dashboard', () =>
    dashboardScenario(run, quick ? DASHBOARD_RUNS.quick : DASHBOARD_RUNS.full),
  )
  if (!r) return
  run.results.scenarios.dashboard = r
  if (r.skipped === undefined)
    for (const p of r.pages)
      run.log(
        `    ${p.page}: first load p50 ${Math.round(p.loadMs.p50 ?? NaN)} ms, max ${Math.round(p.loadMs.max ?? NaN)} ms; ` +
          `first byte p50 ${Math.round(p.firstByteMs.p50 ?? NaN)} ms; JS ${kb(p.jsBytes)} KB gzipped`,
      )
}

const kb = (bytes: number) => round(bytes / 1024, 1)

/**
 * Per page, its median first load against the 1 s target; then the slowest page's median and the
 * heaviest page's script bytes as ratios of their targets (at most 1: met).
 */
export function dashboardFigures(r: DashboardResult | undefined, skipped: string): Figure[] {
  if (!r || r.skipped !== undefined) {
    const why = r?.skipped ?? skipped
    return [
      ...DASHBOARD_PAGES.map((p) => ({ name: `dashboard_${p}_load_ms`, unit: 'ms', skipped: why })),
      { name: 'dashboard_load_ratio', unit: '', skipped: why },
      { name: 'dashboard_js_ratio', unit: '', skipped: why },
    ]
  }
  const figures: Figure[] = r.pages.map((p) => {
    const p50 = p.loadMs.p50
    return {
      name: `dashboard_${p.page}_load_ms`,
      unit: 'ms',
      ...(p50 === undefined ? { skipped: 'no load' } : { value: Math.round(p50) }),
      target: DASHBOARD_TARGETS.loadMs,
      met: p50 !== undefined && p50 <= DASHBOARD_TARGETS.loadMs.value,
      detail:
        `median of ${p.loadMs.count} first loads (min ${Math.round(p.loadMs.min ?? NaN)}, max ${Math.round(p.loadMs.max ?? NaN)} ms); ` +
        `first byte ${Math.round(p.firstByteMs.p50 ?? NaN)} ms; ${kb(p.jsBytes)} KB of JS gzipped (${p.scripts} script${p.scripts === 1 ? '' : 's'})`,
    }
  })
  const slowest = [...r.pages].sort((a, b) => (b.loadMs.p50 ?? 0) - (a.loadMs.p50 ?? 0))[0]
  const heaviest = [...r.pages].sort((a, b) => b.jsBytes - a.jsBytes)[0]
  const loadRatio = (slowest?.loadMs.p50 ?? NaN) / DASHBOARD_TARGETS.loadMs.value
  const jsRatio = (heaviest?.jsBytes ?? NaN) / 1024 / DASHBOARD_TARGETS.jsKb.value
  const lightest = Math.min(...r.pages.map((p) => p.jsBytes))
  figures.push(
    {
      name: 'dashboard_load_ratio',
      unit: '',
      value: round(loadRatio, 2),
      target: DASHBOARD_TARGETS.ratio,
      met: loadRatio <= DASHBOARD_TARGETS.ratio.value,
      detail:
        `the slowest page's median first load ÷ 1,000 ms: ${slowest?.page} ${Math.round(slowest?.loadMs.p50 ?? NaN)} ms; ` +
        `Chromium ${r.chromium}, loopback, load average ${r.loadAverage[0]} → ${r.loadAverage[1]}`,
    },
    {
      name: 'dashboard_js_ratio',
      unit: '',
      value: round(jsRatio, 3),
      target: DASHBOARD_TARGETS.ratio,
      met: jsRatio <= DASHBOARD_TARGETS.ratio.value,
      detail: `the heaviest page's scripts, gzipped as served, ÷ 250 KB: ${heaviest?.page} ${kb(heaviest?.jsBytes ?? NaN)} KB (the lightest ${kb(lightest)} KB)`,
    },
  )
  return figures
}

/** The scenario's line in report.md. */
export function dashboardLine(r: DashboardResult): string {
  if (r.skipped !== undefined) return `- **dashboard**: skipped (${r.skipped}).`
  const pages = r.pages
    .map(
      (p) =>
        `${p.page} ${Math.round(p.loadMs.p50 ?? NaN)} / ${Math.round(p.loadMs.max ?? NaN)} ms (${kb(p.jsBytes)} KB JS)`,
    )
    .join('; ')
  return (
    `- **dashboard** (${r.runs} first loads a page in fresh Chromium ${r.chromium} contexts, median / max; ` +
    `load average ${r.loadAverage[0]} → ${r.loadAverage[1]}; ${r.rows} SDK rows): ${pages}.`
  )
}

/** How the report reads this scenario's result (bench/figures.ts). */
export const dashboardReporter: ScenarioReporter<DashboardResult> = {
  name: 'dashboard',
  figures: dashboardFigures,
  summary: dashboardLine,
}
