import { join } from 'node:path'
import { bareServerBaseline, chdbInsertBaseline } from './baselines/run.ts'
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
  const bare = async (kind: 'plain' | 'gzip' | 'gzip+inflate') => {
    const bodies =
      kind === 'plain'
        ? plain.plain.map((t) => ({ body: t.buffer, events: t.kinds.length }))
        : gzip.map((x) => ({ body: x.instance.body, events: x.instance.events }))
    const r = await bareServerBaseline({
      kind,
      bodies,
      headers: { ...auth, ...(kind === 'plain' ? PLAIN_HEADERS : GZIP_HEADERS) },
      concurrency: profile.concurrency,
      durationMs: profile.baselineMs,
      progress: run.progress,
      inflate: kind === 'gzip+inflate',
    })
    run.results.baselines.bare.push(r)
    run.log(
      `    bare HTTP ${kind}: ${(r.bytesPerSecond / 1048576).toFixed(1)} MB/s, ${Math.round(r.requestsPerSecond)} req/s`,
    )
  }
  const chdb = async (kind: 'plain' | 'gzip') => {
    const blocks = kind === 'plain' ? plain.plain.map((t) => t.rows) : gzip.map((x) => x.rows)
    const r = await chdbInsertBaseline({
      kind,
      blocks,
      workDir: run.workDir,
      ddlFile,
      minDurationMs: profile.baselineMs,
      progress: run.progress,
    })
    run.results.baselines.chdb.push(r)
    run.log(
      `    chdb INSERT ${kind}: ${Math.round(r.rowsPerSecond).toLocaleString('en-US')} rows/s (${r.inserts} inserts)`,
    )
  }
  await run.step('baseline:bare-http:plain', () => bare('plain'))
  await run.step('baseline:bare-http:gzip', () => bare('gzip'))
  // Informational (not in edge_ratio): the same server inflating each gzip body, as the edge must.
  await run.step('baseline:bare-http:gzip+inflate', () => bare('gzip+inflate'))
  await run.step('baseline:chdb-insert:plain', () => chdb('plain'))
  await run.step('baseline:chdb-insert:gzip', () => chdb('gzip'))
}
