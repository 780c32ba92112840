import { join } from 'node:path'
import {
  bareServerBaseline,
  CHDB_BASELINE_FORMATS,
  chdbInsertBaseline,
  type BareResult,
  type BaselineLoad,
} from './baselines/run.ts'
import { ROOT, type BenchRun } from './bench-run.ts'
import type { BenchLoad } from './load.ts'
import { GZIP_HEADERS, PLAIN_HEADERS } from './scenarios/uploads.ts'

/** What the HTTP baselines are sent for a body kind: the scenarios' bodies, byte for byte. */
export function baselineLoad(run: BenchRun, load: BenchLoad, kind: 'plain' | 'gzip'): BaselineLoad {
  return {
    kind,
    bodies:
      kind === 'plain'
        ? load.plain.plain.map((t) => ({ body: t.buffer, events: t.kinds.length }))
        : load.gzip.map((x) => ({ body: x.instance.body, events: x.instance.events })),
    headers: { ...BASELINE_AUTH, ...(kind === 'plain' ? PLAIN_HEADERS : GZIP_HEADERS) },
    concurrency: run.options.profile.concurrency,
  }
}

/** The edge floor's log directory for a body kind (one per kind, kept for the run). */
export const floorLogDir = (run: BenchRun, kind: 'plain' | 'gzip') => join(run.workDir, `floor-log-${kind}`)

/** The bare server's baseline (for information): started, warmed up, timed once, stopped. */
async function bareBaseline(
  run: BenchRun,
  load: BenchLoad,
  kind: 'plain' | 'gzip',
  durationMs: number,
): Promise<BareResult> {
  const r = await bareServerBaseline({
    ...baselineLoad(run, load, kind),
    server: 'bare',
    durationMs,
    progress: run.progress,
  })
  run.log(
    `    bare HTTP ${kind}: ${(r.bytesPerSecond / 1048576).toFixed(1)} MB/s, ${Math.round(r.requestsPerSecond)} req/s`,
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
    run.results.baselines.bare.push(await bareBaseline(run, load, kind, profile.baselineMs))
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
