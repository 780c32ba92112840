import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { SLUICE_SETTINGS, type BenchRun } from '../bench-run.ts'
import { runEngineChild } from '../engine-child.ts'
import type { Figure, ScenarioReporter } from '../figures.ts'
import { sleep } from '../http.ts'
import { processCpuSeconds, readRss, SluiceUnderTest, type Tenant } from '../sluice.ts'
import { round } from '../stats.ts'
import { importCustomer, importRow, IMPORT_COLUMNS, writeImportCsv, writeMembersCsv } from './imports-data.ts'

/** The data sets: the million profiles and members, and a tenth of them for --quick. */
export const IMPORT_SETS = {
  full: { label: '1m', rows: 1_000_000 },
  quick: { label: '100k', rows: 100_000 },
} as const

export const IMPORT_TARGETS = {
  ratio: { op: '>=', value: 0.8 },
  rssGrowthMb: { op: '<=', value: 150 },
} as const

/** Customers of the member list that have an install in the app (so the count has something to be exact about). */
const KNOWN_MEMBERS = 1000

export type ImportBenchResult =
  | { name: 'imports'; skipped: string }
  | {
      name: 'imports'
      skipped?: undefined
      set: string
      rows: number
      bodyBytes: number
      /** POST to the last row readable: the receipt done and every row in `profiles` (then a sample is read back). */
      ms: number
      /** CPU time the Sluice process used meanwhile (every thread: edge, processor, writer, engine, merges). */
      cpuMs: number
      applied: number
      rejected: number
      /** Rows stored in `profiles` for the org at the end, and sampled GETs that matched. */
      stored: number
      sampled: number
      sampleMatched: number
      rssGrowthMb: number
      /** Where the engine's memory went during the profile import (engineMemory). */
      engine: EngineMemory
      baseline: { ms: number; cpuMs: number; rows: number }
      audience: {
        members: number
        /** POST to the audience's user_count equal to the known members (and the receipt done). */
        ms: number
        known: number
        unknown: number
        userCount: number
        rssGrowthMb: number
        /** Where the engine's memory went during the audience import (engineMemory). */
        engine: EngineMemory
      }
    }

/**
 * Profile and audience imports (docs/imports.md), on an embedded Sluice of its own: a gzip CSV of
 * `rows` org-level profiles of 20 attributes through `POST /v1/imports/profiles`, timed until
 * every row is readable (the receipt done, `profiles` holding every customer; then a sample of 100
 * is read back through `GET /v1/profiles/:id` and compared with what was sent), with the
 * process's RSS growth;
 * against the engine's own CSV reading of the same file into the same table (`INSERT … SELECT
 * FROM file(…, CSVWithNames)`, in a child process of its own: chdb binds one data directory per
 * process). Then a `rows`-member audience import (customer ids; the first 1,000 have an install
 * in the app), timed until the audience's count is exact.
 */
async function importBench(run: BenchRun, set: (typeof IMPORT_SETS)[keyof typeof IMPORT_SETS]) {
  const dir = join(run.workDir, 'imports')
  mkdirSync(dir, { recursive: true })
  const csv = join(dir, 'profiles.csv.gz')
  const members = join(dir, 'members.csv.gz')
  run.progress.start(`imports (${set.label})`, () => 'generating the files')
  const bodyBytes = await writeImportCsv(csv, set.rows)
  await writeMembersCsv(members, set.rows)
  run.progress.stop()
  const sut = await SluiceUnderTest.start({
    distributed: false,
    adminToken: randomBytes(24).toString('hex'),
    env: { SLUICE_DATA_DIR: join(dir, 'sluice'), ...SLUICE_SETTINGS, KAFKA_BROKERS: '', CLICKHOUSE_URL: '' },
  })
  try {
    const tenant = await sut.tenant('bench-imports', ['bench-imports-app'])
    const profiles = await profileImport(run, sut, tenant, csv, set.rows)
    const audience = await audienceImport(run, sut, tenant, members, set.rows)
    await sut.stop()
    const baseline = await runEngineChild<{ ms: number; cpuMs: number; rows: number }>({
      script: './imports-engine.ts',
      args: [join(dir, 'baseline'), csv],
      label: `imports baseline (${set.label})`,
      what: 'import baseline engine',
      progress: run.progress,
    })
    return {
      name: 'imports' as const,
      set: set.label,
      rows: set.rows,
      bodyBytes,
      ...profiles,
      baseline,
      audience,
    }
  } finally {
    if (sut.alive) await sut.kill()
    if (!run.options.keepData) rmSync(dir, { recursive: true, force: true })
  }
}

