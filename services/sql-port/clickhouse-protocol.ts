/**
 * ClickHouse's HTTP conventions: error codes and bodies, the status a code maps to, which URL
 * parameters are settings, content types, how a query parameter's value is written. Pure: no I/O.
 */
import { decodeEscapes } from '../../pipelines/text/sql-escapes.ts'

/** The ClickHouse error codes the port raises itself (names as in system.errors). */
export const ErrorCode = {
  NOT_IMPLEMENTED: 48,
  BAD_ARGUMENTS: 36,
  SYNTAX_ERROR: 62,
  NO_SUCH_COLUMN_IN_TABLE: 16,
  UNKNOWN_TABLE: 60,
  UNKNOWN_FORMAT: 73,
  UNKNOWN_DATABASE: 81,
  UNKNOWN_COMPRESSION_METHOD: 89,
  UNKNOWN_SETTING: 115,
  TIMEOUT_EXCEEDED: 159,
  READONLY: 164,
  TOO_MANY_SIMULTANEOUS_QUERIES: 202,
  QUERY_IS_TOO_LARGE: 229,
  ZLIB_INFLATE_FAILED: 354,
  INTO_OUTFILE_NOT_ALLOWED: 358,
  QUERY_WAS_CANCELLED: 394,
  BAD_QUERY_PARAMETER: 457,
  AUTHENTICATION_FAILED: 516,
  STD_EXCEPTION: 1001,
} as const

const NAME_BY_CODE = new Map<number, string>(Object.entries(ErrorCode).map(([name, code]) => [code, name]))

/** An error in ClickHouse's terms: numeric code, type name and message (without the trailing dot). */
export class SqlPortError extends Error {
  readonly code: number
  readonly type: string

  constructor(code: number, message: string, type = NAME_BY_CODE.get(code) ?? 'UNKNOWN_EXCEPTION') {
    super(message)
    this.name = 'SqlPortError'
    this.code = code
    this.type = type
  }
}

/**
 * HTTP status for a ClickHouse error code, following ClickHouse's exceptionCodeToHTTPStatus
 * (src/Server/HTTP/exceptionCodeToHTTPStatus.cpp). Failed authentication (192, 193, 194, 516) is 403
 * in that table, but a ClickHouse 26 server answers rejected credentials with 401 and a
 * WWW-Authenticate challenge, and so does this port. READONLY (164) is not in the table: 500, as there.
 */
export function httpStatusForCode(code: number): number {
  if (AUTH.has(code)) return 401
  if (code === 512 || code === 497) return 403 // SET_NON_GRANTED_ROLE, ACCESS_DENIED
  if (BAD_REQUEST.has(code)) return 400
  if (NOT_FOUND.has(code)) return 404
  if (code === ErrorCode.QUERY_IS_TOO_LARGE) return 413
  if (code === ErrorCode.NOT_IMPLEMENTED) return 501
  if (code === 209 || code === 76 || code === 439) return 503 // SOCKET_TIMEOUT, CANNOT_OPEN_FILE, CANNOT_SCHEDULE_TASK
  if (code === 381) return 411 // HTTP_LENGTH_REQUIRED
  if (code === ErrorCode.TIMEOUT_EXCEEDED) return 408
  if (code === 779) return 415 // UNSUPPORTED_MEDIA_TYPE
  return 500
}

const AUTH = new Set([192, 193, 194, 516])
// BAD_ARGUMENTS, CANNOT_PARSE_*, DUPLICATE_COLUMN, ILLEGAL_COLUMN, THERE_IS_NO_COLUMN, *_AST, SYNTAX_ERROR,
// INCORRECT_DATA, TYPE_MISMATCH, VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE, CANNOT_COMPILE_REGEXP
const BAD_REQUEST = new Set([
  36, 6, 25, 26, 38, 41, 72, 441, 675, 676, 27, 376, 15, 44, 37, 123, 8, 167, 168, 223, 62, 117, 53, 321, 427,
])
// UNKNOWN_TABLE, _FUNCTION, _IDENTIFIER, _TYPE, _STORAGE, _DATABASE, _SETTING, _DIRECTION_OF_SORTING,
// _AGGREGATE_FUNCTION, _FORMAT, _DATABASE_ENGINE, _TYPE_OF_QUERY, _ROLE
const NOT_FOUND = new Set([60, 46, 47, 50, 56, 81, 115, 152, 63, 73, 336, 78, 511])

/** The error body ClickHouse sends: `Code: N. DB::Exception: <message>. (TYPE) (version V)` + LF. */
export function errorBody(err: SqlPortError, version: string): string {
  return `Code: ${err.code}. DB::Exception: ${err.message}. (${err.type}) (version ${version})\n`
}

/**
 * Turns an engine error (chdb's ChdbQueryError and friends) into a SqlPortError, unwrapping the nested
 * `Code: N. DB::Exception: Code: N. …` prefixes chdb sometimes adds.
 */
export function fromEngineError(err: unknown): SqlPortError {
  if (err instanceof SqlPortError) return err
  const message = err instanceof Error ? err.message : String(err)
  const props = (typeof err === 'object' && err !== null ? err : {}) as {
    clickhouseCode?: unknown
    code?: unknown
  }
  const prefix = /^Code: (\d+)\. /.exec(message)
  const code =
    typeof props.clickhouseCode === 'number' ? props.clickhouseCode : prefix ? Number(prefix[1]) : undefined
  if (code === undefined) {
    if (props.code === 'CHDB_BIND') return new SqlPortError(ErrorCode.BAD_QUERY_PARAMETER, trimDot(message))
    if (props.code === 'CHDB_TIMEOUT') return new SqlPortError(ErrorCode.TIMEOUT_EXCEEDED, trimDot(message))
    return new SqlPortError(ErrorCode.STD_EXCEPTION, trimDot(message))
  }
  const type = /\(([A-Z][A-Z0-9_]*)\)\s*$/.exec(message)?.[1] ?? NAME_BY_CODE.get(code) ?? 'UNKNOWN_EXCEPTION'
  let text = message.replace(/^(?:Code: \d+\. DB::Exception: )+/, '')
  const cut = text.indexOf(` (${type})`)
  if (cut !== -1) text = text.slice(0, cut)
  return new SqlPortError(code, trimDot(text.trimEnd()), type)
}

