import type { Readable } from 'node:stream'
import { IMPORT_LIMITS, type RejectedRow } from '../../schemas/imports.ts'
import { partitionForKey, type Bus, type ProduceMessage } from '../connectors/bus/bus.ts'
import type { Store } from '../connectors/store/store.ts'
import { commandKey } from '../profiles/commands.ts'
import type { ProfileScope } from '../profiles/validate-changes.ts'
import { encodeImportBlock, serialiseRow } from './import-blocks.ts'
import {
  keepRejected,
  readImport,
  writeImport,
  newImportRow,
  type ImportJob,
  type ImportRow,
} from './import-jobs.ts'
import { csvRow, jsonRow, parseCsvHeader, type CsvHeader, type RowResult } from './profile-rows.ts'
import { readRows, type SourceRow } from './read-rows.ts'

export interface ProfileImportDeps {
  store: Store
  bus: Bus
  /** The body as the edge stored it. */
  open: (path: string) => Readable
  /** The profile-changes topic and its partition count. */
  topic: string
  partitions: number
  /** Records the profile writer has not applied yet (its lag): the import waits while it is high. */
  writerBacklog: () => Promise<number>
  sleep: (ms: number) => Promise<void>
  now: () => number
  /** Rows per round (what a live PATCH may wait behind); default 5,000. */
  roundRows?: number
  /** Largest block in bytes (a bus record; Kafka's default limit is 1 MB); default 512 KB. */
  blockBytes?: number
  /** Blocks of the writer's backlog above which the next round waits; default one per partition. */
  maxBacklog?: number
  onRound?: (row: ImportRow) => void
}

/**
 * The import processor's work on one profile import: reads the body row by row, types each row
 * by the PATCH rules (rejecting it whole, with the reason, when it breaks one), and hands the rows
 * to the profile writer in rounds of blocks on the profile-changes topic, each block holding
 * customers of one partition (the writer that owns them applies them in order with their live
 * PATCHes). A round is handed on only when the writer's backlog is down to about one block per
 * partition, so a live PATCH waits behind at most about one round, never behind the whole import.
 *
 * Exactly once per row: after each round the processor notes where it is (rounds, the round's
 * last line, counts) in `imports`; a redelivered job resumes after that line, with the same round
 * and block numbers, so a round handed on again is recognised by the writer (import_blocks) and
 * not applied twice; rejected rows are kept by (import, line). The file is read to the end before
 * the import is marked `read`, and the import is done once every block is applied.
 */
