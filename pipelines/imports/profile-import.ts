import type { Readable } from 'node:stream'
import { IMPORT_LIMITS, type RejectedRow } from '../../schemas/imports.ts'
import { partitionForKey, type Bus } from '../connectors/bus/bus.ts'
import type { Store } from '../connectors/store/store.ts'
import { commandKey } from '../profiles/commands.ts'
import type { NormalizedChange, ProfileScope } from '../profiles/validate-changes.ts'
import { RowBinaryWriter } from '../events/row-binary.ts'
import { encodeImportBlock, serialiseRow, STAGED_ROW_COLUMNS, stagedRow } from './import-blocks.ts'
import {
  keepRejected,
  readImport,
  writeImport,
  newImportRow,
  type ImportJob,
  type ImportRow,
} from './import-jobs.ts'
import {
  checkCustomer,
  csvRow,
  jsonRow,
  parseCsvHeader,
  type CsvHeader,
  type RowResult,
} from './profile-rows.ts'
import { readPlainRows, type SourceRow } from './read-rows.ts'
import type { InsertSelect } from '../connectors/store/store.ts'
import { plainLineCustomer, RAW_COLUMNS, TYPING_SETTINGS, typingStatement } from './staged-csv.ts'

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
  /** Rows per round (what a live PATCH may wait behind); default 20,000. */
  roundRows?: number
  /** Largest block in bytes (a bus record; Kafka's default limit is 1 MB); default 512 KB. */
  blockBytes?: number
  /** Blocks of the writer's backlog above which the next round waits; default one per partition. */
  maxBacklog?: number
  onRound?: (row: ImportRow) => void
  /**
   * Called once a round's rows are staged (its typing and staging inserts, the round's largest
   * allocations, done): hands the engine's freed memory back to the system. The embedded engine's
   * allocator keeps freed pages for its decay time, which back-to-back rounds never leave it.
   */
  releaseMemory?: () => Promise<void>
}

/**
 * The import processor's work on one profile import: reads the body row by row, types each row
 * by the PATCH rules (rejecting it whole, with the reason, when it breaks one), and hands the rows
 * to the profile writer in rounds of blocks on the profile-changes topic, each block holding
 * customers of one partition (the writer that owns them applies them in order with their live
 * PATCHes). Rows that only assign and delete are staged in `import_rows`, a round in one insert,
 * and their blocks only name them: the writer applies them in the engine, a round at a time
 * (apply-staged.ts). A customer's second row starts a new round, so a round's rows each meet
 * the state the rounds before left. A round is handed on only when the writer's backlog is down to about one block per
 * partition, so a live PATCH waits behind at most about one round, never behind the whole import.
 *
 * Exactly once per row: after each round the processor notes where it is (rounds, the round's
 * last line, counts) in `imports`; a redelivered job resumes after that line, with the same round
 * and block numbers, so a round handed on again is recognised by the writer (import_blocks) and
 * not applied twice; rejected rows are kept by (import, line). The file is read to the end before
 * the import is marked `read`, and the import is done once every block is applied.
 *
 * A CSV line without a quote is not typed here: the round's such lines are handed to the engine as
 * they are, and it types them into `import_rows` as it reads them (staged-csv.ts); the lines it leaves
 * (those it cannot type for certain) are typed here, by the same rules as every other row, after
 * it. A round's blocks are encoded once both are done, with the count of rows each staged.
 */