const trimDot = (s: string) => (s.endsWith('.') ? s.slice(0, -1) : s)

/** URL parameters ClickHouse's HTTP handler consumes itself; everything else is a setting. */
const RESERVED_PARAMS = new Set([
  'query',
  'query_id',
  'database',
  'default_format',
  'user',
  'password',
  'quota_key',
  'session_id',
  'session_timeout',
  'session_check',
  'close_session',
  'compress',
  'decompress',
  'stacktrace',
  'role',
  'buffer_size',
  'wait_end_of_query',
  'client_protocol_version',
  'enable_http_compression',
  'send_progress_in_http_headers',
])

export interface HttpParams {
  query: string | undefined
  queryId: string | undefined
  database: string | undefined
  defaultFormat: string | undefined
  /** Query parameters (`param_<name>`), raw in ClickHouse's escaped text form. */
  params: Map<string, string>
  /** Settings, as strings, in the order given (a repeated name: the last wins). */
  settings: Map<string, string>
  enableHttpCompression: boolean
  /** http_zlib_compression_level, when given. */
  compressionLevel: number | undefined
}

export function splitHttpParams(entries: Iterable<readonly [string, string]>): HttpParams {
  const out: HttpParams = {
    query: undefined,
    queryId: undefined,
    database: undefined,
    defaultFormat: undefined,
    params: new Map(),
    settings: new Map(),
    enableHttpCompression: false,
    compressionLevel: undefined,
  }
  for (const [key, value] of entries) {
    if (key === '') continue
    if (key.startsWith('param_')) {
      out.params.set(key.slice('param_'.length), value)
    } else if (key === 'query') {
      out.query = value
    } else if (key === 'query_id') {
      out.queryId = value
    } else if (key === 'database') {
      out.database = value
    } else if (key === 'default_format') {
      out.defaultFormat = value
    } else if (key === 'enable_http_compression') {
      out.enableHttpCompression = value === '1' || value.toLowerCase() === 'true'
    } else if ((key === 'compress' || key === 'decompress') && value !== '0' && value !== '') {
      // ClickHouse's own block compression (LZ4 frames with checksums), not HTTP compression.
      throw new SqlPortError(
        ErrorCode.NOT_IMPLEMENTED,
        `The '${key}' parameter is not supported by this port`,
      )
    } else if (key === 'http_zlib_compression_level') {
      const level = Number(value)
      if (Number.isInteger(level) && level >= 0 && level <= 9) out.compressionLevel = level
    } else if (!RESERVED_PARAMS.has(key) && !key.startsWith('http_')) {
      out.settings.delete(key)
      out.settings.set(key, value)
    }
  }
  return out
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/
export const isIdentifier = (name: string): boolean => IDENTIFIER.test(name)
export const isFormatName = (name: string): boolean => /^[A-Za-z][A-Za-z0-9_]*$/.test(name)

/** Content-Type ClickHouse sends for an output format. */
export function contentTypeFor(format: string): string {
  const f = format.toLowerCase()
  if (f.startsWith('json') || f.startsWith('prettyjson') || f === 'ndjson')
    return 'application/json; charset=UTF-8'
  if (f.startsWith('tabseparated') || f.startsWith('tsv')) return 'text/tab-separated-values; charset=UTF-8'
  if (f.startsWith('csv')) {
    return `text/csv; charset=UTF-8; header=${f.includes('withnames') ? 'present' : 'absent'}`
  }
  if (f === 'xml') return 'application/xml; charset=UTF-8'
  if (isBinaryFormat(format)) return 'application/octet-stream'
  return 'text/plain; charset=UTF-8'
}

export function isBinaryFormat(format: string): boolean {
  const f = format.toLowerCase()
  return BINARY_FORMATS.some((b) => f.startsWith(b))
}

const BINARY_FORMATS = [
  'native',
  'rowbinary',
  'parquet',
  'arrow',
  'orc',
  'avro',
  'protobuf',
  'capnproto',
  'msgpack',
  'rawblob',
  'npy',
  'bson',
]

/**
 * A `param_*` value as ClickHouse's HTTP handler would read it, turned into what chdb's bind needs
 * (the writable port; the read-only port hands the raw value to the engine with `SET param_…`).
 * The HTTP form is ClickHouse's escaped text; chdb escapes a string once more (TSV rules) before the
 * engine reads it back. So a scalar is unescaped here (the engine then sees the same value); a
 * composite (Array, Map, Tuple), which the engine parses as a literal without unescaping, is rewritten
 * so that chdb's escaping reproduces an equivalent literal: escaped quotes become doubled quotes.
 */
export function decodeQueryParameter(raw: string, declaredType: string | undefined): string | null {
  if (raw === '\\N') return null
  if (!raw.includes('\\')) return raw
  return decodeEscapes(raw, { requote: declaredType !== undefined && isCompositeType(declaredType) })
}

function isCompositeType(type: string): boolean {
  let t = type.trim()
  for (;;) {
    const wrapper = /^(Nullable|LowCardinality)\s*\(([\s\S]*)\)$/i.exec(t)
    if (!wrapper) break
    t = (wrapper[2] ?? '').trim()
  }
  return /^(Array|Map|Tuple|Nested)\b/i.test(t)
}