/** Samples the process's RSS every 100 ms; `growth()` is the largest sample minus the first, MB. */
function rssGrowth(pid: number) {
  const first = readRss(pid)?.rssMb ?? NaN
  let max = first
  const timer = setInterval(() => (max = Math.max(max, readRss(pid)?.rssMb ?? max)), 100)
  return {
    stop: () => {
      clearInterval(timer)
      return round(max - first, 1)
    },
  }
}

/** The engine's memory during an import, each the largest sample (MB; growth: minus the first). */
export interface EngineMemory {
  /** ClickHouse's MemoryTracking: queries, merges, caches. */
  trackedGrowthMb: number
  /** The merges running at once (`MergesMutationsMemoryTracking`), and the table of the largest one. */
  mergesMb: number
  mergeTable: string
  /** The queries running at once, and the first words of the largest. */
  queryMb: number
  query: string
  /** jemalloc's resident and retained memory (`system.jemalloc_stats`). */
  jemallocResidentGrowthMb: number
  jemallocRetainedGrowthMb: number
  /** The caches' sizes (`system.metrics`: mark, primary index, query condition … `CacheBytes`). */
  cachesMb: number
}

/**
 * Samples the engine's memory every 500 ms through the SQL port (system tables), to tell its
 * parts apart: what queries and merges hold, jemalloc's retained pages, the caches.
 */
function engineMemory(sut: SluiceUnderTest) {
  const mb = (bytes: number) => round(bytes / 1048576, 1)
  const m: EngineMemory = {
    trackedGrowthMb: 0,
    mergesMb: 0,
    mergeTable: '',
    queryMb: 0,
    query: '',
    jemallocResidentGrowthMb: 0,
    jemallocRetainedGrowthMb: 0,
    cachesMb: 0,
  }
  let first: { tracked: number; resident: number; retained: number } | undefined
  let polling = true
  const once = async () => {
    const [row] = await sut.query<Record<string, string | number>>(
      `SELECT
         (SELECT value FROM system.metrics WHERE metric = 'MemoryTracking') AS tracked,
         greatest(toInt64((SELECT sum(value) FROM system.metrics WHERE metric = 'MergesMutationsMemoryTracking')),
                  toInt64((SELECT sum(memory_usage) FROM system.merges))) AS merges,
         (SELECT argMax(table, memory_usage) FROM system.merges) AS merge_table,
         (SELECT sumIf(value, metric LIKE '%CacheBytes') FROM system.metrics) AS caches,
         (SELECT sum(memory_usage) FROM system.processes WHERE query NOT LIKE '%system.processes%') AS query_memory,
         (SELECT argMax(substring(query, 1, 60), memory_usage) FROM system.processes
           WHERE query NOT LIKE '%system.processes%') AS query,
         (SELECT toUInt64OrZero(extract(stats, 'resident: (\\d+)')) FROM system.jemalloc_stats) AS resident,
         (SELECT toUInt64OrZero(extract(stats, 'retained: (\\d+)')) FROM system.jemalloc_stats) AS retained`,
    )
    if (!row) return
    const n = (k: string) => Number(row[k] ?? 0)
    first ??= { tracked: n('tracked'), resident: n('resident'), retained: n('retained') }
    m.trackedGrowthMb = Math.max(m.trackedGrowthMb, mb(n('tracked') - first.tracked))
    m.jemallocResidentGrowthMb = Math.max(m.jemallocResidentGrowthMb, mb(n('resident') - first.resident))
    m.jemallocRetainedGrowthMb = Math.max(m.jemallocRetainedGrowthMb, mb(n('retained') - first.retained))
    m.cachesMb = Math.max(m.cachesMb, mb(n('caches')))
    if (mb(n('merges')) > m.mergesMb) {
      m.mergesMb = mb(n('merges'))
      m.mergeTable = String(row.merge_table ?? '')
    }
    if (mb(n('query_memory')) > m.queryMb) {
      m.queryMb = mb(n('query_memory'))
      m.query = String(row.query ?? '').replace(/\s+/g, ' ')
    }
  }
  const loop = (async () => {
    while (polling) {
      await once().catch(() => undefined)
      await sleep(500)
    }
  })()
  return {
    stop: async () => {
      polling = false
      await loop
      return m
    },
  }
}