export async function runProfileImport(job: ImportJob, deps: ProfileImportDeps): Promise<void> {
  let row = (await readImport(deps.store, job.id)) ?? newImportRow(job, deps.now())
  if (row.state !== 'queued' && row.state !== 'processing') return
  const roundRows = deps.roundRows ?? 20_000
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
  let typing: InsertSelect | undefined
  // The round's rejected rows, all of them: kept (the import's first 1,000 by line) at its end,
  // since the engine's leftovers are judged after the rows that follow them.
  let rejected: RejectedRow[] = []
  let rejectedBefore = rowsRejected
  let lastLine = resumeAfter
  // The round being filled: per partition, its open block (rows serialised, or staged in the
  // engine), and the blocks closed so far. Blocks are numbered as they open, so a resumed round
  // numbers them alike.
  const open = new Map<number, OpenBlock>()
  let closed: { partition: number; block: OpenBlock }[] = []
  let staged: string[] = []
  // Plain CSV lines of the round as the engine reads them (RowBinary), and where each line's text is.
  const plain = new RowBinaryWriter(1024 * 1024)
  let plainRows: PlainRow[] = []
  let nextBlock = 0
  let roundCount = 0
  // Customers of the round: a customer's second row starts a new round, so a round's staged rows
  // are one per customer and the writer applies them together, each against the state it meets.
  const customers = new Set<string>()
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
    if (!pending) return
    if (pending.count > 0) closed.push({ partition, block: pending })
    open.delete(partition)
  }
  const encode = ({ partition, block }: { partition: number; block: OpenBlock }) =>
    block.staged
      ? encodeImportBlock({ ...head(), block: block.block, staged: block.count }, [], partition)
      : encodeImportBlock({ ...head(), block: block.block }, block.rows, partition)

  /**
   * The round's plain lines: typed by the engine as it reads them, into import_rows (one insert),
   * and those it left typed here (staged with the others, or rejected: their block counts one
   * row less).
   */
  const stagePlain = async () => {
    if (plainRows.length === 0) return
    await deps.store.insert('import_rows', plain.view(), {
      rowBinary: RAW_COLUMNS,
      select: typing!,
      settings: TYPING_SETTINGS,
    })
    const [typed] = await deps.store.query<{ lines: string }>(
      `SELECT arrayStringConcat(groupArray(toString(line)), ',') AS lines
       FROM import_rows WHERE import_id = {import:String} AND round = {round:UInt64}`,
      { import: job.id, round },
    )
    const done = new Set(typed?.lines ? typed.lines.split(',').map(Number) : [])
    const text = plain.view()
    const blocksByNumber = new Map(closed.map(({ block }) => [block.block, block]))
    for (const row of plainRows) {
      if (done.has(row.line)) continue
      const result = csvRow(header!, text.toString('utf8', row.start, row.end).split(','))
      const line = result.ok
        ? stagedRow(
            { import: job.id, round, block: row.block },
            { line: row.line, customer: result.customer, changes: result.changes },
          )
        : undefined
      if (line !== undefined) staged.push(line)
      else {
        refuse(row.line, result.customer, result.ok ? 'the row cannot be staged' : result.reason)
        blocksByNumber.get(row.block)!.count--
      }
    }
  }

  const flushRound = async () => {
    for (const partition of [...open.keys()].sort((a, b) => a - b)) close(partition)
    await stagePlain()
    // The staged rows first, in one insert, while the writer may still apply the round before.
    if (staged.length > 0)
      await deps.store.insert('import_rows', Buffer.from(`${staged.join('\n')}\n`), {
        compactColumns: STAGED_ROW_COLUMNS,
      })
    if (plainRows.length > 0 || staged.length > 0) await deps.releaseMemory?.()
    const messages = closed.filter(({ block }) => block.count > 0).map(encode)
    if (messages.length > 0) {
      await waitForWriter(deps, maxBacklog)
      await deps.bus.produce(deps.topic, messages)
    }
    rejected.sort((a, b) => a.line - b.line)
    const room = Math.max(0, IMPORT_LIMITS.keptRejectedRows - rejectedBefore)
    await keepRejected(deps.store, job.id, rejected.slice(0, room))
    blocks += messages.length
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
    staged = []
    rejected = []
    rejectedBefore = rowsRejected
    plain.clear()
    plainRows = []
    nextBlock = 0
    roundCount = 0
    customers.clear()
  }

  /** Adds a typed row to its partition's open block, closing that block when the row cannot join it. */
  const add = (line: number, customer: string, changes: NormalizedChange[]) => {
    const partition = partitionForKey(commandKey(job.db, customer), deps.partitions, 0)
    const pending = open.get(partition)
    const blockRow = { line, customer, changes }
    const stageAs = pending?.staged ? pending.block : nextBlock
    const stagedLine = stagedRow({ import: job.id, round, block: stageAs }, blockRow)
    if (stagedLine !== undefined) {
      if (pending && !pending.staged) close(partition)
      const block = pending?.staged ? pending : openBlock(partition, true)
      if (block.block !== stageAs) throw new Error('staged row numbered for another block')
      staged.push(stagedLine)
      block.count++
    } else {
      const serialised = serialiseRow(blockRow)
      let block = pending
      if (block && (block.staged || block.bytes + serialised.length > blockBytes)) {
        close(partition)
        block = undefined
      }
      block ??= openBlock(partition, false)
      block.rows.push(serialised)
      block.bytes += serialised.length + 1
      block.count++
    }
    customers.add(customer)
    roundCount++
  }
  /** A plain line into its partition's staged block, as a row for the engine to type at the round's end. */
  const addPlain = (line: number, customer: string, bytes: Buffer) => {
    const partition = partitionForKey(commandKey(job.db, customer), deps.partitions, 0)
    if (open.get(partition)?.staged === false) close(partition)
    const block = open.get(partition) ?? openBlock(partition, true)
    plain.string(job.id)
    plain.uint(round, 8)
    plain.uint(block.block, 4)
    plain.uint(line, 8)
    plain.stringBytes(bytes, 0, bytes.length)
    plainRows.push({ line, block: block.block, start: plain.length - bytes.length, end: plain.length })
    block.count++
    customers.add(customer)
    roundCount++
  }
  const openBlock = (partition: number, isStaged: boolean): OpenBlock => {
    const block: OpenBlock = { block: nextBlock++, staged: isStaged, rows: [], bytes: 0, count: 0 }
    open.set(partition, block)
    return block
  }

  const refuse = (line: number, customer: string | undefined, reason: string) => {
    rowsRejected++
    if (rejectedBefore < IMPORT_LIMITS.keptRejectedRows)
      rejected.push({ line, ...(customer !== undefined && { customer_id: customer }), reason })
  }

  try {
    const rows = readPlainRows(deps.open(job.path), job.format, job.compression)
    for await (const source of rows) {
      if (job.format === 'csv' && !header) {
        // The header is read again on a resume; the edge checked it before its 202.
        const cells = sourceCells(source)
        const parsed = cells ? parseCsvHeader(cells, scope) : undefined
        if (!parsed?.ok)
          throw new ImportRefused(
            parsed ? parsed.reason : `line ${source.line}: the header row is unreadable`,
          )
        header = parsed.value
        typing = typingStatement(header)
        continue
      }
      if (source.line <= resumeAfter) continue
      rowsRead++
      lastLine = source.line
      if (source.kind === 'plain') {
        const customer = plainLineCustomer(source.bytes, header!)
        if (customer !== undefined && checkCustomer(customer).ok) {
          if (customers.has(customer)) await flushRound()
          addPlain(source.line, customer, source.bytes)
          if (roundCount + rejected.length >= roundRows) await flushRound()
          continue
        }
      }
      const result = typed(source, header, scope)
      if (!result.ok) {
        refuse(source.line, result.customer, result.reason)
      } else {
        if (customers.has(result.customer)) await flushRound()
        add(source.line, result.customer, result.changes)
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

interface PlainRow {
  line: number
  block: number
  /** The line's bytes in the round's RowBinary rows. */
  start: number
  end: number
}

interface OpenBlock {
  block: number
  /** Its rows are staged in import_rows (the block carries none), or serialised in `rows`. */
  staged: boolean
  rows: string[]
  bytes: number
  count: number
}

function typed(source: SourceRow, header: CsvHeader | undefined, scope: ProfileScope): RowResult {
  if (source.kind === 'bad') return { ok: false, customer: undefined, reason: source.reason }
  if (source.kind === 'text') return jsonRow(source.text, scope)
  return csvRow(header!, sourceCells(source)!)
}

/** A CSV row's cells (a plain line's are its text split at commas). */
function sourceCells(source: SourceRow): string[] | undefined {
  if (source.kind === 'cells') return source.cells
  if (source.kind === 'plain') return source.bytes.toString('utf8').split(',')
  return undefined
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
