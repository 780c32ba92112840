/**
 * What the port's two modes share around running a request's statement: the contract of an
 * execution (read-only-execution.ts for the analysts, writable-execution.ts for the test stand-in),
 * the statement a request asks for, the format and database it names, and the queue bound. Pure: no I/O.
 */
import type { IncomingHttpHeaders } from 'node:http'
import {
  ErrorCode,
  isBinaryFormat,
  isFormatName,
  isIdentifier,
  SqlPortError,
  type HttpParams,
} from './clickhouse-protocol.ts'
import { header } from './http-request.ts'
import { analyzeStatement, type StatementAnalysis } from './statement-analysis.ts'

export interface ExecutionRequest {
  isPost: boolean
  /** The authenticated user. */
  user: string
  headers: IncomingHttpHeaders
  /** Aborted when the client has gone. */
  signal: AbortSignal
}

export interface QueryResult {
  bytes: Buffer
  /** The format the bytes are in, for the answer's headers. */
  format: string
}

/** Runs a request's statement in one of the port's modes. */
export interface StatementExecution {
  execute(http: HttpParams, body: Buffer, request: ExecutionRequest): Promise<QueryResult>
  /** Releases what the execution opened itself (connections), once the port has closed. */
  close?(): void
}

export interface RequestStatement {
  sql: string
  /** The data of an `INSERT … FORMAT x` in the URL: the body, passed through without being read as SQL. */
  data: Buffer | undefined
  analysis: StatementAnalysis
}

/** The statement of a request, or SYNTAX_ERROR when it has none. */
export function readStatement(http: HttpParams, body: Buffer): RequestStatement {
  // ClickHouse reads the URL query followed by the body; the body of an `INSERT … FORMAT x` in the
  // URL is data, which is passed through without being decoded as SQL.
  let statement: RequestStatement
  if (http.query !== undefined && body.length > 0) {
    const head = analyzeStatement(http.query)
    if (
      head.kind === 'INSERT' &&
      head.dataStart !== undefined &&
      http.query.slice(head.dataStart).trim() === ''
    ) {
      statement = { sql: http.query, data: body, analysis: head }
    } else {
      const sql = `${http.query}\n${body.toString('utf8')}`
      statement = { sql, data: undefined, analysis: analyzeStatement(sql) }
    }
  } else {
    const sql = http.query ?? body.toString('utf8')
    statement = { sql, data: undefined, analysis: analyzeStatement(sql) }
  }
  if (statement.analysis.kind === '') throw new SqlPortError(ErrorCode.SYNTAX_ERROR, 'Empty query')
  return statement
}

export interface StatementTarget {
  /** The answer's format: the statement's own FORMAT, else the request's default. */
  format: string
  /** The format the engine is asked for when the statement has no FORMAT clause. */
  engineFormat: string
  /** The database the request names; undefined when it names none. */
  database: string | undefined
}

/**
 * The formats and database of a request, after the checks both modes make of them and of the
 * statement's data and query parameter names.
 */
export function statementTarget(
  analysis: StatementAnalysis,
  http: HttpParams,
  headers: IncomingHttpHeaders,
  /** The mode loads binary insert data itself (the writable stand-in, through a file). */
  binaryInserts = false,
): StatementTarget {
  const defaultFormat = http.defaultFormat ?? header(headers, 'x-clickhouse-format') ?? 'TabSeparated'
  if (!isFormatName(defaultFormat))
    throw new SqlPortError(ErrorCode.UNKNOWN_FORMAT, `Unknown format ${defaultFormat}`)
  const kind = analysis.kind
  const format = kind !== 'INSERT' && analysis.format ? analysis.format.name : defaultFormat

  if (kind === 'INSERT' && analysis.format && isBinaryFormat(analysis.format.name) && !binaryInserts) {
    // The engine gets its input as SQL text, which a binary payload would not survive.
    throw new SqlPortError(
      ErrorCode.NOT_IMPLEMENTED,
      `Input format ${analysis.format.name} is not supported by this port; use a text format such as JSONEachRow`,
    )
  }

  const database = http.database ?? header(headers, 'x-clickhouse-database')
  if (database !== undefined && database !== '' && !isIdentifier(database)) {
    throw new SqlPortError(ErrorCode.BAD_ARGUMENTS, `Invalid database name ${JSON.stringify(database)}`)
  }
  for (const name of http.params.keys()) {
    if (!isIdentifier(name))
      throw new SqlPortError(
        ErrorCode.BAD_QUERY_PARAMETER,
        `Invalid query parameter name ${JSON.stringify(name)}`,
      )
  }
  return { format, engineFormat: chdbFormat(defaultFormat), database: database || undefined }
}

/** chdb rewrites a format named exactly 'arrow' into a SET that would stick to the session. */
function chdbFormat(format: string): string {
  return format.toLowerCase() === 'arrow' ? 'Arrow' : format
}

/** TOO_MANY_SIMULTANEOUS_QUERIES once `pending` requests are running or waiting for the engine. */
export function refuseWhenQueueFull(pending: number, maxQueued: number): void {
  if (pending >= maxQueued) {
    throw new SqlPortError(
      ErrorCode.TOO_MANY_SIMULTANEOUS_QUERIES,
      `Too many simultaneous queries. Maximum: ${maxQueued}`,
    )
  }
}