/** The engine's memory in a figure's detail. */
const engineDetail = (e: EngineMemory) =>
  `engine: tracked +${e.trackedGrowthMb} MB, merges up to ${e.mergesMb} MB (${e.mergeTable || 'none'}), ` +
  `queries up to ${e.queryMb} MB (largest: ${e.query || 'none'}), jemalloc resident +${e.jemallocResidentGrowthMb} / retained +${e.jemallocRetainedGrowthMb} MB, caches ${e.cachesMb} MB`

async function profileImport(run: BenchRun, sut: SluiceUnderTest, tenant: Tenant, csv: string, rows: number) {
  const auth = { Authorization: tenant.auth }
  const body = readFileSync(csv)
  const [db] = await sut.query<{ profiledb_id: string | number }>(
    `SELECT profiledb_id FROM ${sut.database}.orgs FINAL WHERE id = ${Number(tenant.orgId)}`,
  )
  const profiledb = Number(db?.profiledb_id)
  let receipt: Record<string, unknown> = {}
  let stored = 0
  run.progress.start(
    'imports: profiles',
    () =>
      `${typeof receipt.state === 'string' ? receipt.state : 'sending'}, ${Number(receipt.rows_applied ?? 0)}/${rows} applied, ${stored} stored`,
  )
  const rss = rssGrowth(sut.pid)
  const engine = engineMemory(sut)
  const cpuBefore = processCpuSeconds(sut.pid) ?? NaN
  const started = performance.now()
  try {
    const sent = await sut.http.request(
      'POST',
      '/v1/imports/profiles',
      { ...auth, 'Content-Type': 'text/csv', 'Content-Encoding': 'gzip' },
      body,
      600_000,
    )
    if (sent.status !== 202)
      throw new Error(`profile import answered ${sent.status}: ${sent.body.slice(0, 300)}`)
    const id = String((JSON.parse(sent.body) as { import_id: string }).import_id)
    for (;;) {
      const got = await sut.http.request('GET', `/v1/imports/${id}`, auth)
      receipt = JSON.parse(got.body) as Record<string, unknown>
      if (receipt.state === 'failed') throw new Error(`profile import failed: ${got.body.slice(0, 300)}`)
      if (receipt.state === 'done') break
      await sleep(250)
    }
    // Readable: every customer in `profiles`, then a sample read back through the API.
    for (;;) {
      const [n] = await sut.query<{ n: string | number }>(
        `SELECT count() AS n FROM ${sut.database}.profiles FINAL WHERE profiledb_id = ${profiledb} AND deleted = 0`,
      )
      stored = Number(n?.n ?? 0)
      if (stored >= rows) break
      await sleep(250)
    }
    const ms = performance.now() - started
    const cpuMs = ((processCpuSeconds(sut.pid) ?? NaN) - cpuBefore) * 1000
    const rssGrowthMb = rss.stop()
    const engineMb = await engine.stop()
    // Then a sample read back through the API (not timed: a GET's time is the profiles scenario's).
    let matched = 0
    const sample = Array.from({ length: 100 }, (_, i) => Math.floor((i * rows) / 100) + (i % 7))
    const reader = async (from: number) => {
      for (let i = from; i < sample.length; i += 8) {
        const n = sample[i]!
        const got = await sut.http.request('GET', `/v1/profiles/${importCustomer(n)}`, auth)
        const profile =
          got.status === 200 ? (JSON.parse(got.body) as { attributes: Record<string, unknown> }) : undefined
        if (profile && sameProfile(profile, n)) matched++
      }
    }
    await Promise.all(Array.from({ length: 8 }, (_, i) => reader(i)))
    return {
      ms,
      cpuMs,
      applied: Number(receipt.rows_applied ?? 0),
      rejected: Number(receipt.rows_rejected ?? 0),
      stored,
      sampled: sample.length,
      sampleMatched: matched,
      rssGrowthMb,
      engine: engineMb,
    }
  } finally {
    rss.stop()
    await engine.stop()
    run.progress.stop()
  }
}

/** Whether a profile read back holds row n's values as the import types them. */
function sameProfile(profile: { attributes: Record<string, unknown> }, n: number): boolean {
  const cells = importRow(n).slice(1)
  return IMPORT_COLUMNS.every((column, i) => {
    const [name, type] = column.split(':') as [string, string | undefined]
    const got = profile.attributes[name]
    const cell = cells[i]!
    if (type === 'set') return JSON.stringify(got) === JSON.stringify([...new Set(cell.split('|'))])
    if (/^\d+$/.test(cell) && type === undefined) return got === Number(cell)
    return got === cell
  })
}

