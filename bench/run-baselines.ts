import { join } from 'node:path'
import {
  bareServerBaseline,
  CHDB_BASELINE_FORMATS,
  chdbInsertBaseline,
  type BareResult,
} from './baselines/run.ts'
import { ROOT, type BenchRun } from './bench-run.ts'
import type { BenchLoad } from './load.ts'
import { GZIP_HEADERS, PLAIN_HEADERS } from './scenarios/uploads.ts'

/**
 * An HTTP baseline on the bodies the scenarios send: the bare server (runBaselines) or the edge
 * floor (measured around each edge scenario: run-scenarios.ts). Raw latencies go to `latencySink`
 * too when given, so measurements in parts can be combined.
 */
export async function httpBaseline(
  run: BenchRun,
  load: BenchLoad,
  server: 'bare' | 'floor',
  kind: 'plain' | 'gzip',
  durationMs: number,
  latencySink?: number[],
): Promise<BareResult> {
  const bodies =
    kind === 'plain'
      ? load.plain.plain.map((t) => ({ body: t.buffer, events: t.kinds.length }))
      : load.gzip.map((x) => ({ body: x.instance.body, events: x.instance.events }))
  const r = await bareServerBaseline({
    kind,
    server,
    bodies,
    headers: { ...BASELINE_AUTH, ...(kind === 'plain' ? PLAIN_HEADERS : GZIP_HEADERS) },
    concurrency: run.options.profile.concurrency,
    durationMs,
    progress: run.progress,
    logDir: join(run.workDir, `floor-log-${kind}`),
    ...(latencySink ? { latencySink } : {}),
  })
  run.log(
    `    ${server} HTTP ${kind}: ${(r.bytesPerSecond / 1048576).toFixed(1)} MB/s, ${Math.round(r.requestsPerSecond)} req/s`,
  )
  return r
}

const BASELINE_AUTH = {
  Authorization: `Basic ${Buffer.from('bench-key:bench-secret-of-realistic-length').toString('base64')}`,
}

/**
 * The baselines measured first (before Sluice starts): the bare server and the engine's own
 * inserts. The edge floor is measured around each edge scenario instead (run-scenarios.ts).
 */
export async function runBaselines(run: BenchRun, load: BenchLoad): Promise<void> {
  const { profile } = run.options
  const { plain, gzip } = load
  const ddlFile = join(ROOT, 'schemas', 'clickhouse', '002_events.sql')
  const http = async (kind: 'plain' | 'gzip') => {
    run.results.baselines.bare.push(await httpBaseline(run, load, 'bare', kind, profile.baselineMs))
  }
  const chdb = async (kind: 'plain' | 'gzip') => {
    const blocks = kind === 'plain' ? plain.plain.map((t) => t.rows) : gzip.map((x) => x.rows)
    const results = await chdbInsertBaseline({
      kind,
      blocks,
      workDir: run.workDir,
      ddlFile,
      minDurationMs: profile.baselineMs,
      progress: run.progress,
      // The quick run measures the floor in Native only, the cheaper binary format on this engine
      // (RowBinary costs the engine ~1.6x as much per row); the full run measures both.
      formats: profile.name === 'quick' ? ['JSONEachRow', 'Native'] : CHDB_BASELINE_FORMATS,
    })
    for (const r of results) {
      run.results.baselines.chdb.push(r)
      run.log(
        `    chdb INSERT ${kind} ${r.format}: ${Math.round(r.rowsPerSecond).toLocaleString('en-US')} rows/s (${r.inserts} inserts)`,
      )
    }
  }
  // For information: no edge keeps a 202's promises at this rate.
  await run.step('baseline:bare-http:plain', () => http('plain'))
  await run.step('baseline:bare-http:gzip', () => http('gzip'))
  await run.step('baseline:chdb-insert:plain', () => chdb('plain'))
  await run.step('baseline:chdb-insert:gzip', () => chdb('gzip'))
}
