import { mkdirSync, rmSync } from 'node:fs'
import { open, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { Session } from 'chdb'
import {
  isRowPieces,
  piecesColumns,
  type InsertOptions,
  type ClosableExecutor,
  type CommandOptions,
  type QueryParams,
  type RawExecutor,
  type RowPieces,
  type Store,
} from './store.ts'
import {
  insertSelectStatement,
  insertSettings,
  parseJsonEachRow,
  rowBinaryColumns,
  settingsClause,
  stringLiteral,
  toJsonEachRow,
} from './rows.ts'

const STREAM_BLOCK_ROWS = 8192

/** Settings of the embedded engine itself, fixed for the life of the process. */
export interface EngineOptions {
  /**
   * Nice value of the engine's merge threads (`os_threads_nice_value_merge_mutate`), 0-19. Merges
   * are work that can wait: above 0 they take the CPU that inserts and queries leave, so on a busy
   * machine the pipeline's inserts are not queued behind the merge of earlier parts.
   */
  mergeNice?: number
}

function engineArgs(options: EngineOptions): string[] {
  const nice = options.mergeNice ?? 0
  if (!Number.isInteger(nice) || nice < 0 || nice > 19)
    throw new Error(`mergeNice must be an integer 0-19: ${nice}`)
  return nice > 0 ? [`--os_threads_nice_value_merge_mutate=${nice}`] : []
}

/**
 * Store adapter over chdb: ClickHouse in this process, off the event loop. Three connections share
 * the one embedded server: inserts run on one of their own, so a large INSERT no longer queues
 * the look-ups behind it (chdb runs parameterised queries one at a time process-wide, and each
 * connection runs its calls in order), and small object inserts marked `beside` (a group's
 * receipts) on a third, so they do not queue behind the next large insert either. Settings are
 * always applied per query (a SETTINGS clause), never with SET, because SET would stick to the
 * connection.
 *
 * chdb's insert() takes text formats only; RowBinary rows reach the engine through a file it reads
 * (`INSERT … SELECT * FROM file(…, RowBinary, …)` on the insert connection, or the insert's own
 * SELECT over that file), written to a spool directory beside the engine's data and removed once
 * the insert is done.
 */
export class ChdbStore implements Store, RawExecutor {
  readonly kind = 'chdb' as const
  readonly database: string
  /** The data directory the engine is bound to. */
  readonly path: string
  private readonly session: Session
  private readonly insertSession: Session
  /** Small inserts that need not queue behind the large ones (InsertOptions.beside). */
  private readonly besideSession: Session
  private readonly spool: string
  private spooled = 0
  /**
   * A fault to inject, for tests only (test/integration/store-outage-embedded.test.ts; nothing in
   * Sluice sets it): while set, every insert fails with the error it returns before reaching the
   * engine, as inserts fail when the engine's disk is full, while queries still answer. There is no
   * other way to make the embedded engine refuse writes for a while and then take them again.
   */
  insertFault: (() => Error) | undefined

  private constructor(
    session: Session,
    insertSession: Session,
    besideSession: Session,
    database: string,
    path: string,
  ) {
    this.session = session
    this.insertSession = insertSession
    this.besideSession = besideSession
    this.database = database
    this.path = path
    this.spool = join(path, 'insert-spool')
  }

  static async open(path: string, database = 'sluice', options: EngineOptions = {}): Promise<ChdbStore> {
    const connectionArgs = engineArgs(options)
    mkdirSync(path, { recursive: true })
    // The first connection starts the process's one engine: server settings go there or nowhere.
    const session = new Session(path, { connectionArgs })
    // The current database is sticky per connection, which is what every later unqualified name needs.
    await session.queryAsync(`CREATE DATABASE IF NOT EXISTS ${database}; USE ${database}`)
    const insertSession = new Session(path)
    await insertSession.queryAsync(`USE ${database}`)
    const besideSession = new Session(path)
    await besideSession.queryAsync(`USE ${database}`)
    const store = new ChdbStore(session, insertSession, besideSession, database, path)
    // Files of inserts a crash interrupted: their rows are the bus's to deliver again.
    rmSync(store.spool, { recursive: true, force: true })
    mkdirSync(store.spool, { recursive: true })
    return store
  }

  /**
   * A connection of its own to this store's engine: chdb lets several connections to one data
   * directory coexist in a process, each with its own current database, settings and query
   * parameters, and runs their queries concurrently. `connectionArgs` are `clickhouse local`
   * command-line settings (e.g. `--readonly=1`), fixed for the connection's life. The caller closes it.
   */
  connect(connectionArgs: readonly string[] = []): Session {
    return new Session(this.path, { connectionArgs })
  }

  async command(sql: string, params?: QueryParams, options: CommandOptions = {}): Promise<void> {
    if (!options.insertConnection) {
      await this.run(sql, params, 'TSV')
      return
    }
    if (this.insertFault) throw this.insertFault()
    await runOn(this.insertSession, sql, params, 'TSV')
  }

  async query<T = Record<string, unknown>>(sql: string, params?: QueryParams): Promise<T[]> {
    const result = await this.run(sql, params, 'JSONEachRow')
    return parseJsonEachRow<T>(result.text())
  }

  /**
   * On a connection of its own, closed when the stream ends: chdb allows one active stream per
   * connection, and the pipelines' connections must not wait behind an export. Each chunk is one
   * block of the result (8,192 rows unless the query's SETTINGS say otherwise; a filtered
   * MergeTree read hands over whole granules unless `use_query_condition_cache = 0`), and the
   * engine computes the next block only when the reader asks for it: a reader slower than the
   * engine leaves the engine's memory where a fast one does (measured on a 1M-row export).
   */
  queryStream(sql: string, params: QueryParams | undefined, format: string): Readable {
    const connect = () => this.connect([`--max_block_size=${STREAM_BLOCK_ROWS}`])
    const database = this.database
    async function* chunks(): AsyncGenerator<Buffer> {
      const session = connect()
      try {
        await session.queryAsync(`USE ${database}`)
        const stream =
          params && Object.keys(params).length > 0
            ? session.queryStreamBind(sql, params, { format })
            : session.queryStream(sql, { format })
        // Each chunk's bytes are a buffer of its own (no copy needed; the stream test holds every
        // chunk while the next are fetched and compares them whole).
        for await (const chunk of stream) {
          const raw = chunk.raw()
          yield Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength)
        }
      } finally {
        session.close()
      }
    }
    return Readable.from(chunks(), { objectMode: false })
  }

  async insert(
    table: string,
    rows: readonly object[] | Buffer | RowPieces,
    options: InsertOptions = {},
  ): Promise<void> {
    if (this.insertFault) throw this.insertFault()
    if (options.select && !options.rowBinary)
      throw new Error('an insert through a SELECT takes RowBinary rows')
    if (isRowPieces(rows)) return this.insertRowBinary(table, rows, piecesColumns(options), options)
    if (Buffer.isBuffer(rows) && options.rowBinary)
      return this.insertRowBinary(table, rows, options.rowBinary, options)
    const values = Buffer.isBuffer(rows) ? rows : toJsonEachRow(rows)
    if (values.length === 0) return
    const compact = Buffer.isBuffer(rows) ? options.compactColumns : undefined
    await (options.beside ? this.besideSession : this.insertSession).insert({
      table,
      values,
      format: compact ? 'JSONCompactEachRow' : 'JSONEachRow',
      ...(compact ? { columns: [...compact] } : {}),
      settings: insertSettings(options),
    })
  }

  private async insertRowBinary(
    table: string,
    rows: Buffer | RowPieces,
    columns: NonNullable<InsertOptions['rowBinary']>,
    options: InsertOptions,
  ): Promise<void> {
    if (Buffer.isBuffer(rows) ? rows.length === 0 : rows.bytes === 0) return
    const { names, structure } = rowBinaryColumns(table, columns)
    const file = join(this.spool, `${++this.spooled}.rowbinary`)
    try {
      const handle = await open(file, 'w')
      try {
        // Piece by piece: each is written before the producer reuses its buffer.
        if (Buffer.isBuffer(rows)) await handle.writeFile(rows)
        else await rows.pieces((piece) => handle.writeFile(piece))
      } finally {
        await handle.close()
      }
      const rowsRead = `file(${stringLiteral(file)}, 'RowBinary', ${stringLiteral(structure)})`
      if (options.select) {
        const sql = insertSelectStatement(table, options.select, insertSettings(options), rowsRead)
        await runOn(this.insertSession, sql, options.select.params, 'TSV')
      } else
        await this.insertSession.queryAsync(
          `INSERT INTO ${table} (${names})${settingsClause(insertSettings(options))}
           SELECT * FROM ${rowsRead}`,
        )
    } finally {
      await rm(file, { force: true })
    }
  }

  async exec(
    sql: string,
    options: { params?: QueryParams; format?: string; body?: Buffer },
  ): Promise<Buffer> {
    return execOn(this.session, sql, options)
  }

  async connectIn(database: string): Promise<ClosableExecutor> {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(database)) throw new Error(`invalid database name: ${database}`)
    const session = this.connect()
    try {
      await session.queryAsync(`USE ${database}`)
    } catch (err) {
      session.close()
      throw err
    }
    return { exec: (sql, options) => execOn(session, sql, options), close: () => session.close() }
  }

  async ping(): Promise<boolean> {
    try {
      await this.session.queryAsync('SELECT 1')
      return true
    } catch {
      return false
    }
  }

  async close(): Promise<void> {
    this.besideSession.close()
    this.insertSession.close()
    this.session.close()
  }

  private run(sql: string, params: QueryParams | undefined, format: string) {
    return runOn(this.session, sql, params, format)
  }
}

function runOn(session: Session, sql: string, params: QueryParams | undefined, format: string) {
  return params && Object.keys(params).length > 0
    ? session.queryBindAsync(sql, params, { format })
    : session.queryAsync(sql, { format })
}

/** RawExecutor.exec on one connection: inline data (an INSERT's body) follows the statement's text. */
async function execOn(
  session: Session,
  sql: string,
  options: { params?: QueryParams; format?: string; body?: Buffer },
): Promise<Buffer> {
  const text = options.body && options.body.length > 0 ? `${sql}\n${options.body.toString('utf8')}` : sql
  const result = await runOn(session, text, options.params, options.format ?? 'TabSeparated')
  return Buffer.from(result.bytes())
}
