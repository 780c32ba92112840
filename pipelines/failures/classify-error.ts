import { PermanentError } from './outcome.ts'

/**
 * How the guard treats a failure:
 * - `permanent`: the record itself is bad; retrying cannot help, dead-letter it at once;
 * - `outage`: a dependency is down or overloaded; no record is at fault, so nothing is
 *   dead-lettered and the bus redelivers the batch after its own backoff, for as long as it lasts;
 * - `unknown`: retried within bounds, then dead-lettered (kept, and replayable after a fix).
 */
export type FailureKind = 'permanent' | 'outage' | 'unknown'

// ClickHouse error codes that name the data, not the server: parsing and type errors.
// 6 CANNOT_PARSE_TEXT, 25 CANNOT_PARSE_ESCAPE_SEQUENCE, 26 CANNOT_PARSE_QUOTED_STRING,
// 27 CANNOT_PARSE_INPUT_ASSERTION_FAILED, 38 CANNOT_PARSE_DATE, 41 CANNOT_PARSE_DATETIME,
// 53 TYPE_MISMATCH, 62 SYNTAX_ERROR, 72 CANNOT_PARSE_NUMBER, 117 INCORRECT_DATA,
// 130 CANNOT_READ_ARRAY_FROM_TEXT, 131 TOO_LARGE_STRING_SIZE.
const PERMANENT_CODES = new Set([6, 25, 26, 27, 38, 41, 53, 62, 72, 117, 130, 131])
// Codes of a server that is busy or unreachable: 202 TOO_MANY_SIMULTANEOUS_QUERIES,
// 203 NO_FREE_CONNECTION, 209 SOCKET_TIMEOUT, 210 NETWORK_ERROR, 242 TABLE_IS_READ_ONLY,
// 243 NOT_ENOUGH_SPACE (a full disk, as ENOSPC below), 252 TOO_MANY_PARTS,
// 319 UNKNOWN_STATUS_OF_INSERT, 999 KEEPER_EXCEPTION.
const OUTAGE_CODES = new Set([202, 203, 209, 210, 242, 243, 252, 319, 999])
// Node's system errors of a dependency that cannot be reached, or a disk that is full.
const OUTAGE_ERRNOS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENOSPC',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
])

const OUTAGE_MESSAGES = /^(?:Timeout error\.$|MDB_[A-Z_]+|local log is closed$)/

export function classifyFailure(error: unknown): FailureKind {
  const chain = causeChain(error)
  // A bad record anywhere in the chain decides: an outage cannot make its bytes parse.
  if (chain.some(isPermanent)) return 'permanent'
  return chain.some(isOutage) ? 'outage' : 'unknown'
}

function isPermanent(err: unknown): boolean {
  if (err instanceof PermanentError) return true
  const code = clickhouseCode(err)
  return code !== undefined && PERMANENT_CODES.has(code)
}

function isOutage(err: unknown): boolean {
  const code = clickhouseCode(err)
  if (code !== undefined) return OUTAGE_CODES.has(code)
  if (!isObject(err)) return false
  // SluiceError and kafkajs errors say themselves whether a retry may succeed.
  if (err.retriable === true) return true
  // @clickhouse/client's request timeout (the server did not answer in time), an lmdb failure of
  // the local log (MDB_MAP_FULL, MDB_CORRUPTED, ...: never a record's fault), or a closed log.
  if (typeof err.message === 'string' && OUTAGE_MESSAGES.test(err.message)) return true
  return typeof err.code === 'string' && OUTAGE_ERRNOS.has(err.code)
}

/** The error and its causes, outermost first (bounded, in case of a cycle). */
export function causeChain(error: unknown): unknown[] {
  const chain: unknown[] = []
  for (let err = error; err !== undefined && err !== null && chain.length < 8;) {
    if (chain.includes(err)) break
    chain.push(err)
    err = isObject(err) ? err.cause : undefined
  }
  return chain
}

/** chdb says "Code: 27. DB::Exception: …"; @clickhouse/client's ClickHouseError has code '27'. */
function clickhouseCode(err: unknown): number | undefined {
  if (!isObject(err)) return undefined
  if (typeof err.code === 'string' && /^\d+$/.test(err.code)) return Number(err.code)
  const message = typeof err.message === 'string' ? err.message : ''
  const match = /^Code: (\d+)\./.exec(message)
  return match ? Number(match[1]) : undefined
}

/** One line naming the error and each cause, cut to `max` characters, valid UTF-8 for the engine. */
export function describeFailure(error: unknown, max = 8000): string {
  const parts = causeChain(error).map((err) => {
    if (err instanceof Error) return `${errorName(err)}: ${clickhouseCodePrefix(err)}${err.message}`
    if (typeof err === 'string') return err
    try {
      return JSON.stringify(err) ?? String(err)
    } catch {
      return String(err)
    }
  })
  return wellFormed(parts.join('; caused by ').slice(0, max))
}

// Error subclasses that keep name 'Error' (e.g. @clickhouse/client's ClickHouseError) are named by class.
function errorName(err: Error): string {
  const className = err.constructor?.name
  return err.name === 'Error' && className && className !== 'Error' ? className : err.name
}

// A ClickHouse server's error carries its code beside the message (chdb's has it in the message).
function clickhouseCodePrefix(err: Error): string {
  const { code, type } = err as Error & { code?: unknown; type?: unknown }
  if (typeof code !== 'string' || !/^\d+$/.test(code) || err.message.startsWith('Code:')) return ''
  return `Code: ${code}${typeof type === 'string' ? ` (${type})` : ''}. `
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g

/** Lone surrogates become U+FFFD: the engine refuses them in JSON input (code 25). */
export function wellFormed(text: string): string {
  return text.replace(LONE_SURROGATE, '\uFFFD')
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null
}
