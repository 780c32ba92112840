/**
 * The analysts' execution (read-only mode): the first pass refuses what it can read as not read-only,
 * then the statement, the URL's settings and query parameters go to the analysts' engine
 * (analyst-engine.ts), which runs them on a connection of its own where the engine's readonly=1 judges
 * every setting, at most `maxConcurrentQueries` at once.
 */
import { AnalystQueryCancelled, ReadOnlyRefusal, type AnalystEngine } from './analyst-engine.ts'
import { ErrorCode, isIdentifier, SqlPortError, type HttpParams } from './clickhouse-protocol.ts'
import { ConcurrencyLimit, WaitCancelled } from '../shared/concurrency-limit.ts'
import { isDeniedReadOnlySetting, readOnlyRefusal } from './read-only-first-pass.ts'
import { isValidSettingName } from './settings-clause.ts'
import type { StatementAnalysis } from './statement-analysis.ts'
import {
  readStatement,
  refuseWhenQueueFull,
  statementTarget,
  type ExecutionRequest,
  type QueryResult,
  type StatementExecution,
} from './statement-execution.ts'

export interface ReadOnlyExecutionOptions {
  /** The database a request runs in unless it names another. */
  defaultDatabase: string
  /** Statements running at once; the others wait in arrival order. Default 2. */
  maxConcurrentQueries?: number
  /** Requests running or waiting before new ones get TOO_MANY_SIMULTANEOUS_QUERIES. Default 100. */
  maxQueuedRequests?: number
}

export class ReadOnlyExecution implements StatementExecution {
  private readonly limiter: ConcurrencyLimit

  constructor(
    private readonly analysts: AnalystEngine,
    private readonly options: ReadOnlyExecutionOptions,
  ) {
    if (!isIdentifier(options.defaultDatabase))
      throw new Error(`invalid defaultDatabase ${options.defaultDatabase}`)
    if (!analysts) throw new Error('a read-only SQL port needs its analyst engine')
    this.limiter = new ConcurrencyLimit(options.maxConcurrentQueries ?? 2)
  }

  async execute(http: HttpParams, body: Buffer, request: ExecutionRequest): Promise<QueryResult> {
    const { sql, analysis } = readStatement(http, body)
    // chdb would run every statement of the text; a ClickHouse server refuses them over HTTP.
    if (analysis.multiStatement) throw refusal(request.user, 'multi-statements are not allowed')
    const why = readOnlyRefusal(analysis)
    if (why) throw refusal(request.user, why)
    const target = statementTarget(analysis, http, request.headers)
    const settings = urlSettings(analysis, http, request.user)
    refuseWhenQueueFull(this.limiter.pending, this.options.maxQueuedRequests ?? 100)
    try {
      const bytes = await this.limiter.run(request.signal, () =>
        this.analysts.run({
          sql,
          params: http.params,
          settings,
          database: target.database ?? this.options.defaultDatabase,
          format: target.engineFormat,
          signal: request.signal,
        }),
      )
      return { bytes, format: target.format }
    } catch (err) {
      if (err instanceof ReadOnlyRefusal) throw refusal(request.user, err.why)
      if (err instanceof AnalystQueryCancelled || err instanceof WaitCancelled)
        throw new SqlPortError(ErrorCode.QUERY_WAS_CANCELLED, err.message)
      throw err
    }
  }
}

function refusal(user: string, why: string): SqlPortError {
  return new SqlPortError(ErrorCode.READONLY, `${user}: Cannot execute query in readonly mode: ${why}`)
}

/**
 * The URL's settings, for the engine to judge; settings that name server files are refused here
 * first, in the URL and in the statement's own clauses (the engine refuses them too).
 */
function urlSettings(analysis: StatementAnalysis, http: HttpParams, user: string): Map<string, string> {
  const settings = new Map<string, string>()
  for (const [name, value] of http.settings) {
    if (!isValidSettingName(name))
      throw new SqlPortError(ErrorCode.UNKNOWN_SETTING, `Unknown setting '${name}'`)
    // The connection is readonly=1 whatever a client asks: asking for it is not an error.
    if (name !== 'readonly') settings.set(name, value)
  }
  const own = analysis.settings.flatMap((c) => c.entries.map((e) => e.name))
  for (const name of [...settings.keys(), ...own]) {
    if (isDeniedReadOnlySetting(name)) {
      throw new SqlPortError(ErrorCode.READONLY, `${user}: Cannot modify '${name}' setting in readonly mode`)
    }
  }
  return settings
}