export async function runProfileImport(job: ImportJob, deps: ProfileImportDeps): Promise<void> {
  let row = (await readImport(deps.store, job.id)) ?? newImportRow(job, deps.now())
  if (row.state !== 'queued' && row.state !== 'processing') return
  const roundRows = deps.roundRows ?? 5000
  const blockBytes = deps.blockBytes ?? 512 * 1024
  const maxBacklog = deps.maxBacklog ?? deps.partitions
  const scope: ProfileScope = job.app === '' ? 'org' : 'app'
  if (row.state === 'queued') row = await writeImport(deps.store, { ...row, state: 'processing' }, deps.now())

  const resumeAfter = row.checkpoint_line
  let rowsRead = row.rows_read
  let rowsRejected = row.rows_rejected
  let round = row.rounds
  let blocks = row.blocks
  let header: CsvHeader | undefined
  let rejected: RejectedRow[] = []
  let lastLine = resumeAfter
  // The round being filled: per partition, the rows serialised, and the blocks closed so far.
  const open = new Map<number, { rows: string[]; bytes: number }>()
  let closed: ProduceMessage[] = []
  let roundCount = 0
  const head = () => ({
    import: job.id,
    round,
    org: job.org,
    db: job.db,
    app: job.app,
    receivedAt: job.receivedAt,
  })
  const close = (partition: number) => {
    const pending = open.get(partition)
    if (!pending || pending.rows.length === 0) return
    closed.push(encodeImportBlock({ ...head(), block: closed.length }, pending.rows, partition))
    open.delete(partition)
  }

  const flushRound = async () => {
    for (const partition of [...open.keys()].sort((a, b) => a - b)) close(partition)
    if (closed.length > 0) {
      await waitForWriter(deps, maxBacklog)
      await deps.bus.produce(deps.topic, closed)
    }
    await keepRejected(deps.store, job.id, rejected)
    blocks += closed.length
    round++
    row = await writeImport(
      deps.store,
      {
        ...row,
        rounds: round,
        checkpoint_line: lastLine,
        rows_read: rowsRead,
        rows_rejected: rowsRejected,
        blocks,
      },
      deps.now(),
    )
    deps.onRound?.(row)
    closed = []
    rejected = []
    roundCount = 0
  }

  const refuse = (line: number, customer: string | undefined, reason: string) => {
    rowsRejected++
    if (rowsRejected <= IMPORT_LIMITS.keptRejectedRows)
      rejected.push({ line, ...(customer !== undefined && { customer_id: customer }), reason })
  }

  try {
    for await (const source of readRows(deps.open(job.path), job.format, job.compression)) {
      if (job.format === 'csv' && !header) {
        // The header is read again on a resume; the edge checked it before its 202.
        const parsed = source.kind === 'cells' ? parseCsvHeader(source.cells, scope) : undefined
        if (!parsed?.ok)
          throw new ImportRefused(
            parsed ? parsed.reason : `line ${source.line}: the header row is unreadable`,
          )
        header = parsed.value
        continue
      }
      if (source.line <= resumeAfter) continue
      rowsRead++
      lastLine = source.line
      const result = typed(source, header, scope)
      if (!result.ok) {
        refuse(source.line, result.customer, result.reason)
      } else {
        const partition = partitionForKey(commandKey(job.db, result.customer), deps.partitions, 0)
        const serialised = serialiseRow({
          line: source.line,
          customer: result.customer,
          changes: result.changes,
        })
        const pending = open.get(partition) ?? { rows: [], bytes: 0 }
        if (pending.bytes + serialised.length > blockBytes && pending.rows.length > 0) {
          close(partition)
          open.set(partition, { rows: [serialised], bytes: serialised.length })
        } else {
          pending.rows.push(serialised)
          pending.bytes += serialised.length + 1
          open.set(partition, pending)
        }
        roundCount++
      }
      if (roundCount + rejected.length >= roundRows) await flushRound()
    }
  } catch (err) {
    if (!(err instanceof ImportRefused) && !isBodyError(err)) throw err
    // The edge checked the body; this is a file changed or damaged since. Rounds already handed
    // on stay applied; the receipt says where it stopped.
    await writeImport(
      deps.store,
      { ...row, state: 'failed', error: `line ${lastLine + 1}: ${(err as Error).message}` },
      deps.now(),
    )
    return
  }
  await flushRound()
  await writeImport(deps.store, { ...row, state: blocks === 0 ? 'done' : 'read' }, deps.now())
}

function typed(source: SourceRow, header: CsvHeader | undefined, scope: ProfileScope): RowResult {
  if (source.kind === 'bad') return { ok: false, customer: undefined, reason: source.reason }
  if (source.kind === 'text') return jsonRow(source.text, scope)
  return csvRow(header!, source.cells)
}

/** Waits (polling, with backoff) until the writer's backlog is at most `max` records. */
async function waitForWriter(deps: ProfileImportDeps, max: number): Promise<void> {
  let pause = 5
  while ((await deps.writerBacklog()) > max) {
    await deps.sleep(pause)
    pause = Math.min(pause * 2, 100)
  }
}

export class ImportRefused extends Error {
  override name = 'ImportRefused'
}

/** gzip, file and stream errors of the body (not of the store or the bus: those are retried). */
export function isBodyError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  return typeof code === 'string' && (code.startsWith('Z_') || code === 'ENOENT' || code === 'EISDIR')
}
