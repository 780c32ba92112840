import type { BenchRun } from '../bench-run.ts'
import type { Figure, ScenarioReporter } from '../figures.ts'
import type { SluiceUnderTest } from '../sluice.ts'
import { round } from '../stats.ts'

/** Disk taken by the tables of the benched Sluice's database at the end of the run. */
export interface StorageResult {
  /** Whether `events` was merged to one part per partition first (OPTIMIZE FINAL: distributed mode). */
  optimized: boolean
  /** Why it was not (the embedded SQL port is read-only). */
  notOptimized?: string
  events: { rows: number; bytesOnDisk: number; uncompressedBytes: number; parts: number }
  /** Every table of the database with parts: bytes on disk and rows. */
  tables: { table: string; rows: number; bytesOnDisk: number }[]
  /**
   * Records dead-lettered during the run, by stage and topic, with one error of each (absent in
   * older results): a stored-event figure is only what it seems if nothing was set aside.
   */
  deadLetters?: { stage: string; topic: string; records: number; error: string }[]
}

interface PartsRow {
  table: string
  rows: string | number
  bytes: string | number
  uncompressed: string | number
  parts: string | number
}

/**
 * After the scenarios, before Sluice stops: `events` merged (OPTIMIZE FINAL, where the bench's
 * client may write: a ClickHouse server in distributed mode), then the active parts of every table
 * of the run's database from system.parts. Bytes per stored event is what the disk model of
 * docs/scaling.md multiplies by the event count.
 */
export async function measureStorage(sut: SluiceUnderTest): Promise<StorageResult> {
  let optimized = false
  let notOptimized: string | undefined
  if (sut.mode === 'distributed') {
    await sut.command('OPTIMIZE TABLE events FINAL')
    optimized = true
  } else notOptimized = 'the embedded SQL port is read-only: parts as the engine merged them'
  const rows = await sut.query<PartsRow>(
    `SELECT table, sum(rows) AS rows, sum(bytes_on_disk) AS bytes,
            sum(data_uncompressed_bytes) AS uncompressed, count() AS parts
     FROM system.parts WHERE active AND database = {db:String} GROUP BY table ORDER BY bytes DESC`,
    { db: sut.database },
  )
  const events = rows.find((r) => r.table === 'events')
  // A failed read leaves the figure unmeasured rather than failing the storage step.
  const dead = await sut
    .query<{ stage: string; topic: string; records: string | number; error: string }>(
      `SELECT stage, topic, count() AS records, any(substring(error, 1, 300)) AS error
       FROM dead_letters FINAL GROUP BY stage, topic ORDER BY records DESC`,
    )
    .catch(() => undefined)
  return {
    ...(dead ? { deadLetters: dead.map((d) => ({ ...d, records: Number(d.records) })) } : {}),
    optimized,
    ...(notOptimized ? { notOptimized } : {}),
    events: {
      rows: Number(events?.rows ?? 0),
      bytesOnDisk: Number(events?.bytes ?? 0),
      uncompressedBytes: Number(events?.uncompressed ?? 0),
      parts: Number(events?.parts ?? 0),
    },
    tables: rows.map((r) => ({ table: r.table, rows: Number(r.rows), bytesOnDisk: Number(r.bytes) })),
  }
}

/** The step: run last on the main Sluice, when the run was not told to skip it. */
export async function runStorage(run: BenchRun, sut: SluiceUnderTest): Promise<void> {
  if (run.options.skip.has('storage')) return
  const r = await run.step('storage', () => measureStorage(sut))
  if (!r) return
  run.results.scenarios.storage = r
  run.log(`    ${storageLine(r).slice(2)}`)
}

const perEvent = (bytes: number, r: StorageResult) => (r.events.rows > 0 ? bytes / r.events.rows : NaN)

function deadLetterFigure(r: StorageResult | undefined, skipped: string): Figure {
  if (!r?.deadLetters) return { name: 'dead_letters', unit: '', skipped: r ? 'not measured' : skipped }
  const records = r.deadLetters.reduce((sum, d) => sum + d.records, 0)
  return {
    name: 'dead_letters',
    unit: '',
    target: { op: '<=', value: 0 },
    met: records === 0,
    value: records,
    ...(records > 0
      ? {
          detail: r.deadLetters
            .map(
              (d) => `${d.stage} on ${d.topic}: ${d.records} (${d.error.replace(/\s+/g, ' ').slice(0, 160)})`,
            )
            .join('; '),
        }
      : {}),
  }
}

function storageFigures(r: StorageResult | undefined, skipped: string): Figure[] {
  if (!r || r.events.rows === 0)
    return [
      { name: 'bytes_per_event_on_disk', unit: 'B', skipped: r ? 'no event stored' : skipped },
      deadLetterFigure(r, skipped),
    ]
  const total = r.tables.reduce((sum, t) => sum + t.bytesOnDisk, 0)
  const top = r.tables
    .filter((t) => t.table !== 'events')
    .slice(0, 3)
    .map((t) => `${t.table} ${perEvent(t.bytesOnDisk, r).toFixed(1)}`)
  return [
    {
      name: 'bytes_per_event_on_disk',
      unit: 'B',
      value: round(perEvent(r.events.bytesOnDisk, r), 1),
      detail:
        `events: ${r.events.rows.toLocaleString('en-US')} rows in ${r.events.parts} parts, ` +
        `${r.optimized ? 'after OPTIMIZE FINAL' : `not merged by the bench (${r.notOptimized ?? ''})`}, ` +
        `${perEvent(r.events.uncompressedBytes, r).toFixed(0)} B uncompressed; every table of the database ÷ events: ` +
        `${perEvent(total, r).toFixed(1)} B (${top.join(', ')})`,
    },
    deadLetterFigure(r, skipped),
  ]
}

export function storageLine(r: StorageResult): string {
  const [f] = storageFigures(r, '')
  return `- **storage**: ${f?.value ?? 'no'} B per stored event on disk (${f?.detail ?? f?.skipped ?? ''}).`
}

/** How the report reads this step's result (bench/figures.ts). */
export const storageReporter: ScenarioReporter<StorageResult> = {
  name: 'storage',
  figures: storageFigures,
  summary: storageLine,
}
