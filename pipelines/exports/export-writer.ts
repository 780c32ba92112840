import { Transform, type Readable, type TransformCallback } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { systemClock, type Clock } from '../clock.ts'
import type { BusRecord, RecordBatch } from '../connectors/bus/bus.ts'
import type { Files } from '../connectors/files/files.ts'
import type { Store } from '../connectors/store/store.ts'
import { deadLetter, PermanentError, type StageReport } from '../failures/outcome.ts'
import { HOUR_MS } from './export-kinds.ts'
import { ENGINE_NOW, LINE_FORMAT } from './export-queries.ts'
import { insertFile, latestFile, livePaths, readJob, type ExportFileRow } from './export-records.ts'
import { ParallelGzip } from './parallel-gzip.ts'
import { exportTarget, type ExportTarget } from './export-targets.ts'
import { decodeExportRequest, type ExportRequest, type GenerationRequest } from './generation-requests.ts'
import { EXPORTS_ROOT } from './signed-links.ts'

export interface ExportWriterOptions {
  /**
   * Wait between reading the engine's clock (a file's as_of) and reading the data, so inserts
   * stamped before as_of have committed: a row stamped before as_of and missing from the file
   * would never make it stale. Default 2 s.
   */
  settleMs?: number
  /** How long an audience or profile file is kept after it is written (results_expire_at). */
  resultTtlMs: number
  /** How long an hourly log file is kept after its hour (the spec: 30 days). */
  logRetentionMs: number
  /** A file replaced by a newer one is kept at least this long: links to it stay valid. */
  linkTtlMs: number
  /** zlib level; default EXPORT_GZIP_LEVEL (6, gzip's own default). */
  gzipLevel?: number
}

/** gzip's default level: files ~6 % smaller than level 1 for ~50 % more deflate CPU (1M log rows). */
export const EXPORT_GZIP_LEVEL = 6
/**
 * zlib's output chunk for a single-stream gzip (the bench's baseline): 256 KB instead of the
 * default 16 KB makes one libuv round trip per ~1 MB block of lines instead of five or more.
 */
export const EXPORT_GZIP_CHUNK_BYTES = 256 * 1024
/** 1 MiB blocks deflated at once on the libuv pool (ParallelGzip): the two cores of the target machine. */
export const EXPORT_GZIP_THREADS = 2

export interface ExportProgress {
  export_id: number
  file_key: string
  rows: number
  bytes: number
  elapsed_ms: number
  done: boolean
}

export interface ExportWriterDeps extends ExportWriterOptions {
  store: Store
  files: Files
  clock?: Clock
  onProgress?: (progress: ExportProgress) => void
  onSkipped?: (request: GenerationRequest, why: string) => void
  onSwept?: (removed: number) => void
}

/** How often a file in the writing reports its progress. */
const PROGRESS_EVERY_MS = 5000

/**
 * The export writer (a worker stage on the exports topic; the long work no control job may do):
 * for each request it decides whether the file is needed (missing, stale, or this day's refresh
 * not written yet), then streams the export's query from the engine through gzip into the files
 * port, which writes it under a temporary name and renames it whole, and only then records it in
 * export_files. Memory stays flat whatever the size: the engine formats blocks of 1,024 rows
 * (EXPORT_SETTINGS), and each is gzipped (on the libuv pool) and written before the next is asked for. A request decided twice (two
 * requests raced) writes once: the second finds the first's file fresh.
 */
