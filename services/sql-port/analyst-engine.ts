/**
 * The engine behind the read-only SQL port: every analyst request runs on a chdb connection of its
 * own (same data directory, another connection: chdb runs connections' queries concurrently, each on
 * its own libuv thread), opened with readonly=1 and the port's limits as connection settings, so no
 * SET, SETTINGS clause or URL parameter can lift them (the engine refuses a change in readonly mode),
 * and closed after the request, so nothing it did (USE, SET param_…) outlives it. The pipelines'
 * connections never see an analyst's statement or state.
 *
 * Before a statement runs, the engine's own parser judges it (read-only-first-pass.ts, on the
 * tokenizer's reading, is only the fast first pass): chdb's classifier must see exactly one read-only
 * statement, and its `EXPLAIN AST` tree must pass read-only-ast.ts. A request whose client goes away
 * has its query killed.
 */
import { randomUUID } from 'node:crypto'
import type { Session } from 'chdb'
import { classifyStatement, QueryClass } from '../../pipelines/connectors/store/chdb-classify.ts'
import type { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { isIdentifier } from './clickhouse-protocol.ts'
import { astRefusal, parseExplainAst } from './read-only-ast.ts'
import { isValidSettingName } from './settings-clause.ts'
import { quoteString } from '../../pipelines/text/sql-escapes.ts'

export interface AnalystLimits {
  /** max_execution_time of every statement, in seconds. */
  maxExecutionSeconds: number
  /** max_memory_usage of every statement, in bytes. */
  maxMemoryBytes: number
  /** max_result_bytes: uncompressed bytes of the result blocks, before formatting. */
  maxResultBytes: number
  /** max_threads of every statement: fewer than the cores leaves CPU to the public API. */
  maxThreads: number
}

export interface AnalystRequest {
  /** One statement, already through the lexer's first pass. */
  sql: string
  /** Query parameters in ClickHouse's HTTP (escaped text) form, as `param_<name>` carried them. */
  params: ReadonlyMap<string, string>
  /** Settings from the URL: the engine judges them (readonly=1 refuses every change). */
  settings: ReadonlyMap<string, string>
  database: string
  /** Output format when the statement has no FORMAT clause. */
  format: string
  /** Aborted when the client has gone: the query is killed. */
  signal: AbortSignal
}

export interface AnalystEngine {
  run(request: AnalystRequest): Promise<Buffer>
  close(): Promise<void>
}

/** The engine's parser refuses the statement on the read-only port; `why` completes the message. */
export class ReadOnlyRefusal extends Error {
  constructor(readonly why: string) {
    super(why)
    this.name = 'ReadOnlyRefusal'
  }
}

/** The request was abandoned by its client before or while it ran. */
export class AnalystQueryCancelled extends Error {
  constructor() {
    super('the client closed the connection; the query was cancelled')
    this.name = 'AnalystQueryCancelled'
  }
}

const MARKER = 'sluice-sql-port:'
const CLASS_NAMES: Record<number, string> = {
  [QueryClass.Mutating]: 'statements that write data',
  [QueryClass.MutatingGlobal]: 'statements that change the server',
  [QueryClass.Control]:
    'USE, SET, SYSTEM, KILL and statements that write outside the engine (INTO OUTFILE, INSERT INTO FUNCTION)',
}

export class ChdbAnalystEngine implements AnalystEngine {
  private readonly connectionArgs: readonly string[]
  /** Requests in flight: close() waits for them (and for the kills of abandoned ones). */
  private readonly inFlight = new Set<Promise<unknown>>()

  private constructor(
    private readonly store: Pick<ChdbStore, 'connect'>,
    /** Not read-only: it only runs KILL QUERY for abandoned requests, never an analyst's text. */
    private readonly control: Session,
    private readonly tableFunctions: ReadonlySet<string>,
    limits: AnalystLimits,
  ) {
    this.connectionArgs = [
      '--readonly=1',
      `--max_execution_time=${positiveInt(limits.maxExecutionSeconds)}`,
      '--timeout_overflow_mode=throw',
      `--max_memory_usage=${positiveInt(limits.maxMemoryBytes)}`,
      `--max_result_bytes=${positiveInt(limits.maxResultBytes)}`,
      '--result_overflow_mode=throw',
      `--max_threads=${positiveInt(limits.maxThreads)}`,
    ]
  }

  static async open(store: Pick<ChdbStore, 'connect'>, limits: AnalystLimits): Promise<ChdbAnalystEngine> {
    const control = store.connect()
    try {
      const names = await control.queryAsync('SELECT name FROM system.table_functions', {
        format: 'TabSeparatedRaw',
      })
      const tableFunctions = new Set(
        names
          .text()
          .split('\n')
          .filter(Boolean)
          .map((n) => n.toLowerCase()),
      )
      return new ChdbAnalystEngine(store, control, tableFunctions, limits)
    } catch (err) {
      control.close()
      throw err
    }
  }

  run(request: AnalystRequest): Promise<Buffer> {
    const run = this.runOnOwnConnection(request)
    const settled = run.then(
      () => undefined,
      () => undefined,
    )
    this.inFlight.add(settled)
    void settled.then(() => this.inFlight.delete(settled))
    return run
  }

  /** Waits for the requests in flight; abort them first (SqlPortServer.close does) not to wait for their limit. */
  async close(): Promise<void> {
    await Promise.all(this.inFlight)
    this.control.close()
  }

  private async runOnOwnConnection(request: AnalystRequest): Promise<Buffer> {
    if (request.signal.aborted) throw new AnalystQueryCancelled()
    if (!isIdentifier(request.database)) throw new Error(`invalid database name ${request.database}`)
    const session = this.store.connect(this.connectionArgs)
    try {
      await session.queryAsync(sessionSetup(request), { format: 'TabSeparated' })
      // The marker finds this query in system.processes; a trailing comment keeps the positions in
      // the engine's error messages those of the analyst's text.
      const marker = randomUUID()
      const text = `${request.sql}\n/* ${MARKER}${marker} */`
      await this.judge(session, request.sql, text, request.database)
      if (request.signal.aborted) throw new AnalystQueryCancelled()
      return await this.runCancellable(session, text, request.format, marker, request.signal)
    } finally {
      session.close()
    }
  }

  /** The engine's parser, as the last word on whether `text` (the analyst's `sql` and the marker) may run. */
  private async judge(session: Session, sql: string, text: string, database: string): Promise<void> {
    const { statements, queryClass } = await classifyStatement(session, text, database)
    if (queryClass === QueryClass.Unknown || statements === 0) {
      await throwSyntaxError(session, sql)
      throw new ReadOnlyRefusal('the engine does not classify this statement as read-only')
    }
    if (statements !== 1) throw new ReadOnlyRefusal('multi-statements are not allowed')
    if (queryClass !== QueryClass.ReadOnly) {
      throw new ReadOnlyRefusal(`${CLASS_NAMES[queryClass] ?? 'this statement'} are not allowed on this port`)
    }
    // Parse only: EXPLAIN AST runs nothing of the statement (a table function in it is not opened).
    const explained = await session.queryAsync(`EXPLAIN AST ${text}`, { format: 'TabSeparated' })
    const tree = parseExplainAst(explained.text())
    if (!tree) throw new ReadOnlyRefusal('the engine returned no parse tree for the statement')
    const why = astRefusal(tree, this.tableFunctions)
    if (why) throw new ReadOnlyRefusal(why)
  }

  private async runCancellable(
    session: Session,
    text: string,
    format: string,
    marker: string,
    signal: AbortSignal,
  ): Promise<Buffer> {
    // No `signal` for chdb: it would only settle the promise early while the engine kept computing.
    const running = session.queryAsync(text, { format })
    let settled = false
    const done = running.then(
      () => (settled = true),
      () => (settled = true),
    )
    const onAbort = () => void this.kill(marker, done, () => settled)
    signal.addEventListener('abort', onAbort, { once: true })
    try {
      const result = await running
      return Buffer.from(result.bytes())
    } catch (err) {
      if (signal.aborted) throw new AnalystQueryCancelled()
      throw err
    } finally {
      signal.removeEventListener('abort', onAbort)
    }
  }

  /**
   * KILL QUERY from the control connection until the query has stopped: the first one can come
   * before the engine has listed the query. The text is built here rather than bound because chdb
   * runs every bound query of the process one after another, and a cancel must not wait behind the
   * pipelines'; the only value in it is a UUID generated above.
   */
  private async kill(marker: string, done: Promise<unknown>, settled: () => boolean): Promise<void> {
    const statement = `KILL QUERY WHERE position(query, concat('${MARKER}', '${marker}')) > 0 ASYNC`
    while (!settled()) {
      await this.control.queryAsync(statement, { format: 'TabSeparated' }).catch(() => undefined)
      await Promise.race([done, new Promise((resolve) => setTimeout(resolve, 250).unref())])
    }
  }
}

/**
 * USE the database, then the URL's settings and query parameters as SETs on the request's own
 * connection: the engine judges each setting (readonly=1 refuses every change), and a `param_x`
 * value reaches the engine as ClickHouse's HTTP interface hands it over (escaped text, parsed per the
 * placeholder's type). Not bound through chdb, whose bound queries run one at a time process-wide.
 */
function sessionSetup(request: AnalystRequest): string {
  const statements = [`USE \`${request.database}\``]
  for (const [name, value] of request.settings) {
    if (!isValidSettingName(name)) throw new Error(`invalid setting name ${name}`)
    statements.push(`SET ${name} = ${quoteString(value)}`)
  }
  for (const [name, raw] of request.params) {
    if (!isIdentifier(name)) throw new Error(`invalid query parameter name ${name}`)
    statements.push(`SET param_${name} = ${quoteString(raw)}`)
  }
  return statements.join(';\n')
}

/**
 * The engine's syntax error for the analyst's `sql`, through formatQuery: it parses a string value,
 * so nothing in the text can run, and its positions are those of the text. Returns when it parses.
 */
async function throwSyntaxError(session: Session, sql: string): Promise<void> {
  await session.queryAsync(`SET param_sluice_statement = ${quoteString(escapeText(sql))}`, {
    format: 'TabSeparated',
  })
  try {
    await session.queryAsync('SELECT formatQuery({sluice_statement:String})', { format: 'TabSeparated' })
  } catch (err) {
    if (!(err instanceof Error)) throw err
    // The message ends `…: In scope SELECT formatQuery('<the text>'). (SYNTAX_ERROR)`: the analyst
    // did not write that call.
    const scope = err.message.lastIndexOf(': In scope SELECT formatQuery(')
    const type = err.message.lastIndexOf('. (')
    if (scope === -1 || type < scope) throw err
    const message = err.message.slice(0, scope) + err.message.slice(type)
    throw Object.assign(new Error(message), {
      clickhouseCode: (err as { clickhouseCode?: unknown }).clickhouseCode,
    })
  }
}

/** A value in the escaped text form a query parameter is read in. */
function escapeText(value: string): string {
  return value.replace(/[\\\n\t\r\0]/g, (c) => {
    switch (c) {
      case '\n':
        return '\\n'
      case '\t':
        return '\\t'
      case '\r':
        return '\\r'
      case '\0':
        return '\\0'
      default:
        return '\\\\'
    }
  })
}

function positiveInt(n: number): number {
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`limit ${n} must be a positive integer`)
  return n
}
