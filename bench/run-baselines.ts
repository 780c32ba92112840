import { join } from 'node:path'
import { bareServerBaseline, CHDB_BASELINE_FORMATS, chdbInsertBaseline } from './baselines/run.ts'
import { ROOT, type BenchRun } from './bench-run.ts'
import type { BenchLoad } from './load.ts'
import { GZIP_HEADERS, PLAIN_HEADERS } from './scenarios/uploads.ts'

/** The baselines, measured first (before Sluice starts) on the bodies the scenarios send. */
export async function runBaselines(run: BenchRun, load: BenchLoad): Promise<void> {
  const { profile } = run.options
  const { plain, gzip } = load
  const auth = {
    Authorization: `Basic ${Buffer.from('bench-key:bench-secret-of-realistic-length').toString('base64')}`,
  }
  const ddlFile = join(ROOT, 'schemas', 'clickhouse', '002_events.sql')
  const http = async (server: 'bare' | 'floor', kind: 'plain' | 'gzip') => {
    const bodies =
      kind === 'plain'
        ? plain.plain.map((t) => ({ body: t.buffer, events: t.kinds.length }))
        : gzip.map((x) => ({ body: x.instance.body, events: x.instance.events }))
    const r = await bareServerBaseline({
      kind,
      server,
      bodies,
      headers: { ...auth, ...(kind === 'plain' ? PLAIN_HEADERS : GZIP_HEADERS) },
      concurrency: profile.concurrency,
      durationMs: profile.baselineMs,
      progress: run.progress,
      logDir: join(run.workDir, `floor-log-${kind}`),
    })
    const results = run.results.baselines
    if (server === 'floor') (results.floor ??= []).push(r)
    else results.bare.push(r)
    run.log(
      `    ${server} HTTP ${kind}: ${(r.bytesPerSecond / 1048576).toFixed(1)} MB/s, ${Math.round(r.requestsPerSecond)} req/s`,
    )
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
  // The floor first: edge_ratio is measured against it. The bare server is for information.
  await run.step('baseline:floor-http:plain', () => http('floor', 'plain'))
  await run.step('baseline:floor-http:gzip', () => http('floor', 'gzip'))
  await run.step('baseline:bare-http:plain', () => http('bare', 'plain'))
  await run.step('baseline:bare-http:gzip', () => http('bare', 'gzip'))
  await run.step('baseline:chdb-insert:plain', () => chdb('plain'))
  await run.step('baseline:chdb-insert:gzip', () => chdb('gzip'))
}