export function exportWriter(deps: ExportWriterDeps) {
  const clock = deps.clock ?? systemClock
  const settleMs = deps.settleMs ?? 2000

  const engineNow = async () => {
    const [row] = await deps.store.query<{ now: number | string }>(ENGINE_NOW)
    return Number(row?.now ?? clock.now())
  }

  const decide = async (request: GenerationRequest): Promise<ExportTarget | undefined> => {
    const job = await readJob(deps.store, request.export_id)
    const skip = (why: string) => {
      deps.onSkipped?.(request, why)
      return undefined
    }
    if (!job) return skip('no such export')
    if (job.enabled !== 1) return skip('export disabled')
    const target = await exportTarget(
      deps.store,
      job,
      request.hour === undefined ? {} : { hour: request.hour },
    )
    if (!target) return skip('nothing to write for this export')
    const latest = await latestFile(deps.store, job.id, target.fileKey)
    if (request.reason === 'admin') return target
    if (request.reason === 'daily') {
      const due = request.refresh_at ?? 0
      return latest && latest.generated_at >= due ? skip('this refresh is written') : target
    }
    return (await target.isStale(latest)) ? target : skip('file is up to date')
  }

  const write = async (target: ExportTarget, asOf: number) => {
    const started = clock.now()
    const { job } = target
    const { query, rangeFrom } = await target.query(asOf)
    const generatedAt = Math.max(started, asOf)
    const stamp = new Date(generatedAt).toISOString().replace(/[-:.]/g, '')
    const name = target.fileKey.replace(/[^A-Za-z0-9]/g, '')
    const path = `${EXPORTS_ROOT}${job.org_id}/${job.id}/${name}-${stamp}${target.extension}`
    const counter = new LineCounter((rows, bytes) =>
      deps.onProgress?.({
        export_id: job.id,
        file_key: target.fileKey,
        rows,
        bytes,
        elapsed_ms: clock.now() - started,
        done: false,
      }),
    )
    const gzip = new ParallelGzip({
      level: deps.gzipLevel ?? EXPORT_GZIP_LEVEL,
      parallel: EXPORT_GZIP_THREADS,
    })
    const sized = new ByteCounter()
    const source = deps.store.queryStream(query.sql, query.params, LINE_FORMAT)
    // put() writes a temporary file and renames it once whole: a half-written file is never seen.
    await deps.files.put(path, chain(source, counter, gzip, sized))
    const row: ExportFileRow = {
      export_id: job.id,
      org_id: job.org_id,
      file_key: target.fileKey,
      path,
      rows: counter.rows,
      bytes: sized.bytes,
      as_of: asOf,
      range_from: rangeFrom,
      generated_at: generatedAt,
      expire_at:
        job.source_type === 'logs'
          ? rangeFrom + HOUR_MS + deps.logRetentionMs
          : generatedAt + deps.resultTtlMs,
    }
    await insertFile(deps.store, row)
    deps.onProgress?.({
      export_id: job.id,
      file_key: target.fileKey,
      rows: counter.rows,
      bytes: sized.bytes,
      elapsed_ms: clock.now() - started,
      done: true,
    })
    return row
  }

  const sweep = async () => {
    const [live, paths] = await Promise.all([
      livePaths(deps.store),
      deps.files.list(EXPORTS_ROOT.slice(0, -1)),
    ])
    const now = clock.now()
    // When each file was replaced: when the current file of the same export and key was written.
    const replacedAt = new Map<string, number>()
    for (const [path, file] of live) replacedAt.set(fileSeries(path), file.generated_at)
    let removed = 0
    for (const path of paths) {
      const current = live.get(path)
      const since = replacedAt.get(fileSeries(path)) ?? writtenAtOf(path)
      const drop = current
        ? current.expire_at < now
        : // Replaced: kept while a link handed out before the replacement may still be valid.
          since !== undefined && since + deps.linkTtlMs < now
      if (drop) {
        await deps.files.remove(path)
        removed++
      }
    }
    deps.onSwept?.(removed)
  }

  return async (batch: RecordBatch): Promise<StageReport> => {
    const report: StageReport = { outcomes: [] }
    const requests: { record: BusRecord; request: ExportRequest }[] = []
    for (const record of batch.records) {
      const decoded = decodeExportRequest(record)
      if (decoded.ok) requests.push({ record, request: decoded.request })
      else report.outcomes.push({ record, outcome: deadLetter(new PermanentError(decoded.reason)) })
    }
    const targets: ExportTarget[] = []
    const seen = new Set<string>()
    for (const { request } of requests) {
      if (request.kind === 'sweep') continue
      const target = await decide(request)
      const key = target && `${target.job.id}\n${target.fileKey}`
      if (target && key && !seen.has(key)) {
        seen.add(key)
        targets.push(target)
      }
    }
    if (targets.length > 0) {
      // One clock reading and one settle wait for the whole batch.
      const asOf = await engineNow()
      await clock.sleep(settleMs)
      for (const target of targets) await write(target, asOf)
    }
    if (requests.some((r) => r.request.kind === 'sweep')) await sweep()
    return report
  }
}

/** The export and key a file belongs to: its path without the time it was written. */
export const fileSeries = (path: string) => path.replace(/-\d{8}T\d{9}Z\.[a-z.]+$/, '')

/** The time a file was written, from its name (`…-20261123T130512345Z.ext`). */
export function writtenAtOf(path: string): number | undefined {
  const m = /-(\d{8})T(\d{9})Z\.[a-z.]+$/.exec(path)
  if (!m) return undefined
  const [d, t] = [m[1]!, m[2]!]
  const iso = `${d.slice(0, 4)}-${d.slice(4, 6)}-${d.slice(6, 8)}T${t.slice(0, 2)}:${t.slice(2, 4)}:${t.slice(4, 6)}.${t.slice(6, 9)}Z`
  const ms = Date.parse(iso)
  return Number.isNaN(ms) ? undefined : ms
}

/** Counts the lines (rows) going through, reporting every few seconds. */
class LineCounter extends Transform {
  rows = 0
  bytes = 0
  private reportedAt = Date.now()
  constructor(private readonly report: (rows: number, bytes: number) => void) {
    super()
  }
  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    let at = chunk.indexOf(10)
    while (at !== -1) {
      this.rows++
      at = chunk.indexOf(10, at + 1)
    }
    this.bytes += chunk.length
    const now = Date.now()
    if (now - this.reportedAt >= PROGRESS_EVERY_MS) {
      this.reportedAt = now
      this.report(this.rows, this.bytes)
    }
    callback(null, chunk)
  }
}

class ByteCounter extends Transform {
  bytes = 0
  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length
    callback(null, chunk)
  }
}

/** source → … → last, as one readable; an error anywhere destroys the chain (and the query). */
function chain(source: Readable, ...stages: Transform[]): Transform {
  const last = stages[stages.length - 1]!
  pipeline([source, ...stages]).catch((err: unknown) => last.destroy(err as Error))
  return last
}