async function audienceImport(
  run: BenchRun,
  sut: SluiceUnderTest,
  tenant: Tenant,
  file: string,
  rows: number,
) {
  const app = tenant.apps[0]!
  const auth = { Authorization: tenant.auth }
  // Installs for the first customers of the list, through the SDK upload.
  const at = Date.now() - 3_600_000
  for (let from = 0; from < KNOWN_MEMBERS; from += 250) {
    const lines = Array.from({ length: 250 }, (_, i) => {
      const n = from + i
      return JSON.stringify({
        type: 's',
        uuid: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
        install_uuid: `bench-install-${n}`,
        device_uuid: `bench-device-${n}`,
        session_uuid: `bench-session-${n}`,
        at_millis: at,
        customer_ids: { customer_id: importCustomer(n) },
        app_ver: '2.1.0',
        os_ver: '17.1',
        platform: 'iOS',
        model: 'iPhone15,2',
        country: 'fr',
        language: 'fr',
        device_timezone: 'Europe/Paris',
        push_token: `tok-${n}`,
        push_status: 'Enabled (Prominent)',
      })
    })
    const res = await sut.http.request(
      'POST',
      `/v1/sdk/apps/${app}/uploads`,
      { 'Content-Type': 'application/x-gzip' },
      gzipSync(lines.join('\n')),
    )
    if (res.status !== 202) throw new Error(`SDK upload answered ${res.status}: ${res.body.slice(0, 300)}`)
  }
  for (;;) {
    const [n] = await sut.query<{ n: string | number }>(
      `SELECT count() AS n FROM ${sut.database}.devices FINAL WHERE app_id = '${app}'`,
    )
    if (Number(n?.n ?? 0) >= KNOWN_MEMBERS) break
    await sleep(250)
  }
  const body = readFileSync(file)
  let receipt: Record<string, unknown> = {}
  let userCount = -1
  run.progress.start(
    'imports: audience',
    () => `${typeof receipt.state === 'string' ? receipt.state : 'sending'}, user_count ${userCount}`,
  )
  const rss = rssGrowth(sut.pid)
  const engine = engineMemory(sut)
  const started = performance.now()
  try {
    const base = `/api/v6/orgs/${tenant.orgId}/apps/${app}/audiences`
    const sent = await sut.http.request(
      'POST',
      `${base}/imports?name=bench-members`,
      { ...auth, 'Content-Type': 'text/csv', 'Content-Encoding': 'gzip' },
      body,
      600_000,
    )
    if (sent.status !== 202)
      throw new Error(`audience import answered ${sent.status}: ${sent.body.slice(0, 300)}`)
    const { import_id: id, audience_id: audienceId } = JSON.parse(sent.body) as {
      import_id: string
      audience_id: number
    }
    for (;;) {
      if (receipt.state !== 'done') {
        const got = await sut.http.request('GET', `${base}/imports/${id}`, auth)
        receipt = JSON.parse(got.body) as Record<string, unknown>
        if (receipt.state === 'failed') throw new Error(`audience import failed: ${got.body.slice(0, 300)}`)
      }
      if (receipt.state === 'done') {
        const got = await sut.http.request('GET', `${base}/${audienceId}`, auth)
        userCount = Number((JSON.parse(got.body) as { user_count?: unknown }).user_count ?? -1)
        if (userCount === KNOWN_MEMBERS) break
      }
      await sleep(250)
    }
    return {
      members: rows,
      ms: performance.now() - started,
      known: Number(receipt.members_known ?? 0),
      unknown: Number(receipt.members_unknown ?? 0),
      userCount,
      rssGrowthMb: rss.stop(),
      engine: await engine.stop(),
    }
  } finally {
    rss.stop()
    await engine.stop()
    run.progress.stop()
  }
}

/** The bench step (embedded only: the baseline is the same engine reading the same file). */
export async function runImportBench(run: BenchRun): Promise<void> {
  const quick = run.options.profile.name === 'quick'
  if (run.options.distributed) {
    run.results.scenarios.imports = {
      name: 'imports',
      skipped: 'measured on the embedded engine (chdb) only',
    }
    return
  }
  if (!run.fits('imports', quick ? 90_000 : 1_200_000)) return
  const set = quick ? IMPORT_SETS.quick : IMPORT_SETS.full
  const r = await run.step('imports', () => importBench(run, set))
  if (!r) return
  run.results.scenarios.imports = r
  run.log(
    `    ${r.set}: ${Math.round(r.rows / (r.ms / 1000))} rows/s readable (baseline ${Math.round(r.baseline.rows / (r.baseline.ms / 1000))}), ` +
      `RSS +${r.rssGrowthMb} MB (${engineDetail(r.engine)}); audience of ${r.audience.members} exact after ${(r.audience.ms / 1000).toFixed(1)} s`,
  )
}

/** import_<set>_rows_per_s, _ratio (≥ 0.8), _cpu_ratio, _rss_growth_mb (≤ 150), import_audience_<set>_s. */
export function importFigures(r: ImportBenchResult | undefined, skipped: string, quick: boolean): Figure[] {
  const label = quick ? IMPORT_SETS.quick.label : IMPORT_SETS.full.label
  if (!r || r.skipped !== undefined) {
    const why = r?.skipped ?? skipped
    return [
      { name: `import_${label}_rows_per_s`, unit: 'rows/s', skipped: why },
      { name: `import_${label}_ratio`, unit: '', skipped: why },
      { name: `import_${label}_cpu_ratio`, unit: '', skipped: why },
      { name: `import_${label}_rss_growth_mb`, unit: 'MB', skipped: why },
      { name: `import_audience_${label}_s`, unit: 's', skipped: why },
    ]
  }
  const ours = r.rows / (r.ms / 1000)
  const theirs = r.baseline.rows / (r.baseline.ms / 1000)
  const ratio = ours / theirs
  const complete = r.stored === r.rows && r.applied === r.rows && r.sampleMatched === r.sampled
  const a = r.audience
  return [
    {
      name: `import_${r.set}_rows_per_s`,
      unit: 'rows/s',
      value: Math.round(ours),
      detail:
        `${r.rows.toLocaleString('en-US')} profiles of 20 attributes (${(r.bodyBytes / 1048576).toFixed(0)} MB gzip CSV) readable ${(r.ms / 1000).toFixed(1)} s after the POST; ` +
        `${r.stored} stored, ${r.sampleMatched}/${r.sampled} sampled GETs as sent${complete ? '' : ' (INCOMPLETE)'}`,
    },
    {
      name: `import_${r.set}_ratio`,
      unit: '',
      value: round(ratio, 2),
      target: IMPORT_TARGETS.ratio,
      met: complete && ratio >= IMPORT_TARGETS.ratio.value,
      detail: `Sluice's rows/s ÷ the engine reading the same file into profiles (${Math.round(theirs)} rows/s)`,
    },
    {
      name: `import_${r.set}_cpu_ratio`,
      unit: '',
      value: round(r.baseline.cpuMs / r.cpuMs, 2),
      detail:
        `CPU time per row, the engine's own insert ÷ Sluice's (${round((r.baseline.cpuMs * 1000) / r.baseline.rows, 1)} ÷ ${round((r.cpuMs * 1000) / r.rows, 1)} µs): ` +
        "the rate ratio's cost side, which the load of a shared machine moves far less than wall time",
    },
    {
      name: `import_${r.set}_rss_growth_mb`,
      unit: 'MB',
      value: r.rssGrowthMb,
      target: IMPORT_TARGETS.rssGrowthMb,
      met: r.rssGrowthMb <= IMPORT_TARGETS.rssGrowthMb.value,
      detail: `the Sluice process (the embedded engine included), largest sample minus the first, during the import; ${engineDetail(r.engine)}`,
    },
    {
      name: `import_audience_${r.set}_s`,
      unit: 's',
      value: round(a.ms / 1000, 1),
      detail: `${a.members.toLocaleString('en-US')} customer ids: receipt ${a.known} known / ${a.unknown} unknown, user_count ${a.userCount} exact; RSS +${a.rssGrowthMb} MB (${engineDetail(a.engine)})`,
    },
  ]
}

/** The scenario's line in report.md. */
export function importLine(r: ImportBenchResult): string {
  if (r.skipped !== undefined) return `- **imports**: skipped (${r.skipped}).`
  return (
    `- **imports** (${r.set}): ${r.rows} profiles readable in ${(r.ms / 1000).toFixed(1)} s (${Math.round(r.rows / (r.ms / 1000))} rows/s, RSS +${r.rssGrowthMb} MB) ` +
    `against the engine's own CSV insert in ${(r.baseline.ms / 1000).toFixed(1)} s; a ${r.audience.members}-member audience exact after ${(r.audience.ms / 1000).toFixed(1)} s.`
  )
}

/** How the report reads this scenario's result (bench/figures.ts). */
export const importReporter: ScenarioReporter<ImportBenchResult> = {
  name: 'imports',
  figures: importFigures,
  summary: importLine,
}
